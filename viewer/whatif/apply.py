"""Apply what-if edits (input shape / resolution, batch, activation precision) to a subgraph.

Shapes: the LiteRT runtime is the source of truth. The new input shapes are given to
``Interpreter.resize_tensor_input`` and ``allocate_tensors`` in a subprocess (LiteRT's
``Subgraph::ResizeInputTensor`` then every kernel's ``Prepare``, tflite/core/subgraph.cc), and
the shapes it propagated are read back. When the runtime cannot run the model at all (custom
ops, a file it does not load, a subgraph other than 0), :func:`viewer.whatif.shapes.infer_shapes`
estimates them instead and the result is marked ``estimated``. When the runtime *rejects* the
edit (an operator fails to prepare), that is the answer: a :class:`~viewer.errors.WhatIfError`
naming the operator.

Precision: a storage what-if. Non-constant float tensors are re-sized as if stored in another
dtype; weights (constant tensors) are untouched. It says nothing about accuracy.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from typing import Mapping

from viewer.errors import WhatIfError
from viewer.model import dtypes
from viewer.model.types import Model, Subgraph, Tensor, replaced
from viewer.whatif.edits import EditedSubgraph, WhatIfEdits
from viewer.whatif.shapes import infer_shapes

#: Activation dtypes the precision what-if offers. int4 is packed two elements per byte and
#: rounded up per tensor (``viewer.model.dtypes.nbytes``: ceil(n / 2) bytes), as LiteRT stores
#: kTfLiteInt4 (``TfLiteTypeGetSizeBits`` = 4, ``tensor_utils::PackInt8IntoDenseInt4``).
ACTIVATION_DTYPES = ("float32", "float16", "bfloat16", "int8", "int4")
#: Tensor dtypes the activation what-if re-sizes.
FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
#: How shapes are found: the runtime first then our inference, or only our inference.
SHAPE_SOURCES = ("auto", "inferred")

PRECISION_NOTE = (
    "storage what-if: activations re-sized as {dtype}; bytes only, not an accuracy claim "
    "(weights untouched)"
)


def apply_edits(
    model: Model,
    subgraph_index: int,
    edits: WhatIfEdits,
    *,
    shape_source: str = "auto",
    timeout: float = 60.0,
) -> EditedSubgraph:
    """Apply ``edits`` to subgraph ``subgraph_index`` of ``model``.

    Parameters
    ----------
    model : Model
    subgraph_index : int
    edits : WhatIfEdits
        ``input_shapes`` keys: an input tensor's name (or signature input name), its position
        among the subgraph's inputs (int), or ``""`` for the only rank-4 (image) input, else the
        only input. A 2-element shape given for a rank-4 input means (H, W) of NHWC.
        ``batch`` replaces dimension 0 of every input of rank >= 1, after ``input_shapes``.
    shape_source : {"auto", "inferred"}
        ``"auto"``: the runtime's shape propagation, our own inference where the runtime cannot
        run the model. ``"inferred"``: our inference only (fast; no subprocess); the result
        is marked ``estimated``.
    timeout : float
        Seconds allowed for the runtime subprocess.

    Returns
    -------
    EditedSubgraph
        ``subgraph`` is a new Subgraph (``dataclasses.replace``) whose tensors carry the new
        shapes, dtypes and ``nbytes`` (bytes, via :func:`viewer.model.dtypes.nbytes`);
        constant tensors keep theirs. ``input_shapes`` maps each graph input to its new shape.

    Raises
    ------
    viewer.errors.WhatIfError
        A bad edit (unknown input, wrong rank, batch < 1, unknown dtype, a per-tensor
        override on a constant), or a resize the model cannot take: the message names the
        file, the operator (index, op name), the tensor and why.
    viewer.errors.SubgraphError
        No such subgraph.
    """
    sg = model.subgraph(subgraph_index)
    if shape_source not in SHAPE_SOURCES:
        raise WhatIfError(f"{model.path}: unknown shape source {shape_source!r}; use one of {SHAPE_SOURCES}")
    notes: list[str] = []
    estimated = False
    new_inputs = resolve_input_shapes(model, sg, edits)
    shapes: dict[int, tuple[int, ...]] = {t.index: tuple(t.shape) for t in sg.tensors}
    resized = {t: s for t, s in new_inputs.items() if s != tuple(sg.tensors[t].shape)}
    if resized:
        for t, s in resized.items():
            notes.append(
                f"input '{sg.tensors[t].name}' resized {_dims(sg.tensors[t].shape)} -> {_dims(s)}"
            )
        runtime_shapes, why = None, ""
        if shape_source == "auto" and not edits.rescale_fixed_sizes:
            try:
                runtime_shapes, why = _runtime_shapes(model, subgraph_index, new_inputs, timeout)
            except WhatIfError as e:
                raise _hint_only_if_it_helps(e, model, sg, new_inputs) from None
        if runtime_shapes is not None:
            for i, s in runtime_shapes.items():
                if i in shapes and not sg.tensors[i].is_constant:
                    shapes[i] = s
            notes.append("shapes propagated by the LiteRT runtime (resize_tensor_input + allocate_tensors)")
        else:
            from viewer.model.constants import small_int_constants

            consts = small_int_constants(model.path, subgraph_index)
            rescaled: list[str] = []
            try:
                shapes = infer_shapes(sg, new_inputs, constants=consts, source=model.path,
                                      rescale_fixed_sizes=edits.rescale_fixed_sizes, report=rescaled)
            except WhatIfError as e:
                raise _hint_only_if_it_helps(e, model, sg, new_inputs, consts) from None
            estimated = True
            notes.append(
                "shapes estimated by our own inference"
                + (f" (the runtime could not run the model: {why})" if why else "")
            )
            if edits.rescale_fixed_sizes:
                notes.append(
                    "fixed sizes rescaled as if the model were re-exported at the new resolution"
                    + (f": {len(rescaled)} operator(s)" if rescaled else ": none needed")
                )
                notes.extend(rescaled)
    tensors = [_retensor(t, shapes[t.index]) for t in sg.tensors]
    tensors = _apply_dtypes(model, sg, tensors, edits, notes)
    out = dataclasses.replace(sg, tensors=tuple(tensors))
    return EditedSubgraph(out, estimated, tuple(notes), input_shapes=dict(new_inputs))


def _hint_only_if_it_helps(e: WhatIfError, model: Model, sg: Subgraph,
                           new_inputs: Mapping[int, tuple[int, ...]], consts=None) -> WhatIfError:
    """``e``, its ``fixed_size`` mark (the front ends' "add --rescale-fixed-sizes" hint) kept
    only when rescaling would let the resize through.

    Rescaling maps spatial sizes (H, W) the model fixes for its stored resolution; it cannot
    help a batch-only edit, a refusal our shape rules do not see as a fixed size (e.g. an
    im2col past the 32-bit limit), or a fixed size it cannot rescale (Flatten -> a
    FULLY_CONNECTED whose weights fix its input width). Decided with our own inference, with
    and without rescaling (milliseconds, no runtime).
    """
    if not e.fixed_size:
        return e
    helps = False
    spatial = any(len(s) == len(sg.tensors[t].shape) and tuple(s[1:]) != tuple(sg.tensors[t].shape[1:])
                  for t, s in new_inputs.items())
    if spatial:
        if consts is None:
            from viewer.model.constants import small_int_constants

            consts = small_int_constants(model.path, sg.index)
        try:
            infer_shapes(sg, new_inputs, constants=consts)
        except WhatIfError as plain:
            if plain.fixed_size:  # a fixed size blocks it: does rescaling get past every one?
                try:
                    infer_shapes(sg, new_inputs, constants=consts, rescale_fixed_sizes=True)
                    helps = True
                except WhatIfError:
                    pass
    return e if helps else WhatIfError(str(e), fixed_size=False)


def resolve_input_shapes(model: Model, sg: Subgraph, edits: WhatIfEdits) -> dict[int, tuple[int, ...]]:
    """Graph input tensor index -> its shape after ``edits.input_shapes`` and ``edits.batch``.

    Raises
    ------
    viewer.errors.WhatIfError
        Unknown input name or position, a shape of the wrong rank, a dimension < 1, batch < 1.
    """
    out = {t: tuple(sg.tensors[t].shape) for t in sg.inputs if t >= 0}
    for key, shape in (edits.input_shapes or {}).items():
        t = _input_tensor(model, sg, key)
        old = out[t]
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise WhatIfError(f"{model.path}: input {key!r}: shape {shape!r} is not a list of integers") from None
        if len(shape) == 2 and len(old) == 4:
            shape = (old[0], shape[0], shape[1], old[3])
        if len(shape) != len(old):
            raise WhatIfError(
                f"{model.path}: input '{sg.tensors[t].name}' has rank {len(old)} ({_dims(old)}); "
                f"the new shape {_dims(shape)} has rank {len(shape)}"
            )
        if any(d < 1 for d in shape):
            raise WhatIfError(f"{model.path}: input '{sg.tensors[t].name}': every dimension must be >= 1, got {_dims(shape)}")
        out[t] = shape
    if edits.batch is not None:
        if not isinstance(edits.batch, int) or isinstance(edits.batch, bool) or edits.batch < 1:
            raise WhatIfError(f"{model.path}: batch must be an integer >= 1, got {edits.batch!r}")
        for t, s in out.items():
            if len(s) >= 1:
                out[t] = (edits.batch,) + s[1:]
    return out


def _input_tensor(model: Model, sg: Subgraph, key: str | int) -> int:
    inputs = [t for t in sg.inputs if t >= 0]
    names = ", ".join(f"{k}:'{sg.tensors[t].name}' {_dims(sg.tensors[t].shape)}" for k, t in enumerate(inputs))
    if isinstance(key, bool):
        key = int(key)
    if isinstance(key, int):
        if 0 <= key < len(inputs):
            return inputs[key]
        raise WhatIfError(f"{model.path}: no input {key}; subgraph {sg.index} has inputs {names or 'none'}")
    if key == "":
        images = [t for t in inputs if len(sg.tensors[t].shape) == 4]
        if len(images) == 1:
            return images[0]
        if len(inputs) == 1:
            return inputs[0]
        raise WhatIfError(
            f"{model.path}: the model has {len(inputs)} inputs; name one (NAME=SHAPE or its position): {names}"
        )
    for t in inputs:
        if sg.tensors[t].name == key:
            return t
    for sig in model.signatures:
        if sig.subgraph_index == sg.index and key in sig.inputs and sig.inputs[key] in inputs:
            return sig.inputs[key]
    if str(key).isdigit() and int(key) < len(inputs):
        return inputs[int(key)]
    raise WhatIfError(f"{model.path}: no input named {key!r}; inputs are {names or 'none'}")


def with_shapes(sg: Subgraph, shapes: Mapping[int, tuple[int, ...]]) -> Subgraph:
    """``sg`` with tensor ``i`` reshaped to ``shapes[i]`` (bytes recomputed), the rest unchanged."""
    return dataclasses.replace(sg, tensors=tuple(
        _retensor(t, shapes[t.index]) if t.index in shapes else t for t in sg.tensors))


def _retensor(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    shape = tuple(int(d) for d in shape)
    if shape == tuple(t.shape):
        return t
    nb = t.nbytes if t.dtype not in dtypes.BITS and t.dtype not in dtypes.UNSIZED else dtypes.nbytes(t.dtype, shape)
    return replaced(t, shape=shape, nbytes=nb)


def _apply_dtypes(model: Model, sg: Subgraph, tensors: list[Tensor], edits: WhatIfEdits, notes: list[str]) -> list[Tensor]:
    act = edits.activation_dtype
    overrides = dict(edits.tensor_dtypes or {})
    if act is None and not overrides:
        return tensors
    if act is not None and act not in ACTIVATION_DTYPES:
        raise WhatIfError(f"{model.path}: unknown activation dtype {act!r}; use one of {', '.join(ACTIVATION_DTYPES)}")
    out = list(tensors)
    if act is not None:
        n = 0
        for k, t in enumerate(out):
            if not t.is_constant and t.dtype in FLOAT_DTYPES and t.dtype != act:
                out[k] = dataclasses.replace(t, dtype=act, nbytes=dtypes.nbytes(act, t.shape))
                n += 1
        notes.append(PRECISION_NOTE.format(dtype=act) + f"; {n} float tensors changed")
    for idx, dt in overrides.items():
        if not isinstance(idx, int) or not 0 <= idx < len(out):
            raise WhatIfError(f"{model.path}: no tensor {idx!r} in subgraph {sg.index} ({len(out)} tensors)")
        if dt not in dtypes.BITS:
            raise WhatIfError(f"{model.path}: tensor {idx}: unknown dtype {dt!r}")
        t = out[idx]
        if t.is_constant:
            raise WhatIfError(f"{model.path}: tensor {idx} '{t.name}' is constant (weights are untouched by precision what-ifs)")
        out[idx] = dataclasses.replace(t, dtype=dt, nbytes=dtypes.nbytes(dt, t.shape))
    if overrides:
        notes.append(f"storage what-if: {len(overrides)} tensor(s) given their own dtype")
    return out


def _dims(shape) -> str:
    return "x".join(str(int(d)) for d in shape) if len(shape) else "scalar"


# -- the runtime -------------------------------------------------------------------------------
_PREPARE_FAIL = re.compile(r"Node number (\d+) \(([^)]*)\) failed to prepare")
#: Failures that say the runtime cannot run this model at all (not that it rejects the edit).
_CANNOT_RUN = re.compile(r"unresolved custom op|Didn't find op|builtin_code out of range|is not supported", re.I)


def _runtime_shapes(
    model: Model, subgraph_index: int, inputs: Mapping[int, tuple[int, ...]], timeout: float
) -> tuple[dict[int, tuple[int, ...]] | None, str]:
    """Shapes after the runtime's own propagation, or (None, why) when it cannot run the model.

    Raises
    ------
    viewer.errors.WhatIfError
        When the runtime loads the model but an operator fails to prepare at the new shapes.
    """
    if subgraph_index != 0:
        return None, f"the Python runtime resizes only subgraph 0's inputs, not subgraph {subgraph_index}'s"
    try:
        mtime = os.stat(model.path).st_mtime_ns
    except OSError as e:
        return None, f"cannot open {model.path}: {e.strerror}"
    sg = model.subgraph(subgraph_index)
    position = {t: k for k, t in enumerate(sg.inputs)}
    key = tuple(sorted((int(t), position[t], tuple(int(d) for d in s)) for t, s in inputs.items()))
    ok, payload = _probe_cached(model.path, mtime, key, timeout)
    if ok:
        return {int(k): tuple(v) for k, v in payload.items()}, ""
    msg = str(payload)
    m = _PREPARE_FAIL.search(msg)
    if m and not _CANNOT_RUN.search(msg):
        op = int(m.group(1))
        why = msg[: m.start()].strip().rstrip(".") or "prepare failed"
        why = re.sub(r"^.*?(?:RuntimeError|ValueError):\s*", "", why)
        why = re.sub(r"^\S+\.(?:h|cc)(?::\d+)?\s+", "", why)
        t = sg.operators[op].outputs[0] if op < len(sg.operators) and sg.operators[op].outputs else -1
        tname = f" tensor {t} '{sg.tensors[t].name}'" if t >= 0 else ""
        raise WhatIfError(
            f"{model.path}: operator {op} ({m.group(2)}){tname} cannot take the new input shape: "
            f"the LiteRT runtime failed to prepare it ({why})",
            fixed_size=True,
        )
    return None, msg


@functools.lru_cache(maxsize=64)
def _probe_cached(path: str, mtime: int, inputs: tuple, timeout: float) -> tuple[bool, object]:
    # inputs: ((tensor index, input position, shape), ...)
    return _probe_subprocess(path, inputs, timeout)


def _probe_subprocess(path: str, inputs: tuple, timeout: float) -> tuple[bool, object]:
    """Run LiteRT in a subprocess (a crash there cannot take the viewer down).

    Through the model's resident worker (:func:`viewer.runtime.worker.probe_resident`): the
    same answer as a one-shot probe, without a process start after the first.
    """
    from viewer.runtime.worker import probe_resident

    return _probe_via_runtime(probe_resident, path, inputs, timeout)


def _probe_via_runtime(probe_model, path: str, inputs: tuple, timeout: float) -> tuple[bool, object]:
    """Call the runtime layer's probe (input positions as keys): (True, shapes) or (False, why)."""
    from viewer.errors import RuntimeProbeError

    try:
        res = probe_model(path, 0, input_shapes={int(k): tuple(s) for _, k, s in inputs}, timeout=timeout)
    except RuntimeProbeError as e:
        return False, " ".join(str(e).split())
    if not res.ok:
        return False, " ".join(str(res.error).split())
    n = res.num_model_tensors
    return True, {
        int(t.id): tuple(int(d) for d in t.shape)
        for t in res.tensors
        if t.shape is not None and (n is None or t.id < n)
    }
