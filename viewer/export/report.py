"""The JSON report: the object ``plan --json`` prints and File > Export JSON writes.

Units: every size is in bytes; ``first_op`` and ``last_op`` are inclusive operator indices;
``id`` is the tensor's index in the subgraph (kernel temporaries follow the model's tensors).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from viewer.analysis.types import Analysis
from viewer.model.types import Model
from viewer.planning.types import Plan

SCHEMA_VERSION = 1


def gap_pct(arena_bytes: int, lower_bound_bytes: int) -> float:
    """Percent by which ``arena_bytes`` exceeds the lower bound (0.0 when the bound is 0)."""
    if lower_bound_bytes <= 0:
        return 0.0
    return 100.0 * (arena_bytes - lower_bound_bytes) / lower_bound_bytes


def gap_bound(analysis: Analysis, alignment: int, _cache: dict | None = None) -> int:
    """The bound a plan with offsets aligned to ``alignment`` bytes is measured against (bytes).

    The larger of the lower bound and :meth:`~viewer.analysis.problem.Problem.aligned_lower_bound`:
    on tiny graphs (WHILE bodies, MCU models) the 64-byte alignment every planner and the
    runtime use dominates, and a gap to the unaligned bound (+750 % ... +1200 %) would blame the
    planners for padding no plan can avoid.
    """
    key = (id(analysis), int(alignment))
    if _cache is not None and key in _cache:
        return _cache[key]
    lb = int(analysis.lower_bound_bytes)
    if alignment > 1 and analysis.usages and not getattr(analysis, "bound_is_final", False):
        lb = max(lb, int(analysis.problem().aligned_lower_bound(int(alignment))))
    if _cache is not None:
        _cache[key] = lb
    return lb


def gap_text(arena_bytes: int, lower_bound_bytes: int, bound_bytes: int, alignment: int) -> str:
    """The gap of an arena to the bound it is measured against, the one wording every view uses
    (chart label, Measured box, Summary; the JSON's ``gap_pct`` and ``plan``'s table are the same
    figure): ``"+3.5 MiB (14.1%) over the lower bound 24.8 MiB"``, or, when the alignment bound
    (:func:`gap_bound`) is above the lower bound, ``"+0 B (0.0%) over the 64-byte-aligned bound
    68 B (lower bound 8 B)"``. Bytes in, percent of ``bound_bytes`` out."""
    from viewer.units import format_bytes

    bound = max(int(bound_bytes), int(lower_bound_bytes))
    gap = int(arena_bytes) - bound
    pct = gap_pct(arena_bytes, bound)
    if gap < 0:  # then that number is no bound for this plan: never "+-" or "-x over"
        return (f"{format_bytes(-gap)} below {format_bytes(bound)}, which is therefore no lower "
                "bound for this plan")
    sign = "+"
    digits = 2 if 0 < abs(pct) < 0.1 else 1
    figure = f"{sign}{format_bytes(abs(gap))} ({pct:.{digits}f}%)"
    if bound > lower_bound_bytes:
        lb = format_bytes(int(lower_bound_bytes))
        if format_bytes(bound) == lb:  # "5.3 MiB (lower bound 5.3 MiB)" would read as no bound
            return (f"{figure} over the {int(alignment)}-byte-aligned bound, "
                    f"{format_bytes(bound - int(lower_bound_bytes))} above the lower bound {lb}")
        return f"{figure} over the {int(alignment)}-byte-aligned bound {format_bytes(bound)} (lower bound {lb})"
    return f"{figure} over the lower bound {format_bytes(bound)}"


def temporaries_raise_text(raise_bytes: int) -> str:
    """How much the kernel temporaries raise the lower bound, worded the same in the window's
    Summary and ``plan --measure``: less than their sum (and possibly than the largest one),
    since they live at different operators and share bytes."""
    from viewer.units import format_bytes

    if raise_bytes <= 0:
        return "they leave the lower bound unchanged: they live at operators narrower than the widest"
    return (f"they raise the lower bound by {format_bytes(int(raise_bytes))}: live at different "
            "operators, they share bytes")


