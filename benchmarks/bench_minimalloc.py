"""Every planner on MiniMalloc's benchmark instances A-K: arena / 1048576 and time.

The instances (google/minimalloc, benchmarks/, see ../shared/benchmarks/minimalloc/SOURCE.txt)
have half-open lifetimes and a capacity of 1048576 bytes that MiniMalloc proves feasible, so
arena / 1048576 = 1.00 is optimal. Run:

    .venv/bin/python benchmarks/bench_minimalloc.py                   # every planner, optimal 60 s
    .venv/bin/python benchmarks/bench_minimalloc.py --heuristics-only
    .venv/bin/python benchmarks/bench_minimalloc.py --planner optimal --time-limit 10 --instances A,B

Prints one row per instance; every plan is checked with verify_plan. Alignment 1 (the
instances' own sizes are already multiples of 64 bytes or not, as given).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.planning import get_planner, planner_names, verify_plan  # noqa: E402
from viewer.planning.csv_io import read_problem_csv  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
BENCH = SHARED / "benchmarks" / "minimalloc"
CAPACITY = 1048576
INSTANCES = "ABCDEFGHIJK"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planner", default="all",
                    help="comma-separated planner names, or 'all' (default, includes exact ones)")
    ap.add_argument("--heuristics-only", action="store_true", help="skip exact planners")
    ap.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                    help="time limit per instance for exact planners (default 60)")
    ap.add_argument("--instances", default=",".join(INSTANCES), help="e.g. A,B,C (default A-K)")
    ap.add_argument("--dir", type=Path, default=BENCH, help=f"instance folder (default {BENCH})")
    args = ap.parse_args(argv)

    if args.planner == "all":
        names = planner_names()
    else:
        names = [n.strip() for n in args.planner.split(",") if n.strip()]
    specs = [get_planner(n) for n in names]
    if args.heuristics_only:
        specs = [s for s in specs if not s.exact]
    files = []
    for letter in [x.strip() for x in args.instances.split(",") if x.strip()]:
        f = args.dir / f"{letter}.{CAPACITY}.csv"
        if not f.exists():
            print(f"missing {f}", file=sys.stderr)
            return 2
        files.append((letter, f))

    width = max(len(s.name) for s in specs) + 2
    print(f"arena / {CAPACITY} (1.000 = MiniMalloc's proven capacity) and seconds per planner; "
          f"exact planners' time limit {args.time_limit:g} s")
    print(f"{'inst':<5}{'n':>5}{'LB':>7}" + "".join(f"{s.name:>{width + 9}}" for s in specs))
    totals = {s.name: [0.0, 0.0] for s in specs}
    for letter, f in files:
        problem, _ = read_problem_csv(f)
        row = f"{letter:<5}{len(problem.buffers):>5}{problem.lower_bound() / CAPACITY:>7.3f}"
        for s in specs:
            t0 = time.perf_counter()
            plan = s.func(problem, 1, time_limit=args.time_limit if s.exact else None)
            dt = time.perf_counter() - t0
            verify_plan(problem, plan)
            ratio = plan.arena_bytes / CAPACITY
            totals[s.name][0] += ratio
            totals[s.name][1] += dt
            mark = "*" if plan.proven_optimal else " "
            row += f"{ratio:>{width}.3f}{mark}{dt:>7.2f}s"
        print(row, flush=True)
    k = max(len(files), 1)
    print(f"{'mean':<17}" + "".join(f"{totals[s.name][0] / k:>{width}.3f} {totals[s.name][1] / k:>7.2f}s"
                                    for s in specs))
    print("* proven optimal; LB = widest time step's breadth / capacity")
    return 0


if __name__ == "__main__":
    sys.exit(main())
