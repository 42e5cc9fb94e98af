"""What the footprint reads from the model around the runtime's answer: subgraphs reached
through control flow, signatures, dynamic inputs left unresolved, the input positions the probe
takes, why the runtime could not measure, and the runtime's kernel temporaries rescaled to an
edited (what-if) subgraph."""

from __future__ import annotations

from viewer.analysis.types import Analysis
from viewer.errors import ViewerError
from viewer.model.types import Model
from viewer.whatif.edits import WhatIfEdits

#: Option keys (schema object API, snake_case) of operators that name another subgraph:
#: WHILE, IF, CALL_ONCE, CALL and the StableHLO control-flow/composite/sort/scatter options.
_SUBGRAPH_KEYS = ("cond_subgraph_index", "body_subgraph_index", "then_subgraph_index",
                  "else_subgraph_index", "init_subgraph_index", "subgraph", "subgraph_index",
                  "decomposition_subgraph_index", "branch_subgraph_indices",
                  "comparator_subgraph_index", "update_computation_subgraph_index")


def reachable_subgraphs(model: Model, entry: int) -> list[tuple[int, str]]:
    """Subgraphs reached from ``entry`` through control-flow operators, transitively.

    Returns
    -------
    list of (subgraph index, how it is reached), in discovery order, ``entry`` excluded.
    """
    seen = {entry}
    out: list[tuple[int, str]] = []
    if len(model.subgraphs) <= 1:
        return out  # nothing to reach (a 100k-operator scan of every option otherwise: ~0.5 s)
    queue = [entry]
    while queue:
        g = queue.pop(0)
        for op in model.subgraphs[g].operators:
            for key in _SUBGRAPH_KEYS:
                v = op.options.get(key) if op.options else None
                for idx in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(idx, int) and 0 <= idx < len(model.subgraphs) and idx not in seen:
                        seen.add(idx)
                        out.append((idx, f"#{op.index} {op.op_name} of subgraph {g}"))
                        queue.append(idx)
    return out


def persistent_bytes(analysis: Analysis) -> int:
    """Bytes of the tensors our analysis puts outside the arena but in anonymous memory:
    prepare-time folded outputs, variables and resource handles (not mapped constants)."""
    sg = analysis.subgraph
    return int(sum(sg.tensors[k].nbytes for k, why in analysis.outside.items()
                   if k < len(sg.tensors) and ("persistent" in why or "variable" in why
                                               or "resource" in why)))


def signature_subgraph(model: Model, key: str) -> int:
    """The subgraph index signature ``key`` runs.

    Raises
    ------
    viewer.errors.SubgraphError
        No signature of that name (the message lists the keys).
    """
    from viewer.errors import SubgraphError

    for sig in model.signatures:
        if sig.key == key:
            return int(sig.subgraph_index)
    keys = ", ".join(f"'{s.key}' (subgraph {s.subgraph_index})" for s in model.signatures)
    raise SubgraphError(f"{model.path}: no signature {key!r}; "
                        + (f"the signatures are {keys}" if keys else "the model has no signatures"))


def signature_keys(model: Model, subgraph_index: int) -> tuple[str, ...]:
    """Keys of the signatures whose runner runs ``subgraph_index``."""
    return tuple(s.key for s in model.signatures if s.subgraph_index == subgraph_index)


def unresolved_dynamic_inputs(model: Model, subgraph_index: int, edits: WhatIfEdits | None) -> list[str]:
    """One phrase per graph input with a dynamic dimension other than dimension 0 (the batch)
    that ``edits.input_shapes`` does not set: the file's shape there is only a placeholder."""
    from viewer.whatif.apply import _input_tensor

    sg = model.subgraph(subgraph_index)
    given = set()
    for key in (edits.input_shapes if edits is not None else {}) or {}:
        try:
            given.add(_input_tensor(model, sg, key))
        except ViewerError:
            pass
    inputs = [t for t in sg.inputs if t >= 0]
    out = []
    for t in inputs:
        ten = sg.tensors[t]
        sig = tuple(ten.shape_signature or ())
        dyn = [k for k, d in enumerate(sig) if d == -1 and k > 0]
        if not dyn or t in given:
            continue
        example = "x".join("1" if (k == 0 and d == -1) else ("?" if d == -1 else str(d))
                           for k, d in enumerate(sig))
        key = "" if len(inputs) == 1 else f"{ten.name}="
        out.append(f"input '{ten.name}' has dynamic dimension(s) {dyn} (shape_signature "
                   f"{list(sig)}): the file's {'x'.join(map(str, ten.shape))} is a placeholder; "
                   f"give --input-shape {key}{example}")
    return out


