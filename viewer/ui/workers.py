"""Background work for the window: open, analyse, measure and plan off the GUI thread.

Follows napari's and Orange3's pattern:

- an immutable :class:`AnalysisRequest` is built on the GUI thread;
- :func:`compute` is a plain function (no Qt) that does the work, reporting progress and
  polling a ``cancelled`` callback; tests call it directly;
- :class:`TaskRunner` runs it in a :class:`~PySide6.QtCore.QThreadPool` through a
  :class:`~PySide6.QtCore.QRunnable` whose signals live on their own :class:`QObject`
  (a ``QRunnable`` is not one), and delivers the :class:`AnalysisResponse` on the GUI thread;
- a new request cancels the stale one; whatever a stale task still returns is dropped.
"""

from __future__ import annotations

import importlib
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from viewer.analysis.types import Analysis
from viewer.errors import PlanCancelled, RuntimeProbeError, ViewerError
from viewer.model.types import Model
from viewer.planning.registry import get_planner
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.whatif.edits import WhatIfEdits

#: Key of the plan measured from the real runtime in :attr:`AnalysisResponse.plans`.
MEASURED = "litert-measured"
MEASURED_LABEL = "LiteRT (measured)"


def plan_label(name: str) -> str:
    """Human name of a plan key: the registry label, or "LiteRT (measured)"."""
    if name == MEASURED:
        return MEASURED_LABEL
    try:
        return get_planner(name).label
    except ViewerError:
        return name


def _probe_module():
    """``viewer.runtime.probe`` when a colleague has written it, else None."""
    try:
        return importlib.import_module("viewer.runtime.probe")
    except ModuleNotFoundError as e:
        if e.name == "viewer.runtime.probe":
            return None
        raise


@dataclass(frozen=True)
class AnalysisRequest:
    """Everything one background run needs, fixed on the GUI thread.

    Attributes
    ----------
    path : str
        The .tflite file.
    subgraph : int
        Subgraph index to analyse.
    model : Model or None
        The already-read model (skips reading ``path`` again, e.g. when only the subgraph or
        the what-if edits changed).
    edits : WhatIfEdits or None
    planners : tuple of str or None
        Registry names to run; None runs every non-exact planner.
    alignment : int
        Offset alignment in bytes (LiteRT's default 64).
    measure : bool
        Also run the real LiteRT runtime (in a subprocess) for kernel temporaries and the
        measured arena: for the stored model and for resized inputs / batch, not for a
        storage-dtype what-if (the runtime cannot do that).
    serial : int
        Set by :class:`TaskRunner`; a response whose serial is not the latest is stale.
    """

    path: str
    subgraph: int = 0
    model: Model | None = field(default=None, compare=False)
    edits: WhatIfEdits | None = None
    planners: tuple[str, ...] | None = None
    alignment: int = DEFAULT_ALIGNMENT
    measure: bool = True
    serial: int = 0


@dataclass(frozen=True)
class AnalysisResponse:
    """The result of one :class:`AnalysisRequest`, applied on the GUI thread.

    Attributes
    ----------
    request : AnalysisRequest
    model : Model
    analysis : Analysis
        Of the (edited) subgraph, with measured kernel temporaries when the probe ran.
    plans : Mapping[str, Plan]
        Planner name -> plan, in registry order; :data:`MEASURED` when the runtime was probed.
    best : str or None
        Name of the smallest planned arena (the measured plan is not a candidate).
    probe : object or None
        The ``RuntimeProbe`` when one ran (``.ok``, ``.error``, ``.arena_bytes``, ...).
    measure_note : str
        One line: why there is no measurement, or "" when there is one.
    notes : tuple of str
        What-if notes, one line each.
    estimated : bool
        Shapes come from our own inference rather than the runtime's.
    seconds : float
        Wall time of the whole run.
    """

    request: AnalysisRequest
    model: Model
    analysis: Analysis
    plans: Mapping[str, Plan]
    best: str | None
    probe: Any = None
    measure_note: str = ""
    notes: tuple[str, ...] = ()
    estimated: bool = False
    seconds: float = 0.0


