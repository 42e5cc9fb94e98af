"""PNG/SVG export: exact size, what is drawn, bad paths, and a headless run in a subprocess."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.export.test_chart_data import plan_of, synthetic_analysis
from viewer.errors import UsageError
from viewer.export.chart_data import KIND_COLORS
from viewer.export.image import export_chart

ROOT = Path(__file__).resolve().parents[2]


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk (no Qt needed)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def count_color(path: Path, rgb, tol=6) -> int:
    from PySide6.QtGui import QImage

    img = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB32)
    import numpy as np

    ptr = img.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(
        img.height(), img.bytesPerLine() // 4, 4)[:, : img.width(), :3]
    bgr = np.array(rgb[::-1])
    return int((np.abs(arr.astype(int) - bgr).max(axis=2) <= tol).sum())


def test_png_has_the_requested_size_and_the_kind_colours(tmp_path, qapp):
    a = synthetic_analysis()
    out = export_chart(a, plan_of(a, "greedy_by_size"), tmp_path / "c.png", width=900,
                       height=610, model_name="synthetic.tflite")
    assert png_size(out) == (900, 610)
    # Rectangles are filled with their kind's colour: the intermediates and the kernel temporary.
    assert count_color(out, KIND_COLORS["intermediate"]) > 500
    assert count_color(out, KIND_COLORS["temporary"]) > 50


def test_svg_has_the_requested_size_and_viewbox(tmp_path, qapp):
    a = synthetic_analysis()
    out = export_chart(a, plan_of(a), tmp_path / "c.svg", width=1200, height=700,
                       model_name="synthetic.tflite")
    root = ET.parse(out).getroot()
    assert root.get("width") == "1200px" and root.get("height") == "700px"
    assert root.get("viewBox") == "0 0 1200 700"
    text = out.read_text()
    assert "synthetic.tflite — subgraph 0 — naive" in text  # the title
    assert "lower bound" in text and "KiB" in text


def test_svg_geometry_matches_the_png(tmp_path, qapp):
    """The SVG renders to the same picture as the PNG (no rounding of the byte axis)."""
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    png = export_chart(a, plan, tmp_path / "c.png", width=800, height=500)
    svg = export_chart(a, plan, tmp_path / "c.svg", width=800, height=500)
    img = QImage(800, 500, QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    QSvgRenderer(str(svg)).render(p)
    p.end()
    img.save(str(tmp_path / "svg.png"))
    want = count_color(png, KIND_COLORS["intermediate"])
    got = count_color(tmp_path / "svg.png", KIND_COLORS["intermediate"])
    assert want > 500 and abs(got - want) <= 0.05 * want


@pytest.mark.parametrize(
    "name, kwargs, match",
    [
        ("c.jpg", {}, "unknown image type"),
        ("c", {}, "unknown image type"),
        ("c.png", {"width": 10}, "width 10 px is out of range"),
        ("nodir/c.png", {}, "does not exist"),
    ],
)
def test_bad_output_is_a_usage_error_naming_the_file(tmp_path, name, kwargs, match):
    a = synthetic_analysis()
    with pytest.raises(UsageError, match=match) as e:
        export_chart(a, plan_of(a), tmp_path / name, **kwargs)
    assert str(tmp_path / name) in str(e.value)


@pytest.mark.parametrize("platform", [None, "xcb"])
def test_headless_export_in_a_subprocess(tmp_path, platform):
    """No DISPLAY, no WAYLAND_DISPLAY, and no QT_QPA_PLATFORM or one that needs a display
    (Qt would abort on xcb): export still works, on the offscreen platform."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if platform:
        env["QT_QPA_PLATFORM"] = platform
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    code = (
        "import sys, os\n"
        "from tests.export.test_chart_data import plan_of, synthetic_analysis\n"
        "from viewer.export.image import export_chart\n"
        "a = synthetic_analysis()\n"
        "export_chart(a, plan_of(a), sys.argv[1], width=640, height=480)\n"
        "export_chart(a, plan_of(a), sys.argv[2], width=640, height=480)\n"
        "print(os.environ['QT_QPA_PLATFORM'])\n"
    )
    png, svg = tmp_path / "h.png", tmp_path / "h.svg"
    r = subprocess.run([sys.executable, "-c", code, str(png), str(svg)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "offscreen"
    assert png_size(png) == (640, 480)
    assert ET.parse(svg).getroot().get("viewBox") == "0 0 640 480"


def test_rectangles_drawn_without_pyqtgraphs_primitive_array(tmp_path, qapp, monkeypatch):
    """The fallback for pyqtgraph versions without ``PrimitiveArray`` draws the same picture."""
    from viewer.export import chart_items

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    fast = export_chart(a, plan, tmp_path / "fast.png", width=800, height=500)
    monkeypatch.setattr(chart_items, "_PrimitiveArray", None)
    slow = export_chart(a, plan, tmp_path / "slow.png", width=800, height=500)
    want = count_color(fast, KIND_COLORS["intermediate"])
    assert want > 500 and count_color(slow, KIND_COLORS["intermediate"]) == want


@pytest.mark.parametrize("size", [(1600, 1000), (800, 600), (420, 300)])
@pytest.mark.parametrize("color_by", ["kind", "op"])
def test_legend_sits_outside_both_plots(qapp, size, color_by):
    """Wide images put the legend in a column on the right, narrow ones in a row above the
    plot; either way it covers neither the packing plot nor the breadth curve. An image too
    short for a legend and a usable plot (420 x 300) leaves the legend out."""
    from PySide6.QtCore import Qt

    from viewer.export.chart_data import build_chart_data
    from viewer.export.image import build_chart_widget

    a = synthetic_analysis()
    data = build_chart_data(a, plan_of(a, "greedy_by_size"), color_by=color_by)
    widget, chart = build_chart_widget(data, *size)
    widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    widget.show()
    for _ in range(3):
        qapp.processEvents()
    try:
        if size[1] < 400:
            assert not chart.rows[0] and not chart.legend.isVisible()
            assert chart.packing.getViewBox().sceneBoundingRect().height() >= 100
            return
        legend = chart.legend.sceneBoundingRect()
        assert legend.width() > 50 and legend.height() > 20
        assert len(chart.legend.items) == len(data.legend) + 4  # heading, arena, bound, band
        for plot in (chart.packing, chart.breadth):
            assert not legend.intersects(plot.getViewBox().sceneBoundingRect())
        assert legend.right() <= size[0] + 1 and legend.bottom() <= size[1]
        if size[0] >= 1000:
            assert legend.left() >= chart.packing.getViewBox().sceneBoundingRect().right()
        else:
            assert legend.bottom() <= chart.packing.getViewBox().sceneBoundingRect().top()
            assert chart.legend.columnCount > 1 or size[0] < 500
    finally:
        widget.close()
        widget.deleteLater()


def test_exports_name_the_kernel_temporaries(tmp_path, qapp):
    """With runtime names for the temporaries (``Analysis.temporary_names``), the export lists
    the largest ones under the plots; without temporaries there is no such line."""
    import dataclasses

    from tests.export.test_chart_data import synthetic_subgraph
    from viewer.analysis.intervals import analyze
    from viewer.export.chart_data import build_chart_data, temporaries_text

    a = dataclasses.replace(synthetic_analysis(),
                            temporary_names={7: "#0 CONV_2D kernel temporary 0 (im2col)"})
    d = build_chart_data(a, plan_of(a, "greedy_by_size"))
    assert d.names[d.row_of(7)] == "#0 CONV_2D kernel temporary 0 (im2col)"
    assert temporaries_text(d) == ("kernel temporaries: #0 CONV_2D kernel temporary 0 (im2col) "
                                   "512 B at operator 0")
    svg = export_chart(a, plan_of(a, "greedy_by_size"), tmp_path / "t.svg", width=1200, height=700)
    assert "kernel temporary 0 (im2col)" in svg.read_text()
    b = analyze(synthetic_subgraph())
    assert temporaries_text(build_chart_data(b, plan_of(b))) == ""
    svg = export_chart(b, plan_of(b), tmp_path / "n.svg", width=1200, height=700)
    assert "kernel temporaries" not in svg.read_text()
