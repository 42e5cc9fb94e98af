"""Child process for :mod:`viewer.runtime.tiled`: LiteRT on written tiling models.

``arena MODEL --signature KEY``: allocate one signature's subgraph and read its tensors and
node temporaries back (the same read as ``viewer.runtime._child probe``).
``resident DIR``: build the deployment of ``DIR`` as ``stitch`` runs it (one interpreter for
``patch.tflite`` with every signature allocated, one for ``tail.tflite``), all at once, and read
each allocated subgraph's arena span back from its tensors' data pointers.
``stitch ORIGINAL DIR``: run the original model (``experimental_preserve_all_tensors=True``) on
a seeded random input, run every patch of ``DIR/tiling.json`` on its crop with
``DIR/patch.tflite``, stitch the outputs, compare with the original's cut tensors, run
``DIR/tail.tflite`` on the stitched tensors and compare with the original's outputs.
Prints one JSON line. BUILTIN_WITHOUT_DEFAULT_DELEGATES throughout.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

import numpy as np


def _interp(path: str, preserve: bool = False):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    return Interpreter(model_path=path, experimental_preserve_all_tensors=preserve,
                       experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def arena(path: str, key: str) -> dict:
    from viewer.runtime import _child

    interp = _interp(path)
    runner = interp.get_signature_runner(key)
    k = int(runner._subgraph_index)
    interp._interpreter.AllocateTensors(k)
    got = _child._read_via_delegate(interp, k)
    if "error" in got or "tensors" not in got:
        raise RuntimeError("cannot read the signature's tensors: " + got.get("error", "no Prepare call"))
    sigs = interp.get_signature_list()[key]
    return {"ok": True, "subgraph": k, "tensors": got["tensors"], "nodes": got["nodes"],
            "execution_plan": got["plan"], "num_model_tensors": _child._model_tensor_count(path, k),
            "model_file_mappings": _child._file_mappings(path), "notes": [], "resized_inputs": [],
            "invoked": False, "signature": sigs}


def _span(interp, k: int) -> list[int]:
    """[lo, hi) of subgraph ``k``'s arena-rw tensors' data pointers ([0, 0] when none)."""
    from viewer.runtime import _child

    got = _child._read_via_delegate(interp, k)
    if "error" in got or "tensors" not in got:
        raise RuntimeError("cannot read the subgraph's tensors: " + got.get("error", "no Prepare call"))
    addrs = [(int(t["address"]), int(t["bytes"])) for t in got["tensors"]
             if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0]
    if not addrs:
        return [0, 0]
    return [min(a for a, _ in addrs), max(a + b for a, b in addrs)]


def resident(folder: str) -> dict:
    """Every subgraph's arena span with the whole deployment allocated at once."""
    import os

    patch = _interp(os.path.join(folder, "patch.tflite"))
    tail = _interp(os.path.join(folder, "tail.tflite"))
    keep, spans = [], []
    for interp, file in ((patch, "patch.tflite"), (tail, "tail.tflite")):
        for key in interp.get_signature_list():
            r = interp.get_signature_runner(key)
            interp._interpreter.AllocateTensors(int(r._subgraph_index))  # as its first call does
            keep.append(r)
            spans.append({"file": file, "signature": key, "subgraph": int(r._subgraph_index)})
    for s, (interp, _) in zip(spans, [(patch if s["file"] == "patch.tflite" else tail, 0) for s in spans]):
        s["span"] = _span(interp, s["subgraph"])
        s["bytes"] = s["span"][1] - s["span"][0]
    iv = sorted(tuple(s["span"]) for s in spans if s["bytes"])
    disjoint = all(a[1] <= b[0] for a, b in zip(iv, iv[1:]))
    return {"ok": True, "arenas": spans, "disjoint": disjoint,
            "resident_bytes": sum(s["bytes"] for s in spans)}


def _random(detail, rng):
    shape, dtype = tuple(detail["shape"]), detail["dtype"]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, size=shape, dtype=dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _compare(ref: np.ndarray, got: np.ndarray) -> dict:
    if ref.shape != got.shape:
        return {"shape": list(ref.shape), "got_shape": list(got.shape), "exact": False, "max_abs_diff": None}
    if np.issubdtype(ref.dtype, np.integer):
        diff = int(np.max(np.abs(ref.astype(np.int64) - got.astype(np.int64)))) if ref.size else 0
        return {"shape": list(ref.shape), "exact": diff == 0, "max_abs_diff": diff, "mismatches":
                int(np.count_nonzero(ref != got))}
    diff = float(np.max(np.abs(ref.astype(np.float64) - got.astype(np.float64)))) if ref.size else 0.0
    mag = float(np.max(np.abs(ref))) if ref.size else 0.0
    return {"shape": list(ref.shape), "exact": diff == 0.0, "max_abs_diff": diff, "max_magnitude": mag,
            "relative": diff / mag if mag else diff}


