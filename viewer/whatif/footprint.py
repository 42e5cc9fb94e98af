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

from dataclasses import dataclass

from viewer.analysis.intervals import analyze
from viewer.analysis.types import Analysis, KIND_TEMPORARY
from viewer.errors import ViewerError, WhatIfError
from viewer.model.reader import load_model
from viewer.model.types import Model
from viewer.planning.registry import get_planner
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.whatif.edits import WhatIfEdits, apply_edits
from viewer.whatif.footprint_parts import (  # noqa: F401  (re-exported)
    _SUBGRAPH_KEYS, _custom_ops, _edited_runtime_subgraph, _not_measured, _probe_positions,
    _scaled_temporaries, persistent_bytes, reachable_subgraphs, signature_keys, signature_subgraph,
    unresolved_dynamic_inputs,
)
from viewer.whatif.footprint_types import (  # noqa: F401  (re-exported)
    SOURCE_ESTIMATED, SOURCE_GIVEN, SOURCE_MEASURED, SOURCE_PLANNED, SOURCES, SOURCE_UNKNOWN,
    Footprint, SubgraphArena, Term,
)


def _plan(analysis: Analysis, planner: str, time_limit: float | None) -> Plan:
    problem = analysis.problem()
    if planner == "best":
        plans = run_planners(problem, default_planner_names(), time_limit=time_limit)
        return plans[best_plan_name(plans)]
    return run_planners(problem, [planner], time_limit=time_limit)[planner]


def _plan_like_runtime(analysis: Analysis, planner: str, time_limit, probe) -> Plan:
    """``_plan``; the ``litert`` planner over the runtime's node ranges when it planned in
    several (deferred tensors placed during Invoke)."""
    if planner == "litert" and probe is not None and len(probe.node_ranges) > 1:
        return get_planner("litert").func(analysis.problem(), DEFAULT_ALIGNMENT,
                                          node_ranges=list(probe.node_ranges))
    return _plan(analysis, planner, time_limit)


