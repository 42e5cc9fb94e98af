"""Work around a reference-count bug of PySide6 6.12 on CPython < 3.12.

Converting an invalid ``QVariant`` back to Python returns ``None`` without taking a reference.
pyqtgraph hits this on every ``super().itemChange(...)`` (each item added, moved, reparented),
and so does any ``QAbstractItemModel.data()`` / ``headerData()`` that has no value: switching
planners a dozen times on a real model (about 2,300 stolen references per redraw) drove
``None``'s count to zero and aborted the process with
"Fatal Python error: none_dealloc: deallocating None".

From CPython 3.12, ``None``, ``True`` and ``False`` are immortal and the bug is harmless. Here
we make them effectively immortal too by adding 2**40 to their reference counts once, at
import of :mod:`viewer.ui`.
"""

from __future__ import annotations

import ctypes
import platform
import sys

#: Added once to the reference count of None/True/False (never reached by any leak).
BALLAST = 1 << 40
_applied = False


def apply() -> bool:
    """Make None/True/False effectively immortal; True when applied (CPython < 3.12 only)."""
    global _applied
    if _applied or sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        return _applied
    for obj in (None, True, False):
        # ob_refcnt is the first field of every object in a release build of CPython.
        refcnt = ctypes.c_ssize_t.from_address(id(obj))
        if refcnt.value < BALLAST:  # viewer.export.chart_scene may have done it already
            refcnt.value += BALLAST
    _applied = True
    return True
