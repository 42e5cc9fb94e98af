"""A model's whole anonymous-memory picture, as ``check`` and ``plan --measure`` report it.

The tensor arena is only part of what a board must hold. LiteRT also keeps, outside that arena:

- **kernel temporaries** (im2col and other scratch) — inside the arena at run time, but invisible
  in the model file; only the runtime (:mod:`viewer.runtime.probe`) can say how big they are;
- **persistent** tensors: outputs the kernels compute once at prepare time (e.g. DEQUANTIZE of
  fp16 weights), variables and resource handles — anonymous, never reclaimable;
- one arena per **subgraph** reached through control flow (WHILE, IF, CALL_ONCE, CALL): LiteRT
  gives each subgraph its own ``ArenaPlanner`` (tflite/core/subgraph.cc).

:func:`footprint` adds these up for one entry subgraph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from viewer.analysis.intervals import analyze
from viewer.analysis.types import Analysis, KIND_TEMPORARY
from viewer.errors import ViewerError
from viewer.model.reader import load_model
from viewer.model.types import Model
from viewer.planning.registry import get_planner
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.whatif.edits import WhatIfEdits, apply_edits

#: Option keys (schema object API, snake_case) of operators that name another subgraph:
#: WHILE, IF, CALL_ONCE, CALL and the StableHLO control-flow/composite/sort/scatter options.
_SUBGRAPH_KEYS = ("cond_subgraph_index", "body_subgraph_index", "then_subgraph_index",
                  "else_subgraph_index", "init_subgraph_index", "subgraph", "subgraph_index",
                  "decomposition_subgraph_index", "branch_subgraph_indices",
                  "comparator_subgraph_index", "update_computation_subgraph_index")


@dataclass(frozen=True)
class SubgraphArena:
    """The arena of one subgraph reached through control flow.

    Attributes
    ----------
    index : int
    name : str
    arena_bytes : int
        Planned with the same planner (tensors only; no runtime measurement).
    lower_bound_bytes : int
    reached_by : str
        E.g. ``"#3 WHILE of subgraph 0"``.
    """

    index: int
    name: str
    arena_bytes: int
    lower_bound_bytes: int
    reached_by: str


@dataclass(frozen=True)
class Footprint:
    """Bytes a model needs beyond its file-backed weights, for one entry subgraph.

    Attributes
    ----------
    planner : str
        The planner whose arena counts.
    analysis : Analysis
        Of the entry subgraph; includes the runtime's kernel temporaries when measured.
    plan : Plan
        The planner's plan of ``analysis``.
    tensor_lower_bound_bytes : int
        Widest operator's breadth over the model's own tensors (no temporaries).
    planned_tensor_arena_bytes : int
        The planner's arena over the model's own tensors only.
    arena_bytes : int
        The arena that counts: the planner's arena with kernel temporaries when measured,
        else ``planned_tensor_arena_bytes``.
    measured : bool
        Kernel temporaries come from the runtime.
    measured_arena_bytes : int or None
        The runtime's own arena span (LiteRT's planner), when measured.
    temporaries_count, temporaries_bytes : int
        Kernel temporaries in the entry subgraph's arena (0 when not measured).
    largest_temporary : tuple (tensor id, operator index, op name, bytes) or None
    persistent_bytes : int
        Anonymous memory outside the arena: prepare-time folded outputs, variables, resource
        handles (the runtime's figures when measured, else our analysis').
    other_subgraphs : tuple of SubgraphArena
        Arenas of the subgraphs reached through control flow.
    weights_bytes : int
        File-backed constant buffers.
    notes : tuple of str
    """

    planner: str
    analysis: Analysis
    plan: Plan
    tensor_lower_bound_bytes: int
    planned_tensor_arena_bytes: int
    arena_bytes: int
    measured: bool
    measured_arena_bytes: int | None
    temporaries_count: int
    temporaries_bytes: int
    largest_temporary: tuple[int, int, str, int] | None
    persistent_bytes: int
    other_subgraphs: tuple[SubgraphArena, ...] = ()
    weights_bytes: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def other_subgraphs_bytes(self) -> int:
        return sum(s.arena_bytes for s in self.other_subgraphs)

    @property
    def anonymous_bytes(self) -> int:
        """Arena + other subgraphs' arenas + persistent: memory that cannot be reclaimed."""
        return self.arena_bytes + self.other_subgraphs_bytes + self.persistent_bytes


def reachable_subgraphs(model: Model, entry: int) -> list[tuple[int, str]]:
    """Subgraphs reached from ``entry`` through control-flow operators, transitively.

    Returns
    -------
    list of (subgraph index, how it is reached), in discovery order, ``entry`` excluded.
    """
    seen = {entry}
    out: list[tuple[int, str]] = []
    queue = [entry]
    while queue:
        g = queue.pop(0)
        for op in model.subgraphs[g].operators:
            for key in _SUBGRAPH_KEYS:
                v = op.options.get(key) if op.options else None
                for idx in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(idx, int) and 0 <= idx < len(model.subgraphs) and idx not in seen:
                        seen.add(idx)
                        out.append((idx, f"#{op.index} {op.op_name} of subgraph {g}"))
                        queue.append(idx)
    return out


