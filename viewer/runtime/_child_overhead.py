"""Anonymous memory one LiteRT interpreter adds to a fresh process (the runtime overhead term).

Two ways to run it, one definition:

- the ``overhead`` mode (``python -m viewer.runtime._child overhead MODEL --resolver R``), a
  process of its own: :func:`overhead`, used for ``--delegates default`` and for what-ifs the
  probe does not run at the file's shapes;
- inside the batch-1 probe's own process (``probe MODEL --overhead``): :class:`Meter`, which the
  probe drives around its interpreter (``check`` then runs LiteRT once less: at 100k operators a
  whole allocation, ~3-4 s).

Order, the same in both: import numpy and LiteRT; build the synthetic inputs from the file's
input shapes (the probe's values, :func:`viewer.runtime._child._synthetic`, seed 0); read
``Pss_Anon`` from ``/proc/self/smaps_rollup`` (*before*); build the interpreter,
``allocate_tensors()``, set the inputs, one ``invoke()``; read ``Pss_Anon`` again (*after*).
``after - before`` holds the arena (its pages are touched by the invoke), persistent tensors,
the other subgraphs' arenas and everything else the interpreter and its kernels keep
(interpreter and node structures, kernel state, a delegate's packed weights); the mapped model
file is file-backed, not in it. In the probe, nothing the probe reads back exists yet at *after*
(the tensor and node records are read after it), and the only addition is the probe's read-only
delegate (a no-op ``TfLiteDelegate`` applied before allocation, its bookkeeping counted: the
harness's few objects, never less than the application's interpreter).
"""

from __future__ import annotations

#: The measurement's margin: Pss_Anon growth of the same model differs by about one page
#: between runs (allocator and kernel page-touch order), so a verdict within it is not "fits".
MARGIN_BYTES = 4096


def pss_anon_settled() -> int | None:
    """``Pss_Anon`` after a garbage collection and ``malloc_trim(0)`` (glibc: free heap pages
    are given back), so memory freed earlier in the process (imports, argument parsing) does
    not sit resident in *before* for the interpreter to reuse unseen; None off Linux."""
    import ctypes
    import gc

    from viewer.runtime._child_proc import _smaps_rollup

    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    return _smaps_rollup().get("Pss_Anon")


def file_input_arrays(path: str) -> list:
    """Synthetic values for subgraph 0's inputs at the file's shapes (None: not synthesisable),
    read with LiteRT's own flatbuffer schema (no interpreter, no model records kept)."""
    import mmap

    import numpy as np
    from ai_edge_litert import schema_py_generated as S

    from viewer.model.dtypes import TYPE_NAMES
    from viewer.runtime._child import _synthetic

    rng = np.random.default_rng(0)
    arrays = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sg = S.Model.GetRootAs(mm, 0).Subgraphs(0)
        for k in range(sg.InputsLength()):
            i = int(sg.Inputs(k))
            if i < 0:
                continue
            t = sg.Tensors(i)
            shape = [int(s) for s in t.ShapeAsNumpy()] if t.ShapeLength() else []
            try:
                dt = np.dtype(TYPE_NAMES.get(int(t.Type()), "none"))
            except TypeError:
                arrays.append(None)
                continue
            arrays.append(_synthetic({"shape": shape, "dtype": dt}, rng))
    return arrays


def set_inputs(interp, arrays: list) -> None:
    """Set each synthetic array whose shape is the interpreter's input's (as :func:`overhead`)."""
    for d, a in zip(interp.get_input_details(), arrays):
        if a is not None and tuple(a.shape) == tuple(int(s) for s in d["shape"]):
            interp.set_tensor(d["index"], a)


class Meter:
    """Pss_Anon around one interpreter in the probe's process (see the module docstring).

    ``start`` before the interpreter is built; ``stop`` after allocate_tensors() and one
    invoke; ``answer()`` is the JSON the parent reads (``grown_bytes`` None and ``error`` one
    line when not measured).
    """

    def __init__(self, path: str, built_before: int):
        self.error = ""
        self.arrays: list = []
        self.before = self.after = None
        if built_before:
            self.error = ("the probe's process had built an interpreter before, so its memory "
                          "growth is not one interpreter's")
            return
        from ai_edge_litert import interpreter  # noqa: F401  (imported before *before*)

        self.arrays = file_input_arrays(path)
        self.before = pss_anon_settled()

    def stop(self) -> None:
        from viewer.runtime._child_proc import _smaps_rollup

        if not self.error:
            self.after = _smaps_rollup().get("Pss_Anon")

    def fail(self, why: str) -> None:
        self.error = self.error or why

    def answer(self) -> dict:
        grown = None
        if not self.error and self.before is not None and self.after is not None:
            grown = self.after - self.before
        err = self.error or ("" if grown is not None else "/proc/self/smaps_rollup is not readable here")
        return {"resolver": "builtin", "pss_anon_before_bytes": self.before,
                "pss_anon_after_bytes": self.after, "grown_bytes": grown, "error": err}


def overhead(path: str, resolver: str) -> dict:
    """Pss_Anon before/after one interpreter of ``path`` (bytes; None off Linux)."""
    import numpy as np  # noqa: F401
    from ai_edge_litert import interpreter  # noqa: F401  (imported before *before*)

    from viewer.runtime._child import _make_interpreter
    from viewer.runtime._child_proc import _smaps_rollup

    arrays = file_input_arrays(path)
    before = pss_anon_settled()
    interp = _make_interpreter(path, resolver)
    interp.allocate_tensors()
    set_inputs(interp, arrays)
    interp.invoke()
    after = _smaps_rollup().get("Pss_Anon")
    grown = after - before if before is not None and after is not None else None
    return {"ok": True, "resolver": resolver, "pss_anon_before_bytes": before,
            "pss_anon_after_bytes": after, "grown_bytes": grown}
