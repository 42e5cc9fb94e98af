"""Grab the main window, offscreen, with real models open: docs/window_<model>.png.

Usage (from the checkout, with ../shared/models beside it)::

    .venv/bin/python docs/make_screenshots.py [MODEL.tflite ...]

Without arguments, from ../shared/models (or $ARENA_VIEWER_SHARED/models), at 1600x1000:
unet_256 with its kernel temporaries, the compare view of unet_256 against float16 activations
(docs/window_unet_256_compare_float16.png), coral_bodypix_mnv1_512_decoder, mobilenet_v2_224
and coral_deeplabv3_mnv2_pascal_quant. Each is measured with the LiteRT runtime, so the kernel
temporaries and the "LiteRT (measured)" plan are shown.
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
#: (model, activation dtype to compare the stored model with, or None for the plain window).
DEFAULT = (("unet_256.tflite", None), ("unet_256.tflite", "float16"),
           ("coral_bodypix_mnv1_512_decoder.tflite", None), ("mobilenet_v2_224.tflite", None),
           ("coral_deeplabv3_mnv2_pascal_quant.tflite", None))
SIZE = (1600, 1000)


def _wait(win, start) -> None:
    """Run ``start()`` and wait for the window's next view (or its failure)."""
    loop = QEventLoop()
    errors = []
    shown = lambda: loop.quit()  # noqa: E731
    failed = lambda m: (errors.append(m), loop.quit())  # noqa: E731
    win.view_changed.connect(shown)
    win.open_failed.connect(failed)
    QTimer.singleShot(300_000, loop.quit)
    start()
    loop.exec()
    win.view_changed.disconnect(shown)
    win.open_failed.disconnect(failed)
    if errors or win.response is None:
        raise SystemExit(f"{errors[0] if errors else 'timed out'}")


def grab(path: Path, out_dir: Path, compare_dtype: str | None = None) -> Path:
    """Open ``path`` in a fresh window, wait for the plans, save the window as PNG.

    With ``compare_dtype``, store the activations as that dtype and show the compare view.
    """
    app = application()
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "s.ini"), QSettings.Format.IniFormat)
        win = MainWindow(settings=settings, measure=True)
        win.resize(*SIZE)
        win.show()
        _wait(win, lambda: win.open_model(str(path)))
        suffix = ""
        if compare_dtype:
            combo = win.whatif.dtype
            _wait(win, lambda: combo.setCurrentIndex(combo.findData(compare_dtype)))
            win.set_compare_visible(True)
            suffix = f"_compare_{compare_dtype}"
        else:
            # Select the largest tensor so the details panel and the highlight show something.
            a = win.response.analysis
            if a.usages:
                win.select_tensor(max(a.usages, key=lambda u: u.nbytes).tensor)
        for _ in range(5):
            app.processEvents()
        out = out_dir / f"window_{path.stem}{suffix}.png"
        win.grab().save(str(out))
        win.close()
    return out


def main(argv: list[str]) -> int:
    shots = [(Path(p), None) for p in argv] or [(SHARED / n, d) for n, d in DEFAULT]
    missing = [p for p, _ in shots if not p.exists()]
    if missing:
        print(f"make_screenshots: {missing[0]}: no such file", file=sys.stderr)
        return 2
    out_dir = Path(__file__).resolve().parent
    os.chdir(ROOT)  # models by a path relative to the checkout (../shared/...), as the README
    shots = [(Path(os.path.relpath(os.path.abspath(p), ROOT)), d)
             for p, d in shots]
    for p, dtype in shots:
        print(grab(p, out_dir, dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
