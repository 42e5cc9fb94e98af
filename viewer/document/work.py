"""The document's background work, as plain functions (no Qt).

Follows napari's and Orange3's pattern:

- an immutable :class:`AnalysisRequest` (or :class:`OptimizeRequest`, :class:`ReorderRequest`)
  is built by the :class:`~viewer.document.Document`;
- :func:`compute` (:func:`compute_optimal`, :func:`compute_reorder`) does the work, reporting
  progress and polling a ``cancelled`` callback; tests call it directly;
- the window's :class:`~viewer.ui.workers.TaskRunner` runs it off the GUI thread and hands the
  response back to the document.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from viewer.analysis.types import Analysis
from viewer.errors import PlanCancelled, RuntimeProbeError, ViewerError
from viewer.model.types import Model
from viewer.planning.registry import get_planner
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.whatif.edits import WhatIfEdits

#: Key of the plan measured from the real runtime in :attr:`AnalysisResponse.plans`.
MEASURED = "litert_measured"  # the same key as `plan --measure` (viewer.runtime.probe.MEASURED_PLANNER)
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


def _probe_resident(mod):
    """The model's resident LiteRT worker (no process start per what-if), else ``mod.probe_model``."""
    try:
        from viewer.runtime.worker import probe_resident
    except ImportError:
        return mod.probe_model
    return probe_resident


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
    shape_source : str
        How a what-if's resized shapes are found: ``"auto"`` (the LiteRT runtime, then our
        inference) or ``"inferred"`` (our inference only, milliseconds: the quick estimate the
        window shows before the runtime confirms it).
    """

    path: str
    subgraph: int = 0
    model: Model | None = field(default=None, compare=False)
    edits: WhatIfEdits | None = None
    planners: tuple[str, ...] | None = None
    alignment: int = DEFAULT_ALIGNMENT
    measure: bool = True
    serial: int = 0
    shape_source: str = "auto"
    runtime: str = "litert"  # "tflm": TFLite Micro's rules and planners (viewer.document.tflm_work)


#: One analysis and its plans: ``(Analysis, {planner name: Plan}, best planner name or None)``.
View = tuple


#: How a response's ``measure_note`` starts when its kernel temporaries are estimates.
ESTIMATED_NOTE = "kernel temporaries estimated"


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
    tensor_view : View or None
        ``(analysis, plans, best)`` of the tensors alone (no kernel temporaries): the lower
        bound a planner of the file's tensors faces.
    temporaries_view : View or None
        The same with the runtime's kernel temporaries (None when none were measured).
    temporaries_shown : bool
        ``analysis``/``plans``/``best`` are the ``temporaries_view`` (else the ``tensor_view``).
    reorder : viewer.whatif.reorder.ReorderResult or None
        Set when this is a reordered what-if (operators in ``reorder.order``).
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
    tensor_view: View | None = None
    temporaries_view: View | None = None
    temporaries_shown: bool = False
    reorder: Any = None
    #: The :class:`viewer.whatif.footprint.Footprint` ``check`` counts (litert), for the budget
    #: verdict; None while shapes are only our estimate (the runtime confirms next).
    footprint: Any = None
    #: :class:`viewer.whatif.verdict.BatchGrowth` from the footprint at the next batch, as
    #: ``check`` computes it (None when there is no footprint).
    batch_growth: Any = None

    @property
    def temporaries_estimated(self) -> bool:
        """The kernel temporaries shown are estimates (a storage what-if the runtime cannot run)."""
        return self.temporaries_shown and self.measure_note.startswith(ESTIMATED_NOTE)

    @property
    def has_temporaries(self) -> bool:
        """The runtime's kernel temporaries are known (a second view exists)."""
        return self.temporaries_view is not None and bool(self.temporaries_view[0].temporaries_ops)

    def showing(self, with_temporaries: bool) -> "AnalysisResponse":
        """This response with the analysis and plans with (or without) kernel temporaries.

        Without measured temporaries there is one view only and ``self`` comes back.
        """
        if not self.has_temporaries or self.tensor_view is None:
            return self
        a, plans, best = self.temporaries_view if with_temporaries else self.tensor_view
        return dataclasses.replace(self, analysis=a, plans=plans, best=best,
                                   temporaries_shown=bool(with_temporaries))

    def with_plan(self, name: str, plan: Plan) -> "AnalysisResponse":
        """This response with ``plan`` added (as ``name``) to the view shown."""
        plans = {**dict(self.plans), name: plan}
        view = (self.analysis, plans, self.best)
        kw = {"temporaries_view": view} if self.temporaries_shown else {"tensor_view": view}
        return dataclasses.replace(self, plans=plans, **kw)


