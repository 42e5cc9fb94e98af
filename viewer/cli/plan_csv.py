"""``arena-viewer plan-csv PROBLEM.csv``: plan a MiniMalloc-style problem with every planner.

The problem file has the columns ``id,lower,upper,size`` (google/minimalloc's benchmark format):
a half-open usage interval ``[lower, upper)`` and a size in bytes per buffer. It is read by
:func:`viewer.planning.csv_io.read_problem_csv`; ``[lower, upper)`` becomes
``Buffer(first=lower, last=upper - 1)``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from viewer.cli._common import positive_seconds, known_planners_help, planner_choice
from viewer.errors import UsageError
from viewer.planning.csv_io import read_problem_csv
from viewer.planning.registry import get_planner
from viewer.planning.run import best_plan_name, run_planners
from viewer.units import SIZE_SYNTAX, format_bytes, parse_size

#: Exit codes with ``--capacity`` (as ``check``): fits, proven not to fit, not decided.
FITS, DOES_NOT_FIT, NOT_DECIDED = 0, 1, 3


def add_parser(sub) -> None:
    """Add the ``plan-csv`` subcommand to ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "plan-csv",
        help="plan a minimalloc-style CSV problem (id,lower,upper,size) with every planner",
        description="Read PROBLEM.csv (columns id,lower,upper,size; lifetimes are half-open "
        "[lower, upper), sizes in bytes), run the planners and report each arena, its ratio to "
        "the lower bound (the widest time step's breadth) and the planning time.",
    )
    p.add_argument("problem", metavar="PROBLEM.csv", help="problem file: id,lower,upper,size")
    p.add_argument(
        "--planner", default=None, metavar="NAME",
        help="a planner, a comma-separated list, or 'all' (default: every heuristic; the exact "
        "'optimal' only when named, or with --capacity, whose default is 'all,optimal'). "
        f"Known: {known_planners_help()}",
    )
    p.add_argument(
        "--capacity", default=None, metavar="SIZE",
        help=f"answer 'does it fit in SIZE?' (SIZE in {SIZE_SYNTAX}), the question MiniMalloc's "
        "--capacity asks: the exact planner stops at its first plan within SIZE or when it proves "
        "none exists. Exit 0 fits, 1 proven not to fit, 3 not decided within --time-limit",
    )
    p.add_argument("--time-limit", type=positive_seconds, default=None, metavar="S",
                   help="time limit in seconds for the exact planner")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--alignment", type=int, default=1, metavar="N",
                   help="every offset a multiple of N bytes (default 1 for CSV problems)")
    p.set_defaults(run=run)


def _planner_names(text: str) -> list[str]:
    """``--planner`` as ``plan`` reads it (:func:`planner_choice`), checked before the CSV is read."""
    names = planner_choice(text)
    for n in names:
        get_planner(n)  # unknown: PlanningError naming it and the known ones
    return names


def _proof(name: str, plan) -> str:
    """"(proven optimal)" or "(not proven: bound X, gap Y%)" for exact planner ``name``; else ""."""
    if plan.proven_optimal:
        return "(proven optimal)"
    if not get_planner(name).exact:
        return ""
    bound = plan.bound_bytes
    if not bound:
        return "(not proven: no bound)"
    gap = 100.0 * (plan.arena_bytes - bound) / bound
    return f"(not proven: bound {format_bytes(bound)}, gap {gap:.1f}%)"


def _count(n: int, noun: str) -> str:
    return f"{n:,d} {noun}" + ("" if n == 1 else "s")


