"""PNG and SVG export of the packing chart, with or without a display.

The chart is built by :func:`viewer.export.chart_scene.build_chart` in a
``GraphicsLayoutWidget`` that is laid out at the requested size but never shown on screen
(``WA_DontShowOnScreen``), then rendered into a ``QImage`` (PNG) or a ``QSvgGenerator`` (SVG).
"""

from __future__ import annotations

import os
from pathlib import Path

from viewer.analysis.types import Analysis
from viewer.errors import UsageError, ViewerError
from viewer.planning.types import Plan

SUFFIXES = (".png", ".svg")
#: Qt platforms that draw without a display server.
HEADLESS_PLATFORMS = ("offscreen", "minimal", "minimalegl", "vnc", "eglfs", "linuxfb", "vkkhrdisplay")
#: Limits of the image size, in pixels.
MIN_SIZE, MAX_SIZE = 200, 16384
#: The most pixels a PNG may have: 8192 x 8192 (64 Mi px). Drawing it takes 4 B per pixel
#: (256 MiB ARGB32) on top of the process, and it is the largest image Qt's reader opens under
#: its default 256 MB allocation limit (``QImageReader::allocationLimit``); ImageMagick's default
#: policy (area 128MP, width/height 16KP) refuses 16384 x 16384. Larger charts: SVG.
PNG_MAX_PIXELS = 8192 * 8192


def ensure_qt_app():
    """Return the running ``QApplication``, creating one if there is none.

    With no display (neither ``DISPLAY`` nor ``WAYLAND_DISPLAY`` set) the offscreen platform is
    forced first, so this works on a headless server, unless ``QT_QPA_PLATFORM`` already names
    a platform that needs no display (offscreen, minimal, vnc, eglfs, linuxfb). Qt would abort
    the process on a platform such as xcb without a display. A ``QCoreApplication`` that is not
    a ``QApplication`` cannot draw widgets.

    Raises
    ------
    viewer.errors.ViewerError
        When a non-GUI ``QCoreApplication`` already runs.
    """
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        chosen = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
        if chosen not in HEADLESS_PLATFORMS:
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from pyqtgraph.Qt import QtWidgets

    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication([])
    elif not isinstance(app, QtWidgets.QApplication):
        raise ViewerError("cannot draw the chart: a non-GUI QCoreApplication is already running")
    return app


