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
from viewer.errors import ViewerError, WhatIfError
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
        The runtime's arena of that subgraph when measured, else planned with the same
        planner (tensors only).
    lower_bound_bytes : int
    reached_by : str
        E.g. ``"#3 WHILE of subgraph 0"``.
    source : str
        ``"measured"`` (the runtime's arena of that subgraph as its caller prepared it) or
        ``"planned"`` (its tensors only).
    """

    index: int
    name: str
    arena_bytes: int
    lower_bound_bytes: int
    reached_by: str
    source: str = "planned"


#: Where a term's bytes come from.
SOURCE_MEASURED = "measured"  # read back from the runtime (or the model file, for weights)
SOURCE_ESTIMATED = "estimated"  # computed from a measurement by a stated rule
SOURCE_PLANNED = "planned"  # one of our planners over known tensors
SOURCE_GIVEN = "given"  # given by the user (runtime overhead)
SOURCE_UNKNOWN = "unknown"  # not measured: 0 B counted, and an unknown says so
SOURCES = (SOURCE_MEASURED, SOURCE_ESTIMATED, SOURCE_PLANNED, SOURCE_GIVEN, SOURCE_UNKNOWN)


@dataclass(frozen=True)
class Term:
    """One term of the footprint sum.

    Attributes
    ----------
    name : str
        E.g. ``"tensor arena"``, ``"persistent"``, ``"subgraph 2 arena"``.
    bytes : int
    source : str
        One of :data:`SOURCES`.
    method : str
        One phrase: how it was measured, estimated or planned.
    counted : bool
        False for a term shown but not added (weights mapped from the file).
    """

    name: str
    bytes: int
    source: str
    method: str = ""
    counted: bool = True

    def as_dict(self) -> dict:
        return {"name": self.name, "bytes": int(self.bytes), "source": self.source,
                "method": self.method, "counted": self.counted}


@dataclass(frozen=True)
class Footprint:
    """Bytes a model needs beyond its file-backed weights, for one entry subgraph.

    Attributes
    ----------
    planner : str
        The planner whose arena counts.
    analysis : Analysis
        Of the entry subgraph; includes the runtime's kernel temporaries when measured (or
        their estimates under a storage what-if).
    plan : Plan
        The planner's plan of ``analysis``.
    tensor_lower_bound_bytes : int
        Widest operator's breadth over the model's own tensors (no temporaries).
    planned_tensor_arena_bytes : int or None
        The planner's arena over the model's own tensors only (None when the runtime
        answered: not planned).
    arena_bytes : int
        The arena that counts (the ``tensor arena`` term): the runtime's own arena when
        measured with the ``litert`` planner, else the planner's arena (kernel temporaries
        included when measured or estimated).
    measured : bool
        Kernel temporaries come from the runtime (possibly rescaled: see ``arena_source``).
    measured_arena_bytes : int or None
        The runtime's own arena span (LiteRT's planner), when measured at these dtypes.
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
    terms : tuple of Term
        The arena, persistent and other subgraphs' terms, each with its source.
    unknowns : tuple of str
        What could not be counted, one phrase each (e.g. a custom op the runtime cannot load,
        an unresolved dynamic dimension, kernel temporaries not measured). When non-empty the
        sum is a lower bound: a verdict can only be "does not fit" or "cannot tell".
    probe : RuntimeProbe or None
        The runtime's answer the terms come from.
    """

    planner: str
    analysis: Analysis
    plan: Plan
    tensor_lower_bound_bytes: int
    planned_tensor_arena_bytes: int | None
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
    terms: tuple[Term, ...] = ()
    unknowns: tuple[str, ...] = ()
    probe: object = field(default=None, compare=False, repr=False)
    #: :class:`viewer.whatif.invoke_sizing.InvokeSizing` when LiteRT sized tensors during Invoke
    #: (the arena is then the one of one synthetic invoke), else None.
    invoke_sizing: object = None

    @property
    def other_subgraphs_bytes(self) -> int:
        return sum(s.arena_bytes for s in self.other_subgraphs)

    @property
    def anonymous_bytes(self) -> int:
        """Arena + other subgraphs' arenas + persistent: memory that cannot be reclaimed."""
        return self.arena_bytes + self.other_subgraphs_bytes + self.persistent_bytes

    @property
    def arena_term(self) -> Term:
        return self.terms[0]

    @property
    def temporaries_included(self) -> bool:
        """The arena term holds the kernel temporaries (measured or estimated)."""
        return self.arena_term.source in (SOURCE_MEASURED, SOURCE_ESTIMATED) or self.measured

    @property
    def complete(self) -> bool:
        """Nothing unknown: the sum is the footprint, not a lower bound."""
        return not self.unknowns


