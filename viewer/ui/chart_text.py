"""What the packing chart says about a tensor or an operator: tooltips and the context menu.

Split from :mod:`viewer.ui.chart` (the widget: building, selection, hover, zoom), which calls
these with its analysis and :class:`~viewer.export.chart_data.ChartData`.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from viewer.analysis.types import Analysis
from viewer.export.chart_data import ChartData
from viewer.units import format_bytes

#: Storage precisions offered by a rectangle's context menu (``viewer.whatif.apply``'s
#: ``ACTIVATION_DTYPES``, in menu order).
STORAGE_DTYPES = ("float16", "bfloat16", "int8", "float32")


def tensor_tip(a: Analysis | None, d: ChartData | None, tensor: int) -> str:
    """The hover text of ``tensor``: name, shape, dtype, bytes, producer, consumers, usage
    interval (inclusive operator indices) and offset; "" when it is not drawn."""
    if a is None or d is None:
        return ""
    u = a.usage(tensor)
    row = d.row_of(tensor)
    if u is None or row is None:
        return ""
    sg = a.subgraph
    if 0 <= tensor < len(sg.tensors):
        t = sg.tensors[tensor]
        shape = "x".join(str(s) for s in t.shape) or "scalar"
        dtype = t.dtype
    else:
        shape, dtype = "-", "-"
    prod = "-" if u.producer is None else f"#{u.producer} {a.op_name(u.producer)}"
    if u.producer is None and str(d.producer_op[row]) != "-":
        prod = str(d.producer_op[row])
    cons = ", ".join(f"#{c} {a.op_name(c)}" for c in u.consumers[:6]) or "-"
    if len(u.consumers) > 6:
        cons += f", ... ({len(u.consumers)} in all)"
    offset = int(d.y0[row])
    lines = [
        f"<b>{_esc(a.tensor_name(tensor))}</b> (tensor {tensor}, {u.kind})",
        f"shape {shape}, {dtype}" if shape != "-" else
        "kernel temporary: the runtime's scratch for its operator, live only while it runs",
        f"{format_bytes(u.nbytes)} ({u.nbytes:,d} B)",
        f"producer: {_esc(prod)}",
        f"consumers: {_esc(cons)}",
        f"interval: operators {u.first_op}..{u.last_op} ({u.held_ops} held)",
        f"offset: {format_bytes(offset)} ({offset:,d} B)",
    ]
    if u.alias_of is not None:
        lines.append(f"in-place: shares the bytes of tensor {u.alias_of}")
    return _tip_lines(lines)


def breadth_tip(a: Analysis | None, d: ChartData | None, op: int) -> str:
    """The hover text of operator ``op``'s column on the breadth curve: its op type, its
    operator breadth (bytes live while it runs) and how many tensors that is."""
    if a is None or d is None or not 0 <= op < d.num_ops:
        return ""
    breadth = int(d.breadth[op])
    widest = " (the widest operator)" if op == d.widest_op else ""
    return _tip_lines([
        f"<b>#{op} {_esc(a.op_name(op))}</b>{widest}",
        f"breadth {format_bytes(breadth)} ({breadth:,d} B): "
        f"{len(a.operator_profile(op))} tensors live",
        "click for its operator profile",
    ])


def fill_dtype_menu(menu: QMenu, a: Analysis | None, tensor: int, current: str | None,
                    pick: Callable[[str], None]) -> None:
    """Fill ``menu`` for ``tensor``'s rectangle: its name, "Store as <dtype>" for each of
    :data:`STORAGE_DTYPES` (the one in force ticked: ``current``, else the model's own) and
    "Reset to the model's dtype" (enabled when ``current`` is set). Each entry calls ``pick``
    with its dtype ("" for the reset). A kernel temporary (sized by its kernel, not by a
    dtype) gets the entries disabled, with a note saying so."""
    sg = a.subgraph if a is not None else None
    in_model = sg is not None and 0 <= tensor < len(sg.tensors)
    title = menu.addAction(f"{a.tensor_name(tensor) if a is not None else tensor} (tensor {tensor})")
    title.setEnabled(False)
    menu.addSeparator()
    stored = sg.tensors[tensor].dtype if in_model else None
    for dtype in STORAGE_DTYPES:
        act = QAction(f"Store as {dtype}", menu)
        act.setCheckable(True)
        act.setChecked(dtype == (current or stored))
        act.setEnabled(in_model)
        act.setData(dtype)
        act.triggered.connect(lambda _=False, d=dtype: pick(d))
        menu.addAction(act)
    menu.addSeparator()
    reset = menu.addAction("Reset to the model's dtype")
    reset.setData("")
    reset.setEnabled(in_model and current is not None)
    reset.triggered.connect(lambda _=False: pick(""))
    if not in_model:
        note = menu.addAction("kernel temporary: sized by its kernel")
        note.setEnabled(False)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tip_lines(lines: list[str]) -> str:
    """Rich tooltip text, one field a line: Qt word-wraps rich tooltips to a narrow width
    otherwise, breaking e.g. a shape away from its tensor name."""
    return "<br>".join(f"<nobr>{line}</nobr>" for line in lines)
