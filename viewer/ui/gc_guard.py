"""Collect reference cycles on the GUI thread only.

Python's cyclic garbage collector runs in whichever thread happens to allocate. When a worker
thread collects a cycle that holds a Qt wrapper, the C++ destructor runs in that thread, takes
a Qt lock and then waits for the GIL, while the GUI thread holds the GIL and waits for that lock:
a deadlock (seen in our GUI tests while a worker read a model). pyqtgraph's
:class:`~pyqtgraph.util.garbage_collector.GarbageCollector` disables automatic collection and
collects on a GUI-thread timer instead.
"""

from __future__ import annotations

_collector = None


def install(interval: float = 1.0) -> None:
    """Start GUI-thread garbage collection once per process (call on the GUI thread)."""
    global _collector
    if _collector is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _collector = GarbageCollector(interval=interval)
