"""Guard against a reference-count bug of PySide6 6.12.0 on CPython < 3.12.

That binding drops a reference to ``None`` on every void C++ call (``QRect.setWidth``,
``QPainter.setPen``, pyqtgraph's ``itemChange``...) and to ``True``/``False`` on bool returns.
A few thousand calls later the process aborts with "Fatal Python error: none_dealloc".
pyproject.toml excludes 6.12 (``PySide6-Essentials<6.12``); this guard only matters to
someone who installs it anyway. It probes the binding once and, only when the bug shows,
gives the three singletons 2**40 extra references (they are immortal from CPython 3.12 on).
"""

from __future__ import annotations

import sys

_applied: bool | None = None


def guard_refcount_bug() -> bool:
    """Probe the binding once; apply the work-around when the bug is present.

    Returns
    -------
    bool
        True when the work-around was applied.
    """
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    from PySide6 import QtCore

    r = QtCore.QRect()
    before = (sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False))
    for _ in range(8):
        r.setWidth(1)
        r.isEmpty()
        r.isNull()
    after = (sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False))
    if all(a >= b for a, b in zip(after, before)):
        return False  # a sound binding
    import ctypes

    for obj in (None, True, False):
        refcnt = ctypes.c_ssize_t.from_address(id(obj))  # ob_refcnt: first field of every object
        refcnt.value += 1 << 40
    _applied = True
    return True
