"""Write a tiled execution as deployable models: patch.tflite, tail.tflite, tiling.json.

``patch.tflite`` has one signature per border class of patch (weights stored once, shared by
the signatures); ``tail.tflite`` is the graph after the split with one input per cut tensor,
named as in the original model; ``tiling.json`` says which signature runs each patch, on which
crop of the input, and where each output goes, so anyone can run the tiled execution without
our code. Regions are half-open [y0, y1, x0, x1].
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from viewer.errors import ViewerError
from viewer.model.writer import write_graphs
from viewer.whatif.tiling.plan import TilePlan

PATCH_FILE, TAIL_FILE, SPEC_FILE = "patch.tflite", "tail.tflite", "tiling.json"


def tiling_spec(plan: TilePlan, tiler) -> dict:
    """The ``tiling.json`` object of ``plan``."""
    sg = tiler.sg
    (inp,) = [t for t in sg.inputs if t == tiler.prefix.input] or sg.inputs[:1]
    r, c = plan.grid
    patches = []
    cls = plan.patch_of()
    for i in range(r):
        gy = tiler._geom(plan.split, plan.cut, 1, i, r)
        for j in range(c):
            gx = tiler._geom(plan.split, plan.cut, 2, j, c)
            ny, nx = gy.need[inp], gx.need[inp]
            patches.append({
                "signature": cls[(i, j)].key, "row": i, "column": j,
                "input_region": [ny[0], ny[1], nx[0], nx[1]],
                "outputs": {sg.tensors[t].name: [*gy.share[t], *gx.share[t]] for t in plan.cut},
            })
    return {
        "format": "arena-viewer tiling 1",
        "model": os.path.basename(getattr(tiler, "path", "") or ""),
        "input": sg.tensors[inp].name,
        "input_shape": list(sg.tensors[inp].shape),
        "grid": [r, c], "split_operator": plan.split,
        "cut": [{"name": sg.tensors[t].name, "shape": list(sg.tensors[t].shape)} for t in plan.cut],
        "patches": patches,
        "tail": {"file": TAIL_FILE, "signature": "tail", "inputs": list(plan.tail.inputs)},
        "patch_file": PATCH_FILE,
    }


def write_tiling(model_path: str | os.PathLike, plan: TilePlan, tiler, out_dir: str | os.PathLike) -> dict:
    """Write patch.tflite, tail.tflite and tiling.json into ``out_dir`` (created if needed).

    Returns
    -------
    dict
        File name -> bytes written.

    Raises
    ------
    viewer.errors.ViewerError
        ``out_dir`` would overwrite the input model, or cannot be written.
    """
    out = Path(out_dir)
    src = Path(model_path).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ViewerError(f"{out}: cannot create the output folder: {e.strerror or e}") from None
    for name in (PATCH_FILE, TAIL_FILE, SPEC_FILE):
        if (out / name).resolve() == src:
            raise ViewerError(f"{out / name}: refusing to overwrite the input model; choose another folder")
    sizes = {PATCH_FILE: write_graphs(model_path, out / PATCH_FILE, [c.graph for c in plan.classes]),
             TAIL_FILE: write_graphs(model_path, out / TAIL_FILE, [plan.tail])}
    text = json.dumps(tiling_spec(plan, tiler), indent=1) + "\n"
    try:
        (out / SPEC_FILE).write_text(text)
    except OSError as e:
        raise ViewerError(f"{out / SPEC_FILE}: cannot write: {e.strerror or e}") from None
    sizes[SPEC_FILE] = len(text)
    return sizes
