"""Heuristic planners at scale: seconds per planner on synthetic graphs of 1k to 100k tensors.

    .venv/bin/python benchmarks/bench_planners_scale.py [--sizes 1000,10000,20000,100000]
                                                        [--planners a,b,...] [--seed N]
    .venv/bin/python benchmarks/bench_planners_scale.py --save-equivalence FILE.json
    .venv/bin/python benchmarks/bench_planners_scale.py --check-equivalence FILE.json

The synthetic problem is a chain of operators with skip connections, the shape of a deep
residual / U-Net graph: operator ``k`` produces tensor ``k``, read by operator ``k + 1``; about
one tensor in five is also read by a later operator (a skip connection, 2 to 64 operators on,
with a few long U-Net style skips reaching far ahead); sizes are drawn from activation-like
byte counts. ``litert`` (LiteRT's own ``ArenaPlanner`` order, reproduced) is printed for
reference; ``--planners litert_reference,...`` adds the straightforward (quadratic)
re-statement kept in tests/planning/_litert_reference.py, as the anchor of a before/after. One run per planner and size; figures depend on the machine and its load. Not a
test.

``--save-equivalence`` records the offsets every heuristic planner (``naive``,
``greedy_by_size``, ``greedy_by_breadth``, ``strip_packing``) gives on: subgraph 0 of every
shared model (through :func:`viewer.whatif.pipeline.prepare`, alignment 64), the MiniMalloc
CSV instances in ``../shared/benchmarks/minimalloc`` (alignments 1 and 64), and a fixed set of
synthetic and random problems. ``--check-equivalence`` recomputes them with the planners in
this checkout and reports every difference (exit 1 if any): the before/after check that a
speed-up changed no result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.errors import ViewerError  # noqa: E402
from viewer.planning import get_planner  # noqa: E402
from viewer.planning.types import Buffer, PlanningProblem  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
HEURISTICS = ("naive", "greedy_by_size", "greedy_by_breadth", "strip_packing")
DEFAULT_SIZES = (1_000, 10_000, 20_000, 100_000)
DEFAULT_PLANNERS = ("litert", "naive", "greedy_by_size", "greedy_by_breadth", "strip_packing")


def synthetic_problem(n: int, seed: int = 0) -> PlanningProblem:
    """A chain of ``n`` operators with skip connections; tensor ``k`` is made by operator ``k``.

    Parameters
    ----------
    n : int
        Number of tensors (= operators).
    seed : int
        Seeds numpy's generator; the same ``(n, seed)`` gives the same problem.

    Returns
    -------
    PlanningProblem
        ``n`` buffers, usage intervals ``[k, last]`` in operator indices (inclusive), sizes in
        bytes; tensor 0 (the graph input) and tensor ``n - 1`` (the output) pinned.
    """
    rng = np.random.default_rng(seed)
    last = np.minimum(np.arange(n) + 1, n - 1)
    skip = rng.random(n) < 0.2
    reach = rng.integers(2, 65, size=n)
    far = rng.random(n) < 0.01
    reach = np.where(far, rng.integers(64, max(n // 4, 65), size=n), reach)
    last = np.where(skip, np.minimum(np.arange(n) + reach, n - 1), last)
    last[0] = last[-1] = n - 1
    sizes = rng.choice([1_024, 4_096, 16_384, 65_536, 147_456, 602_112], size=n)
    sizes = sizes * rng.integers(1, 5, size=n)
    bufs = tuple(
        Buffer(k, k if k else 0, int(last[k]), int(sizes[k]), pinned=k in (0, n - 1))
        for k in range(n)
    )
    return PlanningProblem(bufs, n)


def random_problem(rng: random.Random, n: int, ops: int) -> PlanningProblem:
    """Small random problem with many ties (equal sizes, nested and equal intervals)."""
    bufs = []
    for i in range(n):
        f = rng.randrange(ops)
        l = min(ops - 1, f + rng.choice([0, 0, 1, 2, 5, ops]))
        bufs.append(Buffer(i, f, l, rng.choice([0, 1, 3, 64, 100, 1000, rng.randrange(1, 5000)])))
    return PlanningProblem(tuple(bufs), ops)


def bench(sizes, planners, seed: int) -> None:
    print(f"{'tensors':>8}  {'planner':<18} {'wall s':>8} {'CPU s':>7}  {'arena bytes':>14}  lower bound")
    for n in sizes:
        p = synthetic_problem(n, seed)
        lb = p.lower_bound()
        for name in planners:
            func = _reference_litert() if name == "litert_reference" else get_planner(name).func
            t0, c0 = time.perf_counter(), time.process_time()
            plan = func(p, 64)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f"{n:>8}  {name:<18} {dt:>8.3f} {cpu:>7.3f}  {plan.arena_bytes:>14,}  {lb:,}", flush=True)


def _reference_litert():
    """The straightforward re-statement of LiteRT's planner kept for tests (quadratic)."""
    sys.path.insert(0, str(ROOT))
    from tests.planning._litert_reference import plan_litert

    return plan_litert