def stitch(original: str, folder: str, seed: int = 0) -> dict:
    import os

    spec = json.load(open(os.path.join(folder, "tiling.json")))
    rng = np.random.default_rng(seed)
    orig = _interp(original, preserve=True)
    orig.allocate_tensors()
    in_detail = next(d for d in orig.get_input_details() if d["name"] == spec["input"])
    x = _random(in_detail, rng)
    orig.set_tensor(in_detail["index"], x)
    orig.invoke()
    by_name = {d["name"]: d["index"] for d in orig.get_tensor_details()}
    cut_ref = {c["name"]: orig.get_tensor(by_name[c["name"]]) for c in spec["cut"]}
    out_ref = {d["name"]: orig.get_tensor(d["index"]) for d in orig.get_output_details()}
    stitched = {n: np.zeros_like(v) for n, v in cut_ref.items()}
    covered = {n: np.zeros(v.shape[1:3], dtype=np.int32) for n, v in cut_ref.items()}
    patch = _interp(os.path.join(folder, "patch.tflite"))
    runners = {}
    for p in spec["patches"]:
        r = runners.get(p["signature"]) or runners.setdefault(p["signature"], patch.get_signature_runner(p["signature"]))
        y0, y1, x0, x1 = p["input_region"]
        (in_key,) = r.get_input_details().keys()
        out = r(**{in_key: np.ascontiguousarray(x[:, y0:y1, x0:x1, :])})
        for name, (a, b, c, d) in p["outputs"].items():
            stitched[name][:, a:b, c:d, :] = out[name]
            covered[name][a:b, c:d] += 1
    cover_ok = all(bool((v == 1).all()) for v in covered.values())
    tail = _interp(os.path.join(folder, "tail.tflite"))
    tr = tail.get_signature_runner("tail")
    feeds = {k: (stitched[k] if k in stitched else x) for k in tr.get_input_details()}
    tail_out = tr(**feeds)
    return {
        "ok": True, "seed": seed, "patches_run": len(spec["patches"]), "every_element_once": cover_ok,
        "cut": {n: _compare(cut_ref[n], stitched[n]) for n in cut_ref},
        "outputs": {n: _compare(out_ref[n], tail_out[n]) for n in out_ref if n in tail_out},
        "missing_outputs": [n for n in out_ref if n not in tail_out],
    }


def influence(path: str, seed: int = 0) -> dict:
    """Which outputs change when one input pixel (the centre, all channels) changes.

    Returns the bounding box of changed output elements per output, in that output's H and W,
    and the input's H and W, so the caller can map it back to input pixels.
    """
    rng = np.random.default_rng(seed)
    interp = _interp(path)
    interp.allocate_tensors()
    (d,) = [d for d in interp.get_input_details() if len(d["shape"]) == 4][:1]
    x = _random(d, rng)
    outs = interp.get_output_details()

    def run(v):
        interp.set_tensor(d["index"], v)
        interp.invoke()
        return [interp.get_tensor(o["index"]).copy() for o in outs]

    base = run(x)
    h, w = int(d["shape"][1]), int(d["shape"][2])
    y = x.copy()
    if np.issubdtype(y.dtype, np.integer):
        info = np.iinfo(y.dtype)
        y[:, h // 2, w // 2, :] = np.where(y[:, h // 2, w // 2, :] > (info.min + info.max) // 2, info.min, info.max)
    else:
        y[:, h // 2, w // 2, :] = np.where(y[:, h // 2, w // 2, :] > 0, -1.0, 1.0) * 4
    moved = run(y)
    res = []
    for o, a, b in zip(outs, base, moved):
        changed = a != b
        entry = {"name": o["name"], "shape": [int(v) for v in a.shape], "changed": int(np.count_nonzero(changed))}
        if a.ndim == 4 and changed.any():
            ys, xs = np.nonzero(changed.any(axis=(0, 3)))
            entry["box"] = [int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1]
        res.append(entry)
    return {"ok": True, "input_hw": [h, w], "pixel": [h // 2, w // 2], "outputs": res}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="viewer.runtime._tiling_child")
    p.add_argument("mode", choices=["arena", "stitch", "influence", "resident"])
    p.add_argument("model")
    p.add_argument("folder", nargs="?")
    p.add_argument("--signature", default="")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        if a.mode == "arena":
            out = arena(a.model, a.signature)
        elif a.mode == "resident":
            out = resident(a.model)
        elif a.mode == "stitch":
            out = stitch(a.model, a.folder, a.seed)
        else:
            out = influence(a.model, a.seed)
    except Exception as e:
        out = {"ok": False, "error": f"{type(e).__name__}: {' '.join(str(e).split())}",
               "traceback": traceback.format_exc(limit=4)}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
