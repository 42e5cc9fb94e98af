"""Tiling: full-search time, grid/split change time, and the acceptance campaign against LiteRT.

    .venv/bin/python benchmarks/bench_tiling.py [--search] [--change] [--campaign] [--gui]

``--search``: the full search (square grids 1x1..8x8, every split) on mobilenet_v2_224, with
an anchor (one ``analyze`` of the model) timed in the same run. ``--change``: time from a grid
or split change to new numbers (an uncached ``Tiler.evaluate``), median over several changes;
``--gui`` also times the window's redraw after the change (offscreen). ``--campaign``: writes
the patch/tail models for mobilenet_v2_224_int8, mobilenet_v2_224 and unet_256 at 2x2 and 4x4
(best split per grid) and unet_256 split after #2, and prints what LiteRT measured: every
signature's arena vs the prediction, stitched cut tensors and tail outputs vs the original.
Default: all but --gui. Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.analysis.intervals import analyze  # noqa: E402
from viewer.whatif.tiling.plan import STREAMED, search  # noqa: E402
from viewer.whatif.tiling.report import make_tiler, tile_report  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared")) / "models"


def bench_search() -> None:
    path = SHARED / "mobilenet_v2_224.tflite"
    tiler = make_tiler(str(path))
    t0 = time.perf_counter()
    for _ in range(20):
        analyze(tiler.sg)
    anchor = (time.perf_counter() - t0) / 20
    t0 = time.perf_counter()
    res = search(tiler)
    dt = time.perf_counter() - t0
    n = sum(len(v) for v in res.curve.values())
    print(f"full search mobilenet_v2_224: {dt:.2f} s for {n} (grid, split) plans "
          f"({1000 * dt / max(n, 1):.1f} ms each); anchor analyze(model) {1000 * anchor:.2f} ms")
    for g, p in res.best.items():
        print(f"  {g[0]}x{g[1]}: split #{p.split:<3d} peak {p.peak_bytes:>11,d} B  {p.reduction:5.2f}x  "
              f"+{p.overhead_pct:.1f}% MACs")


def bench_change() -> None:
    tiler = make_tiler(str(SHARED / "mobilenet_v2_224.tflite"))
    tiler.evaluate((4, 4), 12)
    times = []
    for grid, k in [((4, 4), 13), ((4, 4), 16), ((3, 3), 16), ((5, 5), 16), ((5, 5), 20), ((2, 2), 8), ((6, 6), 12)]:
        t0 = time.perf_counter()
        tiler.evaluate(grid, k)
        times.append(time.perf_counter() - t0)
    print(f"grid/split change -> new numbers (uncached evaluate): median {1000 * statistics.median(times):.1f} ms, "
          f"max {1000 * max(times):.1f} ms over {len(times)} changes (target: redraw < 200 ms)")


def bench_gui() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from viewer.ui.tiling_panel import time_redraw
    except ImportError as e:
        print(f"gui: not available ({e})")
        return
    print(time_redraw(str(SHARED / "mobilenet_v2_224.tflite")))


def campaign() -> None:
    cases = [(m, (g, g), None) for m in ("mobilenet_v2_224_int8", "mobilenet_v2_224", "unet_256") for g in (2, 4)]
    cases.append(("unet_256", (2, 2), 2))
    cases.append(("unet_256", (4, 4), 2))
    cases.append(("mobilenet_v2_224_int8", (3, 5), 16))  # uneven rows and columns: mid2 classes
    print("model                   grid split  sigs  arenas  cut          outputs      peak (pred = meas)  untiled      x")
    for name, grid, split in cases:
        path = SHARED / f"{name}.tflite"
        if not path.exists():
            print(f"{name}: not present")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            rep = tile_report(str(path), grid=grid, split=split, out_dir=tmp)
            dt = time.perf_counter() - t0
        v = rep["verification"]

        def worst(d):
            parts = []
            for c in d.values():
                if c.get("max_magnitude") is None:
                    parts.append("exact" if c["exact"] else f"{c['mismatches']} differ")
                else:
                    parts.append("exact" if c["exact"] else f"{c['relative']:.1e} rel")
            return ",".join(sorted(set(parts)))

        print(f"{name:<23s} {grid[0]}x{grid[1]}  #{rep['split_operator']:<4d} {len(v['signatures']):>4d}  "
              f"{'equal' if v['arenas_equal'] else 'DIFFER':6s}  {worst(v['stitching']['cut']):12s} "
              f"{worst(v['stitching']['outputs']):12s} {rep['peak_bytes']:>10,d} = {v['measured_peak_bytes']:<10,d} "
              f"{v['untiled_measured_bytes']:>11,d} {v['measured_reduction']:5.2f}  ({dt:.1f} s)")
        if name == "mobilenet_v2_224_int8" and grid == (4, 4):
            tiler = make_tiler(str(path))
            st = tiler.evaluate(grid, rep["split_operator"], STREAMED)
            print(f"    streamed input: peak {st.peak_bytes:,d} B, {st.reduction:.2f}x "
                  f"(patch stage {st.patch_stage_bytes:,d}, tail {st.tail_arena_bytes:,d})")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--search", action="store_true")
    p.add_argument("--change", action="store_true")
    p.add_argument("--campaign", action="store_true")
    p.add_argument("--gui", action="store_true")
    a = p.parse_args()
    if not (a.search or a.change or a.campaign or a.gui):
        a.search = a.change = a.campaign = True
    if a.change:
        bench_change()
    if a.gui:
        bench_gui()
    if a.campaign:
        campaign()
    if a.search:
        bench_search()
    return 0


if __name__ == "__main__":
    sys.exit(main())
