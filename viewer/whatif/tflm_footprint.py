"""What a TFLite Micro build needs: the head a planner gives, the runtime's tail, and the
``tensor_arena_size`` to compile in; and why it differs from LiteRT's arena.

Terms of ``tensor_arena_size`` (bytes), each measured by TFLM's recording allocator when the
``tflite-micro`` package is installed and loads the model:

- **head**: the planned tensors and kernel scratch buffers (``GetMaximumMemorySize``), from
  the chosen planner over TFLM's problem (:func:`viewer.analysis.tflm.tflm_problem`);
- **tail**: persistent allocations (tensor structs, quantization parameters, kernels'
  persistent buffers, variables), measured on this 64-bit host: a 32-bit MCU's structs are
  smaller, so this is an upper bound there;
- **prepare-time extra**: the planner's and allocation info's bookkeeping live in the head
  during ``CommitStaticMemoryPlan``; when that exceeds the head the arena must be larger (the
  smallest ``arena_size`` TFLM accepts, bisected, minus head and tail);
- **alignment margin**: 16 bytes, because ``MicroAllocator`` aligns the arena's start up and its
  end down to ``MicroArenaBufferAlignment()`` (16); 0 when the array is ``alignas(16)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from viewer.analysis.tflm import (
    TFLM_ALIGNMENT, TflmProblem, align16, analyze_tflm, offline_aliases, tflm_problem,
)
from viewer.analysis.types import Analysis
from viewer.model.types import Model
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.planning.types import Plan
from viewer.runtime.tflm_probe import (
    NOT_MEASURED_NOTE, REFERENCE_KERNELS_NOTE, TflmMeasurement, measure_tflm,
)

#: Bytes lost when the arena array is not 16-byte aligned (start aligned up, end down).
ALIGNMENT_MARGIN = TFLM_ALIGNMENT


@dataclass(frozen=True)
class TflmFootprint:
    """TFLM's arena for one model (see the module docstring for the terms; all bytes).

    Attributes
    ----------
    head_bytes : int
        The chosen planner's head over TFLM's problem (measured scratch included when measured).
    tail_bytes, prepare_extra_bytes : int or None
        None when not measured.
    tensor_arena_size_bytes : int or None
        head + tail + prepare-time extra + alignment margin, rounded up to 16; None when not
        measured (a number without the tail would be falsely reassuring).
    """

    model: Model
    problem: TflmProblem
    analysis: Analysis
    plans: dict[str, Plan]
    planner: str
    head_bytes: int
    measurement: TflmMeasurement | None
    tail_bytes: int | None = None
    prepare_extra_bytes: int | None = None
    margin_bytes: int = ALIGNMENT_MARGIN
    notes: tuple[str, ...] = field(default=())

    @property
    def measured(self) -> bool:
        return self.measurement is not None and self.measurement.ok

    @property
    def tensor_arena_size_bytes(self) -> int | None:
        if self.tail_bytes is None:
            return None
        return align16(self.head_bytes + self.tail_bytes + (self.prepare_extra_bytes or 0)) + self.margin_bytes


def edited_model(model: Model, subgraph) -> Model:
    """``model`` with subgraph 0 replaced by ``subgraph`` (a what-if's rewrite)."""
    if subgraph is None or subgraph is model.subgraphs[0]:
        return model
    return dataclasses.replace(model, subgraphs=(subgraph, *model.subgraphs[1:]))


def tflm_footprint(model: Model, *, planner: str = "tflm_greedy", planners=None, measure: bool = True,
                   edited: bool = False, timeout: float = 120.0, time_limit: float | None = None,
                   min_arena: bool = True) -> TflmFootprint:
    """Plan ``model`` under TFLM's rules and, with ``measure``, run TFLM for scratch and tail.

    Parameters
    ----------
    planner : str
        Whose head counts: ``tflm_greedy`` (what TFLM does), ``best`` (the smallest of
        ``planners``) or any registered planner (run with 16-byte alignment).
    planners : list of str, optional
        Planners to run (default: every non-exact one for the tflm runtime, plus ``planner``).
    edited : bool
        The model is a what-if rewrite: TFLM can only measure the stored file, so nothing is
        measured (said in ``notes``).

    Raises
    ------
    viewer.errors.PlanningError
        Unknown planner.
    """
    notes: list[str] = []
    meas = None
    if measure and edited:
        notes.append(f"TFLM measures the model as stored, not a what-if: {NOT_MEASURED_NOTE}")
    elif measure:
        meas = measure_tflm(model, timeout=timeout, min_arena=min_arena)
        if not meas.ok:
            notes.append(meas.error if NOT_MEASURED_NOTE in meas.error
                         else f"{meas.error}; planned numbers only: {NOT_MEASURED_NOTE}")
    elif not measure:
        notes.append(f"TFLM not run: {NOT_MEASURED_NOTE}")
    ok = meas is not None and meas.ok
    scratch = meas.scratch if ok else ()
    if ok and not meas.hooks:
        notes.append("scratch buffers not measured (TFLM build without the expected symbols)")
    problem = tflm_problem(model, scratch)
    if edited and problem.offline:
        # The stored offline plan was made for the stored sizes: a what-if (a re-export) needs
        # a new one, so every tensor is planned online (keeping it would alias resized tensors).
        problem = tflm_problem(model, scratch, offline_offsets=[-1] * problem.tensor_count)
        notes.append("the model's offline plan (OfflineMemoryAllocation) was made for its stored "
                     "sizes, so under a what-if every tensor is planned online")
    analysis = analyze_tflm(model, scratch, problem=problem)
    names = list(planners) if planners is not None else default_planner_names(runtime="tflm")
    if planner != "best" and planner not in names:
        names.append(planner)
    if "tflm_greedy" not in names:
        names.insert(0, "tflm_greedy")
    if problem.offline:
        notes.append(f"{len(problem.offline)} tensors planned offline (OfflineMemoryAllocation): "
                     "tflm_greedy keeps their offsets as TFLM does; the other planners plan every "
                     "tensor online")
        alias = offline_alias_note(problem)
        if alias:
            notes.append(alias)
    # verify_plan accepts the overlaps the model's own offline plan makes (TFLM takes it as given).
    plans = run_planners(problem, names, TFLM_ALIGNMENT, time_limit=time_limit)
    plans = {n: plans[n] for n in dict.fromkeys(["tflm_greedy", *names])}
    chosen = best_plan_name(plans) if planner == "best" else planner
    head = plans[chosen].arena_bytes
    tail = extra = None
    if ok:
        notes.append(REFERENCE_KERNELS_NOTE)
        tail = meas.tail_bytes
        if meas.hooks and plans["tflm_greedy"].arena_bytes != meas.head_bytes:
            notes.append(f"tflm_greedy predicts a head of {plans['tflm_greedy'].arena_bytes:,d} B but "
                         f"TFLM measured {meas.head_bytes:,d} B; the larger counts")
            if chosen == "tflm_greedy":
                head = max(head, meas.head_bytes)
        probe = meas
        if chosen != "tflm_greedy":
            probe = _measure_offline(model, plans[chosen], problem, timeout)
            if probe is not None and probe.ok:
                head, tail = probe.head_bytes, probe.tail_bytes
                notes.append(f"head from planner {chosen}, measured by TFLM on a copy with that plan "
                             "written in (arena-viewer offline-plan writes it)")
            else:
                probe = meas
                notes.append(f"head from planner {chosen}: TFLM uses it only when it is written into "
                             "the model (arena-viewer offline-plan); prepare-time extra counted as the "
                             "stored model needs it")
        if probe.min_arena_bytes is not None:
            need = probe.min_arena_bytes - probe.tail_bytes  # what the head section must hold
            extra = max(0, need - max(head, probe.head_bytes))
    if not ok and scratch == ():
        notes.append("kernel scratch buffers are not included in the planned head")
    npu = _npu_scratch(model, problem)
    if npu:
        notes.append("Ethos-U (Vela) scratch tensors are arena tensors under TFLM, counted in the head: "
                     + ", ".join(f"{n} {s:,d} B" + (f" at offline offset {o}" if o is not None else "")
                                 for n, s, o in npu))
    return TflmFootprint(model, problem, analysis, plans, chosen, head, meas, tail, extra,
                         ALIGNMENT_MARGIN, tuple(notes))


def offline_alias_note(problem: TflmProblem) -> str:
    """One line naming the tensors the model's offline plan puts over the same bytes while
    live together ('' when none): TFLM's plan, not an error, and why the lower bound is
    below the naive sum of those tensors."""
    pairs = offline_aliases(problem)
    if not pairs:
        return ""
    ids = list(dict.fromkeys(i for pair in pairs for i in pair))
    names = [_short(problem.names.get(i, f"tensor {i}")) for i in ids]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return (f"the model's offline plan places {shown} over shared bytes while they are live "
            "together (Vela does so on purpose for scratch and scratch_fast); TFLM takes that "
            "plan as given, so tflm_greedy keeps it and the lower bound counts those bytes once")


def _short(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else "…" + name[-(limit - 1):]


def _measure_offline(model: Model, plan: Plan, problem: TflmProblem, timeout: float):
    """TFLM's measurement of a temporary copy of ``model`` with ``plan`` written offline."""
    import os
    import tempfile

    from viewer.errors import ViewerError
    from viewer.model.offline_plan import offline_planned_bytes
    from viewer.model.reader import load_model

    offsets = [-1] * problem.tensor_count
    for b in problem.buffers:
        if b.id < problem.tensor_count:
            offsets[b.id] = int(plan.offsets[b.id])
    with tempfile.TemporaryDirectory(prefix="arena-viewer-tflm-") as tmp:
        dst = os.path.join(tmp, "offline.tflite")
        try:
            with open(dst, "wb") as f:  # a private temporary folder
                f.write(offline_planned_bytes(model.path, offsets, len(model.subgraphs)))
            return measure_tflm(load_model(dst), timeout=timeout, min_arena=True)
        except (ViewerError, OSError):
            return None


def _npu_scratch(model: Model, problem: TflmProblem) -> list[tuple[str, int, int | None]]:
    """(name, bytes, offline offset) of the tensors an ``ethos-u`` operator reads that nothing writes."""
    g = model.subgraphs[0]
    produced = {t for op in g.operators for t in op.outputs}
    sizes = {b.id: b.size for b in problem.buffers}
    out = []
    for op in g.operators:
        if op.op_name.lower() != "ethos-u":
            continue
        for t in op.inputs:
            if 0 <= t < len(g.tensors) and t in sizes and t not in produced and t not in g.inputs:
                out.append((g.tensors[t].name, sizes[t], problem.offline.get(t)))
    return out


def arena_terms(fp: TflmFootprint) -> list[tuple[str, int | None]]:
    """(label, bytes) per term of ``tensor_arena_size``, the sum last (None: not measured)."""
    n_scratch = sum(1 for b in fp.problem.buffers if b.id >= fp.problem.tensor_count)
    what = (f"{n_scratch} measured scratch buffer{'s' if n_scratch != 1 else ''} included" if fp.measured
            else "scratch NOT included")
    rows: list[tuple[str, int | None]] = [(f"head: planned by {fp.planner} ({what})", fp.head_bytes)]
    if fp.tail_bytes is None:
        rows.append((f"+ tail (persistent): {NOT_MEASURED_NOTE}", None))
        rows.append(("= tensor_arena_size: unknown", None))
        return rows
    rows.append(("+ tail (persistent: structs, quantization, kernel buffers; 64-bit host)", fp.tail_bytes))
    if fp.prepare_extra_bytes:
        rows.append(("+ prepare-time extra (planning bookkeeping above the head)", fp.prepare_extra_bytes))
    rows.append((f"+ alignment margin (arena array not alignas({TFLM_ALIGNMENT}))", fp.margin_bytes))
    rows.append(("= tensor_arena_size to compile in", fp.tensor_arena_size_bytes))
    return rows


@dataclass(frozen=True)
class Difference:
    """One reason LiteRT's and TFLM's arenas differ (bytes; None where it does not apply)."""

    what: str
    litert: str
    tflm: str
    bytes: int | None
    reason: str


def compare_runtimes(fp: TflmFootprint) -> tuple[dict, list[Difference]]:
    """LiteRT's arena beside TFLM's for the same model, with the reason for each difference.

    Both sides plan the model's own tensors (subgraph 0; kernel temporaries/scratch apart):
    LiteRT with its ``litert`` planner under its rules (:mod:`viewer.analysis.intervals`, 64-byte
    offsets), TFLM with ``tflm_greedy`` under TFLM's rules. The differences are measured one
    rule at a time on TFLM's problem: the graph inputs held to the end as LiteRT does; the
    tensors LiteRT keeps out of its arena (folded, persistent) that TFLM plans in its head;
    the greedy planner against the best plan found under TFLM's rules.

    Returns
    -------
    (summary, differences)
        ``summary``: ``litert_arena_bytes``, ``tflm_head_bytes``, ``tflm_tail_bytes``,
        ``tflm_total_bytes`` (None when not measured), ``tflm_best_head_bytes``.
    """
    from viewer.analysis.intervals import analyze
    from viewer.analysis.problem import Buffer

    model = fp.model
    g = model.subgraphs[0]
    la = analyze(g, model=model)
    lplan = run_planners(la.problem(), ["litert"])["litert"]
    # the same offline plan as fp's problem (none under a what-if), tensors only
    p0 = tflm_problem(model, (), offline_offsets=None if fp.problem.offline else [-1] * fp.problem.tensor_count)
    head0 = run_planners(p0, ["tflm_greedy"], TFLM_ALIGNMENT)["tflm_greedy"].arena_bytes
    end = max((b.last for b in p0.buffers), default=0)
    ins = set(g.inputs)
    held = dataclasses.replace(p0, buffers=tuple(
        Buffer(b.id, b.first, end if b.id in ins else b.last, b.size) for b in p0.buffers))
    input_delta = p0.lower_bound() - held.lower_bound()
    in_arena = {u.tensor for u in la.usages}
    extra = [b for b in p0.buffers if b.id < len(g.tensors) and b.id not in in_arena]
    why: dict[str, int] = {}
    for b in extra:
        prod = next((op.op_name for op in g.operators if b.id in op.outputs), "no producer")
        key = f"{prod} outputs: {la.outside.get(b.id, 'not in its arena')}"
        why[key] = why.get(key, 0) + b.size
    best = min(fp.plans.values(), key=lambda p: (p.arena_bytes, not p.proven_optimal))
    greedy = fp.plans["tflm_greedy"].arena_bytes
    scratch = sum(b.size for b in fp.problem.buffers if b.id >= fp.problem.tensor_count)
    diffs = [
        Difference("graph input", "held to the end", "freed after its last use", input_delta,
                   "TFLM's scopes end a graph input at its last consumer (micro_allocation_info.cc); "
                   "LiteRT never frees it (arena_planner.cc)"),
        Difference("tensors outside LiteRT's arena", "outside (persistent/folded)", "in the head",
                   sum(b.size for b in extra),
                   "; ".join(f"{k} {v:,d} B" for k, v in sorted(why.items(), key=lambda kv: -kv[1])[:3])
                   or "none"),
        Difference("alignment", "64-byte offsets", "sizes rounded to 16 B", None,
                   "MicroArenaBufferAlignment() = 16 vs kDefaultTensorAlignment = 64"),
        Difference("planner", "litert (ArenaPlanner)", fp.planner, greedy - best.arena_bytes,
                   f"tflm_greedy {greedy:,d} B vs {best.planner} {best.arena_bytes:,d} B under TFLM's rules"
                   + ("" if best.proven_optimal else " (best found, not proven optimal)")),
        Difference("kernel scratch", "kernel temporaries (LiteRT kernels)", "scratch (TFLM reference kernels)",
                   scratch if fp.measured else None,
                   "different kernels request different scratch" if fp.measured else NOT_MEASURED_NOTE),
        Difference("tail", "none in the arena", "persistent tail", fp.tail_bytes,
                   "TfLiteEvalTensor structs, quantization data, kernels' persistent buffers, "
                   "variables" if fp.tail_bytes is not None else NOT_MEASURED_NOTE),
    ]
    summary = {
        "litert_arena_bytes": lplan.arena_bytes,
        "litert_lower_bound_bytes": la.lower_bound_bytes,
        "tflm_head_tensors_only_bytes": head0,
        "tflm_head_bytes": fp.head_bytes,
        "tflm_tail_bytes": fp.tail_bytes,
        "tflm_total_bytes": None if fp.tail_bytes is None else fp.head_bytes + fp.tail_bytes,
        "tflm_best_head_bytes": best.arena_bytes,
        "tflm_best_planner": best.planner,
    }
    return summary, diffs
