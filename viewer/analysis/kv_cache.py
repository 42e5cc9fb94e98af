"""Find a model's KV caches (state kept between calls), in the three forms LiteRT graphs use.

- **resource variables**: ``VAR_HANDLE`` with a ``(container, shared_name)``. LiteRT's
  interpreter keeps one resource map for all its subgraphs, and ``VAR_HANDLE`` looks the id up
  by that pair (tflite/kernels/var_handle.cc, tflite/experimental/resource/resource_variable.cc),
  so every signature naming the same ``shared_name`` shares one variable. Its storage is
  ``malloc``-ed by the first ``ASSIGN_VARIABLE`` (``ResourceVariable::AssignFrom``) at the
  assigned value's size, outside every arena. The size is read here from the tensors
  ``ASSIGN_VARIABLE`` assigns and ``READ_VARIABLE`` returns for that handle (the largest).
- **variable tensors** (``is_variable``): each subgraph's own, in its persistent arena
  (``kTfLiteArenaRwPersistent``); two subgraphs never share one (the schema has no way to).
- **external caches**: a signature input and a signature output with the same name, dtype
  and shape (ai-edge-torch's ``kv_cache_k_0`` in / out): the application keeps them between
  calls; inside LiteRT each is an ordinary arena tensor of the signature's subgraph.

:func:`find_kv_caches` returns one :class:`KVCache` per cache (a resource variable once for
the whole model; an external cache once per name, with every signature using it).
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.model.types import Model

STYLE_RESOURCE = "resource variable"
STYLE_VARIABLE = "variable tensor"
STYLE_EXTERNAL = "signature input/output"


@dataclass(frozen=True)
class KVCache:
    """One cache the model keeps between calls.

    Attributes
    ----------
    name : str
        The ``shared_name`` (resource), the tensor name (variable) or the signature key of the
        input/output pair (external).
    style : str
        :data:`STYLE_RESOURCE`, :data:`STYLE_VARIABLE` or :data:`STYLE_EXTERNAL`.
    shape : tuple of int
        Of its value as the file stores it.
    dtype : str
    nbytes : int
        Bytes of one copy of its value (``prod(shape) * element size``).
    subgraphs : tuple of int
        Subgraphs that read or write it.
    tensors : tuple of (subgraph, tensor index)
        The tensors that hold its value in those subgraphs (read / assigned / variable /
        signature input and output).
    """

    name: str
    style: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    subgraphs: tuple[int, ...]
    tensors: tuple[tuple[int, int], ...]


def _resource_caches(model: Model) -> list[KVCache]:
    found: dict[tuple, dict] = {}
    for sg in model.subgraphs:
        handles = {}
        for op in sg.operators:
            if op.op_name == "VAR_HANDLE" and op.outputs:
                opts = op.options or {}
                handles[op.outputs[0]] = (opts.get("container") or "", opts.get("shared_name") or "")
        for op in sg.operators:
            if op.op_name == "ASSIGN_VARIABLE" and len(op.inputs) >= 2:
                key, value = handles.get(op.inputs[0]), op.inputs[1]
            elif op.op_name == "READ_VARIABLE" and op.inputs and op.outputs:
                key, value = handles.get(op.inputs[0]), op.outputs[0]
            else:
                continue
            if key is None or not 0 <= value < len(sg.tensors):
                continue
            entry = found.setdefault(key, {"subgraphs": [], "tensors": [], "best": None})
            if sg.index not in entry["subgraphs"]:
                entry["subgraphs"].append(sg.index)
            entry["tensors"].append((sg.index, value))
            t = sg.tensors[value]
            if t.shape and (entry["best"] is None or t.nbytes > entry["best"].nbytes):
                entry["best"] = t
    out = []
    for (container, name), e in found.items():
        t = e["best"]
        out.append(KVCache(f"{container}/{name}" if container else name, STYLE_RESOURCE,
                           tuple(t.shape) if t else (), t.dtype if t else "unknown",
                           int(t.nbytes) if t else 0, tuple(e["subgraphs"]), tuple(e["tensors"])))
    return out


def _variable_caches(model: Model) -> list[KVCache]:
    return [KVCache(t.name, STYLE_VARIABLE, tuple(t.shape), t.dtype, int(t.nbytes), (sg.index,),
                    ((sg.index, t.index),))
            for sg in model.subgraphs for t in sg.tensors if t.is_variable]


def _external_caches(model: Model) -> list[KVCache]:
    found: dict[str, dict] = {}
    for sig in model.signatures:
        if not 0 <= sig.subgraph_index < len(model.subgraphs):
            continue
        sg = model.subgraphs[sig.subgraph_index]
        for name, t_in in sig.inputs.items():
            t_out = sig.outputs.get(name)
            if t_out is None or not (0 <= t_in < len(sg.tensors) and 0 <= t_out < len(sg.tensors)):
                continue
            a, b = sg.tensors[t_in], sg.tensors[t_out]
            if a.shape != b.shape or a.dtype != b.dtype or not a.shape:
                continue
            e = found.setdefault(name, {"t": a, "subgraphs": [], "tensors": []})
            if sg.index not in e["subgraphs"]:
                e["subgraphs"].append(sg.index)
            e["tensors"] += [(sg.index, t_in), (sg.index, t_out)]
            if a.nbytes > e["t"].nbytes:
                e["t"] = a
    return [KVCache(name, STYLE_EXTERNAL, tuple(e["t"].shape), e["t"].dtype, int(e["t"].nbytes),
                    tuple(e["subgraphs"]), tuple(e["tensors"])) for name, e in found.items()]


def find_kv_caches(model: Model) -> tuple[KVCache, ...]:
    """Every cache the model keeps between calls: resource variables, variable tensors and
    external (signature input/output) caches, in that order (see the module docstring).

    Returns
    -------
    tuple of KVCache
        Empty for a model that keeps no state.
    """
    return tuple(_resource_caches(model) + _variable_caches(model) + _external_caches(model))


def cache_bytes(caches, style: str | None = None) -> int:
    """Bytes of one copy of every cache (of ``style`` only, when given)."""
    return int(sum(c.nbytes for c in caches if style is None or c.style == style))