def persistent_and_reached(model: Model, subgraph_index: int, analysis: Analysis,
                           plans: Mapping[str, Plan], best: str | None) -> tuple[list[str], dict]:
    """What lives beside this subgraph's arena: persistent tensors (bytes, outside the arena)
    and the subgraphs reached through control flow (each with its own arena, planned with
    ``best`` when it is one of our planners). Returns (notes, report fields
    ``persistent_bytes`` and ``subgraphs_reached``)."""
    from viewer.analysis.intervals import analyze
    from viewer.planning.run import run_planners
    from viewer.units import format_bytes
    from viewer.whatif.footprint import persistent_bytes, reachable_subgraphs

    persistent = persistent_bytes(analysis)
    notes, others = [], []
    name = best if best in plans else None
    for idx, how in reachable_subgraphs(model, subgraph_index):
        sa = analyze(model.subgraphs[idx], model=model)
        arena = None
        if name and name != "litert_measured":
            arena = run_planners(sa.problem(), [name])[name].arena_bytes
        others.append({"subgraph": idx, "reached_by": how, "lower_bound_bytes": sa.lower_bound_bytes,
                       "arena_bytes": arena, "source": None if arena is None else "planned"})
    if others:
        notes.append(f"{len(others)} more subgraph(s) run through control flow, each with its own arena "
                     f"(see 'arena-viewer plan --subgraph N'): "
                     + ", ".join(f"{o['subgraph']} via {o['reached_by']}" for o in others))
    if persistent:
        notes.append(f"{format_bytes(persistent)} of persistent tensors (computed at prepare time, "
                     "variables) live outside the arena, in anonymous memory")
    return notes, {"persistent_bytes": int(persistent), "subgraphs_reached": others}


def with_footprint_subgraphs(report: dict[str, Any], footprint) -> dict[str, Any]:
    """``report`` with its ``subgraphs_reached`` arenas taken from ``footprint`` (the
    :class:`viewer.whatif.footprint.Footprint` the window's budget counts, as ``check`` does):
    the runtime's measured arena of each subgraph where it was measured, each entry's
    ``source`` saying which (``"measured"`` or ``"planned"``). Subgraphs the footprint does not
    list keep the report's planned figure and label. Returns ``report`` (changed in place)."""
    by_index = {s.index: s for s in getattr(footprint, "other_subgraphs", ())}
    for entry in report.get("subgraphs_reached", ()):
        s = by_index.get(entry["subgraph"])
        if s is not None:
            entry["arena_bytes"] = int(s.arena_bytes)
            entry["source"] = s.source
    if by_index:
        report["other_subgraphs_bytes"] = int(footprint.other_subgraphs_bytes)
    return report


