"""Background work for the window: the document's requests run off the GUI thread.

The work itself is Qt-free (:mod:`viewer.document.work`: :func:`compute`, :func:`compute_optimal`,
:func:`compute_reorder`, re-exported here); :class:`TaskRunner` runs it in a
:class:`~PySide6.QtCore.QThreadPool` through a :class:`~PySide6.QtCore.QRunnable` whose signals
live on their own :class:`QObject` (a ``QRunnable`` is not one), and delivers the response on the
GUI thread. A new request cancels the stale one; whatever a stale task still returns is dropped.
"""

from __future__ import annotations

import dataclasses
import threading
import traceback

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from viewer.document.work import (  # noqa: F401 (re-exported: the window's and the tests' names)
    MEASURED,
    MEASURED_LABEL,
    OPTIMAL,
    AnalysisRequest,
    AnalysisResponse,
    OptimizeRequest,
    OptimizeResponse,
    ReorderRequest,
    compute,
    compute_optimal,
    compute_reorder,
    optimal_summary,
    plan_label,
    temporary_names,
)
from viewer.errors import FIXED_SIZE_HINTS, PlanCancelled, ViewerError


class TaskSignals(QObject):
    """Signals of one :class:`_Task` (a QRunnable cannot carry signals itself)."""

    progressed = Signal(int, float, str)  # serial, fraction, message
    finished = Signal(int, object)  # serial, AnalysisResponse
    failed = Signal(int, str)  # serial, one-line reason
    cancelled = Signal(int)  # serial


class _Task(QRunnable):
    def __init__(self, request: AnalysisRequest, fn, signals: TaskSignals):
        super().__init__()
        self.request = request
        self.fn = fn
        self.signals = signals
        self.cancel_event = threading.Event()
        self.setAutoDelete(True)

    def run(self) -> None:  # worker thread
        serial = self.request.serial
        sig = self.signals
        try:
            resp = self.fn(
                self.request,
                lambda f, m: sig.progressed.emit(serial, float(f), str(m)),
                self.cancel_event.is_set,
            )
        except PlanCancelled:
            sig.cancelled.emit(serial)
        except ViewerError as e:
            hint = FIXED_SIZE_HINTS["window"] if getattr(e, "fixed_size", False) else ""
            sig.failed.emit(serial, str(e) + hint)
        except Exception as e:  # never a crash: report it as one line
            traceback.print_exc()
            sig.failed.emit(serial, f"{self.request.path}: internal error: {type(e).__name__}: {e}")
        else:
            sig.finished.emit(serial, resp)


class TaskRunner(QObject):
    """Runs one :class:`AnalysisRequest` at a time in a thread pool; a new one cancels the old.

    Signals are emitted on the GUI thread, and only for the latest request.

    Parameters
    ----------
    fn : callable
        ``fn(request, progress, cancelled) -> AnalysisResponse``; :func:`compute` by default.
    """

    response_ready = Signal(object)  # AnalysisResponse
    failed = Signal(str)  # one line
    progressed = Signal(float, str)
    busy_changed = Signal(bool)
    #: The latest request stopped because it was cancelled (not replaced by a newer one).
    cancelled = Signal()

    def __init__(self, parent: QObject | None = None, fn=compute):
        super().__init__(parent)
        self._fn = fn
        self._pool = QThreadPool(self)
        # A stale probe may still sit in its subprocess; let new requests start anyway.
        self._pool.setMaxThreadCount(4)
        self._serial = 0
        self._tasks: dict[int, _Task] = {}
        self._signals = TaskSignals(self)
        self._signals.progressed.connect(self._on_task_progressed)
        self._signals.finished.connect(self._on_task_finished)
        self._signals.failed.connect(self._on_task_failed)
        self._signals.cancelled.connect(self._on_task_cancelled)

    @property
    def busy(self) -> bool:
        """A request is running whose answer has not arrived."""
        return self._serial in self._tasks

    @property
    def latest_serial(self) -> int:
        return self._serial

    def submit(self, request, fn=None):
        """Cancel whatever runs and start ``request``; returns it with its serial set.

        Parameters
        ----------
        request : AnalysisRequest, OptimizeRequest or ReorderRequest
            Any frozen dataclass with ``path`` and ``serial``.
        fn : callable, optional
            ``fn(request, progress, cancelled) -> response``; default the runner's own
            (:func:`compute`).
        """
        self.cancel()
        self._serial += 1
        req = dataclasses.replace(request, serial=self._serial)
        task = _Task(req, fn or self._fn, self._signals)
        self._tasks[req.serial] = task
        self._pool.start(task)
        self.busy_changed.emit(True)
        return req

    def cancel(self) -> None:
        """Ask every running task to stop (planners poll the flag)."""
        for t in self._tasks.values():
            t.cancel_event.set()

    def wait(self, msecs: int = 30000) -> bool:
        """Block until the pool is idle (for shutdown and tests)."""
        return self._pool.waitForDone(msecs)

    def shutdown(self) -> None:
        self.cancel()
        self._pool.clear()
        self._pool.waitForDone(5000)

    # --- slots (GUI thread) -------------------------------------------------------------

    def _done(self, serial: int) -> bool:
        """Forget task ``serial``; True when it is the latest one."""
        self._tasks.pop(serial, None)
        latest = serial == self._serial
        if latest:
            self.busy_changed.emit(False)
        return latest

    def _on_task_progressed(self, serial: int, fraction: float, message: str) -> None:
        if serial == self._serial:
            self.progressed.emit(fraction, message)

    def _on_task_finished(self, serial: int, response: AnalysisResponse) -> None:
        if self._done(serial):
            self.response_ready.emit(response)

    def _on_task_failed(self, serial: int, message: str) -> None:
        if self._done(serial):
            self.failed.emit(message)

    def _on_task_cancelled(self, serial: int) -> None:
        if self._done(serial):
            self.cancelled.emit()