def compute(
    request: AnalysisRequest,
    progress: Callable[[float, str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> AnalysisResponse:
    """Read, (measure,) analyse and plan, as :class:`AnalysisRequest` says. No Qt.

    Parameters
    ----------
    request : AnalysisRequest
    progress : callable, optional
        ``progress(fraction in [0, 1], message)``.
    cancelled : callable, optional
        Polled between steps and by the planners; when it returns True the run stops.

    Returns
    -------
    AnalysisResponse

    Raises
    ------
    viewer.errors.ViewerError
        ModelFormatError, SubgraphError, WhatIfError, PlanningError for bad input.
    viewer.errors.PlanCancelled
        When ``cancelled()`` turned true.
    """
    from viewer.whatif.pipeline import prepare

    t0 = time.perf_counter()
    report = progress or (lambda f, m: None)
    is_cancelled = cancelled or (lambda: False)

    def check() -> None:
        if is_cancelled():
            raise PlanCancelled("cancelled: a newer request replaced this one")

    report(0.0, f"reading {request.path}")
    model = request.model
    if model is None:
        from viewer.model.reader import load_model

        model = load_model(request.path)
    model.subgraph(request.subgraph)  # SubgraphError before any slow work
    check()

    probe = None
    measure_note = ""
    prepared = None
    input_shapes = None
    edits = request.edits
    edited = edits is not None and not edits.is_empty()
    can_measure = request.measure
    if edited:
        report(0.05, "applying what-if edits")
        prepared = prepare(model, request.subgraph, edits)
        check()
        if edits.activation_dtype or edits.tensor_dtypes:
            can_measure = False
            if request.measure:
                measure_note = ("not measured: the runtime cannot store tensors in another dtype; "
                                "the what-if is planned only")
        else:  # resized inputs: the runtime itself can be measured at the new shapes
            sg_edited = prepared.analysis.subgraph
            input_shapes = {
                k: tuple(sg_edited.tensors[t].shape)
                for k, t in enumerate(model.subgraph(request.subgraph).inputs) if t >= 0
            }
    if not request.measure:
        measure_note = "not measured (measurement is off)"
    elif can_measure:
        mod = _probe_module()
        if mod is None:
            measure_note = "not measured: the LiteRT runtime probe is not available in this build"
        else:
            report(0.1, "measuring with the LiteRT runtime")
            try:
                probe = mod.probe_model(request.path, subgraph=request.subgraph,
                                        input_shapes=input_shapes)
            except ViewerError as e:
                measure_note = f"not measured: {e}"
            else:
                if not getattr(probe, "ok", False):
                    measure_note = f"not measured: {probe.error or 'the runtime failed'}"
    check()

    report(0.3, "analysing usage intervals")
    analysis = None
    notes: tuple[str, ...] = tuple(prepared.notes) if prepared is not None else ()
    estimated = prepared.estimated if prepared is not None else False
    if probe is not None and probe.ok:
        # The runtime's shapes (dynamic dimensions resolved, inputs resized) and its kernel
        # temporaries.
        try:
            analysis = _probe_module().probe_analysis(model, probe)
            notes += tuple(getattr(probe, "notes", ()) or ())
            estimated = False
        except ViewerError as e:
            measure_note = f"measured, but the runtime's tensors do not match the file: {e}"
            probe = None
    if analysis is None:
        if prepared is None:
            prepared = prepare(model, request.subgraph, edits)
        analysis = prepared.analysis
    check()

    names = list(request.planners) if request.planners is not None else default_planner_names()

    def plan_progress(f: float, msg: str) -> None:
        report(0.35 + 0.6 * f, msg)

    plans: dict[str, Plan] = dict(
        run_planners(
            analysis.problem(), names, request.alignment,
            progress=plan_progress, cancelled=is_cancelled,
        )
    )
    best = best_plan_name(plans)
    if probe is not None and probe.ok:
        try:
            measured = _probe_module().measured_plan(probe)
            offsets = analysis.resolve_alias_offsets(measured.offsets)
            missing = [u.tensor for u in analysis.usages if u.tensor not in offsets]
            if missing:
                raise RuntimeProbeError(
                    f"{request.path}: the runtime placed no bytes for tensors {missing[:5]}")
            plans[MEASURED] = measured
        except ViewerError as e:
            measure_note = f"measured, but the runtime's offsets cannot be drawn: {e}"
    report(1.0, "done")
    return AnalysisResponse(
        request, model, analysis, plans, best, probe, measure_note,
        notes, estimated, time.perf_counter() - t0,
    )


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
            sig.failed.emit(serial, str(e))
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

    def submit(self, request: AnalysisRequest) -> AnalysisRequest:
        """Cancel whatever runs and start ``request``; returns it with its serial set."""
        self.cancel()
        self._serial += 1
        req = AnalysisRequest(
            request.path, request.subgraph, request.model, request.edits, request.planners,
            request.alignment, request.measure, self._serial,
        )
        task = _Task(req, self._fn, self._signals)
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
        self._done(serial)
