"""What each lower-bound idea buys on the MiniMalloc instances, in figures (issue 14: D and J).

For each instance (default D and J of ../shared/benchmarks/minimalloc, capacity 1048576) it
starts from the widest section's breadth and tries, each on its own and each timed:

- ``sizes``: subsets of the largest buffers (size >= a quantile) decided at the bound
  (:func:`viewer.planning.bounds.subset_bound`);
- ``windows``: the buffers live in 2-48 consecutive sections around the widest, whole
  intervals (a true subset);
- ``clipped``: the same windows with intervals clipped to the window (a relaxation);
- ``wide``: unclipped windows of 64 and 80 sections;
- ``cpsat``: OR-Tools CP-SAT on the whole problem in the decision form "fits in the bound?"
  (sizes and capacity divided by the size granularity, fixed x intervals, y interval
  variables, ``AddNoOverlap2D`` plus the redundant per-section cumulative, identical buffers
  ordered in y; 2 workers).

and prints the bound each reached (bytes, x capacity), seconds, and how the subset searches
ended (feasible / infeasible / timeout). A bound above the breadth is a proof (an exhaustive
search, or CP-SAT's INFEASIBLE); ``timeout`` proves nothing.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_bounds.py [--instances D,J]
[--parts sizes,windows,clipped,wide,cpsat] [--seconds 60]`` (seconds per part per instance).
Figures depend on the machine and its load; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.planning import bounds as B  # noqa: E402
from viewer.planning.csv_io import read_problem_csv  # noqa: E402

BENCH = ROOT.parent / "shared" / "benchmarks" / "minimalloc"
CAPACITY = 1048576
PARTS = ("sizes", "windows", "clipped", "wide", "cpsat")


def _subsets(part, s, e, z):
    times, loads = B.section_loads(s, e, z)
    peak = int(np.argmax(loads))
    if part == "sizes":
        return [x for x in B.default_subsets(s, e, z, widths=()) if x.name.startswith("size")]
    widths = {"windows": (2, 4, 8, 16, 32, 48), "clipped": (2, 4, 8, 16, 32, 48),
              "wide": (64, 80)}[part]
    out = []
    for w in widths:
        w = min(w, len(times))
        for a in range(max(0, peak - w + 1), peak + 1, max(1, w // 4)):
            b = min(a + w - 1, len(times) - 1)
            out.append(B.window_subset(s, e, z, times, a, b, clip=part == "clipped"))
    return [x for x in out if len(x.index) < len(z)]


def _cp_sat(s, e, z, bound, g, seconds):
    """CP-SAT: can the whole problem fit in ``bound`` bytes? (status name, seconds)."""
    from ortools.sat.python import cp_model

    t0 = time.monotonic()
    cap = bound // g
    zz = z // g
    times = np.unique(np.concatenate([s, e]))
    a, b = np.searchsorted(times, s), np.searchsorted(times, e)
    m = cp_model.CpModel()
    xs, ys = [], []
    for j in range(len(zz)):
        y = m.new_int_var(0, cap - int(zz[j]), f"y{j}")
        ys.append(m.new_fixed_size_interval_var(y, int(zz[j]), f"yi{j}"))
        xs.append(m.new_fixed_size_interval_var(int(a[j]), int(b[j] - a[j]), f"xi{j}"))
    m.add_no_overlap_2d(xs, ys)
    m.add_cumulative(xs, [int(v) for v in zz], cap)  # redundant (the load), helps propagation
    # Symmetry: identical buffers (same interval and size) keep their order in y.
    last: dict[tuple, int] = {}
    for j in range(len(zz)):
        key = (int(a[j]), int(b[j]), int(zz[j]))
        if key in last:
            m.add(ys[last[key]].start_expr() + int(zz[j]) <= ys[j].start_expr())
        last[key] = j
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(seconds)
    solver.parameters.num_workers = 2
    status = solver.solve(m)
    return solver.status_name(status), time.monotonic() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default="D,J")
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--seconds", type=float, default=60.0, help="per part and instance")
    args = ap.parse_args(argv)
    print(f"{'inst':4} {'part':8} {'breadth':>9} {'bound':>9} {'x cap':>7} {'+bytes':>7} "
          f"{'sec':>6}  subsets: feasible / infeasible / timeout")
    for name in args.instances.split(","):
        problem, _ = read_problem_csv(BENCH / f"{name}.{CAPACITY}.csv")
        _, first, last, z = problem.arrays()
        s, e = first, last + 1
        g = B.size_granularity(z)
        breadth = int(problem.lower_bound())
        for part in args.parts.split(","):
            t0 = time.monotonic()
            if part == "cpsat":
                status, dt = _cp_sat(s, e, z, breadth, g, args.seconds)
                bound = B.round_up(breadth + 1, g) if status == "INFEASIBLE" else breadth
                how = f"CP-SAT at the breadth: {status}"
            else:
                r = B.subset_bound(s, e, z, breadth, granularity=g, subsets=_subsets(part, s, e, z),
                                   deadline=t0 + args.seconds)
                bound, dt = r.bound, time.monotonic() - t0
                last_status = {}
                for x in r.log:
                    last_status[x["subset"]] = x["status"]
                c = Counter(last_status.values())
                how = (f"{len(last_status)}: {c['feasible']} / {c['infeasible']} / {c['timeout']}"
                       f", {sum(x['nodes'] for x in r.log):,d} nodes")
            print(f"{name:4} {part:8} {breadth:9d} {bound:9d} {bound / CAPACITY:7.4f} "
                  f"{bound - breadth:7d} {dt:6.1f}  {how}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
