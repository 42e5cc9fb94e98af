"""Plain SVG from Qt's: coordinates in user units, strokes that scale like everything else.

``QSvgGenerator`` writes each painter state as a ``<g transform="matrix(...)">`` and draws a
cosmetic pen (pyqtgraph's default, one pixel wide whatever the zoom) as
``vector-effect="non-scaling-stroke"`` inside a group whose matrix maps data units to pixels
(x: 13 px per operator, y: -60 px per MiB, ...). Qt's own renderer honours that; rsvg,
ImageMagick and CairoSVG implement SVG Tiny's ``vector-effect`` partly or not at all and draw
those strokes (and their dash patterns) scaled by the matrix: outlines tens of pixels thick,
the widest-operator band as stripes. This module applies each axis-aligned group matrix to the
coordinates of the shapes in it, so the matrix becomes the identity, the stroke widths are in
pixels as drawn, and the file means the same in every renderer.

Two more forms simple renderers miss (ImageMagick's internal MSVG ignores ``fill-opacity``
and draws no text inside a rotated group): a translucent group fill (the widest operator's
band, drawn under the rectangles, over the white plot) is written as the opaque colour it
makes over white; text in a 90-degree-rotated group is written as ``<text x y
transform="rotate(-90 x y)">`` with the group's matrix applied to its anchor. No Qt.
"""

from __future__ import annotations

import re

_GROUP = re.compile(r"<g (?P<attrs>[^>]*)>(?P<body>.*?)</g>", re.S)
_MATRIX = re.compile(r'\s*transform="matrix\(([^)]*)\)"')
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SHAPES = ("path", "polyline", "polygon", "rect", "line")


def _fmt(v: float) -> str:
    s = f"{v:.3f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