def footprint(
    model: Model | str,
    subgraph_index: int = 0,
    edits: WhatIfEdits | None = None,
    *,
    planner: str = "litert",
    measure: bool = True,
    timeout: float = 60.0,
    time_limit: float | None = None,
    detail: bool = True,
    runtime_overhead: bool = False,
) -> Footprint:
    """Everything subgraph ``subgraph_index`` of ``model`` needs in anonymous memory.

    The one function behind ``plan --measure``, ``check``, ``export`` and the window's verdict.

    Parameters
    ----------
    model : Model or str
        A loaded model or a .tflite path.
    edits : WhatIfEdits, optional
        Shape edits are measured by the runtime at the new shapes (a subgraph a signature
        reaches is allocated through its runner). A storage-precision edit cannot be run by the
        runtime: the runtime is measured at the file's types and each kernel temporary is
        rescaled (:func:`_scaled_temporaries`); the arena term is then "estimated". Shapes the
        runtime refused (``--rescale-fixed-sizes``) are estimated the same way.
    planner : str
        Registry name, or ``"best"`` for the smallest non-exact plan.
    measure : bool
        Run LiteRT in a subprocess (one invocation when it deferred tensors). When the runtime
        cannot load the model, the planned arena is a lower bound and ``unknowns`` says why.
    timeout : float
        Seconds for each runtime subprocess.
    detail : bool
        False when only the terms matter (e.g. the footprint at the next batch): a measured
        ``litert`` arena is then not re-planned for display (``analysis`` is the model's
        tensors, ``plan`` the runtime's own placement).
    runtime_overhead : bool
        Also measure the runtime overhead in the probe's own process (``probe_model(...,
        overhead=True)``), when the probe runs subgraph 0 at the file's shapes;
        ``probe.overhead_grown_bytes`` then holds it (``check`` turns it into its term).

    Returns
    -------
    Footprint
        ``terms`` in bytes, each with its source; ``unknowns`` non-empty when the sum is only
        a lower bound.

    Raises
    ------
    viewer.errors.ModelFormatError, SubgraphError, WhatIfError, PlanningError
    """
    if not isinstance(model, Model):
        model = load_model(model)
    if planner != "best":
        get_planner(planner)  # unknown name: PlanningError before any work
    notes: list[str] = []
    edited = _edited(model, subgraph_index, edits, measure)
    notes.extend(edited.notes)
    kept: list = []  # the analysis of the model's own tensors, made only when needed

    def base() -> Analysis:
        if not kept:
            kept.append(analyze(edited.subgraph, model=model))
        return kept[0]

    base_plan = None  # planned over the model's tensors: only when the runtime does not answer
    unknowns = unresolved_dynamic_inputs(model, subgraph_index, edits)
    sizing = None
    storage = edits is not None and bool(edits.activation_dtype or edits.tensor_dtypes)
    shapes_estimated = bool(edited.estimated)

    analysis, plan, probe = None, None, None
    arena_source, arena_method = SOURCE_PLANNED, f"planner {planner} over the model's tensors"
    measured_arena = None
    if measure:
        from viewer.runtime.probe import probe_analysis
        from viewer.runtime.worker import probe_resident  # the model's resident LiteRT worker

        shapes = None if shapes_estimated else _probe_positions(model, subgraph_index, edited.input_shapes)
        metered = runtime_overhead and shapes is None and subgraph_index == 0
        probe = probe_resident(model.path, subgraph_index, input_shapes=shapes, timeout=timeout,
                               **({"overhead": True} if metered else {}))
        if metered and not probe.ok:  # e.g. the measurement's Invoke crashed: probe as before
            probe = probe_resident(model.path, subgraph_index, input_shapes=shapes, timeout=timeout)
        if not probe.ok:
            unknowns.append(_not_measured(model, subgraph_index, probe.error))
            notes.append(f"not measured ({probe.error}); the arena below holds the model's "
                         "tensors only: a lower bound")
            probe = None
    if probe is not None:
        try:
            if storage or shapes_estimated:
                sub = (edited.subgraph if shapes_estimated
                       else _edited_runtime_subgraph(model, probe, edited.subgraph))
                temps = _scaled_temporaries(model, subgraph_index, probe, sub, shapes_estimated)
                analysis = analyze(sub, temporaries=temps, model=model)
                plan = _plan_like_runtime(analysis, planner, time_limit, probe)
                arena_source = SOURCE_ESTIMATED
                rule = ("im2col scaled with its operator's input element size, other "
                        "temporaries kept at their measured size" if not shapes_estimated else
                        "each scaled with its operator's input bytes (elements x element size)")
                arena_method = (f"planner {plan.planner} over the edited tensors with the runtime's "
                                f"kernel temporaries rescaled ({rule})")
                notes.append("the runtime cannot run this what-if: kernel temporaries measured at "
                             + ("the stored shapes" if shapes_estimated else "the file's types")
                             + f" and rescaled ({rule}); the arena is an estimate")
            elif not detail and planner == "litert":
                from viewer.runtime.probe import measured_plan

                analysis, plan = base(), measured_plan(probe)
                measured_arena = int(probe.arena_bytes or 0)
                arena_source, arena_method = SOURCE_MEASURED, "LiteRT's arena"
            else:
                from viewer.runtime.probe import measured_plan

                analysis = probe_analysis(model, probe)
                # litert: the runtime's own placement is the plan (tests/runtime/test_replay.py:
                # our litert planner reproduces it byte for byte); no need to re-plan.
                plan = (measured_plan(probe) if planner == "litert"
                        else _plan_like_runtime(analysis, planner, time_limit, probe))
                measured_arena = int(probe.arena_bytes or 0)
                how = "LiteRT's arena after allocate_tensors()"
                if probe.invoked:
                    how += " and one Invoke on synthetic inputs (it deferred tensors to Invoke)"
                if probe.signature:
                    how += f", allocated through signature '{probe.signature}'"
                if planner == "litert":
                    arena_source, arena_method = SOURCE_MEASURED, how
                else:
                    arena_method = (f"planner {plan.planner} over the runtime's tensors and its "
                                    "measured kernel temporaries (LiteRT itself uses its own arena)")
                if probe.invoked:
                    notes.append(f"LiteRT deferred tensors to Invoke ({probe.invoke_reason}); "
                                 "measured after one invocation (the arena never shrinks "
                                 "afterwards)")
            if probe.invoked:
                from viewer.whatif.invoke_sizing import invoke_sizing

                sizing = invoke_sizing(model, subgraph_index, probe)
                if sizing is not None and sizing.value_dependent:
                    unknowns.append(
                        f"{sizing.tensors} tensor(s) are sized by input values during Invoke "
                        f"({', '.join(sizing.by_values[:3])}): the arena is the one of one "
                        "synthetic invoke; another input can need more")
            if probe.deferred:
                why = probe.invoke_error or "not placed after one invocation"
                unknowns.append(f"{len(probe.deferred)} tensor(s) LiteRT places during Invoke "
                                f"({why})")
        except ViewerError as e:
            notes.append(f"runtime result not usable ({e}); planned without kernel temporaries")
            unknowns.append(f"kernel temporaries (runtime result not usable: {e})")
            analysis, plan, probe, measured_arena = None, None, None, None
            arena_source, arena_method = SOURCE_PLANNED, f"planner {planner} over the model's tensors"
    elif measure is False:
        unknowns.append("kernel temporaries (im2col, scratch): not measured (planned only)")
        notes.append("planned only: kernel temporaries (im2col, scratch) are not included; "
                     "the runtime's arena can be several times larger")

    if analysis is None:
        analysis = base()
    if plan is None:
        base_plan = plan = _plan(analysis, planner, time_limit)
    temps = [u for u in analysis.usages if u.kind == KIND_TEMPORARY]
    largest = None
    if temps:
        t = max(temps, key=lambda u: (u.nbytes, -u.tensor))
        largest = (t.tensor, t.first_op, analysis.op_name(t.first_op), t.nbytes)

    from viewer.runtime.probe import REGION_DYNAMIC, REGION_PERSISTENT, REGION_PERSISTENT_ARENA

    dynamic = 0
    if probe is not None:  # one pass over the tensors (linear: issue 15 B9)
        persistent = sum(t.nbytes for t in probe.tensors
                         if t.region in (REGION_PERSISTENT, REGION_PERSISTENT_ARENA))
        dynamic = sum(t.nbytes for t in probe.tensors if t.region == REGION_DYNAMIC)
    else:
        persistent = persistent_bytes(analysis)

    others = _other_subgraphs(model, subgraph_index, planner, time_limit, probe, edited,
                              timeout, unknowns)
    if others:
        notes.append(f"{len(others)} more subgraph(s) reached through control flow, each with its "
                     "own arena: " + ", ".join(f"{s.index} via {s.reached_by} ({s.source})"
                                               for s in others))
    arena = measured_arena if (arena_source == SOURCE_MEASURED and measured_arena is not None) \
        else plan.arena_bytes
    if arena_source == SOURCE_PLANNED and probe is None:
        arena_method += " (kernel temporaries NOT included)"
    src = SOURCE_MEASURED if probe is not None else SOURCE_PLANNED
    terms = [Term("tensor arena", int(arena), arena_source, arena_method),
             Term("persistent (outside the arena)", int(persistent), src,
                  "the runtime's prepare-time outputs and variables" if probe is not None
                  else "our analysis of prepare-time folding and variables")]
    if dynamic:
        terms.append(Term("dynamic tensors (heap)", int(dynamic), SOURCE_MEASURED,
                          "tensors the runtime sized during Invoke, after one invocation"))
    for s in others:
        terms.append(Term(f"subgraph {s.index} arena ({s.reached_by})", s.arena_bytes, s.source,
                          "the runtime's arena of that subgraph" if s.source == SOURCE_MEASURED
                          else f"planner {planner} over its tensors"))
    return Footprint(
        planner=planner if planner != "best" else f"best ({plan.planner})",
        analysis=analysis,
        plan=plan,
        tensor_lower_bound_bytes=kept[0].lower_bound_bytes if kept else None,
        planned_tensor_arena_bytes=base_plan.arena_bytes if base_plan is not None else None,
        arena_bytes=int(arena),
        measured=probe is not None,
        measured_arena_bytes=measured_arena,
        temporaries_count=len(temps),
        temporaries_bytes=sum(u.nbytes for u in temps),
        largest_temporary=largest,
        persistent_bytes=int(persistent) + int(dynamic),
        other_subgraphs=tuple(others),
        weights_bytes=model.weights_bytes,
        notes=tuple(notes),
        terms=tuple(terms),
        unknowns=tuple(dict.fromkeys(unknowns)),
        probe=probe,
        invoke_sizing=sizing if probe is not None else None,
    )