def persistent_bytes(analysis: Analysis) -> int:
    """Bytes of the tensors our analysis puts outside the arena but in anonymous memory:
    prepare-time folded outputs, variables and resource handles (not mapped constants)."""
    sg = analysis.subgraph
    return int(sum(sg.tensors[k].nbytes for k, why in analysis.outside.items()
                   if k < len(sg.tensors) and ("persistent" in why or "variable" in why
                                               or "resource" in why)))


def _plan(analysis: Analysis, planner: str, time_limit: float | None) -> Plan:
    problem = analysis.problem()
    if planner == "best":
        plans = run_planners(problem, default_planner_names(), time_limit=time_limit)
        return plans[best_plan_name(plans)]
    return run_planners(problem, [planner], time_limit=time_limit)[planner]


def footprint(
    model: Model | str,
    subgraph_index: int = 0,
    edits: WhatIfEdits | None = None,
    *,
    planner: str = "litert",
    measure: bool = True,
    timeout: float = 60.0,
    time_limit: float | None = None,
) -> Footprint:
    """Everything subgraph ``subgraph_index`` of ``model`` needs in anonymous memory.

    Parameters
    ----------
    model : Model or str
        A loaded model or a .tflite path.
    edits : WhatIfEdits, optional
        Shape edits are measured at the new shapes; a storage-precision edit cannot be run by
        the runtime, so it is planned without kernel temporaries (a note says so).
    planner : str
        Registry name, or ``"best"`` for the smallest non-exact plan.
    measure : bool
        Run LiteRT in a subprocess for the kernel temporaries and persistent sizes. When the
        runtime cannot load the model, falls back to planning with a note.
    timeout : float
        Seconds for the runtime subprocess.

    Raises
    ------
    viewer.errors.ModelFormatError, SubgraphError, WhatIfError, PlanningError
    """
    if not isinstance(model, Model):
        model = load_model(model)
    if planner != "best":
        get_planner(planner)  # unknown name: PlanningError before any work
    notes: list[str] = []
    edited = apply_edits(model, subgraph_index, edits)
    notes.extend(edited.notes)
    base = analyze(edited.subgraph, model=model)
    base_plan = _plan(base, planner, time_limit)

    analysis, plan, probe = base, base_plan, None
    if measure and edits is not None and (edits.activation_dtype or edits.tensor_dtypes):
        notes.append("storage-precision what-if: the runtime cannot run it, so kernel temporaries "
                     "are not measured (planned arena of the model's tensors only)")
        measure = False
    if measure:
        from viewer.runtime.probe import probe_analysis
        from viewer.runtime.worker import probe_resident  # the model's resident LiteRT worker

        shapes = dict(getattr(edited, "input_shapes", None) or {}) or None
        probe = probe_resident(model.path, subgraph_index, input_shapes=shapes, timeout=timeout)
        if not probe.ok:
            notes.append(f"not measured ({probe.error}); kernel temporaries are missing, "
                         "the arena may be larger on the device")
            probe = None
        else:
            try:
                analysis = probe_analysis(model, probe)
                plan = _plan(analysis, planner, time_limit)
            except ViewerError as e:
                notes.append(f"runtime result not usable ({e}); planned without kernel temporaries")
                analysis, plan, probe = base, base_plan, None
    elif not notes or "not measured" not in notes[-1]:
        notes.append("planned only: kernel temporaries (im2col, scratch) are not included; "
                     "the runtime's arena can be several times larger")

    temps = [u for u in analysis.usages if u.kind == KIND_TEMPORARY]
    largest = None
    if temps:
        t = max(temps, key=lambda u: (u.nbytes, -u.tensor))
        largest = (t.tensor, t.first_op, analysis.op_name(t.first_op), t.nbytes)

    if probe is not None:
        persistent = sum(t.nbytes for t in probe.tensors
                         if t.id in probe.outside and "persistent" in probe.outside[t.id])
    else:
        persistent = persistent_bytes(analysis)

    others = []
    for idx, how in reachable_subgraphs(model, subgraph_index):
        sa = analyze(model.subgraphs[idx], model=model)
        p = _plan(sa, planner, time_limit)
        others.append(SubgraphArena(idx, model.subgraphs[idx].name, p.arena_bytes,
                                    sa.lower_bound_bytes, how))
    if others:
        notes.append(f"{len(others)} more subgraph(s) reached through control flow, each with its "
                     "own arena (planned, not measured): "
                     + ", ".join(f"{s.index} via {s.reached_by}" for s in others))

    return Footprint(
        planner=plan.planner if planner != "best" else f"best ({plan.planner})",
        analysis=analysis,
        plan=plan,
        tensor_lower_bound_bytes=base.lower_bound_bytes,
        planned_tensor_arena_bytes=base_plan.arena_bytes,
        arena_bytes=plan.arena_bytes,
        measured=probe is not None,
        measured_arena_bytes=int(probe.arena_bytes) if probe is not None and probe.arena_bytes is not None else None,
        temporaries_count=len(temps),
        temporaries_bytes=sum(u.nbytes for u in temps),
        largest_temporary=largest,
        persistent_bytes=int(persistent),
        other_subgraphs=tuple(others),
        weights_bytes=model.weights_bytes,
        notes=tuple(notes),
    )
