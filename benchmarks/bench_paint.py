"""Paint time of the packing chart with a 100k-rectangle synthetic plan, offscreen.

Usage::

    .venv/bin/python benchmarks/bench_paint.py [--rects 100000] [--frames 15]

Prints the median time of: building the chart data, the first frame (prepares the arrays),
repaints, the rectangles alone, frames while panning, a colour-mode switch, and one hover hit-test.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

from viewer.analysis.types import KIND_INTERMEDIATE, KIND_TEMPORARY, Analysis, TensorUsage  # noqa: E402
from viewer.model.types import Operator, Subgraph, Tensor  # noqa: E402
from viewer.planning.types import Plan  # noqa: E402

OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "CONCATENATION", "FULLY_CONNECTED", "MUL", "PAD")


def synthetic(n: int, n_ops: int, seed: int = 0) -> tuple[Analysis, Plan]:
    """``n`` tensors with random usage intervals over ``n_ops`` operators, stacked at random
    offsets (a picture, not a valid plan: paint cost does not depend on validity)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n_ops, n)
    held = np.minimum(rng.geometric(0.3, n), n_ops - first)
    size = rng.integers(64, 1 << 16, n)
    offset = rng.integers(0, 1 << 24, n) // 64 * 64
    ops = tuple(Operator(i, OPS[i % len(OPS)], 0, None, 1, (), ()) for i in range(n_ops))
    # Named tensors, like a model's; every tenth is a kernel temporary, numbered after them.
    tensors = tuple(Tensor(tid, f"synthetic/tensor_{tid}", (int(s),), (int(s),), "uint8", int(s))
                    for i, (tid, s) in enumerate(zip(_ids(n), size)) if i % 10)
    sg = Subgraph(0, "synthetic", tensors, ops, (), ())
    usages = tuple(
        TensorUsage(tid, int(f), int(f + h - 1), int(s), KIND_TEMPORARY if i % 10 == 0 else KIND_INTERMEDIATE,
                    producer=int(f))
        for i, (tid, f, h, s) in enumerate(zip(_ids(n), first, held, size))
    )
    diff = np.zeros(n_ops + 1, np.int64)
    np.add.at(diff, first, size)
    np.add.at(diff, first + held, -size)
    breadth = np.cumsum(diff)[:n_ops]
    a = Analysis(sg, usages, {}, {}, breadth, int(size.sum()), int(breadth.max()), int(breadth.argmax()))
    plan = Plan("synthetic", {tid: int(o) for tid, o in zip(_ids(n), offset)},
                int((offset + size).max()))
    return a, plan


def _ids(n: int) -> list[int]:
    """Tensor ids of the synthetic usages: the model's own tensors 0..k-1 in order, and the
    kernel temporaries (every tenth usage) numbered after them, as the runtime numbers them."""
    own = n - len(range(0, n, 10))
    ids, next_own, next_temp = [], 0, own
    for i in range(n):
        if i % 10 == 0:
            ids.append(next_temp)
            next_temp += 1
        else:
            ids.append(next_own)
            next_own += 1
    return ids


def median_ms(fn, frames: int) -> float:
    times = []
    for _ in range(frames):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rects", type=int, default=100_000)
    ap.add_argument("--ops", type=int, default=2_000)
    ap.add_argument("--frames", type=int, default=15)
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args()

    from viewer.export.image import ensure_qt_app

    app = ensure_qt_app()
    from PySide6.QtGui import QColor, QImage, QPainter

    from viewer.ui.chart import PackingChart

    t = time.perf_counter()
    a, plan = synthetic(args.rects, args.ops)
    t_problem = time.perf_counter() - t

    chart = PackingChart()
    chart.resize(args.width, args.height)
    t = time.perf_counter()
    chart.set_view(a, plan, model_name="synthetic", subgraph=0)
    t_build = time.perf_counter() - t
    assert chart.rect_count() == args.rects
    chart.show()
    app.processEvents()
    image = QImage(args.width, args.height, QImage.Format.Format_ARGB32)
    item = chart.chart_plot().item
    rects_only = QImage(args.width, args.height, QImage.Format.Format_ARGB32)

    def item_only():
        rects_only.fill(QColor("white"))
        p = QPainter(rects_only)
        p.setTransform(item.deviceTransform(chart.view.viewportTransform()))
        item.paint(p)
        p.end()

    def frame():
        image.fill(QColor("white"))
        p = QPainter(image)
        chart.view.render(p)
        p.end()

    def first_frame():
        item.set_faded(None)  # rebuild the primitive arrays, then paint
        frame()

    vb = chart.chart_plot().packing.getViewBox()
    step = [0]

    def pan_frame():
        step[0] += 1
        vb.translateBy(x=0.5 if step[0] % 2 else -0.5)
        app.processEvents()
        frame()

    def switch_mode():
        chart.set_color_mode("op" if chart.color_mode() == "kind" else "kind")

    xs = np.random.default_rng(1).uniform(0, args.ops, 200)
    ys = np.random.default_rng(2).uniform(0, plan.arena_bytes, 200)

    def hover():
        for x, y in zip(xs, ys):
            chart.tensor_at(float(x), float(y))

    print(f"synthetic plan: {args.rects:,d} rectangles over {args.ops:,d} operators, "
          f"{args.width}x{args.height} px offscreen, median of {args.frames} frames")
    print(f"  make analysis + plan          {1000 * t_problem:9.1f} ms (once)")
    print(f"  set_view (chart data + plot)  {1000 * t_build:9.1f} ms (once)")
    print(f"  first frame (arrays + paint)  {median_ms(first_frame, args.frames):9.1f} ms")
    print(f"  repaint frame                 {median_ms(frame, args.frames):9.1f} ms")
    print(f"  rectangles only (item.paint)  {median_ms(item_only, args.frames):9.1f} ms")
    print(f"  pan frame                     {median_ms(pan_frame, args.frames):9.1f} ms")
    print(f"  colour-mode switch (rebuild)  {median_ms(switch_mode, max(3, args.frames // 3)):9.1f} ms")
    print(f"  hover hit-test (numpy)        {median_ms(hover, 3) / len(xs):9.3f} ms per lookup")
    chart.close()

    # The compare view: the same plan beside a second one (another seed), on one y scale.
    import tempfile

    from viewer.export.image import export_compare
    from viewer.ui.compare import CompareView

    b, plan_b = synthetic(args.rects, args.ops, seed=1)
    view = CompareView()
    view.resize(args.width, args.height)
    view.show()

    def set_views():
        view.set_views((a, plan, "left"), (b, plan_b, "right"))
        app.processEvents()

    def compare_frame():
        image.fill(QColor("white"))
        view.render(image)

    with tempfile.TemporaryDirectory() as tmp:
        def export_pair():
            export_compare((a, plan, "left"), (b, plan_b, "right"), f"{tmp}/pair.png",
                           width=args.width, height=args.height, force=True)

        print(f"compare view: two plans of {args.rects:,d} rectangles side by side")
        print(f"  set_views (two charts + scale){median_ms(set_views, 3):9.1f} ms")
        print(f"  repaint frame (both charts)   {median_ms(compare_frame, args.frames):9.1f} ms")
        frame_ms = median_ms(compare_frame, args.frames)
        export_ms = median_ms(export_pair, 3)
        print(f"  export_compare PNG            {export_ms:9.1f} ms "
              f"(= {export_ms / frame_ms:.1f} repaints of both charts, the anchor in this run; "
              "target < 1000 ms at 1600x1000)")
    view.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