def _edited(model: Model, subgraph_index: int, edits, measure: bool):
    """The edited subgraph. Measured: shapes propagated by LiteRT (our inference where it
    cannot run the model). Not measured: our inference first, so that a plain plan starts no
    runtime (a full allocation at 100k operators: ~3 s); where our inference fails (an
    operator whose shape rule it does not know, a fixed RESHAPE) the runtime decides, as when
    measured, so an edit is never refused on our inference's word alone."""
    if measure:
        return apply_edits(model, subgraph_index, edits)
    try:
        return apply_edits(model, subgraph_index, edits, shape_source="inferred")
    except WhatIfError:
        return apply_edits(model, subgraph_index, edits)


def _other_subgraphs(model, entry, planner, time_limit, probe, edited, timeout, unknowns):
    """Arenas of the subgraphs reached through control flow: the runtime's (as the entry's
    kernels prepared them) when the entry was measured and is subgraph 0, else planned."""
    others = []
    for idx, how in reachable_subgraphs(model, entry):
        sa = analyze(model.subgraphs[idx], model=model)
        arena, source = None, SOURCE_PLANNED
        if probe is not None and entry == 0:
            from viewer.runtime.probe import probe_model

            sp = probe_model(model.path, idx, timeout=timeout, invoke=False,
                             input_shapes=_probe_positions(model, entry, edited.input_shapes))
            if sp.ok and sp.arena_bytes is not None and not sp.deferred:
                arena, source = int(sp.arena_bytes), SOURCE_MEASURED
        if arena is None:
            arena = _plan(sa, planner, time_limit).arena_bytes
            if probe is not None:
                unknowns.append(f"kernel temporaries of subgraph {idx} ({how}): not measured")
        others.append(SubgraphArena(idx, model.subgraphs[idx].name, arena, sa.lower_bound_bytes,
                                    how, source))
    return others


