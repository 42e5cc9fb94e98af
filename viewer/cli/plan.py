"""``arena-viewer plan MODEL``: usage intervals, lower bound and every plan, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from viewer.cli._common import add_edit_args, add_model_args, edits_from_args, known_planners_help, planner_choice
from viewer.export.report import build_report, gap_pct
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
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="time limit in seconds for the exact planner")
    p.add_argument("--export-csv", metavar="FILE",
                   help="also write the problem as minimalloc CSV (id,lower,upper,size[,offset]); "
                        "offsets of the chosen/best plan are included")
    p.add_argument("--top", type=int, default=10, metavar="K", help="rows of the widest operator's profile (default 10)")
    add_edit_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    edits = edits_from_args(args)
    prep = prepare(args.model, args.subgraph, edits)
    a = prep.analysis
    problem = a.problem()
    plans = run_planners(problem, planner_choice(args.planner), time_limit=args.time_limit)
    best = best_plan_name(plans)
    if args.export_csv:
        from viewer.planning.csv_io import write_problem_csv

        write_problem_csv(problem, args.export_csv, plan=plans.get(best) if best else None)
    report = build_report(prep.model, args.subgraph, a, plans, best, notes=prep.notes,
                          edits=_edits_dict(edits))
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print_table(report, a, args.top)
    return 0


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
        f"{len(r['tensors'])} arena tensors)\n")
    for note in r["notes"]:
        out(f"note: {note}\n")
    out(f"  {'weights (file-backed)':<28}{_fmt(r['weights_bytes'])}\n")
    out(f"  {'naive sum':<28}{_fmt(r['naive_bytes'])}\n")
    out(f"  {'lower bound':<28}{_fmt(lb)}\n")
    out("  planner                             arena            gap to lower bound\n")
    for name, p in r["plans"].items():
        mark = "  <- smallest" if name == r["best_plan"] else ""
        proven = " (proven optimal)" if p["proven_optimal"] else ""
        out(f"  {name:<28}{_fmt(p['arena_bytes'])}  {gap_pct(p['arena_bytes'], lb):+7.1f}%{proven}{mark}\n")
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
