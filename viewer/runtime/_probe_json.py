"""The probe child's JSON answer as a :class:`~viewer.runtime.probe_types.RuntimeProbe`.

Classifies every tensor's memory region from LiteRT's allocation type and address, turns arena
addresses into offsets, attributes kernel temporaries to their operators and re-derives which
outputs LiteRT shares in place (``ArenaPlanner::IdentifyInPlaceTensors``, arena_planner.cc).
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from viewer.runtime import _probe_packed as _packed
from viewer.runtime.probe_types import (
    REGION_ARENA, REGION_DYNAMIC, REGION_MODEL_FILE, REGION_NONE, REGION_OTHER,
    REGION_PERSISTENT, REGION_PERSISTENT_ARENA, REGION_READ_ONLY, RuntimeNode, RuntimeProbe,
    RuntimeTensor,
)


def probe_from_json(path: str, raw: Mapping[str, Any], subgraph: int = 0) -> RuntimeProbe:
    """Build a :class:`RuntimeProbe` from the child's JSON (classify regions, compute offsets)."""
    subgraph = int(raw.get("subgraph", subgraph) or 0)
    if not raw.get("ok"):
        return RuntimeProbe(path, subgraph, ok=False, error=str(raw.get("error", f"{path}: failed")))
    packed = raw.get(_packed.KEY)
    tensors = raw["tensors"] if packed is None else None
    raw_nodes = raw.get("nodes", ()) if packed is None else _packed.unpack_nodes(packed)
    n_model = raw.get("num_model_tensors")
    notes = list(raw.get("notes", ()))
    plan = [int(k) for k in raw.get("execution_plan", ())]
    position = {node: pos for pos, node in enumerate(plan)}
    owner: dict[int, int] = {}
    node_temps: dict[int, tuple[int, ...]] = {}
    for node in raw_nodes:
        temps = tuple(int(t) for t in node["temporaries"] if t >= 0)
        op = position.get(int(node["index"]), int(node["index"]))
        if temps:
            node_temps[op] = temps
        for t in temps:
            owner.setdefault(t, op)

    maps = [(int(lo), int(hi)) for lo, hi in raw.get("model_file_mappings", ())]
    if packed is not None:
        out, base, arena_bytes, variables = _packed_tensors(packed, maps, owner, notes)
    else:
        out, base, arena_bytes = _listed_tensors(tensors, maps, owner, notes)
        variables = [t["id"] for t in tensors if t.get("is_variable")]
    nodes = tuple(
        RuntimeNode(
            int(n["index"]), _op_name(n), tuple(n["inputs"]), tuple(n["outputs"]),
            tuple(n["temporaries"]), int(n.get("inplace_operator", 0)),
        )
        for n in raw_nodes
    )
    aliases: dict[int, int] = {}
    if nodes and raw.get("inputs") is not None:
        aliases, alias_notes = _inplace_aliases(out, nodes, raw["inputs"], raw["outputs"], variables)
        notes.extend(alias_notes)
    if n_model is not None:
        stray = [t.id for t in out[n_model:] if t.op is None and t.nbytes > 0]
        if stray:
            notes.append(f"runtime-added tensors with bytes but in no node's temporaries: {stray}")
    return RuntimeProbe(
        path, subgraph, True, "", tuple(out), n_model, arena_bytes, base, node_temps,
        tuple(plan),
        tuple((int(r["input"]), tuple(int(s) for s in r["shape"])) for r in raw.get("resized_inputs", ())),
        tuple(notes), nodes, aliases, bool(raw.get("invoked")),
        tuple(int(t) for t in raw.get("inputs") or ()),
        tuple(int(t) for t in raw.get("outputs") or ()),
        raw.get("signature") or None, str(raw.get("invoke_reason") or ""),
        str(raw.get("invoke_error") or ""),
        int(raw.get("deferred_count") or 0),
        *_overhead(raw.get("overhead")),
    )


def _overhead(got) -> tuple[int | None, str]:
    """(grown bytes, error) of the child's ``overhead`` answer; (None, "") when not asked."""
    if not isinstance(got, Mapping):
        return None, ""
    grown = got.get("grown_bytes")
    return (int(grown) if grown is not None else None), str(got.get("error") or "")


