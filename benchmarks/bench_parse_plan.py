"""Parse, analysis and planning time on the largest shared model (median of several runs).

    .venv/bin/python benchmarks/bench_parse_plan.py [--runs N] [--exact] [--time-limit S] [MODEL]
    .venv/bin/python benchmarks/bench_parse_plan.py --runtime-table

MODEL defaults to the largest .tflite file in ../shared/models. Prints one line per stage:
``load_model`` (flatbuffer -> our dataclasses), ``analyze`` (usage intervals, breadth, lower
bound), then every registered planner (exact ones only with ``--exact``, under ``--time-limit``)
with its arena size. Not a test: figures depend on the machine and its load.

``--runtime-table`` prints, for every shared model LiteRT loads, the ``litert`` planned arena
from the file alone (no kernel temporaries), the runtime's measured arena span (LiteRT 2.3 run in
a subprocess by :mod:`viewer.runtime.probe`; constants and persistent tensors excluded), the
kernel temporaries' bytes in it, and whether ``litert`` fed those temporaries reproduces every
runtime offset (:func:`viewer.runtime.replay.replay`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.analysis.intervals import analyze  # noqa: E402
from viewer.model.reader import load_model  # noqa: E402
from viewer.planning import get_planner, planner_names, verify_plan  # noqa: E402
from viewer.units import format_bytes  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))


def _median_time(fn, runs: int):
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a .tflite file (default: largest shared model)")
    ap.add_argument("--runs", type=int, default=5, help="runs per stage; the median is printed")
    ap.add_argument("--exact", action="store_true", help="also run exact planners")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds for exact planners")
    ap.add_argument("--runtime-table", action="store_true",
                    help="litert planned arena vs LiteRT's measured arena, every shared model")
    args = ap.parse_args(argv)
    if args.runtime_table:
        return runtime_table()

    if args.model:
        path = Path(args.model)
    else:
        models = sorted((SHARED / "models").glob("*.tflite"), key=lambda p: p.stat().st_size)
        if not models:
            print(f"no models in {SHARED / 'models'}", file=sys.stderr)
            return 2
        path = models[-1]
    runs = max(1, args.runs)

    t_load, model = _median_time(lambda: load_model(path), runs)
    sg = model.subgraph(0)
    t_an, an = _median_time(lambda: analyze(sg), runs)
    problem = an.problem()
    print(f"model     {path.name}: {path.stat().st_size / 1e6:.1f} MB, {len(sg.operators)} operators, "
          f"{len(sg.tensors)} tensors, {len(problem.buffers)} arena buffers")
    print(f"runs      {runs} (median)")
    print(f"{'load_model':<20} {t_load * 1e3:9.2f} ms")
    print(f"{'analyze':<20} {t_an * 1e3:9.2f} ms   lower bound {format_bytes(an.lower_bound_bytes)}, "
          f"naive sum {format_bytes(an.naive_bytes)}")
    for name in planner_names():
        spec = get_planner(name)
        if spec.exact and not args.exact:
            continue
        n = 1 if spec.exact else runs
        t, plan = _median_time(lambda: spec.func(problem, time_limit=args.time_limit), n)
        verify_plan(problem, plan)
        print(f"{name:<20} {t * 1e3:9.2f} ms   arena {format_bytes(plan.arena_bytes)} "
              f"({plan.arena_bytes} B){'  proven optimal' if plan.proven_optimal else ''}")
    return 0


def runtime_table() -> int:
    """Print planned vs measured arena for every shared model LiteRT loads; see module doc."""
    import csv

    from viewer.planning.litert import plan_litert
    from viewer.runtime.probe import probe_model
    from viewer.runtime.replay import replay

    src = SHARED / "models" / "SOURCES.tsv"
    with src.open(newline="") as f:
        names = [r["file"] for r in csv.DictReader(f, delimiter="\t")
                 if r.get("loads_in_litert_2.3") == "yes" and (SHARED / "models" / r["file"]).exists()]
    print(f"{'model':<48} {'planned':>11} {'runtime':>11} {'temps':>10} {'gap':>7}  replay")
    for name in names:
        path = SHARED / "models" / name
        model = load_model(path)
        plan = plan_litert(analyze(model.subgraph(0)).problem())
        probe = probe_model(path, timeout=120)
        if not probe.ok:
            print(f"{name:<48} {plan.arena_bytes:>11} {'-':>11}  runtime failed: {probe.error}")
            continue
        measured = int(probe.arena_bytes or 0)
        temps = sum(t.nbytes for t in probe.arena_temporaries)
        deferred = any(t.allocation == "arena-rw" and t.nbytes > 0 and t.offset is None
                       for t in probe.tensors)
        r = replay(model, probe)
        verdict = "exact" if r.exact else f"{len(r.mismatched)} differ"
        if deferred:
            verdict += " (LiteRT defers dynamic tensors to Invoke)"
        gap = f"{(plan.arena_bytes - measured) / measured:+.0%}" if measured else "-"
        print(f"{name:<48} {plan.arena_bytes:>11} {measured:>11} {temps:>10} {gap:>7}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
