"""Qt only: main window, packing chart, side panel, workers."""

from viewer.ui import _pyside_compat

_pyside_compat.apply()  # before any Qt call: see the module's docstring
