"""Qt only: main window, packing chart, side panel, workers."""

from viewer.export._qt_compat import guard_refcount_bug

guard_refcount_bug()  # before any Qt call: see viewer/export/_qt_compat.py