def build_report(
    model: Model,
    subgraph_index: int,
    analysis: Analysis,
    plans: Mapping[str, Plan],
    best_plan: str | None,
    *,
    notes: tuple[str, ...] = (),
    edits: Mapping[str, Any] | None = None,
    with_offsets: bool = True,
    beyond_the_arena: bool = True,
    alignment: int | None = None,
    with_tables: bool = True,
) -> dict[str, Any]:
    """Build the report object (``with_offsets=False`` leaves out every plan's ``offsets``,
    ``with_tables=False`` the ``tensors`` and ``operators`` lists, which a printed table does
    not need: 100k entries each on large graphs, ~0.4 s to build; ``num_arena_tensors`` is
    always there). The one builder
    of ``plan --json`` and the window's File > Export JSON.

    Returns
    -------
    dict
        JSON-ready: ``model``, ``subgraph``, ``naive_bytes``, ``lower_bound_bytes``,
        ``aligned_lower_bound_bytes`` (the bound for offsets aligned to ``alignment`` bytes,
        default 64, the runtime's; ``aligned_bound_alignment``), ``persistent_bytes``
        and ``subgraphs_reached`` (with ``beyond_the_arena``, :func:`persistent_and_reached`),
        ``weights_bytes``, ``widest_operator`` {index, op, breadth_bytes, tensors},
        ``tensors`` [{id, name, shape, dtype, bytes, first_op, last_op, kind, ...}],
        ``operators`` [{index, op, inputs, outputs, breadth_bytes}],
        ``plans`` {name: {arena_bytes, offsets {id: offset}, gap_pct (percent over
        :func:`gap_bound`), ...}}, ``best_plan``,
        ``outside_arena``, ``flagged_tensors``, ``notes``.
    """
    sg = analysis.subgraph
    lb = analysis.lower_bound_bytes
    tensors = []
    for u in (analysis.usages if with_tables else ()):
        t = sg.tensors[u.tensor] if u.tensor < len(sg.tensors) else None
        tensors.append({
            "id": u.tensor,
            "name": analysis.tensor_name(u.tensor),
            "shape": list(t.shape) if t else None,
            "dtype": t.dtype if t else None,
            "bytes": u.nbytes,
            "first_op": u.first_op,
            "last_op": u.last_op,
            "kind": u.kind,
            "producer": u.producer,
            "consumers": list(u.consumers),
            "alias_of": u.alias_of,
        })
    ops = []
    breadth = analysis.breadth.tolist() if len(analysis.breadth) else []
    for op in (sg.operators if with_tables else ()):
        ops.append({
            "index": op.index,
            "op": op.op_name,
            "inputs": list(op.inputs),
            "outputs": list(op.outputs),
            "breadth_bytes": int(breadth[op.index]) if op.index < len(breadth) else 0,
        })
    w = analysis.widest_op
    widest = None
    if w >= 0:
        widest = {
            "index": w,
            "op": analysis.op_name(w),
            "breadth_bytes": lb,
            "tensors": [
                {"id": e.tensor, "name": e.name, "bytes": e.nbytes, "producer": e.producer,
                 "producer_op": e.producer_op, "held_ops": e.held_ops, "kind": e.kind}
                for e in analysis.operator_profile(w)
            ],
        }
    plans_out = {}
    bounds: dict = {}
    for name, p in plans.items():
        offsets = analysis.resolve_alias_offsets(p.offsets) if with_offsets else {}
        plans_out[name] = {
            "arena_bytes": p.arena_bytes,
            "gap_pct": round(gap_pct(p.arena_bytes, gap_bound(analysis, p.alignment, bounds)), 3),
            "alignment": p.alignment,
            "proven_optimal": p.proven_optimal,
            "bound_bytes": p.bound_bytes,
            "seconds": round(float(p.stats.get("seconds", 0.0)), 6),
        }
        if with_offsets:
            plans_out[name]["offsets"] = {str(k): int(v) for k, v in sorted(offsets.items())}
    flagged = [
        {"id": t.index, "name": t.name, "flags": sorted(t.flags)}
        for t in sg.tensors if t.flags
    ]
    extra_notes: list[str] = []
    extra: dict[str, Any] = {}
    if beyond_the_arena:
        extra_notes, extra = persistent_and_reached(model, subgraph_index, analysis, plans, best_plan)
    from viewer.planning.types import DEFAULT_ALIGNMENT

    alignment = int(alignment or DEFAULT_ALIGNMENT)
    aligned = gap_bound(analysis, alignment) if analysis.usages else 0  # TFLM's bound is final
    all_notes = list(notes) + [n for n in getattr(analysis, "notes", ()) if n not in notes]
    all_notes += [n for n in extra_notes if n not in all_notes]
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model.path,
        "subgraph": subgraph_index,
        "subgraph_name": sg.name,
        "num_operators": len(sg.operators),
        "naive_bytes": analysis.naive_bytes,
        "lower_bound_bytes": lb,
        "aligned_lower_bound_bytes": max(aligned, int(lb)),
        "aligned_bound_alignment": alignment,
        "weights_bytes": model.weights_bytes,
        "widest_operator": widest,
        "best_plan": best_plan,
        "plans": plans_out,
        "num_arena_tensors": len(analysis.usages),
        **({"tensors": tensors, "operators": ops} if with_tables else {}),
        "outside_arena": [
            {"id": k, "name": analysis.tensor_name(k), "reason": v,
             "bytes": sg.tensors[k].nbytes if k < len(sg.tensors) else 0}
            for k, v in sorted(analysis.outside.items())
        ],
        "flagged_tensors": flagged,
        "edits": dict(edits) if edits else None,
        "notes": all_notes,
        **extra,
    }


def write_report(report: Mapping[str, Any], path: str | Path, *, force: bool = False) -> int:
    """Write ``report`` as indented JSON to ``path``, atomically
    (:func:`viewer.export.paths.write_atomic`); ``force`` replaces an existing file.

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    viewer.errors.UsageError, viewer.errors.ViewerError
        ``path`` cannot be written or exists without ``force`` (an existing file is unchanged).
    """
    from viewer.export.paths import write_atomic

    return write_atomic(path, json.dumps(report, indent=1) + "\n", what="JSON report", force=force)
