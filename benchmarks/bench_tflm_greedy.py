"""tflm_greedy's speed on random problems, beside greedy_by_size in the same run (the anchor).

Run on demand: ``python benchmarks/bench_tflm_greedy.py [N ...]``. Prints seconds per planner.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from viewer.analysis.problem import Buffer, PlanningProblem  # noqa: E402
from viewer.planning.run import run_planners  # noqa: E402


def problem(n: int, seed: int = 0) -> PlanningProblem:
    rng = np.random.default_rng(seed)
    bufs = []
    for i in range(n):
        a = int(rng.integers(0, n))
        bufs.append(Buffer(i, a, a + int(rng.integers(0, 20)), 16 * int(rng.integers(1, 100))))
    return PlanningProblem(tuple(bufs), n + 20)


def main(sizes) -> None:
    for n in sizes:
        p = problem(n)
        out = []
        for name in ("greedy_by_size", "tflm_greedy"):
            t = time.perf_counter()
            plan = run_planners(p, [name], 16)[name]
            out.append(f"{name} {time.perf_counter() - t:6.2f} s ({plan.arena_bytes:,d} B)")
        print(f"{n:>7,d} buffers: " + "   ".join(out))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2_000, 20_000])