def totals_apply(model: Model, subgraph_index: int, edits: WhatIfEdits | None, *,
                 planner: str = "litert", measure: bool = True) -> bool:
    """Whether :func:`footprint_terms` asks the runtime for totals only: LiteRT's own arena
    (``litert``, measured), subgraph 0 with nothing reached through control flow, shape edits
    only."""
    edits = edits if edits is not None else WhatIfEdits()
    return (planner == "litert" and measure and subgraph_index == 0
            and not (edits.activation_dtype or edits.tensor_dtypes or edits.rescale_fixed_sizes)
            and not reachable_subgraphs(model, subgraph_index))


def totals_shapes(model: Model, subgraph_index: int, edits: WhatIfEdits | None):
    """The input shapes (by position) :func:`footprint_terms` asks the totals for, or None
    when it does not ask (see :func:`totals_apply`) or the edit is refused (it says why)."""
    from viewer.whatif.apply import resolve_input_shapes

    edits = edits if edits is not None else WhatIfEdits()
    if not totals_apply(model, subgraph_index, edits):
        return None
    try:
        return _probe_positions(model, subgraph_index,
                                resolve_input_shapes(model, model.subgraph(subgraph_index), edits))
    except WhatIfError:
        return None


@dataclass(frozen=True)
class FootprintTerms:
    """The terms and unknowns of a footprint, without its analysis or plan
    (:func:`footprint_terms`)."""

    terms: tuple[Term, ...]
    unknowns: tuple[str, ...]

    @property
    def arena_term(self) -> Term:
        return self.terms[0]


def footprint_terms(model: Model, subgraph_index: int = 0, edits: WhatIfEdits | None = None, *,
                    planner: str = "litert", measure: bool = True, timeout: float = 60.0,
                    time_limit: float | None = None) -> FootprintTerms:
    """:func:`footprint`'s terms and unknowns with ``detail=False``, for a figure that needs no
    layout (``check``'s footprint at the next batch, :func:`viewer.whatif.verdict.batch_growth`).

    Where the answer is LiteRT's own arena (``litert``, measured, subgraph 0 with nothing
    reached through control flow, shape edits only) the runtime answers with its totals
    (:func:`viewer.runtime.probe.probe_totals`: the same allocation, no per-tensor answer to
    parse, no analysis); the terms are then exactly :func:`footprint`'s. Anything else, and a
    runtime that fails or defers tensors to Invoke, goes through :func:`footprint` itself, so
    its errors (an operator that rejects the shapes, named) and estimates are unchanged.

    Raises
    ------
    viewer.errors.WhatIfError, ModelFormatError, SubgraphError, PlanningError
        As :func:`footprint`.
    """
    edits = edits if edits is not None else WhatIfEdits()
    if totals_apply(model, subgraph_index, edits, planner=planner, measure=measure):
        from viewer.runtime.worker import totals_resident
        from viewer.whatif.apply import resolve_input_shapes

        sg = model.subgraph(subgraph_index)
        shapes = _probe_positions(model, subgraph_index, resolve_input_shapes(model, sg, edits))
        got = totals_resident(model.path, input_shapes=shapes, timeout=timeout)
        if got.ok and not got.unplaced and (got.num_model_tensors in (None, len(sg.tensors))):
            terms = [Term("tensor arena", int(got.arena_bytes), SOURCE_MEASURED, "LiteRT's arena"),
                     Term("persistent (outside the arena)", int(got.persistent_bytes), SOURCE_MEASURED,
                          "the runtime's prepare-time outputs and variables")]
            if got.dynamic_bytes:
                terms.append(Term("dynamic tensors (heap)", int(got.dynamic_bytes), SOURCE_MEASURED,
                                  "tensors the runtime sized during Invoke, after one invocation"))
            unknowns = unresolved_dynamic_inputs(model, subgraph_index, edits)
            return FootprintTerms(tuple(terms), tuple(dict.fromkeys(unknowns)))
    fp = footprint(model, subgraph_index, edits, planner=planner, measure=measure,
                   timeout=timeout, time_limit=time_limit, detail=False)
    return FootprintTerms(fp.terms, fp.unknowns)
