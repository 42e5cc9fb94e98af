"""Runtime-confirmed what-if latency: a fresh LiteRT process per probe vs the resident worker.

Same run, same model, both ways (the one-shot probe is the anchor):

1. one probe (resize + allocate_tensors + read-back) at a new resolution;
2. the window's background work for a runtime-confirmed what-if (``compute``: the runtime's
   shapes, its arena and kernel temporaries, every planner), and our estimate alone;
3. in the window (offscreen): from the what-if edit to the runtime-confirmed redraw, and from
   the estimate's redraw to the confirmed one (drawing included).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_worker.py [MODEL] [--runs N]

Figures only; nothing is asserted. Target (issue 13): confirmed redraw under 100 ms on
MobileNet v2 (was 156-177 ms with a process start per probe).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from viewer.runtime.probe import probe_model  # noqa: E402
from viewer.runtime.worker import close_workers, probe_resident  # noqa: E402


def show(label: str, ts: list[float]) -> None:
    print(f"  {label:<52} median {statistics.median(ts):7.1f} ms   min {min(ts):7.1f} ms"
          f"   max {max(ts):7.1f} ms")


@contextlib.contextmanager
def one_shot():
    """Route the window's probes through a fresh process each, as before the worker."""
    from viewer.document import work as workers
    from viewer.whatif import apply

    saved = workers._probe_resident, apply._probe_subprocess
    workers._probe_resident = lambda mod: mod.probe_model
    apply._probe_subprocess = lambda path, inputs, timeout: apply._probe_via_runtime(
        probe_model, path, inputs, timeout)
    try:
        yield
    finally:
        workers._probe_resident, apply._probe_subprocess = saved


def probes(model: str, runs: int) -> None:
    print("one probe at a new resolution (resize + allocate_tensors + read-back)")
    for label, fn in (("one-shot process (before)", probe_model),
                      ("resident worker (after)", probe_resident)):
        fn(model, input_shapes={0: (1, 200, 200, 3)}, check=True)  # the worker's start
        ts = []
        for k in range(runs):
            side = 160 + 8 * k
            t0 = time.perf_counter()
            fn(model, input_shapes={0: (1, side, side, 3)}, check=True)
            ts.append((time.perf_counter() - t0) * 1e3)
        show(label, ts)


def confirmed_whatif(model: str, runs: int) -> None:
    """The window's background work for a runtime-confirmed what-if (no drawing)."""
    from viewer.document.work import AnalysisRequest, compute
    from viewer.model.reader import load_model
    from viewer.whatif import apply
    from viewer.whatif.edits import WhatIfEdits

    m = load_model(model)
    print("runtime-confirmed what-if: the window's compute() (runtime shapes + probe + plans)")
    for label, ctx in (("one-shot process (before)", one_shot),
                       ("resident worker (after)", contextlib.nullcontext)):
        ts = []
        with ctx():
            for k in range(runs + 1):
                apply._probe_cached.cache_clear()
                side = 160 + 8 * k
                req = AnalysisRequest(model, 0, m, WhatIfEdits(input_shapes={"": (side, side)}))
                t0 = time.perf_counter()
                resp = compute(req)
                if k:
                    ts.append((time.perf_counter() - t0) * 1e3)
                assert resp.probe is not None and resp.probe.ok, resp.measure_note
        show(label, ts)
    ts = []
    for k in range(runs):
        req = AnalysisRequest(model, 0, m, WhatIfEdits(input_shapes={"": (160 + 8 * k, 160 + 8 * k)}),
                              shape_source="inferred")
        t0 = time.perf_counter()
        compute(req)
        ts.append((time.perf_counter() - t0) * 1e3)
    show("our estimate only (no runtime)", ts)


def window(model: str, runs: int) -> None:
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from viewer.ui.main_window import MainWindow
    from viewer.whatif import apply
    from viewer.whatif.edits import WhatIfEdits

    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "bench_worker.ini"),
                         QSettings.Format.IniFormat)
    win = MainWindow(settings=settings, measure=True)
    win.resize(1600, 1000)
    win.show()

    marks: dict[str, float] = {}

    def on_view() -> None:
        full = win.full_response
        if full is None or full.request.edits is None:
            marks["open"] = time.perf_counter()
        elif full.request.shape_source == "inferred":
            marks["estimate"] = time.perf_counter()
        else:
            marks["confirmed"] = time.perf_counter()
            loop.quit()

    win.view_changed.connect(on_view)
    loop = QEventLoop()
    QTimer.singleShot(60000, loop.quit)
    win.open_model(model)
    while "open" not in marks:
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents, 100)

    print("window: what-if edit -> runtime-confirmed redraw (offscreen 1600x1000)")
    for label, ctx in (("one-shot process (before)", one_shot), ("resident worker (after)",
                                                                  contextlib.nullcontext)):
        edit_to_confirmed, confirm_only = [], []
        with ctx():
            for k in range(runs + 1):
                apply._probe_cached.cache_clear()
                side = 160 + 8 * k
                marks.pop("estimate", None)
                marks.pop("confirmed", None)
                t0 = time.perf_counter()
                win.document.set_panel_edits(WhatIfEdits(input_shapes={"": (side, side)}))
                loop.exec()
                if "confirmed" not in marks:
                    print("  no confirmed redraw within 60 s")
                    return
                if k == 0:
                    continue  # warm-up (the worker starts here)
                edit_to_confirmed.append((marks["confirmed"] - t0) * 1e3)
                confirm_only.append((marks["confirmed"] - marks["estimate"]) * 1e3)
        show(f"{label}: edit -> confirmed redraw", edit_to_confirmed)
        show(f"{label}: estimate shown -> confirmed redraw", confirm_only)
    win.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?",
                    default=str(ROOT.parent / "shared" / "models" / "mobilenet_v2_224.tflite"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-window", action="store_true")
    args = ap.parse_args()
    print(f"{args.model}, {args.runs} runs, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    try:
        probes(args.model, args.runs)
        confirmed_whatif(args.model, args.runs)
        if not args.no_window:
            window(args.model, args.runs)
    finally:
        close_workers()
    return 0


if __name__ == "__main__":
    sys.exit(main())
