"""Latency from a what-if edit to a new plan: MobileNet v2 at 224 -> 512 (aim: < 200 ms).

Prints the median and min of N runs for each stage. Shapes come either from the LiteRT runtime
(a subprocess: resize_tensor_input + allocate_tensors; uncached) or from our own inference.

    .venv/bin/python benchmarks/bench_whatif.py [MODEL] [--runs N] [--side 512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.analysis.intervals import analyze  # noqa: E402
from viewer.model.reader import load_model  # noqa: E402
from viewer.planning.run import run_planners  # noqa: E402
from viewer.whatif import apply as whatif_apply  # noqa: E402
from viewer.whatif.edits import WhatIfEdits, apply_edits  # noqa: E402


def timed(fn, runs):
    out, ts = None, []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return out, ts


def show(label, ts):
    print(f"  {label:<44} median {statistics.median(ts):8.1f} ms   min {min(ts):8.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default=str(ROOT.parent / "shared" / "models" / "mobilenet_v2_224.tflite"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--side", type=int, default=512)
    ap.add_argument("--planners", default="litert,greedy_by_size,greedy_by_breadth")
    args = ap.parse_args()
    m = load_model(args.model)
    edits = WhatIfEdits(input_shapes={"": (args.side, args.side)})
    print(f"{args.model}: input -> {args.side}x{args.side}, {args.runs} runs")

    def runtime_shapes():
        whatif_apply._probe_cached.cache_clear()
        return apply_edits(m, 0, edits, shape_source="auto")

    e_rt, t_rt = timed(runtime_shapes, args.runs)
    show("edit -> shapes (LiteRT runtime, subprocess)", t_rt)
    e_inf, t_inf = timed(lambda: apply_edits(m, 0, edits, shape_source="inferred"), args.runs)
    show("edit -> shapes (our inference)", t_inf)
    same = all(a.shape == b.shape for a, b in zip(e_rt.subgraph.tensors, e_inf.subgraph.tensors))
    print(f"  inferred shapes equal the runtime's: {same}")
    a, t_an = timed(lambda: analyze(e_inf.subgraph), args.runs)
    show("analysis (usage intervals, breadth)", t_an)
    problem = a.problem()
    t_plan = {}
    for name in args.planners.split(","):
        plans, ts = timed(lambda: run_planners(problem, [name]), args.runs)
        t_plan[name] = ts
        show(f"plan: {name} (arena {plans[name].arena_bytes:,d} B)", ts)
    fastest = min(t_plan, key=lambda n: statistics.median(t_plan[n]))
    med = statistics.median
    total_inf = med(t_inf) + med(t_an) + med(t_plan["litert"] if "litert" in t_plan else t_plan[fastest])
    total_rt = med(t_rt) + med(t_an) + med(t_plan["litert"] if "litert" in t_plan else t_plan[fastest])
    print(f"  edit -> re-plan (inferred shapes + analysis + litert plan): {total_inf:.1f} ms")
    print(f"  edit -> re-plan (runtime shapes   + analysis + litert plan): {total_rt:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
