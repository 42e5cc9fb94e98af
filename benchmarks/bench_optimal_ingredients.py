"""What each ingredient of the ``optimal`` planner buys, in figures.

Three parts (each can be skipped):

1. ``planner``: the whole planner on the MiniMalloc benchmark instances A-K
   (../shared/benchmarks/minimalloc, capacity 1048576 proven feasible by MiniMalloc), alignment
   1: arena / 1048576, proven bound / 1048576, seconds, which stage found the arena.
2. ``ablation``: the MiniMalloc-style decision search at capacity 1048576 with every ingredient
   on, then with each one switched off: status, nodes, seconds.
3. ``models``: every shared model (subgraph 0, alignment 64) under planner variants that add
   one stage at a time: how many are proven optimal within the time limit, summed gap.

Run: ``.venv/bin/python benchmarks/bench_optimal_ingredients.py [--limit 60] [--parts planner,ablation,models]``.
Figures depend on the machine and its load; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.errors import ViewerError  # noqa: E402
from viewer.planning import _minimalloc as mm  # noqa: E402
from viewer.planning.csv_io import read_problem_csv  # noqa: E402
from viewer.planning.optimal import plan_optimal  # noqa: E402
from viewer.planning.verify import verify_plan  # noqa: E402

SHARED = ROOT.parent / "shared"
BENCH = SHARED / "benchmarks" / "minimalloc"
MODELS = SHARED / "models"
CAPACITY = 1048576
ABLATIONS = ["canonical_only", "section_inference", "dynamic_ordering", "check_dominance",
             "unallocated_floor", "static_preordering", "dynamic_decomposition",
             "monotonic_floor", "hatless_pruning", "round_robin"]


def part_planner(instances: list[str], limit: float) -> None:
    print(f"\n== optimal planner on MiniMalloc instances (alignment 1, time limit {limit:g} s) ==")
    print(f"{'inst':4} {'n':>4} {'LB/cap':>7} {'start/cap':>9} {'arena/cap':>9} {'bound/cap':>9} "
          f"{'proven':>6} {'sec':>6}  found by")
    for name in instances:
        problem, _ = read_problem_csv(BENCH / f"{name}.{CAPACITY}.csv")
        t0 = time.monotonic()
        plan = plan_optimal(problem, 1, time_limit=limit)
        dt = time.monotonic() - t0
        verify_plan(problem, plan)
        print(f"{name:4} {len(problem.buffers):4d} {problem.lower_bound() / CAPACITY:7.4f} "
              f"{plan.stats['start']['arena_bytes'] / CAPACITY:9.4f} {plan.arena_bytes / CAPACITY:9.4f} "
              f"{plan.bound_bytes / CAPACITY:9.4f} {str(plan.proven_optimal):>6} {dt:6.1f}  "
              f"{plan.stats['found_by']} ({plan.stats['start']['planner']} to start)", flush=True)


def part_ablation(instances: list[str], limit: float) -> None:
    print(f"\n== decision search at capacity {CAPACITY}: each ingredient switched off "
          f"(limit {limit:g} s per run) ==")
    print(f"{'inst':4} {'without':22} {'status':>10} {'nodes':>9} {'sec':>6}")
    for name in instances:
        problem, _ = read_problem_csv(BENCH / f"{name}.{CAPACITY}.csv")
        _, first, last, size = problem.arrays()
        for ablate in [None, *ABLATIONS]:
            params = mm.SearchParams() if ablate is None else mm.SearchParams().without(ablate)
            res = mm.decide(first, last + 1, size, CAPACITY, 1, params=params,
                            deadline=time.monotonic() + limit)
            print(f"{name:4} {ablate or '(all on)':22} {res.status:>10} {res.nodes:9d} "
                  f"{res.seconds:6.1f}", flush=True)


VARIANTS = [
    ("heuristics", ("heuristics",)),
    ("+ aligned bound", ("heuristics", "aligned_bound")),
    ("+ minimalloc", ("heuristics", "aligned_bound", "minimalloc")),
    ("+ cp_sat (all)", ("heuristics", "aligned_bound", "minimalloc", "cp_sat")),
    ("cp_sat, no minimalloc", ("heuristics", "aligned_bound", "cp_sat")),
]


def part_models(limit: float) -> None:
    from viewer.analysis.intervals import analyze
    from viewer.model.reader import load_model

    with (MODELS / "SOURCES.tsv").open(newline="") as f:
        names = [r["file"] for r in csv.DictReader(f, delimiter="\t")]
    problems = []
    for name in names:
        try:
            problems.append((name, analyze(load_model(MODELS / name).subgraphs[0]).problem()))
        except (ViewerError, OSError):
            pass
    print(f"\n== shared models (subgraph 0, alignment 64, limit {limit:g} s): "
          f"{len(problems)} models ==")
    print(f"{'variant':24} {'proven':>8} {'sum gap B':>10} {'max sec':>8} {'total sec':>9}")
    for label, ingredients in VARIANTS:
        proven = gap = 0
        worst = total = 0.0
        open_ = []
        for name, problem in problems:
            t0 = time.monotonic()
            plan = plan_optimal(problem, 64, time_limit=limit, ingredients=ingredients)
            dt = time.monotonic() - t0
            verify_plan(problem, plan)
            proven += plan.proven_optimal
            gap += plan.arena_bytes - plan.bound_bytes
            worst, total = max(worst, dt), total + dt
            if not plan.proven_optimal:
                open_.append(f"{name} gap {plan.stats['gap']:.2%}")
        print(f"{label:24} {proven:4d}/{len(problems):<3d} {gap:10d} {worst:8.2f} {total:9.2f}")
        for o in open_[:5]:
            print(f"    open: {o}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per planner run (part 1)")
    ap.add_argument("--ablation-limit", type=float, default=20.0, help="seconds per search (part 2)")
    ap.add_argument("--model-limit", type=float, default=10.0, help="seconds per model (part 3)")
    ap.add_argument("--instances", default="A,B,C,D,E,F,G,H,I,J,K")
    ap.add_argument("--ablation-instances", default="A,H,K",
                    help="instances the full search decides in seconds")
    ap.add_argument("--parts", default="planner,ablation,models")
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    if not BENCH.exists() and ("planner" in parts or "ablation" in parts):
        print(f"{BENCH} not present; skipping the MiniMalloc parts")
        parts = [p for p in parts if p == "models"]
    if "planner" in parts:
        part_planner(args.instances.split(","), args.limit)
    if "ablation" in parts:
        part_ablation(args.ablation_instances.split(","), args.ablation_limit)
    if "models" in parts and MODELS.exists():
        part_models(args.model_limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
