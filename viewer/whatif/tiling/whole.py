"""Whole-input tiling: run the model on overlapping tiles of a larger input and stitch the outputs.

Tile size T (core) and overlap O: each tile runs the model at an input of T+2O, so the peak is
the model's arena at that resolution; a full resolution H x W takes ceil(H/T) x ceil(W/T) tiles;
the redundant compute is the multiply-accumulates of all tiles over those of one run at H x W.
The output's receptive field says what overlap makes the stitched output exact: measured with
LiteRT by changing one input pixel and seeing which outputs move (:func:`viewer.runtime.tiled.input_influence`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from viewer.errors import UsageError, ViewerError
from viewer.model.reader import load_model
from viewer.ops import macs
from viewer.whatif.tiling.plan import arena_of


def _hw(text: str, flag: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX×]\s*(\d+))?\s*", text or "")
    if not m or int(m.group(1)) < 1:
        raise UsageError(f"{flag} {text}: expected HxW, e.g. 256x256")
    return int(m.group(1)), int(m.group(2) or m.group(1))


def _resized(model, sg, hw: tuple[int, int]):
    """(subgraph at input H x W, estimated?, notes)."""
    from viewer.whatif.apply import apply_edits
    from viewer.whatif.edits import WhatIfEdits

    inp = sg.tensors[sg.inputs[0]]
    if tuple(inp.shape[1:3]) == hw:
        return sg, False, []
    shape = (inp.shape[0], hw[0], hw[1], inp.shape[3])
    try:
        ed = apply_edits(model, sg.index, WhatIfEdits(input_shapes={"": shape}), shape_source="inferred")
    except ViewerError:
        ed = apply_edits(model, sg.index, WhatIfEdits(input_shapes={"": shape}, rescale_fixed_sizes=True),
                         shape_source="inferred")
    return ed.subgraph, True, list(ed.notes)


def _macs(sub) -> int:
    shapes = {t.index: tuple(t.shape) for t in sub.tensors}
    return sum(macs(op, shapes) for op in sub.operators)


def whole_input_report(model_path: str, tile: str, overlap: int, full: str | None,
                       subgraph: int = 0, measure_field: bool = True) -> dict[str, Any]:
    """The whole-input tiling figures (what ``tile --whole-input`` prints).

    Returns
    -------
    dict
        ``tile`` [T_h, T_w], ``overlap``, ``tile_input`` [T_h+2O, T_w+2O], ``full`` [H, W],
        ``tiles`` (count) and ``tiles_grid``, ``peak_bytes`` (arena at the tile input, kernel
        temporaries estimated), ``estimated`` (shapes from our inference), ``macs_per_tile``,
        ``macs_full``, ``redundant_compute_pct``, ``receptive_field`` {``radius_px``, ``clipped``,
        ``exact_overlap_px``, ``note``}, ``lines`` (the text report).
    """
    if overlap < 0:
        raise UsageError(f"--overlap {overlap}: must be 0 or more pixels")
    model = load_model(model_path)
    sg = model.subgraph(subgraph)
    if not sg.inputs or len(sg.tensors[sg.inputs[0]].shape) != 4:
        raise UsageError(f"{model_path}: whole-input tiling needs an NHWC image input")
    th, tw = _hw(tile, "--whole-input")
    stored = tuple(sg.tensors[sg.inputs[0]].shape[1:3])
    fh, fw = _hw(full, "--full") if full else stored
    tin = (th + 2 * overlap, tw + 2 * overlap)
    sub, est, notes = _resized(model, sg, tin)
    peak, temps = arena_of(sub)
    ny, nx = math.ceil(fh / th), math.ceil(fw / tw)
    per_tile = _macs(sub)
    try:
        full_sub, full_est, _ = _resized(model, sg, (fh, fw))
        m_full = _macs(full_sub)
    except ViewerError as e:
        m_full, full_est = None, True
        notes.append(f"MACs at {fh}x{fw} not inferred: {e}")
    redundant = 100.0 * (ny * nx * per_tile - m_full) / m_full if m_full else None
    rf = _receptive(model_path, stored) if measure_field else None
    out = {
        "model": str(model_path), "tile": [th, tw], "overlap": overlap, "tile_input": list(tin),
        "full": [fh, fw], "tiles": ny * nx, "tiles_grid": [ny, nx], "peak_bytes": peak,
        "kernel_temporaries_bytes": temps, "estimated": est, "macs_per_tile": per_tile, "macs_full": m_full,
        "redundant_compute_pct": None if redundant is None else round(redundant, 2),
        "receptive_field": rf, "notes": notes,
    }
    out["lines"] = _lines(out)
    return out


def static_receptive_field(sg, values=None) -> tuple[int | None, str]:
    """Radius in input pixels of the centre output pixel's receptive field, composed through the
    registry's receptive fields (walking the graph backwards); (None, why) when an operator on
    the way is not spatially local."""
    from viewer.ops import NotLocal, receptive_field

    shapes = {t.index: tuple(t.shape) for t in sg.tensors}
    out = [t for t in sg.outputs if len(shapes[t]) == 4]
    if not out:
        return None, "the output is not an image (rank 4)"
    need: dict[int, tuple[int, int, int, int]] = {}
    for t in out:
        h, w = shapes[t][1], shapes[t][2]
        need[t] = (h // 2, h // 2 + 1, w // 2, w // 2 + 1)
    for op in reversed(sg.operators):
        outs = [t for t in op.outputs if t in need]
        if not outs:
            continue
        r = need[outs[0]]
        for t in outs[1:]:
            q = need[t]
            r = (min(r[0], q[0]), max(r[1], q[1]), min(r[2], q[2]), max(r[3], q[3]))
        try:
            regions = receptive_field(op, shapes, r, values)
        except NotLocal as e:
            return None, f"#{op.index} {op.op_name}: {e}"
        for p, t in enumerate(op.inputs):
            if t < 0 or sg.tensors[t].is_constant or p >= len(regions) or regions[p] is None:
                continue
            q = regions[p]
            old = need.get(t)
            need[t] = q if old is None else (min(old[0], q[0]), max(old[1], q[1]), min(old[2], q[2]), max(old[3], q[3]))
    inp = sg.inputs[0]
    if inp not in need:
        return None, "the output does not depend on the input"
    y0, y1, x0, x1 = need[inp]
    h, w = shapes[inp][1], shapes[inp][2]
    return max(h // 2 - y0, y1 - 1 - h // 2, w // 2 - x0, x1 - 1 - w // 2), ""


def _receptive(model_path: str, stored: tuple[int, int]) -> dict[str, Any]:
    from viewer.model.constants import small_int_constants
    from viewer.runtime.tiled import input_influence

    sg = load_model(model_path).subgraphs[0]
    static, why = static_receptive_field(sg, small_int_constants(model_path, 0))
    if static is not None:
        return {"radius_px": static, "clipped": False, "exact_overlap_px": static, "static": True,
                "note": f"the output's receptive field reaches {static} px from its pixel (composed through "
                        f"every operator): an overlap of {static} px makes the stitched output exact where "
                        "tiles align with the network's strides"}

    if why.startswith("the output is not an image"):
        return {"radius_px": None, "clipped": True, "exact_overlap_px": None, "static": False,
                "note": "the output is not an image (rank 4): it depends on the whole input (global pooling, "
                        "fully connected...), so no practical overlap makes stitching exact"}
    try:
        r = input_influence(model_path)
    except ViewerError as e:
        return {"radius_px": None, "clipped": None, "exact_overlap_px": None, "static": False,
                "note": f"not composed ({why}) and not measured: {e}"}
    h, w = r["input_hw"]
    py, px = r["pixel"]
    radius, clipped, dense = 0, False, False
    for o in r["outputs"]:
        if "box" not in o:
            if o["changed"] and len(o["shape"]) != 4:
                dense = True
            continue
        oh, ow = o["shape"][1], o["shape"][2]
        sy, sx = h / oh, w / ow
        y0, y1, x0, x1 = o["box"]
        radius = max(radius, math.ceil(max(py - y0 * sy, y1 * sy - 1 - py, px - x0 * sx, x1 * sx - 1 - px)))
        clipped = clipped or y0 == 0 or x0 == 0 or y1 == oh or x1 == ow
    if dense:
        note = "a non-spatial output depends on every pixel: no practical overlap makes stitching exact"
        return {"radius_px": None, "clipped": True, "exact_overlap_px": None, "static": False, "note": note}
    if clipped:
        note = (f"one input pixel moves outputs up to the border of the {h}x{w} input: the receptive field "
                f"is at least {radius} px; no overlap below the input size is known to be exact "
                f"(not composed statically: {why})")
        return {"radius_px": radius, "clipped": True, "exact_overlap_px": None, "static": False, "note": note}
    note = (f"at least {radius} px: changing the centre input pixel moves outputs up to {radius} px away "
            f"(LiteRT; a lower bound, ReLUs can hide an influence); any overlap below {radius} px is not exact. "
            f"Not composed statically: {why}")
    return {"radius_px": radius, "clipped": False, "exact_overlap_px": None, "lower_bound_px": radius,
            "static": False, "note": note}


def _lines(o: dict) -> list[str]:
    rf = o["receptive_field"] or {}
    est = " (estimated: shapes from our own inference)" if o["estimated"] else ""
    red = "n/a" if o["redundant_compute_pct"] is None else f"+{o['redundant_compute_pct']:.1f}%"
    return [
        f"{o['model']}: whole-input tiling, tile {o['tile'][0]}x{o['tile'][1]} with overlap {o['overlap']} "
        f"-> model input {o['tile_input'][0]}x{o['tile_input'][1]}",
        f"  peak (arena at one tile, kernel temporaries included){est}: {o['peak_bytes']:,d} B",
        f"  tiles for {o['full'][0]}x{o['full'][1]}: {o['tiles']} ({o['tiles_grid'][0]}x{o['tiles_grid'][1]})",
        f"  redundant compute: {red} MACs over one run at {o['full'][0]}x{o['full'][1]}",
        f"  receptive field: {rf.get('note', 'not measured')}",
    ] + [f"note: {n}" for n in o["notes"]]
