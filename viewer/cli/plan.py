"""``arena-viewer plan MODEL``: usage intervals, lower bound and every plan, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from viewer.cli._tflm import add_runtime_arg, is_tflm, run_plan as run_tflm_plan
from viewer.cli._deployment import add_deployment_args, run_plan as run_deployment_plan, wanted as deployment_wanted
from viewer.cli._common import (positive_seconds, add_edit_args, add_model_args, add_runtime_args, edits_from_args,
                                known_planners_help, planner_choice)
from viewer.analysis.types import KIND_TEMPORARY
from viewer.errors import UsageError, ViewerError
from viewer.export.paths import check_output_path
from viewer.export.report import build_report, temporaries_raise_text
from viewer.planning.run import best_plan_name, run_planners
from viewer.units import format_bytes
from viewer.whatif.pipeline import prepare


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plan",
        help="plan the tensor arena and print naive sum, lower bound and every planner's arena",
        description="Read MODEL, compute usage intervals, plan the tensor arena several ways and "
        "report naive sum, lower bound, each plan's arena and gap, and the widest operator.",
    )
    add_model_args(p)
    p.add_argument("--planner", default="all", metavar="NAME",
                   help=f"one planner or 'all' (default; the exact 'optimal' only when named). Known: {known_planners_help()}")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--time-limit", type=positive_seconds, default=None, metavar="S",
                   help="time limit in seconds for the exact planner")
    p.add_argument("--export-csv", metavar="FILE",
                   help="also write the problem as minimalloc CSV (id,lower,upper,size[,offset]); "
                        "offsets of the chosen/best plan are included")
    p.add_argument("--force", action="store_true",
                   help="replace the --export-csv file when it exists (without it, it is refused)")
    p.add_argument("--top", type=_top, default=10, metavar="K", help="rows of the widest operator's profile (default 10)")
    add_runtime_args(p, measure_help="also run LiteRT (subprocess) and plan with its kernel "
                     "temporaries (im2col, scratch); adds the runtime's own arena as 'litert_measured'",
                     timeout=60.0, timeout_help="seconds for the runtime subprocess with --measure")
    add_edit_args(p)
    add_runtime_arg(p)
    add_deployment_args(p)
    p.set_defaults(run=run)


def _top(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {k}")
    return k


def run(args: argparse.Namespace) -> int:
    if args.time_limit is not None and not (args.time_limit > 0 and args.time_limit < float("inf")):
        raise UsageError(f"--time-limit must be a positive number of seconds, got {args.time_limit}")
    if args.export_csv:
        check_output_path(args.export_csv, args.model, what="CSV problem", force=args.force)
    if deployment_wanted(args):  # several signatures in one interpreter, KV caches counted once
        return run_deployment_plan(args)
    if is_tflm(args):
        return run_tflm_plan(args)
    edits = edits_from_args(args)
    prep = prepare(args.model, args.subgraph, edits)
    notes = list(prep.notes)
    a = prep.analysis
    tensor_only = a
    measured = fp = None
    if args.measure:
        a, measured, fp, more = _measure(prep, args.timeout)
        notes.extend(more)
    problem = a.problem()
    names = planner_choice(args.planner)
    plans = run_planners(problem, names, time_limit=args.time_limit)
    best = best_plan_name(plans)
    if measured is not None:
        plans["litert_measured"] = measured
    if args.export_csv:
        from viewer.export.problem_csv import write_problem_csv

        write_problem_csv(problem, args.export_csv, plans.get(best) if best else None, None,
                          args.model, force=args.force)
    shape_check = None
    if not args.measure:
        notes.append("kernel temporaries (im2col, scratch) are not included: the runtime's arena "
                     "can be larger; add --measure to run LiteRT and include them")
        shape_check = stored_shape_check(prep, edits)
        if shape_check is not None and not shape_check.ok:
            notes.append(stored_shape_note(shape_check, a.subgraph))
    report = build_report(prep.model, args.subgraph, a, plans, best, notes=tuple(notes),
                          edits=_edits_dict(edits), with_offsets=args.json,
                          with_tables=args.json)
    if shape_check is not None:
        report["stored_shapes"] = shape_check.as_dict(a.subgraph)
        report["stored_shapes"]["computed_lower_bound_bytes"] = _computed_lower_bound(prep, shape_check)
    # What the lower bound (and every planned arena) leaves out, said on the number.
    report["lower_bound_note"] = shape_check.caveat() if shape_check is not None else ""
    report["signatures"] = [{"key": sg.key, "subgraph": sg.subgraph_index}
                            for sg in prep.model.signatures]
    if fp is not None:  # the same terms check counts (viewer.whatif.footprint)
        report["footprint"] = {"terms": [t.as_dict() for t in fp.terms],
                               "unknowns": list(fp.unknowns)}
    if measured is not None:
        temps = [u for u in a.usages if u.kind == KIND_TEMPORARY]
        report["measured"] = {
            "arena_bytes": measured.arena_bytes,
            "tensor_lower_bound_bytes": tensor_only.lower_bound_bytes,
            "temporaries": [{"id": u.tensor, "op": u.first_op, "op_name": a.op_name(u.first_op),
                             "name": a.tensor_name(u.tensor), "bytes": u.nbytes} for u in temps],
            "temporaries_bytes": sum(u.nbytes for u in temps),
        }
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print_table(report, a, args.top)
    return 0


def stored_shape_check(prep, edits):
    """Are the file's shapes those LiteRT computes at prepare? (our shape rules, no runtime).
    None when a shape edit already set the shapes (the runtime's, or marked estimated)."""
    from viewer.model.constants import small_int_constants
    from viewer.whatif.shapes import check_stored_shapes

    if edits is not None and (dict(edits.input_shapes) or edits.batch):
        return None
    consts = small_int_constants(prep.model.path, prep.subgraph_index,
                                 tensors=prep.model.subgraphs[prep.subgraph_index].tensors)
    return check_stored_shapes(prep.analysis.subgraph, consts, prep.analysis.kernel_sized)


def _computed_lower_bound(prep, check) -> int | None:
    """The lower bound at the shapes our rules give (an estimate of what LiteRT allocates,
    kernel temporaries aside), when they differ from the file's; None otherwise."""
    from viewer.analysis.intervals import analyze
    from viewer.whatif.apply import with_shapes

    if not check.differs:
        return None
    sg = with_shapes(prep.analysis.subgraph, {t: b for t, _a, b, _o in check.differs})
    return int(analyze(sg, model=prep.model).lower_bound_bytes)


def stored_shape_note(check, sg) -> str:
    def name(t):
        return f"#{t} '{sg.tensors[t].name[:40]}'"

    if check.differs:
        t, a, b, o = check.differs[0]
        return (f"{len(check.differs)} tensor(s) are stored with other shapes than LiteRT computes "
                f"at prepare, e.g. {name(t)} {list(a)} -> {list(b)} (operator #{o} "
                f"{sg.operators[o].op_name}): sizes here are the file's; --measure gives the runtime's")
    t, o = check.unconfirmed[0]
    return (f"{len(check.unconfirmed)} tensor(s) are stored without a shape (rank 0) and sized by "
            f"their kernel at prepare, e.g. {name(t)} (operator #{o} {sg.operators[o].op_name}): "
            "--measure gives the runtime's sizes")


def _measure(prep, timeout: float):
    """The footprint ``check`` counts: (analysis with kernel temporaries, the runtime's own plan
    or None, Footprint, notes). Under a storage what-if the temporaries are the runtime's,
    rescaled (estimated); when the runtime cannot load the model, the notes say why."""
    from viewer.whatif.footprint import SOURCE_MEASURED, footprint

    fp = footprint(prep.model, prep.subgraph_index, prep.edits, planner="litert", measure=True,
                   timeout=timeout)
    notes = [n for n in fp.notes if n not in prep.notes]
    notes += [f"cannot count: {u}" for u in fp.unknowns]
    if not fp.measured:
        return prep.analysis, None, fp, notes
    measured = fp.plan if fp.arena_term.source == SOURCE_MEASURED else None
    if measured is not None:
        notes.append("kernel temporaries measured by LiteRT (allocate_tensors, built-in CPU "
                     "kernels, no delegate)")
    return fp.analysis, measured, fp, notes


def _edits_dict(edits):
    if edits is None or edits.is_empty():
        return None
    return {
        "input_shapes": {str(k): list(v) for k, v in dict(edits.input_shapes).items()},
        "batch": edits.batch,
        "activation_dtype": edits.activation_dtype,
        "tensor_dtypes": {str(k): v for k, v in dict(edits.tensor_dtypes).items()},
    }


def _fmt(n: int) -> str:
    return f"{n:>14,d} B  {format_bytes(n):>10}"


def _print_table(r: dict, a, top: int) -> None:
    out = sys.stdout.write
    lb = r["lower_bound_bytes"]
    out(f"{r['model']}  subgraph {r['subgraph']}  ({r['num_operators']} operators, "
        f"{r['num_arena_tensors']} arena tensors)\n")
    if r.get("signatures"):
        out("signatures: " + ", ".join(f"{x['key']} (subgraph {x['subgraph']})"
                                        for x in r["signatures"]) + "\n")
    for note in r["notes"]:
        out(f"note: {note}\n")
    out(f"  {'weights (file-backed)':<28}{_fmt(r['weights_bytes'])}\n")
    out(f"  {'naive sum':<28}{_fmt(r['naive_bytes'])}\n")
    caveat = r.get("lower_bound_note") or ""
    tail = f"  {caveat}" if caveat else ""
    out(f"  {'lower bound':<28}{_fmt(lb)}{tail}\n")
    computed = (r.get("stored_shapes") or {}).get("computed_lower_bound_bytes")
    if computed is not None:
        label = "  at LiteRT's shapes"
        out(f"  {label:<28}{_fmt(computed)}  [estimated: our shape "
            "rules; kernel temporaries not included]\n")
    alb = r.get("aligned_lower_bound_bytes", lb)
    if alb > lb:
        out(f"  {'  with ' + str(r.get('aligned_bound_alignment', 64)) + '-byte alignment':<28}{_fmt(alb)}{tail}\n")
    m = r.get("measured")
    if m:
        out(f"  {'  tensors only (no temps)':<28}{_fmt(m['tensor_lower_bound_bytes'])}\n")
        temps = m["temporaries"]
        big = max(temps, key=lambda t: t["bytes"], default=None)
        largest = f", largest {format_bytes(big['bytes'])} at #{big['op']}" if big else ""
        raise_ = lb - m["tensor_lower_bound_bytes"]
        out(f"  {'kernel temporaries, in all':<28}{_fmt(m['temporaries_bytes'])}  "
            f"({len(temps)} measured{largest}; {temporaries_raise_text(raise_)})\n")
    if r.get("persistent_bytes"):
        out(f"  {'persistent (outside arena)':<28}{_fmt(r['persistent_bytes'])}\n")
    for t in (r.get("footprint") or {}).get("terms", ()):
        out(f"  footprint: {t['name']:<26}{_fmt(t['bytes'])}  [{t['source']}: {t['method']}]\n")
    gap_to = "gap to aligned bound" if alb > lb else "gap to lower bound"
    shapes = "  (at the file's stored shapes)" if caveat else ""
    out(f"  planner                             arena            {gap_to}{shapes}\n")
    for name, p in r["plans"].items():
        mark = "  <- smallest" if name == r["best_plan"] else ""
        if p["proven_optimal"]:
            proven = " (proven optimal)"
        elif p.get("bound_bytes"):
            proven = f" (not proven; bound {format_bytes(p['bound_bytes'])})"
        elif name == "litert_measured":
            proven = " (the runtime's own arena)"
        else:
            proven = ""
        out(f"  {name:<28}{_fmt(p['arena_bytes'])}  {p['gap_pct']:+7.1f}%{proven}{mark}\n")
    w = r["widest_operator"]
    if w:
        out(f"\nwidest operator: #{w['index']} {w['op']}, breadth {format_bytes(w['breadth_bytes'])} "
            f"({w['breadth_bytes']:,d} B)\n")
        out("  bytes          held  producer                tensor\n")
        for e in w["tensors"][:top]:
            prod = f"#{e['producer']} {e['producer_op']}" if e["producer"] is not None else f"({e['kind']})"
            out(f"  {format_bytes(e['bytes']):>10}  {e['held_ops']:>5} ops  {prod:<22}  {e['name'][:60]}\n")
        if len(w["tensors"]) > top:
            out(f"  ... {len(w['tensors']) - top} more\n")
    flagged = r["flagged_tensors"]
    if flagged:
        out(f"\n{len(flagged)} tensor(s) flagged (sizes not static): "
            + ", ".join(f"#{f['id']} {'/'.join(f['flags'])}" for f in flagged[:8])
            + (" ..." if len(flagged) > 8 else "") + "\n")
