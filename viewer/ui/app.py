"""Start the GUI: one QApplication, one :class:`~viewer.ui.main_window.MainWindow`."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication

from viewer import __version__
from viewer.model.types import Model


def application(argv: list[str] | None = None) -> QApplication:
    """The running QApplication, created (with name and version) if there is none."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
        app.setApplicationName("Arena Viewer")
        app.setOrganizationName("ArenaViewer")
        app.setApplicationVersion(__version__)
    return app


def create_window(path: str | None = None, *, model: Model | None = None, subgraph: int = 0,
                  measure: bool | None = None):
    """Show a :class:`~viewer.ui.main_window.MainWindow` that opens ``path`` (the demo when None).

    Parameters
    ----------
    path : str, optional
        A .tflite file; None opens the built-in demo model.
    model : Model, optional
        ``path`` already read (the CLI reads it first so a bad file exits with code 2).
    subgraph : int
    measure : bool, optional
        Run the LiteRT runtime probe; default: the saved setting (on).
    """
    from viewer.resources import DEMO_MODEL, resource_path
    from viewer.ui.main_window import MainWindow

    application()
    win = MainWindow(measure=measure)
    win.show()
    win.open_model(str(path) if path is not None else str(resource_path(DEMO_MODEL)),
                   model=model, subgraph=subgraph)
    return win


def exec_app(app: QApplication) -> int:
    """Run the event loop until the last window closes."""
    return int(app.exec())


def run_gui(path: str | None = None, *, model: Model | None = None, subgraph: int = 0,
            measure: bool | None = None) -> int:
    """Open the window (see :func:`create_window`) and run the event loop.

    Returns
    -------
    int
        The event loop's exit code.
    """
    app = application()
    win = create_window(path, model=model, subgraph=subgraph, measure=measure)  # noqa: F841 (kept alive)
    return exec_app(app)