def run(args: argparse.Namespace) -> int:
    """Plan the problem and print a table (or JSON with ``--json``).

    Returns
    -------
    int
        0 on success; with ``--capacity``: 0 a plan fits, 1 proven not to fit (a proven lower
        bound above it), 3 not decided within the time limit.

    Raises
    ------
    viewer.errors.PlanningError
        Bad CSV (missing file, bad header, non-integer field, ``upper <= lower``, negative
        size) or an unknown planner: one line naming the file or planner.
    viewer.errors.UsageError
        ``--alignment`` below 1 (or above 1 GiB), a ``--time-limit`` that is not a positive,
        finite number of seconds, or a ``--capacity`` that is not a size above 0 bytes.
    """
    if not 1 <= args.alignment <= 1 << 30:
        raise UsageError(f"--alignment must be a positive number of bytes up to 1 GiB, not {args.alignment}")
    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UsageError(f"--time-limit {args.time_limit:g}: need a positive, finite number of seconds "
                         "(e.g. 10; omit it for no limit)")
    capacity = _capacity(args.capacity)
    default = "all" if capacity is None else "all,optimal"
    names = _planner_names(args.planner or default)
    problem, ids = read_problem_csv(args.problem)
    lower = problem.lower_bound()
    options = {}
    if capacity is not None:
        options = {n: {"target_bytes": capacity, "stop_at_target": True}
                   for n in names if get_planner(n).exact}
    plans = run_planners(problem, names, args.alignment, time_limit=args.time_limit,
                         planner_options=options)
    best = best_plan_name(plans)
    verdict = None if capacity is None else capacity_verdict(plans, capacity, lower)
    if args.json:
        report = {
            "problem": str(args.problem),
            "buffers": len(problem.buffers),
            "alignment": args.alignment,
            "lower_bound_bytes": lower,
            "plans": {
                name: {
                    "arena_bytes": int(plan.arena_bytes),
                    "offsets": {ids[b.id]: int(plan.offsets[b.id]) for b in problem.buffers},
                    "seconds": float(plan.stats.get("seconds", 0.0)),
                    "proven_optimal": bool(plan.proven_optimal),
                    "bound_bytes": None if plan.bound_bytes is None else int(plan.bound_bytes),
                }
                for name, plan in plans.items()
            },
            "best_plan": best,
        }
        if verdict is not None:
            report["capacity"] = verdict
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0 if verdict is None else verdict["exit_code"]
    out = sys.stdout.write
    out(f"{args.problem}  ({_count(len(problem.buffers), 'buffer')}, alignment {args.alignment})\n")
    out(f"lower bound {lower:,d} B" + (f" ({format_bytes(lower)})" if lower >= 1024 else "") + "\n")
    out(f"{'planner':<20}{'arena (bytes)':>28}{'arena':>12}{'/ lower bound':>15}{'time (s)':>11}\n")
    for name, plan in plans.items():
        ratio = f"{plan.arena_bytes / lower:.3f}x" if lower else "-"
        proof = _proof(name, plan)
        star = " *" if name == best else ""
        out(
            f"{name + star:<20}{plan.arena_bytes:>28,d}{format_bytes(plan.arena_bytes):>12}"
            f"{ratio:>15}{plan.stats.get('seconds', 0.0):>11.3f}{'  ' + proof if proof else ''}\n"
        )
    out("* smallest arena\n")
    if verdict is None:
        return 0
    out(verdict["line"] + "\n")
    return verdict["exit_code"]


def _capacity(text: str | None) -> int | None:
    """``--capacity`` in bytes (None when not given); UsageError for a bad or zero size."""
    if text is None:
        return None
    try:
        value = parse_size(text)
    except UsageError as e:
        raise UsageError(f"--capacity: {e}") from None
    if value <= 0:
        raise UsageError(f"--capacity {text}: a capacity must be more than 0 bytes")
    return value


def capacity_verdict(plans: dict, capacity: int, lower: int) -> dict:
    """Does the problem fit in ``capacity`` bytes, by the plans made?

    Fits when any plan's arena is within it (the first such planner in run order, e.g. the
    exact planner that stopped there); does not fit when the widest time step's breadth
    ``lower`` or an exact planner's proven bound exceeds it; else not decided.

    Returns
    -------
    dict
        ``verdict`` (``fits``, ``does not fit``, ``not decided``), ``exit_code`` (0, 1, 3),
        ``capacity_bytes``, ``planner``, ``arena_bytes`` (best arena), ``bound_bytes`` (best
        proven bound) and ``line``, the one-line answer.
    """
    cap = f"capacity {capacity:,d} B" + (f" ({format_bytes(capacity)})" if capacity >= 1024 else "")
    fit = [n for n, p in plans.items() if p.arena_bytes <= capacity]
    best = min(plans, key=lambda n: plans[n].arena_bytes) if plans else None
    arena = plans[best].arena_bytes if best else None
    bounds = [(int(p.bound_bytes), n) for n, p in plans.items()
              if get_planner(n).exact and p.bound_bytes is not None]
    # The breadth first on a tie: the simpler reason.
    bound, by = max(bounds + [(int(lower), "lower bound")], key=lambda t: (t[0], t[1] == "lower bound"))
    out = {"capacity_bytes": capacity, "arena_bytes": arena, "bound_bytes": bound}
    if fit:
        p = plans[fit[0]]
        secs = p.stats.get("seconds", 0.0)
        return {**out, "verdict": "fits", "exit_code": FITS, "planner": fit[0],
                "line": f"{cap}: fits ({fit[0]}: {p.arena_bytes:,d} B in {secs:.3f} s)"}
    if bound > capacity:
        why = ("the widest time step's breadth" if by == "lower bound"
               else f"{by}'s proven lower bound")
        return {**out, "verdict": "does not fit", "exit_code": DOES_NOT_FIT, "planner": by,
                "line": f"{cap}: does not fit ({why} is {bound:,d} B)"}
    exact = [n for n in plans if get_planner(n).exact]
    how = (f"no plan within it found in the time limit by {', '.join(exact)}" if exact
           else "no heuristic plan fits and none of them can prove it impossible; "
                "add --planner optimal")
    return {**out, "verdict": "not decided", "exit_code": NOT_DECIDED, "planner": None,
            "line": f"{cap}: not decided ({how}; best arena {arena:,d} B, "
                    f"proven bound {bound:,d} B)"}