def check_output(path: str | Path, width: int, height: int) -> str:
    """Check an output image path and size before any work; return its suffix.

    Raises
    ------
    viewer.errors.UsageError
        Unknown suffix, size out of range (each side ``MIN_SIZE..MAX_SIZE`` px; a PNG at most
        ``PNG_MAX_PIXELS`` pixels in all), missing folder, a folder, no write permission.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise UsageError(
            f"{path}: unknown image type {path.suffix or '(no suffix)'!r}; use .png or .svg"
        )
    for name, v in (("width", width), ("height", height)):
        if not isinstance(v, int) or not MIN_SIZE <= v <= MAX_SIZE:
            raise UsageError(f"{path}: {name} {v!r} px is out of range ({MIN_SIZE}..{MAX_SIZE})")
    if suffix == ".png" and width * height > PNG_MAX_PIXELS:
        raise UsageError(
            f"{path}: {width}x{height} px is {width * height / 2**20:.1f} Mi px, above the PNG limit of "
            f"{PNG_MAX_PIXELS // 2**20} Mi px (8192x8192, which Qt and ImageMagick still open and takes "
            f"256 MiB to draw); use .svg for a larger chart"
        )
    parent = path.parent if str(path.parent) not in ("",) else Path(".")
    if not parent.exists():
        raise UsageError(f"{path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder, not an image file")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise UsageError(f"{path}: cannot write here (permission denied)")
    return suffix


def render_widget(widget, path: str | Path, width: int, height: int, *, force: bool = False) -> Path:
    """Render a laid-out Qt widget to ``path`` (PNG or SVG by suffix) at ``width`` x ``height``.

    The widget is resized to exactly that size; the PNG has exactly ``width`` x ``height``
    pixels, the SVG that size and a ``0 0 width height`` viewBox. The image is encoded in
    memory and written atomically (:func:`viewer.export.paths.write_atomic`): an existing file
    is replaced only when ``force`` is true, and only once the new one is complete.

    Raises
    ------
    viewer.errors.UsageError
        Unknown suffix, bad size, missing folder, an existing file without ``force``.
    viewer.errors.ViewerError
        When the file cannot be written (an existing one is then unchanged).
    """
    from pyqtgraph.Qt import QtCore, QtGui, QtWidgets

    from viewer.export.paths import check_output_path, write_atomic

    path = Path(path)
    suffix = check_output(path, width, height)
    check_output_path(path, what="chart", force=force)
    app = QtWidgets.QApplication.instance()
    old_size = widget.size()
    widget.resize(width, height)
    if not widget.isVisible():
        widget.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        widget.show()
        shown_here = True
    else:
        shown_here = False
    # Let the layout, axes and labels settle, without painting frames nobody sees (at 100k
    # rectangles each discarded paint costs as much as the render itself).
    updates = widget.updatesEnabled()
    widget.setUpdatesEnabled(False)
    for _ in range(3):
        app.processEvents()
    widget.setUpdatesEnabled(updates)
    data = QtCore.QByteArray()
    buf = QtCore.QBuffer(data)
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    try:
        if suffix == ".png":
            image = QtGui.QImage(width, height, QtGui.QImage.Format.Format_ARGB32)
            image.fill(QtGui.QColor(255, 255, 255))
            painter = QtGui.QPainter(image)
            painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
            painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
            widget.render(painter)
            painter.end()
            # Quality 80 is zlib's fast end: half the time of the default level on dense
            # charts, and no larger (a chart is flat colour).
            if not image.save(buf, "PNG", 80):
                raise ViewerError(f"{path}: cannot encode the PNG image")
            out = bytes(data)
        else:
            from pyqtgraph.Qt import QtSvg

            gen = QtSvg.QSvgGenerator()
            gen.setOutputDevice(buf)
            gen.setSize(QtCore.QSize(width, height))
            gen.setViewBox(QtCore.QRect(0, 0, width, height))
            # Same resolution as the widget, or fonts and cosmetic pens scale by 72/96.
            gen.setResolution(widget.logicalDpiX())
            gen.setTitle(getattr(widget, "windowTitle", lambda: "")() or "Arena Viewer chart")
            gen.setDescription("Tensor arena packing chart made by Arena Viewer")
            painter = QtGui.QPainter()
            if not painter.begin(gen):
                raise ViewerError(f"{path}: cannot encode the SVG image")
            widget.render(painter)
            painter.end()
            from viewer.export.svg_flatten import flatten_svg

            # Plain strokes in user units: readable in browsers, rsvg and CairoSVG too.
            text = flatten_svg(bytes(data).decode("utf-8"))
            out = _svg_size_in_pixels(text, width, height).encode("utf-8")
    finally:
        buf.close()
        if shown_here:
            widget.hide()
        widget.resize(old_size)
    write_atomic(path, out, what=f"{suffix[1:].upper()} image", force=force)
    return path


def _svg_size_in_pixels(text: str, width: int, height: int) -> str:
    """QSvgGenerator writes the size in millimetres; state it in pixels, as requested."""
    import re

    head, sep, rest = text.partition("viewBox=")
    head = re.sub(r'width="[^"]*"', f'width="{width}px"', head, count=1)
    head = re.sub(r'height="[^"]*"', f'height="{height}px"', head, count=1)
    return head + sep + rest


def export_chart(
    analysis: Analysis,
    plan: Plan,
    path: str | Path,
    *,
    width: int = 1600,
    height: int = 1000,
    model_name: str = "model",
    subgraph: int | None = None,
    color_by: str = "kind",
    force: bool = False,
) -> Path:
    """Write the packing chart of ``plan`` as a PNG or SVG (chosen by ``path``'s suffix).

    Works without a display: a ``QApplication`` is created when none exists, on the offscreen
    platform when neither ``DISPLAY`` nor ``WAYLAND_DISPLAY`` is set. The file is written
    atomically; an existing file is replaced only with ``force``.

    Parameters
    ----------
    analysis : Analysis
    plan : Plan
        A plan of ``analysis.problem()``.
    path : str or Path
        ``*.png`` or ``*.svg``.
    width, height : int
        Image size in pixels (PNG: exactly this many pixels; SVG: this size and viewBox).
    model_name : str
        For the title (e.g. the model file's name).
    subgraph : int, optional
        For the title; defaults to the analysed subgraph's index.
    color_by : {"kind", "op"}
    force : bool
        Replace an existing file.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    viewer.errors.UsageError
        Unknown suffix, size out of range, missing folder, unknown ``color_by``, an existing
        file without ``force``, a FIFO or device.
    viewer.errors.PlanningError
        When ``plan`` is not a plan of ``analysis``.
    viewer.errors.ViewerError
        When the file cannot be written.
    """
    from viewer.export.paths import check_output_path

    path = Path(path)
    check_output(path, width, height)
    check_output_path(path, what="chart", force=force)
    from viewer.export.chart_data import build_chart_data

    data = build_chart_data(
        analysis, plan, color_by=color_by, model_name=model_name, subgraph=subgraph
    )
    return export_chart_data(data, path, width=width, height=height, force=force)


def export_chart_data(data, path: str | Path, *, width: int = 1600, height: int = 1000,
                      faded=None, force: bool = False) -> Path:
    """Write the chart of a :class:`~viewer.export.chart_data.ChartData` as PNG or SVG.

    Same as :func:`export_chart` for data already built (e.g. by the interactive chart, with
    its colour mode); ``faded`` is an optional bool mask, shape (n,), of rows drawn faded.

    Raises
    ------
    viewer.errors.UsageError, viewer.errors.ViewerError
        As :func:`export_chart`.
    """
    from viewer.export.paths import check_output_path

    path = Path(path)
    check_output(path, width, height)
    check_output_path(path, what="chart", force=force)
    widget, _ = build_chart_widget(data, width, height, faded=faded)
    try:
        return render_widget(widget, path, width, height, force=force)
    finally:
        widget.close()
        widget.deleteLater()


def build_chart_widget(data, width: int, height: int, *, faded=None):
    """An unshown ``GraphicsLayoutWidget`` holding the chart of ``data`` laid out for an image
    of ``width`` x ``height`` pixels, and its :class:`~viewer.export.chart_scene.ChartPlot`.

    The legend gets its own column right of the plots when the image is at least 1000 px
    wide, else a row between the title and the plots; it never covers the plot area.
    """
    ensure_qt_app()
    import pyqtgraph as pg

    from viewer.export.chart_scene import THEME, build_chart

    from viewer.export.chart_data import CURVE_STEPS_PER_PX

    widget = pg.GraphicsLayoutWidget(show=False, size=(width, height))
    widget.setBackground(THEME["background"])
    widget.setWindowTitle(data.title)
    widget.resize(width, height)
    widget.ci.setGeometry(0, 0, width, height)
    chart = build_chart(data, widget.ci, legend="right" if width >= 1000 else "top",
                        title_pt=13.0 if width >= 1000 else (11.0 if width >= 600 else 9.5),
                        temporaries_line=True, curve_steps=CURVE_STEPS_PER_PX * width)
    if faded is not None:
        chart.item.set_faded(faded)
    return widget, chart


def _side_data(side, color_by: str, subgraph: int | None):
    from viewer.export.chart_data import ChartData, build_chart_data

    if isinstance(side, ChartData):
        return side
    try:
        analysis, plan, label = side
    except (TypeError, ValueError):
        raise UsageError("a compare side is (analysis, plan, label)") from None
    return build_chart_data(analysis, plan, color_by=color_by, model_name=str(label),
                            subgraph=subgraph)


def build_compare_widget(left, right, width: int, height: int, outside=None):
    """An unshown ``GraphicsLayoutWidget`` with two charts side by side (built from two
    :class:`~viewer.export.chart_data.ChartData`) on one y scale, under a one-line delta.

    Returns ``(widget, (left_plot, right_plot), delta_text)``.
    """
    ensure_qt_app()
    import pyqtgraph as pg

    from viewer.export.chart_data import CURVE_STEPS_PER_PX, compare_text, temporaries_text
    from viewer.export.chart_scene import THEME, TitleItem, build_chart, fit_legend, match_heights

    widget = pg.GraphicsLayoutWidget(show=False, size=(width, height))
    widget.setBackground(THEME["background"])
    widget.resize(width, height)
    widget.ci.setGeometry(0, 0, width, height)
    delta = compare_text(left, right, outside)
    widget.setWindowTitle(f"{left.title} vs {right.title}")
    widget.ci.setContentsMargins(4, 6, 4, 4)
    heading = TitleItem(delta, 11.0 if width >= 1200 else 9.5)
    widget.ci.addItem(heading, row=0, col=0, colspan=2)
    heading.fit(width - 16)
    # The line naming kernel temporaries only when both sides have one: the rows must match.
    notes = all(temporaries_text(d) for d in (left, right))
    plots = []
    for col, data in enumerate((left, right)):
        sub = widget.ci.addLayout(row=1, col=col)
        plot = build_chart(data, sub, legend="top", title_pt=11.0 if width >= 1200 else 9.5,
                           temporaries_line=notes,
                           size=(width / 2, height - heading.minimumHeight() - 10),
                           curve_steps=CURVE_STEPS_PER_PX * width // 2)
        fit_legend(plot.legend, width / 2 - 40)
        for item in (plot.title, plot.notes):
            if item is not None:
                item.fit(width / 2 - 30)
        plots.append(plot)
    match_heights(plots)
    top = max(p.y_top() for p in plots)
    btop = max(max(int(p.data.breadth.max()) if len(p.data.breadth) else 0, p.data.lower_bound)
               for p in plots)
    for p in plots:
        p.set_shared_top(top, btop)
    widget.ci.layout.setColumnStretchFactor(0, 1)
    widget.ci.layout.setColumnStretchFactor(1, 1)
    return widget, tuple(plots), delta


def export_compare(left, right, path: str | Path, *, width: int = 2000, height: int = 900,
                   color_by: str = "kind", subgraph: int | None = None,
                   force: bool = False, outside=None) -> Path:
    """Write two packing charts side by side, on ONE y scale, as a PNG or SVG.

    Both the packing plots and the breadth curves show the larger of the two arenas (and
    breadths), so sizes compare by eye; above them one line gives the delta (arena, lower
    bound, whether the widest operator moved; :func:`viewer.export.chart_data.compare_text`).

    Parameters
    ----------
    left, right : tuple (Analysis, Plan, str) or ChartData
        The baseline and the edited side: an analysis, a plan of its problem, and the label
        shown as the chart's model name (e.g. ``"baseline: m.tflite"``).
    path : str or Path
        ``*.png`` or ``*.svg``.
    width, height : int
        Image size in pixels (the pair shares it).
    color_by : {"kind", "op"}
    subgraph : int, optional
        For the titles; defaults to each analysis's subgraph index.
    outside : tuple, optional
        Each side's ``(persistent_bytes, other_subgraphs_bytes)`` (None: not known): the delta
        line then says persistent and held too (:func:`~viewer.export.chart_data.compare_text`).

    Returns
    -------
    Path

    Raises
    ------
    viewer.errors.UsageError
        Unknown suffix, size out of range, missing folder, a malformed side.
    viewer.errors.PlanningError
        When a plan is not a plan of its analysis.
    viewer.errors.ViewerError
        When the file cannot be written.
    """
    from viewer.export.paths import check_output_path

    path = Path(path)
    check_output(path, width, height)
    check_output_path(path, what="chart", force=force)
    ld = _side_data(left, color_by, subgraph)
    rd = _side_data(right, color_by, subgraph)
    widget, _, _ = build_compare_widget(ld, rd, width, height, outside)
    try:
        return render_widget(widget, path, width, height, force=force)
    finally:
        widget.close()
        widget.deleteLater()
