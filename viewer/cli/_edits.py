"""What-if flags shared by ``plan``, ``check`` and ``export``.

``add_edit_args(parser)`` adds ``--input-shape [NAME=]1x512x512x3`` (repeatable), ``--batch N``,
``--activation-dtype float32|float16|bfloat16|int8|int4``, ``--tensor-dtype ID=DTYPE`` (repeatable)
and ``--rescale-fixed-sizes``; ``edits_from_args(args)`` turns them into a :class:`~viewer.whatif.edits.WhatIfEdits`.
"""

from __future__ import annotations

import argparse
import re

from viewer.cli._common import StoreOnce
from viewer.errors import UsageError
from viewer.model.dtypes import BITS
from viewer.whatif.apply import ACTIVATION_DTYPES
from viewer.whatif.edits import WhatIfEdits

#: Dtypes ``--tensor-dtype`` accepts: every TensorType with a fixed size, in BITS order.
TENSOR_DTYPES = tuple(d for d in BITS if d != "resource")
_DIMS = re.compile(r"\d+(?:[x,]\d+)*")


def add_edit_args(parser: argparse.ArgumentParser) -> None:
    """Add the what-if flags to ``parser`` (values are checked by :func:`edits_from_args`)."""
    g = parser.add_argument_group("what-if edits")
    g.add_argument(
        "--input-shape", action="append", default=[], metavar="[NAME=]SHAPE",
        help="new shape of a graph input, e.g. 1x512x512x3, or HxW (512x512) for an NHWC image "
        "input; NAME is the input tensor's name or position (0, 1, ...), omitted for the only "
        "image input. Repeatable.",
    )
    g.add_argument("--batch", default=None, action=StoreOnce, metavar="N", help="batch size (dimension 0 of every input), N >= 1")
    g.add_argument(
        "--activation-dtype", default=None, metavar="DTYPE",
        help=f"store every non-constant float tensor as DTYPE, one of {', '.join(ACTIVATION_DTYPES)} "
        "(int4: two elements per byte, rounded up per tensor, as LiteRT packs it); "
        "a storage what-if, weights untouched",
    )
    g.add_argument(
        "--rescale-fixed-sizes", action="store_true",
        help="with --input-shape: also rescale sizes baked in at the original resolution (fixed "
        "RESHAPE targets, RESIZE sizes, global pooling windows), as a re-export would; shapes estimated",
    )
    g.add_argument(
        "--tensor-dtype", action="append", default=[], metavar="ID=DTYPE",
        help="store tensor ID (a non-constant tensor's index) as DTYPE, one of "
        f"{', '.join(TENSOR_DTYPES)} (sub-byte types packed, rounded up per tensor); "
        "applied after --activation-dtype. Repeatable.",
    )


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1x512x512x3"`` (or commas) -> ``(1, 512, 512, 3)``.

    Raises
    ------
    viewer.errors.UsageError
        Not positive integers separated by ``x`` or ``,``.
    """
    s = str(text).strip().lower().replace(" ", "")
    if not _DIMS.fullmatch(s):
        raise UsageError(f"cannot read shape {text!r}: use dimensions separated by x, e.g. 1x512x512x3")
    dims = tuple(int(d) for d in re.split(r"[x,]", s))
    if any(d < 1 for d in dims):
        raise UsageError(f"shape {text!r}: every dimension must be >= 1")
    return dims


def edits_from_args(args: argparse.Namespace, *, rescale_needs_shape: bool = True) -> WhatIfEdits:
    """The :class:`WhatIfEdits` the flags describe (empty when none was given).

    Raises
    ------
    viewer.errors.UsageError
        An unreadable shape, a batch that is not an integer >= 1, an unknown dtype, a
        ``--tensor-dtype`` that is not ``ID=DTYPE``, or the same input given twice.
        ``--rescale-fixed-sizes`` without ``--input-shape`` unless ``rescale_needs_shape`` is
        False (``check --find-resolution`` supplies the shape itself).
    """
    shapes: dict[str | int, tuple[int, ...]] = {}
    for item in getattr(args, "input_shape", None) or []:
        name, sep, dims = str(item).rpartition("=")
        key: str | int = name.strip() if sep else ""
        if isinstance(key, str) and key.isdigit():
            key = int(key)
        if key in shapes:
            raise UsageError(f"--input-shape given twice for input {_key_text(key)}; give each input once")
        shapes[key] = parse_shape(dims)
    batch = getattr(args, "batch", None)
    if batch is not None:
        try:
            batch = int(str(batch).strip())
        except ValueError:
            raise UsageError(f"--batch {batch!r}: use an integer >= 1") from None
        if batch < 1:
            raise UsageError(f"--batch {batch}: use an integer >= 1")
        for key, dims in shapes.items():  # one place for the batch: never one silently dropped
            if dims and dims[0] not in (1, batch):
                raise UsageError(f"--batch {batch} and --input-shape {_shape_text(key, dims)} disagree "
                                 f"on dimension 0 (the batch): give the batch in one place")
    act = getattr(args, "activation_dtype", None)
    if act is not None:
        act = str(act).strip().lower()
        if act not in ACTIVATION_DTYPES:
            raise UsageError(f"--activation-dtype {act!r}: use one of {', '.join(ACTIVATION_DTYPES)}")
    tdt: dict[int, str] = {}
    for item in getattr(args, "tensor_dtype", None) or []:
        idx, sep, dt = str(item).partition("=")
        dt = dt.strip().lower()
        if not sep or not idx.strip().isdigit():
            raise UsageError(f"--tensor-dtype {item!r}: use ID=DTYPE with a tensor index, e.g. 7=float16")
        if dt not in TENSOR_DTYPES:
            raise UsageError(f"--tensor-dtype {item!r}: unknown dtype {dt!r}; use one of {', '.join(TENSOR_DTYPES)}")
        tdt[int(idx)] = dt
    if len(shapes) > 1 and getattr(args, "model", None):
        _check_distinct_inputs(args.model, int(getattr(args, "subgraph", 0) or 0), shapes)
    rescale = bool(getattr(args, "rescale_fixed_sizes", False))
    if rescale and not shapes and rescale_needs_shape:
        raise UsageError("--rescale-fixed-sizes needs --input-shape")
    return WhatIfEdits(input_shapes=shapes, batch=batch, activation_dtype=act, tensor_dtypes=tdt,
                       rescale_fixed_sizes=rescale)


def _shape_text(key: str | int, dims: tuple[int, ...]) -> str:
    shape = "x".join(str(d) for d in dims)
    return f"{key}={shape}" if key != "" else shape


def _key_text(key: str | int) -> str:
    return "(the image input)" if key == "" else repr(key)


def _check_distinct_inputs(path: str, subgraph_index: int, shapes: dict) -> None:
    """Raise when two ``--input-shape`` keys (name, position, or the image input) name one input.

    A model that does not load, or a key that names no input, is left for the command to
    report (it loads the model itself).
    """
    from viewer.errors import ViewerError
    from viewer.model.reader import load_model
    from viewer.whatif.apply import _input_tensor

    try:
        model = load_model(path)
        sg = model.subgraph(subgraph_index)
    except ViewerError:
        return
    seen: dict[int, str | int] = {}
    for key in shapes:
        try:
            t = _input_tensor(model, sg, key)
        except ViewerError:
            continue
        if t in seen:
            raise UsageError(
                f"--input-shape given twice for input '{sg.tensors[t].name}' "
                f"(as {_key_text(seen[t])} and {_key_text(key)}); give each input once"
            )
        seen[t] = key


def edit_notes(model, subgraph_index: int, edits: WhatIfEdits | None) -> list[str]:
    """Notes on what the batch flags did to ``model``'s inputs, one line each.

    - ``--batch N`` when no graph input has a dimension to scale (scalars): it changed nothing;
    - no ``--batch`` and an input whose batch is dynamic (-1 first in ``shape_signature``):
      batch 1 assumed.
    """
    sg = model.subgraph(subgraph_index)
    inputs = [sg.tensors[t] for t in sg.inputs if t >= 0]
    notes: list[str] = []
    batch = edits.batch if edits is not None else None
    if batch is not None and inputs and all(len(t.shape) == 0 for t in inputs):
        notes.append(f"--batch {batch} changed nothing: the model's inputs have no batch dimension (scalars)")
    if batch is None:
        dyn = [t for t in inputs if t.shape_signature and t.shape_signature[0] == -1]
        if dyn:
            names = ", ".join(f"'{t.name}'" for t in dyn[:3]) + (" ..." if len(dyn) > 3 else "")
            notes.append(f"dynamic batch (-1 in the shape_signature of {names}): batch 1 assumed "
                         "(use --batch N)")
    return notes
