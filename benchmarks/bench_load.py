"""Load + analyze + litert plan against LiteRT's constructor + allocate_tensors(), per shared model.

    .venv/bin/python benchmarks/bench_load.py [--runs N] [MODEL ...]
    .venv/bin/python benchmarks/bench_load.py --rss [MODEL]

For every shared model LiteRT loads (or the MODELs given), interleaves, ``--runs`` times (median):

- ours: ``load_model`` + ``analyze(subgraph 0, model=...)`` + ``plan_litert``;
- LiteRT 2.x: ``Interpreter(model_path, BUILTIN_WITHOUT_DEFAULT_DELEGATES)`` + ``allocate_tensors()``;

and prints both in ms and the ratio ours / LiteRT (issue 14's acceptance: at most 10x): the
median of the process's CPU time (``time.process_time``: on a shared, overloaded machine a
1 ms wall-clock figure often includes a 5-15 ms preemption), then the minimum wall-clock time.

``--rss`` opens MODEL (default: the shared model with the most tensors) in a fresh process after
a warm-up load of another model (kept alive, so the measured load cannot reuse its memory), resets the high-water mark (``/proc/self/clear_refs`` 5) and prints how much the
peak RSS rose while loading (transient: peak minus RSS after the load; retained: RSS after minus
RSS before), with the anonymous and file-backed parts, as a share of the file size (goal: the
transient part under 5%). Linux only. Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))


def _litert_models() -> list[Path]:
    src = SHARED / "models" / "SOURCES.tsv"
    with src.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [SHARED / "models" / r["file"] for r in rows
            if r.get("loads_in_litert_2.3") == "yes" and (SHARED / "models" / r["file"]).exists()]


def _ours(path: Path) -> None:
    from viewer.analysis.intervals import analyze
    from viewer.model.reader import load_model
    from viewer.planning.litert import plan_litert

    model = load_model(path)
    plan_litert(analyze(model.subgraph(0), model=model).problem())


def _litert(path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()


def ratio_table(paths: list[Path], runs: int) -> int:
    print(f"{'model':<48} {'tensors':>7} {'ours ms':>8} {'LiteRT ms':>9} {'ratio':>6}   "
          f"{'wall: ours':>10} {'LiteRT':>7} {'ratio':>6}")
    worst = 0.0
    from viewer.model.reader import load_model

    for path in paths:
        try:
            _ours(path)  # warm-up (imports, caches)
            _litert(path)
        except Exception as e:  # a model one side cannot take: say so, go on
            print(f"{path.name:<48} skipped: {type(e).__name__}: {e}")
            continue
        cpu = {"ours": [], "rt": []}
        wall = {"ours": [], "rt": []}
        for _ in range(runs):
            for key, fn in (("ours", _ours), ("rt", _litert)):
                w0, c0 = time.perf_counter(), time.process_time()
                fn(path)
                cpu[key].append(time.process_time() - c0)
                wall[key].append(time.perf_counter() - w0)
        a, b = statistics.median(cpu["ours"]), statistics.median(cpu["rt"])
        wa, wb = min(wall["ours"]), min(wall["rt"])
        n_t = len(load_model(path).subgraph(0).tensors)
        worst = max(worst, a / b)
        print(f"{path.name:<48} {n_t:>7} {a * 1e3:>8.2f} {b * 1e3:>9.2f} {a / b:>5.1f}x   "
              f"{wa * 1e3:>10.2f} {wb * 1e3:>7.2f} {wa / wb:>5.1f}x")
    print(f"worst ratio {worst:.1f}x (median CPU time of the process, interleaved; goal: at most 10x)")
    return 0


_RSS_CHILD = r"""
import gc, os, sys
sys.path.insert(0, sys.argv[2])
def status():
    d = {}
    with open('/proc/self/status') as f:
        for line in f:
            k, v = line.split(':', 1)
            if k in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile'):
                d[k] = int(v.split()[0]) * 1024
    return d
from viewer.model.reader import load_model
keep = load_model(sys.argv[3])  # warm-up: imports, first-call caches; kept, so its memory is not reused
gc.collect()
with open('/proc/self/clear_refs', 'w') as f:
    f.write('5')
before = status()
m = load_model(sys.argv[1])
after = status()
print(before['VmRSS'], after['VmHWM'], after['VmRSS'], before['RssAnon'], after['RssAnon'],
      before['RssFile'], after['RssFile'])
"""


def rss(path: Path | None) -> int:
    from viewer.model.reader import load_model

    if path is None:
        path = max(_litert_models() + sorted((SHARED / "models").glob("*.tflite")),
                   key=lambda p: sum(len(sg.tensors) for sg in load_model(p, graph_rules=False).subgraphs))
    # Warm up on another model with many tensors (same code paths: options, buffers, names).
    others = [p for p in sorted((SHARED / "models").glob("*.tflite")) if p.name != path.name]
    warm = max(others, key=lambda p: sum(len(sg.tensors) for sg in load_model(p, graph_rules=False).subgraphs))
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(path), str(ROOT), str(warm)],
                         capture_output=True, text=True, check=True).stdout.split()
    before, peak, after, anon0, anon1, file0, file1 = map(int, out)
    size = path.stat().st_size
    n_t = sum(len(sg.tensors) for sg in load_model(path, graph_rules=False).subgraphs)
    print(f"model      {path.name}: {size:,} B, {n_t} tensors")
    print(f"transient  {peak - after:>10,} B  {(peak - after) / size:6.2%} of the file "
          f"(peak RSS during the load minus RSS after it; goal < 5%)")
    print(f"peak rise  {peak - before:>10,} B  {(peak - before) / size:6.2%} of the file "
          f"(includes the model records kept)")
    print(f"retained   {after - before:>10,} B  (anon {anon1 - anon0:+,} B, file-backed {file1 - file0:+,} B)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help=".tflite files (default: every shared model LiteRT loads)")
    ap.add_argument("--runs", type=int, default=21, help="interleaved runs per model; medians printed")
    ap.add_argument("--rss", action="store_true", help="transient RSS of one load instead")
    args = ap.parse_args(argv)
    if args.rss:
        return rss(Path(args.models[0]) if args.models else None)
    paths = [Path(m) for m in args.models] or _litert_models()
    if not paths:
        print(f"no models in {SHARED / 'models'}", file=sys.stderr)
        return 2
    return ratio_table(paths, max(1, args.runs))


if __name__ == "__main__":
    sys.exit(main())