def temporary_names(probe, subgraph, position: Mapping[int, int] | None = None) -> dict[int, str]:
    """Readable names of the runtime's kernel temporaries (LiteRT leaves them unnamed).

    Parameters
    ----------
    probe : viewer.runtime.probe.RuntimeProbe
    subgraph : viewer.model.types.Subgraph
        For operator names.
    position : mapping, optional
        Original operator index -> its index in a reordered subgraph.

    Returns
    -------
    dict
        Runtime tensor id -> e.g. ``"#1 CONV_2D kernel temporary 0 (1x256x256x144 float32)"``:
        the operator (execution order), the slot in its node's ``temporaries``, shape and dtype.
    """
    slots: dict[int, int] = {}
    for node in getattr(probe, "nodes", ()) or ():
        for k, t in enumerate(node.temporaries):
            slots[t] = k
    out: dict[int, str] = {}
    for tp in probe.arena_temporaries:
        rt = probe.tensors[tp.id]
        op = tp.op if position is None else position.get(tp.op, tp.op)
        name = subgraph.operators[op].op_name if 0 <= op < len(subgraph.operators) else "?"
        shape = "x".join(str(d) for d in (rt.shape or ())) or "scalar"
        slot = slots.get(tp.id)
        tag = f"kernel temporary {slot}" if slot is not None else "kernel temporary"
        out[tp.id] = rt.name or f"#{op} {name} {tag} ({shape} {rt.dtype})"
    return out