def _probe_positions(model: Model, subgraph_index: int, input_shapes) -> dict[int, tuple] | None:
    """``{tensor index: shape}`` -> ``{input position: shape}`` as the probe takes them."""
    if not input_shapes:
        return None
    pos = {t: k for k, t in enumerate(t for t in model.subgraph(subgraph_index).inputs if t >= 0)}
    return {pos[t]: tuple(s) for t, s in input_shapes.items() if t in pos}


def _custom_ops(model: Model, subgraph_index: int) -> list[str]:
    names = []
    for op in model.subgraph(subgraph_index).operators:
        if getattr(op, "custom_code", None) or op.op_name.startswith("CUSTOM"):
            n = getattr(op, "custom_code", None) or op.op_name
            if n not in names:
                names.append(str(n))
    return names


def _not_measured(model: Model, subgraph_index: int, error: str) -> str:
    customs = _custom_ops(model, subgraph_index)
    why = (f"custom op{'s' if len(customs) > 1 else ''} {', '.join(repr(c) for c in customs[:3])} "
           "that LiteRT cannot load" if customs and ("custom op" in error or "Didn't find" in error
                                                    or "Encountered unresolved" in error)
           else error.split(": ", 1)[-1][:160])
    return f"the runtime's arena and kernel temporaries (not measured: {why})"


def _scaled_temporaries(model: Model, subgraph_index: int, probe, edited_sg, shapes_changed: bool):
    """The runtime's arena temporaries, rescaled to the edited tensors.

    Rules: a temporary that copies its operator's input in the input's type (im2col,
    :func:`viewer.ops.scale_temporary`) scales with that input's element size; when the shapes
    were estimated too, every temporary also scales with its operator's input element count.
    Any other temporary keeps its measured size.
    """
    import math

    from viewer.analysis.types import Temporary
    from viewer.model.dtypes import BITS
    from viewer.ops import scale_temporary

    ops = model.subgraph(subgraph_index).operators
    out = []
    for tp in probe.arena_temporaries:
        op = ops[tp.op] if tp.op is not None and tp.op < len(ops) else None
        if op is None or not op.inputs or op.inputs[0] < 0:
            out.append(tp)
            continue
        x = op.inputs[0]
        rt_in = probe.tensor(x)
        new_in = edited_sg.tensors[x]
        n = scale_temporary(op, probe.tensor(tp.id).dtype, tp.nbytes, rt_in.dtype,
                            BITS.get(rt_in.dtype, 0), BITS.get(new_in.dtype, 0))
        if shapes_changed and rt_in.shape:
            old_e, new_e = math.prod(rt_in.shape), math.prod(new_in.shape)
            if old_e > 0:
                n = -(-n * new_e // old_e)
        out.append(Temporary(tp.id, tp.op, int(n), tp.name))
    return tuple(out)


def _edited_runtime_subgraph(model: Model, probe, edited_sg):
    """The runtime's subgraph (its shapes) with the edited dtypes and their bytes."""
    import dataclasses

    from viewer.model.dtypes import BITS, nbytes
    from viewer.runtime.probe import runtime_subgraph

    rsg = runtime_subgraph(model, probe)
    tensors = []
    for t, e in zip(rsg.tensors, edited_sg.tensors):
        if e.dtype != t.dtype and not t.is_constant and e.dtype in BITS:
            t = dataclasses.replace(t, dtype=e.dtype, nbytes=nbytes(e.dtype, t.shape))
        tensors.append(t)
    return dataclasses.replace(rsg, tensors=tuple(tensors))