def _equivalence_cases():
    """Yield ``(case name, problem, alignment)`` for the before/after check."""
    from viewer.planning.csv_io import read_problem_csv
    from viewer.whatif.pipeline import prepare

    models = sorted((SHARED / "models").glob("*.tflite"))
    for path in models:
        try:
            prob = prepare(str(path), 0).analysis.problem()
        except ViewerError as e:
            print(f"skip {path.name}: {e}", file=sys.stderr)
            continue
        yield f"model:{path.name}", prob, 64
    for path in sorted((SHARED / "benchmarks" / "minimalloc").glob("*.csv")):
        prob, _ = read_problem_csv(path)
        for a in (1, 64):
            yield f"csv:{path.name}@{a}", prob, a
    for n in (300, 3000):
        for s in (0, 1):
            yield f"synthetic:{n}:{s}", synthetic_problem(n, s), 64
    rng = random.Random(2026)
    for k in range(300):
        p = random_problem(rng, rng.randrange(1, 60), rng.randrange(1, 40))
        yield f"random:{k}", p, rng.choice([1, 16, 64])


def _offsets(problem, alignment) -> dict:
    out = {}
    for name in HEURISTICS:
        plan = get_planner(name).func(problem, alignment)
        out[name] = {"arena": plan.arena_bytes,
                     "offsets": [[int(k), int(v)] for k, v in sorted(plan.offsets.items())]}
    return out


def save_equivalence(path: Path) -> int:
    data = {name: _offsets(p, a) for name, p, a in _equivalence_cases()}
    path.write_text(json.dumps(data))
    print(f"saved {len(data)} cases x {len(HEURISTICS)} planners to {path}")
    return 0


def check_equivalence(path: Path) -> int:
    saved = json.loads(path.read_text())
    bad = 0
    seen = 0
    for name, p, a in _equivalence_cases():
        if name not in saved:
            print(f"{name}: not in {path}")
            bad += 1
            continue
        seen += 1
        now = _offsets(p, a)
        for planner in HEURISTICS:
            if now[planner] != saved[name][planner]:
                bad += 1
                print(f"DIFFERENT {name} {planner}: arena {saved[name][planner]['arena']} -> "
                      f"{now[planner]['arena']}")
    missing = len(saved) - seen
    print(f"{seen} cases x {len(HEURISTICS)} planners compared; {bad} differences; "
          f"{missing} saved cases not recomputed")
    return 1 if bad or missing else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                    help="comma-separated tensor counts")
    ap.add_argument("--planners", default=",".join(DEFAULT_PLANNERS),
                    help="comma-separated planner names")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-equivalence", type=Path, metavar="FILE")
    ap.add_argument("--check-equivalence", type=Path, metavar="FILE")
    args = ap.parse_args(argv)
    if args.save_equivalence:
        return save_equivalence(args.save_equivalence)
    if args.check_equivalence:
        return check_equivalence(args.check_equivalence)
    bench([int(s) for s in args.sizes.split(",")], args.planners.split(","), args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
