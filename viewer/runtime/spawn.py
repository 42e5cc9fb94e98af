"""How a runtime child process is started, from a source tree, a wheel or a frozen bundle.

A child is a Python module run as ``__main__`` (``python -m viewer.runtime._child ...``). A
frozen desktop bundle (PyInstaller) has no ``python -m``: its executable is the app itself, so
the child runs the same executable with the hidden first argument :data:`CHILD_FLAG`, which
:func:`run_child_if_asked` (called first thing by the console entry point) turns back into
``runpy.run_module(module)``. Every place that starts a child builds its command here.
"""

from __future__ import annotations

import sys

#: Hidden first argument of a frozen bundle's executable: ``APP --arena-viewer-child MODULE ...``.
CHILD_FLAG = "--arena-viewer-child"


def frozen() -> bool:
    """True inside a frozen bundle (PyInstaller sets ``sys.frozen``)."""
    return bool(getattr(sys, "frozen", False))


def child_command(module: str, *args: str) -> list[str]:
    """The argv that runs ``module`` as ``__main__`` in a fresh process.

    Parameters
    ----------
    module : str
        Dotted module name under ``viewer`` (e.g. ``"viewer.runtime._child"``).
    args : str
        The child's own arguments.

    Returns
    -------
    list of str
        ``[python, "-m", module, *args]``, or in a frozen bundle
        ``[app, CHILD_FLAG, module, *args]``.
    """
    if not module.startswith("viewer."):
        raise ValueError(f"not one of ours: {module}")
    if frozen():
        return [sys.executable, CHILD_FLAG, module, *args]
    return [sys.executable, "-m", module, *args]


def run_child_if_asked(argv: list[str]) -> bool:
    """Run the child module named after :data:`CHILD_FLAG` in ``argv``; True if it did.

    ``argv`` is ``sys.argv[1:]``. The child's ``sys.argv`` is ``[module, *rest]``, as under
    ``python -m``. Exits through ``SystemExit`` like the child would.
    """
    if len(argv) < 2 or argv[0] != CHILD_FLAG or not argv[1].startswith("viewer."):
        return False
    import runpy

    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    return True