def reachable_subgraphs(model: Model, entry: int) -> list[tuple[int, str]]:
    """Subgraphs reached from ``entry`` through control-flow operators, transitively.

    Returns
    -------
    list of (subgraph index, how it is reached), in discovery order, ``entry`` excluded.
    """
    seen = {entry}
    out: list[tuple[int, str]] = []
    if len(model.subgraphs) <= 1:
        return out  # nothing to reach (a 100k-operator scan of every option otherwise: ~0.5 s)
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



def signature_subgraph(model: Model, key: str) -> int:
    """The subgraph index signature ``key`` runs.

    Raises
    ------
    viewer.errors.SubgraphError
        No signature of that name (the message lists the keys).
    """
    from viewer.errors import SubgraphError

    for sig in model.signatures:
        if sig.key == key:
            return int(sig.subgraph_index)
    keys = ", ".join(f"'{s.key}' (subgraph {s.subgraph_index})" for s in model.signatures)
    raise SubgraphError(f"{model.path}: no signature {key!r}; "
                        + (f"the signatures are {keys}" if keys else "the model has no signatures"))


def signature_keys(model: Model, subgraph_index: int) -> tuple[str, ...]:
    """Keys of the signatures whose runner runs ``subgraph_index``."""
    return tuple(s.key for s in model.signatures if s.subgraph_index == subgraph_index)


def unresolved_dynamic_inputs(model: Model, subgraph_index: int, edits: WhatIfEdits | None) -> list[str]:
    """One phrase per graph input with a dynamic dimension other than dimension 0 (the batch)
    that ``edits.input_shapes`` does not set: the file's shape there is only a placeholder."""
    from viewer.whatif.apply import _input_tensor

    sg = model.subgraph(subgraph_index)
    given = set()
    for key in (edits.input_shapes if edits is not None else {}) or {}:
        try:
            given.add(_input_tensor(model, sg, key))
        except ViewerError:
            pass
    inputs = [t for t in sg.inputs if t >= 0]
    out = []
    for t in inputs:
        ten = sg.tensors[t]
        sig = tuple(ten.shape_signature or ())
        dyn = [k for k, d in enumerate(sig) if d == -1 and k > 0]
        if not dyn or t in given:
            continue
        example = "x".join("1" if (k == 0 and d == -1) else ("?" if d == -1 else str(d))
                           for k, d in enumerate(sig))
        key = "" if len(inputs) == 1 else f"{ten.name}="
        out.append(f"input '{ten.name}' has dynamic dimension(s) {dyn} (shape_signature "
                   f"{list(sig)}): the file's {'x'.join(map(str, ten.shape))} is a placeholder; "
                   f"give --input-shape {key}{example}")
    return out


def _probe_positions(model: Model, subgraph_index: int, input_shapes) -> dict[int, tuple] | None:
    """``{tensor index: shape}`` -> ``{input position: shape}`` as the probe takes them."""
    if not input_shapes:
        return None
    pos = {t: k for k, t in enumerate(t for t in model.subgraph(subgraph_index).inputs if t >= 0)}
    return {pos[t]: tuple(s) for t, s in input_shapes.items() if t in pos}


def _custom_ops(model: Model, subgraph_index: int) -> list[str]:
    names = []
    for op in model.subgraph(subgraph_index).operators:
        if getattr(op, "custom_code", None) or op.op_name.startswith("CUSTOM"):
            n = getattr(op, "custom_code", None) or op.op_name
            if n not in names:
                names.append(str(n))
    return names