#: TfLiteAllocationType name -> region, for tensors with memory (mmap-ro: see the callers).
_REGIONS = {"arena-rw": REGION_ARENA, "arena-rw-persistent": REGION_PERSISTENT_ARENA,
            "persistent-ro": REGION_PERSISTENT, "dynamic": REGION_DYNAMIC}


def _packed_tensors(packed, maps, owner, notes):
    """:func:`_listed_tensors` over the packed columns (:mod:`viewer.runtime._probe_packed`),
    the region and offset rules the same, vectorised."""
    import numpy as np

    c = _packed.unpack_tensors(packed)
    addr, nbytes = c["address"], c["bytes"]
    alloc = np.array(c["allocation"], dtype=object)
    has = (addr != 0) & (nbytes != 0)
    in_arena = has & (alloc == "arena-rw")
    base = int(addr[in_arena].min()) if in_arena.any() else None
    span = int((addr[in_arena] + nbytes[in_arena]).max()) if base is not None else None
    arena_bytes = (span - base) if base is not None else 0
    mmap_ro = has & (alloc == "mmap-ro")
    inside = np.zeros(len(addr), dtype=bool)
    for lo, hi in maps:
        inside |= (addr >= lo) & (addr + nbytes <= hi)
    addr_l, bytes_l, has_l = addr.tolist(), nbytes.tolist(), has.tolist()
    mm_l, in_l, arena_l = mmap_ro.tolist(), inside.tolist(), in_arena.tolist()
    file_region = REGION_MODEL_FILE if not maps else None
    out = []
    for i, (name, shape, dt, al) in enumerate(zip(c["names"], c["shape"], c["dtype"], c["allocation"])):
        offset = None
        if not has_l[i]:
            region = REGION_NONE
        elif arena_l[i]:
            region, offset = REGION_ARENA, addr_l[i] - base
        elif mm_l[i]:
            region = file_region or (REGION_MODEL_FILE if in_l[i] else REGION_READ_ONLY)
        else:
            region = _REGIONS.get(al, REGION_OTHER)
        out.append(RuntimeTensor(i, name, shape, dt, bytes_l[i], al, region, offset, owner.get(i)))
    if base is not None:
        stray = np.flatnonzero(has & ~in_arena & (addr >= base) & (addr < base + arena_bytes)).tolist()
        notes.extend(f"tensor {i} ({c['allocation'][i]}) points inside the arena span" for i in stray)
    variables = np.flatnonzero(c["is_variable"]).tolist()
    return out, base, arena_bytes, variables


def _listed_tensors(tensors, maps, owner, notes):
    """The tensor records of a listed answer (one JSON object per tensor): (RuntimeTensors,
    arena base address or None, arena span in bytes)."""
    arena_addrs = [
        (int(t["address"]), int(t["bytes"])) for t in tensors
        if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0
    ]
    base = min((a for a, _ in arena_addrs), default=None)
    span = max((a + b for a, b in arena_addrs), default=None)
    arena_bytes = (span - base) if base is not None else 0

    out = []
    for t in tensors:
        addr, nbytes, alloc = t["address"], int(t["bytes"]), t["allocation"]
        offset = None
        if not addr or nbytes == 0:
            region = REGION_NONE
        elif alloc == "arena-rw":
            region, offset = REGION_ARENA, int(addr) - base
        elif alloc == "arena-rw-persistent":
            region = REGION_PERSISTENT_ARENA
        elif alloc == "mmap-ro":
            inside = any(lo <= addr and addr + nbytes <= hi for lo, hi in maps)
            region = REGION_MODEL_FILE if inside or not maps else REGION_READ_ONLY
        elif alloc == "persistent-ro":
            region = REGION_PERSISTENT
        elif alloc == "dynamic":
            region = REGION_DYNAMIC
        else:
            region = REGION_OTHER
        if region not in (REGION_ARENA, REGION_NONE) and base is not None and base <= addr < base + arena_bytes:
            notes.append(f"tensor {t['id']} ({alloc}) points inside the arena span")
        shape = tuple(int(s) for s in t["shape"]) if t["shape"] is not None else None
        out.append(RuntimeTensor(
            int(t["id"]), t["name"], shape, t["dtype"], nbytes, alloc, region, offset,
            owner.get(int(t["id"])),
        ))
    return out, base, arena_bytes


