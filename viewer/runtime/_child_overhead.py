"""The child's ``overhead`` mode: anonymous memory one LiteRT interpreter adds to a process.

Run as ``python -m viewer.runtime._child overhead MODEL --resolver builtin|default``. Order:
import numpy and LiteRT, read the model's input shapes with our reader and build the synthetic
inputs (the probe's values, :func:`viewer.runtime._child._synthetic`, seed 0), read ``Pss_Anon``
from ``/proc/self/smaps_rollup`` (*before*), build the interpreter, ``allocate_tensors()``,
set the inputs, one ``invoke()``, read ``Pss_Anon`` again (*after*). ``after - before`` holds
the arena (its pages are touched by the invoke), persistent tensors, the other subgraphs'
arenas and everything else the interpreter and its kernels keep (interpreter and node structures,
kernel state, a delegate's packed weights); the mapped model file is file-backed, not in it.
"""

from __future__ import annotations


def overhead(path: str, resolver: str) -> dict:
    """Pss_Anon before/after one interpreter of ``path`` (bytes; None off Linux)."""
    import numpy as np
    from ai_edge_litert import interpreter  # noqa: F401  (imported before *before*)

    from viewer.model.reader import load_model
    from viewer.runtime._child import _make_interpreter, _synthetic
    from viewer.runtime._child_proc import _smaps_rollup

    sg = load_model(path).subgraph(0)
    rng = np.random.default_rng(0)
    arrays = []
    for t in (sg.tensors[i] for i in sg.inputs if i >= 0):
        try:
            arrays.append(_synthetic({"shape": list(t.shape or ()), "dtype": np.dtype(t.dtype)}, rng))
        except TypeError:
            arrays.append(None)
    before = _smaps_rollup().get("Pss_Anon")
    interp = _make_interpreter(path, resolver)
    interp.allocate_tensors()
    for d, a in zip(interp.get_input_details(), arrays):
        if a is not None and tuple(a.shape) == tuple(int(s) for s in d["shape"]):
            interp.set_tensor(d["index"], a)
    interp.invoke()
    after = _smaps_rollup().get("Pss_Anon")
    grown = after - before if before is not None and after is not None else None
    return {"ok": True, "resolver": resolver, "pss_anon_before_bytes": before,
            "pss_anon_after_bytes": after, "grown_bytes": grown}