def _not_measured(model: Model, subgraph_index: int, error: str) -> str:
    customs = _custom_ops(model, subgraph_index)
    why = (f"custom op{'s' if len(customs) > 1 else ''} {', '.join(repr(c) for c in customs[:3])} "
           "that LiteRT cannot load" if customs and ("custom op" in error or "Didn't find" in error
                                                    or "Encountered unresolved" in error)
           else error.split(": ", 1)[-1][:160])
    return f"the runtime's arena and kernel temporaries (not measured: {why})"


def _scaled_temporaries(model: Model, subgraph_index: int, probe, edited_sg, shapes_changed: bool):
    """The runtime's arena temporaries, rescaled to the edited tensors.

    Rules: a temporary that copies its operator's input in the input's type (im2col,
    :func:`viewer.ops.scale_temporary`) scales with that input's element size; when the shapes
    were estimated too, every temporary also scales with its operator's input element count.
    Any other temporary keeps its measured size.
    """
    import math

    from viewer.analysis.types import Temporary
    from viewer.model.dtypes import BITS
    from viewer.ops import scale_temporary

    ops = model.subgraph(subgraph_index).operators
    out = []
    for tp in probe.arena_temporaries:
        op = ops[tp.op] if tp.op is not None and tp.op < len(ops) else None
        if op is None or not op.inputs or op.inputs[0] < 0:
            out.append(tp)
            continue
        x = op.inputs[0]
        rt_in = probe.tensor(x)
        new_in = edited_sg.tensors[x]
        n = scale_temporary(op, probe.tensor(tp.id).dtype, tp.nbytes, rt_in.dtype,
                            BITS.get(rt_in.dtype, 0), BITS.get(new_in.dtype, 0))
        if shapes_changed and rt_in.shape:
            old_e, new_e = math.prod(rt_in.shape), math.prod(new_in.shape)
            if old_e > 0:
                n = -(-n * new_e // old_e)
        out.append(Temporary(tp.id, tp.op, int(n), tp.name))
    return tuple(out)


def _edited_runtime_subgraph(model: Model, probe, edited_sg):
    """The runtime's subgraph (its shapes) with the edited dtypes and their bytes."""
    import dataclasses

    from viewer.model.dtypes import BITS, nbytes
    from viewer.runtime.probe import runtime_subgraph

    rsg = runtime_subgraph(model, probe)
    tensors = []
    for t, e in zip(rsg.tensors, edited_sg.tensors):
        if e.dtype != t.dtype and not t.is_constant and e.dtype in BITS:
            t = dataclasses.replace(t, dtype=e.dtype, nbytes=nbytes(e.dtype, t.shape))
        tensors.append(t)
    return dataclasses.replace(rsg, tensors=tuple(tensors))


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
    base = analyze(edited.subgraph, model=model)
    base_plan = None  # planned over the model's tensors: only when the runtime does not answer
    unknowns = unresolved_dynamic_inputs(model, subgraph_index, edits)
    sizing = None
    storage = edits is not None and bool(edits.activation_dtype or edits.tensor_dtypes)
    shapes_estimated = bool(edited.estimated)

    analysis, plan, probe = base, None, None
    arena_source, arena_method = SOURCE_PLANNED, f"planner {planner} over the model's tensors"
    measured_arena = None
    if measure:
        from viewer.runtime.probe import probe_analysis
        from viewer.runtime.worker import probe_resident  # the model's resident LiteRT worker

        shapes = None if shapes_estimated else _probe_positions(model, subgraph_index, edited.input_shapes)
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

                plan = measured_plan(probe)
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
            analysis, plan, probe, measured_arena = base, None, None, None
            arena_source, arena_method = SOURCE_PLANNED, f"planner {planner} over the model's tensors"
    elif measure is False:
        unknowns.append("kernel temporaries (im2col, scratch): not measured (planned only)")
        notes.append("planned only: kernel temporaries (im2col, scratch) are not included; "
                     "the runtime's arena can be several times larger")

    if plan is None:
        base_plan = plan = _plan(base, planner, time_limit)
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
        tensor_lower_bound_bytes=base.lower_bound_bytes,
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