def _op_name(node: Mapping[str, Any]) -> str:
    if node.get("custom_name"):
        return str(node["custom_name"])
    return _builtin_name(int(node["builtin_code"]))


@functools.lru_cache(maxsize=512)
def _builtin_name(code: int) -> str:
    return _builtin_names().get(code, f"builtin {code}")


@functools.lru_cache(maxsize=1)
def _builtin_names() -> dict[int, str]:
    """BuiltinOperator code -> name, from LiteRT's schema ({} when it cannot be imported)."""
    try:
        from ai_edge_litert import schema_py_generated as S  # only for the name table

        return {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
    except Exception:
        return {}


#: ``TfLiteInPlaceOp`` bits (tflite/core/c/common.h) and ArenaPlanner constants.
_INPLACE_DATA_UNMODIFIED = 1
_INPLACE_INPUT0_SHARED = 4
_MAX_SHARABLE_INPUTS = 3  # kTfLiteMaxSharableOpInputs
_SCALAR_TENSOR_BYTES = 4  # kScalarTensorBytes


def _inplace_aliases(tensors, nodes, inputs, outputs, variables) -> tuple[dict[int, int], list[str]]:
    """Which outputs share their input's bytes, as LiteRT decides it.

    Follows ``ArenaPlanner::IdentifyInPlaceTensors`` / ``InputTensorCanBeShared`` and the check
    in ``CalculateAllocations`` (tflite/arena_planner.cc), fed with each kernel's own
    ``inplace_operator`` flags read from the runtime. Sizes are the runtime's after prepare
    (LiteRT decides with the sizes before prepare; they differ only for resized graphs). The
    result is checked against the data pointers; a disagreement becomes a note.

    Returns
    -------
    (dict, list of str)
        alias tensor id -> root tensor id; notes.
    """
    n = len(tensors)
    refcounts = [0] * n
    for t in list(outputs) + list(variables) + list(inputs):
        if 0 <= t < n:
            refcounts[t] += 1
    for node in nodes:
        for t in node.inputs:
            if 0 <= t < n:
                refcounts[t] += 1
    graph_in, graph_out = set(inputs), set(outputs)
    alias: dict[int, int] = {}

    def find(t: int) -> int:
        return alias.get(t, t)

    for node in nodes:
        flags = node.inplace_operator
        if not node.outputs or flags == 0:
            continue
        changed = not (flags & _INPLACE_DATA_UNMODIFIED)
        out = node.outputs[0]
        if not 0 <= out < n:
            continue
        chosen = -1
        for k, t in enumerate(node.inputs[:_MAX_SHARABLE_INPUTS]):
            if not 0 <= t < n or not flags & (_INPLACE_INPUT0_SHARED << k):
                continue
            ti, to = tensors[t], tensors[out]
            if changed and (ti.nbytes != to.nbytes or ti.nbytes <= _SCALAR_TENSOR_BYTES
                            or refcounts[t] > 1):
                continue
            if t in graph_in or out in graph_out:
                continue
            if ti.allocation != to.allocation and ti.allocation != "arena-rw":
                continue
            chosen = t
            break
        if chosen < 0:
            continue
        root = find(chosen)
        if changed and refcounts[root] > 1:
            continue
        alias[out] = root
    # CalculateAllocations drops an alias whose root is not in the arena or differs in size.
    alias = {
        a: r for a, r in alias.items()
        if tensors[r].allocation == "arena-rw" and tensors[r].nbytes == tensors[a].nbytes
    }
    notes = []
    wrong = [a for a, r in alias.items()
             if tensors[a].offset is not None and tensors[a].offset != tensors[r].offset]
    if wrong:
        notes.append(f"in-place emulation disagrees with the runtime's pointers for tensors {wrong}")
        for a in wrong:
            del alias[a]
    return alias, notes
