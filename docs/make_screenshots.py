"""Grab the main window, offscreen, with real models open: docs/window_<model>.png.

Usage (from the checkout, with ../shared/models beside it)::

    .venv/bin/python docs/make_screenshots.py [MODEL.tflite ...]

Without arguments: mobilenet_v2_224, unet_256 and coral_deeplabv3_mnv2_pascal_quant from
../shared/models (or $ARENA_VIEWER_SHARED/models). Each is measured with the LiteRT runtime,
so the kernel temporaries and the "LiteRT (measured)" plan are shown.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QEventLoop, QSettings, QTimer  # noqa: E402

from viewer.ui.app import application  # noqa: E402
from viewer.ui.main_window import MainWindow  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared")) / "models"
DEFAULT = ("mobilenet_v2_224.tflite", "unet_256.tflite", "coral_deeplabv3_mnv2_pascal_quant.tflite")
SIZE = (1600, 1000)


def grab(path: Path, out_dir: Path) -> Path:
    """Open ``path`` in a fresh window, wait for the plans, save the window as PNG."""
    app = application()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "s.ini"), QSettings.Format.IniFormat)
        win = MainWindow(settings=settings, measure=True)
        win.resize(*SIZE)
        win.show()
        loop = QEventLoop()
        errors = []
        win.view_changed.connect(loop.quit)
        win.open_failed.connect(lambda m: (errors.append(m), loop.quit()))
        QTimer.singleShot(300_000, loop.quit)
        win.open_model(str(path))
        loop.exec()
        if errors or win.response is None:
            raise SystemExit(f"{path}: {errors[0] if errors else 'timed out'}")
        # Select the largest tensor so the details panel and the highlight show something.
        a = win.response.analysis
        if a.usages:
            win.select_tensor(max(a.usages, key=lambda u: u.nbytes).tensor)
        for _ in range(5):
            app.processEvents()
        out = out_dir / f"window_{path.stem}.png"
        win.grab().save(str(out))
        win.close()
    return out


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or [SHARED / n for n in DEFAULT]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"make_screenshots: {missing[0]}: no such file", file=sys.stderr)
        return 2
    out_dir = Path(__file__).resolve().parent
    for p in paths:
        print(grab(p, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