class _Affine:
    """SVG's ``matrix(a, b, c, d, e, f)``: ``x' = a x + c y + e``, ``y' = b x + d y + f``."""

    def __init__(self, a: float, b: float, c: float, d: float, e: float, f: float):
        self.a, self.b, self.c, self.d, self.e, self.f = a, b, c, d, e, f

    @property
    def axis_aligned(self) -> bool:
        return self.b == 0 and self.c == 0

    def point(self, x: float, y: float) -> tuple[float, float]:
        return self.a * x + self.c * y + self.e, self.b * x + self.d * y + self.f

    def points(self, text: str) -> str:
        nums = [float(n) for n in _NUM.findall(text)]
        out = []
        for k in range(0, len(nums) - 1, 2):
            x, y = self.point(nums[k], nums[k + 1])
            out.append(f"{_fmt(x)},{_fmt(y)}")
        return " ".join(out)

    def path(self, d: str) -> str | None:
        """Absolute M/L/C/Q/S/T/Z paths (what Qt writes); None for anything else."""
        tokens = re.findall(r"[A-Za-z]|" + _NUM.pattern, d)
        out, pending = [], []
        for tok in tokens:
            if tok.isalpha():
                if tok not in "MLCQSTZ":
                    return None
                out.append(tok)
            else:
                pending.append(float(tok))
                if len(pending) == 2:
                    x, y = self.point(*pending)
                    out.append(f"{_fmt(x)},{_fmt(y)}")
                    pending = []
        return None if pending else " ".join(out)

    def rect(self, x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
        x0, y0 = self.point(x, y)
        x1, y1 = self.point(x + w, y + h)
        return min(x0, x1), min(y0, y1), abs(x1 - x0), abs(y1 - y0)


def _attr(tag: str, name: str) -> str | None:
    m = re.search(rf'\s{name}="([^"]*)"', tag)
    return m.group(1) if m else None


def _set(tag: str, name: str, value: str) -> str:
    return re.sub(rf'(\s{name}=")[^"]*(")', lambda m: m.group(1) + value + m.group(2), tag, count=1)


def _shape(tag: str, t: _Affine) -> str | None:
    """``tag`` (one element's start tag) with its coordinates mapped by ``t``; None when it
    cannot be mapped (the group then stays as Qt wrote it)."""
    name = re.match(r"<(\w+)", tag).group(1)
    if name in ("polyline", "polygon"):
        tag = _set(tag, "points", t.points(_attr(tag, "points") or ""))
    elif name == "path":
        d = t.path(_attr(tag, "d") or "")
        if d is None:
            return None
        tag = _set(tag, "d", d)
    elif name == "rect" and not t.axis_aligned:  # rotated: its four corners, as a polygon
        try:
            x, y, w, h = (float(_attr(tag, k) or 0) for k in ("x", "y", "width", "height"))
        except ValueError:
            return None
        corners = " ".join(f"{_fmt(px)},{_fmt(py)}" for px, py in
                           (t.point(x, y), t.point(x + w, y), t.point(x + w, y + h), t.point(x, y + h)))
        rest = re.sub(r'\s(?:x|y|width|height|rx|ry)="[^"]*"', "", tag[len("<rect"):])
        tag = f'<polygon points="{corners}"{rest}'
    elif name == "rect":
        try:
            x, y, w, h = (float(_attr(tag, k) or 0) for k in ("x", "y", "width", "height"))
        except ValueError:
            return None
        for k, v in zip(("x", "y", "width", "height"), t.rect(x, y, w, h)):
            tag = _set(tag, k, _fmt(v)) if _attr(tag, k) is not None else tag.replace(
                f"<{name}", f'<{name} {k}="{_fmt(v)}"', 1)
    elif name == "line":
        x1, y1 = t.point(float(_attr(tag, "x1") or 0), float(_attr(tag, "y1") or 0))
        x2, y2 = t.point(float(_attr(tag, "x2") or 0), float(_attr(tag, "y2") or 0))
        for k, v in (("x1", x1), ("y1", y1), ("x2", x2), ("y2", y2)):
            tag = _set(tag, k, _fmt(v))
    return tag.replace(' vector-effect="non-scaling-stroke"', "")


_FILL = re.compile(r'(?:^|\s)fill="#(?P<rgb>[0-9a-fA-F]{6})"\s+fill-opacity="(?P<a>[0-9.]+)"')


def _opaque_fill(attrs: str) -> str:
    """``attrs`` with a translucent ``fill``/``fill-opacity`` pair replaced by the opaque
    colour it gives over white (the paper; the chart's plot background)."""
    m = _FILL.search(attrs)
    if m is None or not 0 < float(m.group("a")) < 1:
        return attrs
    a, rgb = float(m.group("a")), m.group("rgb")
    blend = "".join(f"{round(int(rgb[k:k + 2], 16) * a + 255 * (1 - a)):02x}" for k in (0, 2, 4))
    lead = attrs[m.start():m.start() + 1] if attrs[m.start():m.start() + 1].isspace() else ""
    return attrs[:m.start()] + f'{lead}fill="#{blend}" fill-opacity="1"' + attrs[m.end():]


def _rotated_text(attrs: str, body: str, t: "_Affine") -> str | None:
    """A group of text rotated by -90 degrees (``matrix(0,-1,1,0,e,f)``, pyqtgraph's y-axis
    titles) as text elements each rotated about its own anchor; None when it is not that."""
    if not (t.a == 0 and t.d == 0 and t.b == -1 and t.c == 1) or re.search(r"<(?:image|use)\b", body):
        return None
    if any(el.group(1) in _SHAPES for el in re.finditer(r"<(\w+)\b[^>]*>", body)):
        return None

    def one(el: re.Match) -> str:
        tag = el.group(0)
        try:
            x, y = t.point(float(_attr(tag, "x") or 0), float(_attr(tag, "y") or 0))
        except ValueError:
            return tag
        for k, v in (("x", x), ("y", y)):
            tag = _set(tag, k, _fmt(v)) if _attr(tag, k) is not None else tag.replace(
                "<text", f'<text {k}="{_fmt(v)}"', 1)
        return tag.replace("<text", f'<text transform="rotate(-90 {_fmt(x)} {_fmt(y)})"', 1)

    texts = re.sub(r"<text\b[^>]*>", one, body)
    return f"<g {_MATRIX.sub('', attrs)}>{texts}</g>"


def _flatten_group(m: re.Match) -> str:
    attrs, body = _opaque_fill(m.group("attrs")), m.group("body")
    mm = _MATRIX.search(attrs)
    if mm is not None and "<text" in body:
        try:
            t = _Affine(*(float(v) for v in mm.group(1).split(",")))
        except (TypeError, ValueError):
            t = None
        rotated = _rotated_text(attrs, body, t) if t is not None else None
        if rotated is not None:
            return rotated
    if mm is None or "non-scaling-stroke" not in body:
        return f"<g {attrs}>{body}</g>"
    try:
        a, b, c, d, e, f = (float(v) for v in mm.group(1).split(","))
    except ValueError:
        return f"<g {attrs}>{body}</g>"
    if re.search(r"<(?:text|image|use)\b", body):
        return f"<g {attrs}>{body}</g>"  # text keeps its matrix (glyphs are not shapes we rewrite)
    t = _Affine(a, b, c, d, e, f)
    out, pos = [], 0
    for el in re.finditer(r"<(\w+)\b[^>]*>", body):
        if el.group(1) not in _SHAPES:
            continue
        new = _shape(el.group(0), t)
        if new is None:
            return f"<g {attrs}>{body}</g>"
        out += [body[pos:el.start()], new]
        pos = el.end()
    out.append(body[pos:])
    return f"<g {_MATRIX.sub('', attrs)}>{''.join(out)}</g>"


def flatten_svg(text: str) -> str:
    """Qt SVG ``text`` with every non-scaling stroke turned into a plain one in user units.

    Groups that hold no text get their matrix (scale and translation as pyqtgraph's view
    boxes use, or the rotation of a vertical line) applied to their shapes' coordinates (paths,
    polylines, polygons, rects, lines) and drop it, with ``vector-effect``. Anything else is
    left as written. Returns the new SVG text.
    """
    return _GROUP.sub(_flatten_group, text)