def _plan_view(analysis: Analysis, names, alignment, progress, cancelled, span) -> View:
    lo, hi = span
    plans: dict[str, Plan] = dict(run_planners(
        analysis.problem(), names, alignment,
        progress=lambda f, m: progress(lo + (hi - lo) * f, m), cancelled=cancelled))
    return analysis, plans, best_plan_name(plans)


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
    if request.runtime == "tflm":
        from viewer.document.tflm_work import compute_tflm

        return compute_tflm(request, model, report, is_cancelled, t0)

    probe = None
    measure_note = ""
    prepared = None
    input_shapes = None
    edits = request.edits
    edited = edits is not None and not edits.is_empty()
    can_measure = request.measure
    if edited:
        report(0.05, "applying what-if edits")
        prepared = prepare(model, request.subgraph, edits, shape_source=request.shape_source)
        check()
        if request.shape_source == "inferred":
            can_measure = False
            if request.measure:
                measure_note = "estimate: shapes from our inference, not yet confirmed by the runtime"
        elif edits.activation_dtype or edits.tensor_dtypes:
            can_measure = False
            if request.measure:
                measure_note = ("not measured: the runtime cannot store tensors in another dtype; "
                                "the what-if is planned only")
        elif edits.rescale_fixed_sizes:
            can_measure = False
            if request.measure:
                measure_note = ("not measured: fixed sizes rescaled (estimated); the model as stored "
                                "cannot take the resize in the runtime")
        else:  # resized inputs: the runtime itself can be measured at the new shapes
            sg_edited = prepared.analysis.subgraph
            input_shapes = {
                k: tuple(sg_edited.tensors[t].shape)
                for k, t in enumerate(model.subgraph(request.subgraph).inputs) if t >= 0
            }
    if not request.measure:
        measure_note = "not measured (measurement is off)"
    elif not can_measure:
        pass
    elif can_measure:
        mod = _probe_module()
        if mod is None:
            measure_note = "not measured: the LiteRT runtime probe is not available in this build"
        else:
            report(0.1, "measuring with the LiteRT runtime")
            try:
                probe = _probe_resident(mod)(request.path, subgraph=request.subgraph,
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
    tensor_analysis = None
    if probe is not None and probe.ok:
        # The runtime's shapes (dynamic dimensions resolved, inputs resized) and its kernel
        # temporaries; the same tensors without them give the tensor-only lower bound.
        try:
            mod = _probe_module()
            analysis = mod.probe_analysis(model, probe)
            tensor_analysis = _analyze(mod.runtime_subgraph(model, probe), model)
            analysis = dataclasses.replace(
                analysis, temporary_names=temporary_names(probe, analysis.subgraph))
            notes += tuple(getattr(probe, "notes", ()) or ())
            estimated = False
        except ViewerError as e:
            measure_note = f"measured, but the runtime's tensors do not match the file: {e}"
            probe = None
            analysis = tensor_analysis = None
    if analysis is None:
        if prepared is None:
            prepared = prepare(model, request.subgraph, edits)
        analysis = prepared.analysis
    check()
    fp = None
    if (edited and request.measure and request.shape_source != "inferred"
            and (edits.activation_dtype or edits.tensor_dtypes)):
        # The runtime cannot store tensors in another dtype; the footprint ``check`` counts
        # keeps its kernel temporaries as estimates (measured at the file's types, rescaled), and
        # the chart draws the same arena rather than one that leaves them out.
        fp = _footprint(model, request, edits, report)
        if fp is not None and fp.analysis.temporaries_ops:
            tensor_analysis, analysis = analysis, fp.analysis
            measure_note = (f"{ESTIMATED_NOTE}: the runtime cannot store tensors in "
                            "another dtype, so they were measured at the file's types and "
                            "rescaled (im2col with its input's element size)")
    check()

    names = list(request.planners) if request.planners is not None else default_planner_names()
    with_temps = tensor_analysis is not None and bool(analysis.temporaries_ops)
    span = (0.35, 0.55) if with_temps else (0.35, 0.7)
    view = _plan_view(analysis, names, request.alignment, report, is_cancelled, span)
    plans = view[1]
    tensor_view = view
    temporaries_view = None
    if with_temps:
        temporaries_view = view
        tensor_view = _plan_view(tensor_analysis, names, request.alignment, report, is_cancelled,
                                 (0.55, 0.7))
    if probe is not None and probe.ok:
        try:
            measured = _probe_module().measured_plan(probe)
            offsets = analysis.resolve_alias_offsets(measured.offsets)
            missing = [u.tensor for u in analysis.usages if u.tensor not in offsets]
            if missing and getattr(probe, "invoked", False):
                raise RuntimeProbeError(
                    f"LiteRT sizes {len(missing)} tensor(s) during Invoke (e.g. {missing[:5]}) and "
                    "its placement of them is not recorded, so the chart shows litert's re-stated plan")
            if missing:
                raise RuntimeProbeError(
                    f"{request.path}: the runtime placed no bytes for tensors {missing[:5]}")
            for v in {id(tensor_view): tensor_view, id(view): view}.values():
                v[1][MEASURED] = measured
        except ViewerError as e:
            measure_note = f"measured, but the runtime's offsets cannot be drawn: {e}"
    if fp is None and request.shape_source != "inferred":
        fp = _footprint(model, request, edits if edited else None, report)
    growth = None if fp is None else _batch_growth(model, request, edits if edited else None, fp, report)
    report(1.0, "done")
    return AnalysisResponse(
        request, model, analysis, plans, view[2], probe, measure_note,
        notes, estimated, time.perf_counter() - t0,
        tensor_view=tensor_view, temporaries_view=temporaries_view,
        temporaries_shown=temporaries_view is not None, footprint=fp, batch_growth=growth,
    )


def _footprint(model, request: AnalysisRequest, edits, report):
    """The footprint ``check`` counts (litert), or None when it cannot be computed: in full
    (``detail``), so its terms, temporaries and lower bound are check's, word for word (the
    window's JSON export carries them: :mod:`viewer.document.budget_check`)."""
    from viewer.whatif.footprint import footprint

    report(0.72, "counting the footprint (as check does)")
    try:
        return footprint(model, request.subgraph, edits, planner="litert",
                         measure=bool(request.measure), runtime_overhead=edits is None)
    except ViewerError:
        return None


def _batch_growth(model, request: AnalysisRequest, edits, fp, report):
    """``check``'s largest-batch evidence (:func:`viewer.whatif.verdict.batch_growth`): the
    footprint at the next batch, or why there is none (no batch dimension, an operator that
    refuses it)."""
    from viewer.whatif.verdict import BatchGrowth, batch_growth

    report(0.88, "the footprint at the next batch (as check does)")
    try:
        return batch_growth(model, request.subgraph, edits, fp, planner="litert",
                            measure=bool(request.measure))
    except ViewerError as e:
        return BatchGrowth(None, f"the next batch could not be evaluated: {e}")


def _analyze(subgraph, model, temporaries=()):
    from viewer.analysis.intervals import analyze

    return analyze(subgraph, temporaries=temporaries, model=model)


@dataclass(frozen=True)
class OptimizeRequest:
    """Run the exact planner ``optimal`` on the analysis shown.

    Attributes
    ----------
    path : str
        The model file (for messages).
    analysis : Analysis
        The analysis whose planning problem is solved (with or without kernel temporaries).
    alignment : int
        Offset alignment in bytes.
    time_limit : float
        Seconds; the best plan found by then comes back with its proven bound.
    serial : int
    """

    path: str
    analysis: Analysis = field(compare=False, default=None)  # type: ignore[assignment]
    alignment: int = DEFAULT_ALIGNMENT
    time_limit: float = 30.0
    serial: int = 0


@dataclass(frozen=True)
class OptimizeResponse:
    """The plan of :class:`OptimizeRequest`: ``plan.proven_optimal``, ``plan.bound_bytes``."""

    request: OptimizeRequest
    plan: Plan


#: Registry name of the exact planner.
OPTIMAL = "optimal"


def compute_optimal(request: OptimizeRequest, progress=None, cancelled=None) -> OptimizeResponse:
    """Run ``optimal`` (:mod:`viewer.planning.optimal`) on ``request.analysis``. No Qt.

    Raises
    ------
    viewer.errors.PlanCancelled
        When ``cancelled()`` turned true.
    viewer.errors.PlanningError
    """
    plans = run_planners(request.analysis.problem(), [OPTIMAL], request.alignment,
                         progress=progress, cancelled=cancelled, time_limit=request.time_limit)
    return OptimizeResponse(request, plans[OPTIMAL])


def optimal_summary(plan: Plan) -> str:
    """"proven optimal" or "within X % of the bound" for an ``optimal`` plan."""
    if plan.proven_optimal:
        return "proven optimal"
    bound = plan.bound_bytes or 0
    gap = 100.0 * (plan.arena_bytes - bound) / plan.arena_bytes if plan.arena_bytes else 0.0
    return f"within {gap:.1f} % of the bound"


@dataclass(frozen=True)
class ReorderRequest:
    """Reorder the operators of ``base``'s subgraph to lower the peak, then plan the new order.

    Attributes
    ----------
    path : str
    base : AnalysisResponse
        The unedited subgraph as shown (with its probe when measured: the reorder then counts
        the runtime's kernel temporaries, which follow their operator).
    time_limit : float
        Seconds for :func:`viewer.whatif.reorder.reorder`.
    serial : int
    """

    path: str
    base: AnalysisResponse = field(compare=False, default=None)  # type: ignore[assignment]
    time_limit: float = 10.0
    serial: int = 0


def compute_reorder(request: ReorderRequest, progress=None, cancelled=None) -> AnalysisResponse:
    """Search an operator order (Liberis & Lane), apply it, analyse and plan it. No Qt.

    Returns
    -------
    AnalysisResponse
        Of the reordered subgraph, ``reorder`` set; the request is the base request without
        measuring (the runtime ran the stored order; its kernel temporaries move with their
        operators). No measured plan.

    Raises
    ------
    viewer.errors.PlanCancelled
    viewer.errors.WhatIfError
    """
    from viewer.whatif.reorder import apply_order, reorder

    t0 = time.perf_counter()
    report = progress or (lambda f, m: None)
    base = request.base
    model = base.model
    sg = (base.tensor_view[0] if base.tensor_view is not None else base.analysis).subgraph
    probe = base.probe if base.probe is not None and getattr(base.probe, "ok", False) else None
    temps = tuple(probe.arena_temporaries) if probe is not None else ()
    res = reorder(sg, time_limit=request.time_limit, cancelled=cancelled, temporaries=temps,
                  progress=lambda f, m: report(0.8 * f, m))
    if not res.changed:  # the stored order: its plans (and measurement) stand, nothing to replan
        report(1.0, "done")
        return dataclasses.replace(base, reorder=res, seconds=time.perf_counter() - t0)
    new_sg = apply_order(sg, res.order)
    pos = {o: k for k, o in enumerate(res.order)}
    temps_after = tuple(dataclasses.replace(t, op=pos.get(t.op, t.op)) for t in temps)
    report(0.8, "analysing the reordered operators")
    tensor_analysis = _analyze(new_sg, model)
    names = default_planner_names()
    tensor_view = _plan_view(tensor_analysis, names, base.request.alignment, report, cancelled,
                             (0.8, 0.9))
    temporaries_view = None
    if temps:
        a = _analyze(new_sg, model, temps_after)
        a = dataclasses.replace(a, temporary_names=temporary_names(probe, new_sg, pos))
        temporaries_view = _plan_view(a, names, base.request.alignment, report, cancelled,
                                      (0.9, 1.0))
    shown = temporaries_view if temporaries_view is not None else tensor_view
    req = dataclasses.replace(base.request, edits=None, measure=False)
    note = ("reordered: planned only (the runtime measured the stored order)"
            if probe is not None else "")
    report(1.0, "done")
    return AnalysisResponse(
        req, model, shown[0], shown[1], shown[2], None, note, (), False,
        time.perf_counter() - t0, tensor_view=tensor_view, temporaries_view=temporaries_view,
        temporaries_shown=temporaries_view is not None, reorder=res,
    )
