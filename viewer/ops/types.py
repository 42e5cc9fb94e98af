"""What an operator registry entry declares, and the small helpers the rules share.

An :class:`OpSpec` is one operator's knowledge: output shapes, receptive field, multiply-accumulate
count, in-place eligibility, prepare-time folding and the estimate of its kernel temporaries.
Layout is NHWC throughout, as in LiteRT's builtin kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from viewer.model.types import Operator

Shape = tuple[int, ...]
#: A spatial region of an NHWC tensor: (y0, y1, x0, x1), half-open rows and columns. A region
#: returned by a receptive-field rule may reach outside the tensor (negative or past H/W): that
#: part is the padding the kernel adds.
Region = tuple[int, int, int, int]

SAME, VALID = 0, 1  # tflite::Padding


class ShapeError(Exception):
    """Why one operator cannot take its input shapes (callers wrap it in a ViewerError).

    Attributes
    ----------
    tensor : int or None
        The tensor the problem is about, when one is.
    """

    def __init__(self, why: str, tensor: int | None = None):
        super().__init__(why)
        self.tensor = tensor


class NotLocal(Exception):
    """The operator is not spatially local (its output region needs more than a bounded input region)."""


@dataclass
class ShapeContext:
    """What a shape rule reads.

    Attributes
    ----------
    shapes : Mapping[int, Shape]
        Tensor index -> current shape.
    values : Mapping[int, numpy.ndarray]
        Known values of small integer tensors (shape inputs, paddings, axes...).
    rescale : object or None
        When fixed sizes are rescaled (``viewer.whatif.shapes``): has ``orig`` (tensor -> stored
        shape), ``map(d)`` and ``note(op, what, old, new)``.
    """

    shapes: Mapping[int, Shape]
    values: Mapping[int, np.ndarray] = field(default_factory=dict)
    rescale: Any = None


@dataclass(frozen=True)
class PersistentRoRule:
    """When a LiteRT kernel calls ``SetTensorToPersistentRo(output)`` in Prepare.

    The output is then computed once at prepare time into heap memory outside the arena
    (``kTfLitePersistentRo``), and counts as "constant or persistent" for the kernels reading it.

    Attributes
    ----------
    inputs : tuple of int or None
        Input positions that must all be constant or persistent (``IsConstantOrPersistentTensor``;
        an omitted optional input counts as satisfied); None: every input; (): always folded.
    max_output_elements : int or None
        Folded only when the output has at most this many elements.
    source : str
        The LiteRT kernel file (google-ai-edge/LiteRT ``tflite/kernels/``).
    """

    inputs: tuple[int, ...] | None
    max_output_elements: int | None = None
    source: str = ""


@dataclass(frozen=True)
class InPlace:
    """A kernel registration that sets ``inplace_operator`` (LiteRT tflite/kernels/*.cc).

    Attributes
    ----------
    inputs : tuple of int
        Input positions that may share the output's bytes (``kTfLiteInplaceOpInputNShared``).
    unmodified : bool
        ``kTfLiteInplaceOpDataUnmodified``: the output holds the input's data unchanged.
    """

    inputs: tuple[int, ...]
    unmodified: bool


@dataclass(frozen=True)
class TemporaryEstimate:
    """One kernel temporary an operator's Prepare allocates, estimated from shapes.

    Attributes
    ----------
    name : str
        What it is (e.g. ``"im2col"``).
    shape : tuple of int
    dtype : str
    nbytes : int
    follows_input : bool
        Its element type is the input's (im2col): a storage what-if on the input scales it.
    """

    name: str
    shape: Shape
    dtype: str
    nbytes: int
    follows_input: bool = False


ShapeRule = Callable[[Operator, ShapeContext], list]
RegionRule = Callable[[Operator, ShapeContext, Region], Sequence]
MacRule = Callable[[Operator, Mapping[int, Shape]], int]
TempRule = Callable[[Operator, Mapping[int, Shape], Mapping[int, str]], tuple]


@dataclass(frozen=True)
class OpSpec:
    """Everything the project knows about one operator (one registry entry).

    Attributes
    ----------
    name : str
        The op name as the reader gives it (``Operator.op_name``).
    family : str
        The entry's family (the module that defines it), for messages and tests.
    shapes : callable or None
        ``shapes(op, ctx) -> list of Shape``, one per output (LiteRT's Prepare); raises
        :class:`ShapeError`. None: the output shape rule is not known.
    receptive : callable or None
        ``receptive(op, ctx, out_region) -> sequence``: for each input position, the
        :data:`Region` of that input the output region needs (unclipped: the part outside the
        input is the kernel's padding), or None for an input that is not spatial (weights,
        per-channel constants: read whole). Raises :class:`NotLocal`.
    not_local : str
        Why the operator ends a patchable prefix, when ``receptive`` is None.
    macs : callable or None
        ``macs(op, shapes) -> int``, multiply-accumulates of one invocation; None: 0.
    inplace : InPlace or None
    persistent_ro : PersistentRoRule or None
    persistent_folding : bool
        The kernel puts its output in the persistent arena at prepare time when its input is a
        constant (DEQUANTIZE) or always (DENSIFY); see :mod:`viewer.analysis.intervals`.
    dynamic_output : bool
        The kernel makes its outputs dynamic in Prepare (allocated at run time).
    temporaries : callable or None
        ``temporaries(op, shapes, dtypes) -> tuple of TemporaryEstimate``; None: the kernel
        allocates none that we know of.
    temporaries_follow_input : bool
        The temporaries in the input's dtype are copies of the input (im2col): a storage what-if
        on the input scales them by its element size.
    """

    name: str
    family: str
    shapes: ShapeRule | None = None
    receptive: RegionRule | None = None
    not_local: str = ""
    macs: MacRule | None = None
    inplace: InPlace | None = None
    persistent_ro: PersistentRoRule | None = None
    persistent_folding: bool = False
    dynamic_output: bool = False
    temporaries: TempRule | None = None
    temporaries_follow_input: bool = False


# -- helpers the rules share -----------------------------------------------------------------
def opt(op: Operator, key: str, default=None):
    """Option ``key`` of ``op``, ``default`` when absent or None."""
    v = op.options.get(key, default) if op.options else default
    return default if v is None else v


def padding(op: Operator) -> int:
    """``SAME`` or ``VALID`` from the op's ``padding`` option (int or name)."""
    p = opt(op, "padding", SAME)
    if isinstance(p, str):
        return VALID if p.upper() == "VALID" else SAME
    return int(p)


def out_size(size: int, k: int, stride: int, dilation: int, pad: int) -> int:
    """tflite/kernels/padding.h ``ComputeOutSize``."""
    eff = (k - 1) * dilation + 1
    stride = max(stride, 1)
    if pad == SAME:
        return (size + stride - 1) // stride
    return (size + stride - eff) // stride


def pad_before(size: int, k: int, stride: int, dilation: int, pad: int) -> int:
    """Rows (or columns) of padding before the input: tflite/kernels/padding.h ``ComputePaddingWithOffset``.

    SAME: ``max(0, ((out - 1) * stride + eff - size)) // 2``; VALID: 0.
    """
    if pad != SAME:
        return 0
    eff = (k - 1) * dilation + 1
    out = out_size(size, k, stride, dilation, pad)
    return max(0, (out - 1) * max(stride, 1) + eff - size) // 2


def value(values: Mapping[int, np.ndarray], t: int, what: str) -> np.ndarray:
    """The known value of tensor ``t``; raises :class:`ShapeError` when it is not known."""
    if t < 0 or t not in values:
        raise ShapeError(f"the value of its {what} (tensor {t}) is not known before running the model", t)
    return values[t]


def axis(a: int, rank: int) -> int:
    """Normalise axis ``a`` for ``rank``; raises :class:`ShapeError` when out of range."""
    a = int(a)
    if a < 0:
        a += rank
    if not 0 <= a < rank:
        raise ShapeError(f"axis {a} is out of range for rank {rank}")
    return a


def broadcast(*shapes: Shape) -> Shape:
    """NumPy broadcasting of ``shapes`` (tflite/kernels/kernel_util.cc ``CalculateShapeForBroadcast``).

    Raises
    ------
    ShapeError
        When two dimensions differ and neither is 1.
    """
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise ShapeError(f"cannot broadcast shapes {[list(s) for s in shapes]}")
        out.append(big.pop() if big else (0 if 0 in dims else 1))
    return tuple(out)


def first_shape(op: Operator, shapes: Mapping[int, Shape]) -> Shape:
    """Shape of the op's first input (() when it has none)."""
    ins = op.inputs
    return shapes[ins[0]] if ins and ins[0] >= 0 else ()


def numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
