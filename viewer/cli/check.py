"""``arena-viewer check MODEL --budget SIZE``: does the planned tensor arena fit a device budget?

Exit 0 when it fits (prints the headroom), 1 when it does not (prints arena, budget and the
binding operator), 2 on bad input.
"""

from __future__ import annotations

import argparse

from viewer.cli._common import add_model_args, known_planners_help
from viewer.cli._edits import add_edit_args, edits_from_args
from viewer.model.reader import load_model
from viewer.units import format_bytes, parse_size
from viewer.whatif.budget import WEIGHTS_MODES, budget_report, find_largest_square_side, fixed_bytes, plan_arena


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check that the planned tensor arena fits a device budget (exit 0 fits, 1 does not)",
        description="Plan MODEL's tensor arena (after any what-if edits) and compare arena + runtime "
        "overhead (+ weights when copied) with a device budget. Exit 0 when it fits, 1 when not.",
    )
    add_model_args(p)
    p.add_argument("--budget", required=True, metavar="SIZE", help="device limit, e.g. 4MiB, 512KB, 1.5GiB")
    p.add_argument("--planner", default="litert", metavar="NAME",
                   help=f"planner whose arena counts (default litert: what the runtime does; 'best' = "
                        f"smallest). Known: {known_planners_help()}")
    p.add_argument("--runtime-overhead", default="0", metavar="SIZE",
                   help="runtime overhead estimate added to the arena (default 0)")
    p.add_argument("--weights", choices=WEIGHTS_MODES, default="copied",
                   help="copied: weights count against the budget (default); mapped: file-backed "
                        "page cache, reclaimable, shown but not counted")
    p.add_argument("--find-resolution", action="store_true",
                   help="also search the largest square input resolution that fits (image models)")
    add_edit_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    limit = parse_size(args.budget)
    runtime = parse_size(args.runtime_overhead)
    edits = edits_from_args(args)
    model = load_model(args.model)
    analysis, plan, edited = plan_arena(model, args.subgraph, edits, args.planner)
    batch = edits.batch or 1 if edits is not None else 1
    w = analysis.widest_op
    rep = budget_report(
        limit, arena_bytes=plan.arena_bytes, weights_bytes=model.weights_bytes,
        runtime_bytes=runtime, batch=batch, weights_mode=args.weights,
        binding_op=w, binding_op_name=analysis.op_name(w) if w >= 0 else "",
    )
    out = print
    verdict = "fits" if rep.fits else "DOES NOT FIT"
    out(f"{model.path} subgraph {args.subgraph}: {verdict} in {limit:,d} B ({format_bytes(limit)}) "
        f"with planner {plan.planner}")
    for note in edited.notes[:4]:
        out(f"note: {note}")
    if len(edited.notes) > 4:
        out(f"note: ... {len(edited.notes) - 4} more (see 'arena-viewer plan' for all)")
    if edited.estimated:
        out("note: shapes are estimated (our own inference), not the runtime's")
    for line in rep.lines():
        out(f"  {line}")
    if w >= 0:
        out(f"  lower bound (widest operator's breadth): {analysis.lower_bound_bytes:,d} B "
            f"({format_bytes(analysis.lower_bound_bytes)})")
    if args.find_resolution:
        avail = limit - fixed_bytes(model.weights_bytes, runtime, args.weights)
        side, arena = find_largest_square_side(model, args.subgraph, edits, avail, args.planner)
        if side:
            out(f"  largest square input that fits: {side}x{side} (arena {format_bytes(arena)})")
        else:
            out("  largest square input that fits: none (no resolution the model takes fits)")
    return 0 if rep.fits else 1
