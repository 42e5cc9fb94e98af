"""Bytes per element for every LiteRT TensorType.

Sub-byte types are packed: INT4/UINT4 take ceil(n/2) bytes, INT2 ceil(n/4), as LiteRT's
``TfLiteTypeGetSizeBits`` and the packed-buffer convention in ``tflite/kernels/internal/portable_tensor_utils``.
"""

from __future__ import annotations

import math

from ai_edge_litert import schema_py_generated as _schema

#: TensorType value -> lower-case name, e.g. 0 -> "float32".
TYPE_NAMES: dict[int, str] = {
    v: k.lower() for k, v in vars(_schema.TensorType).items() if not k.startswith("_")
}
#: lower-case name -> TensorType value.
TYPE_CODES: dict[str, int] = {v: k for k, v in TYPE_NAMES.items()}

#: Storage bits per element. STRING/RESOURCE/VARIANT are absent: they have no fixed size.
BITS: dict[str, int] = {
    "float32": 32, "float16": 16, "bfloat16": 16, "float64": 64,
    "int32": 32, "uint8": 8, "int64": 64, "bool": 8, "int16": 16,
    "complex64": 64, "int8": 8, "complex128": 128, "uint64": 64,
    "uint32": 32, "uint16": 16, "int4": 4, "uint4": 4, "int2": 2,
    "float8_e4m3fn": 8, "float8_e5m2": 8,
    # LiteRT stores a RESOURCE tensor as one int32 resource id.
    "resource": 32,
}

#: Types whose byte size cannot be known from the shape alone.
UNSIZED = frozenset({"string", "variant"})


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    """Bytes that a tensor of ``dtype`` and ``shape`` occupies.

    Parameters
    ----------
    dtype : str
        Lower-case TensorType name.
    shape : tuple of int
        Dimensions; negative (unknown) dimensions count as 1.

    Returns
    -------
    int
        ceil(elements * bits / 8). 0 for STRING and VARIANT, whose size is data-dependent.

    Raises
    ------
    KeyError
        For an unknown dtype name.
    """
    if dtype in UNSIZED:
        return 0
    n = 1
    for d in shape:
        n *= max(int(d), 1) if d < 0 else int(d)
    return math.ceil(n * BITS[dtype] / 8)


#: Ceiling on one tensor's (or one arena's) byte size: 2^53 B (8 PiB), far beyond any device,
#: and the largest integer a float64 holds exactly. Sizes are exact Python ints up to here and
#: are checked against it before any numpy int64 array (breadth, offsets, sums) sees them, so
#: sums of a few million of them cannot wrap.
MAX_TENSOR_BYTES = 2**53
#: Ceiling on a sum of tensor sizes (naive sum, breadth): 2^62 B, so that offsets plus sizes
#: never wrap an int64 (as :mod:`viewer.planning.csv_io` takes problems).
MAX_SUM_BYTES = 2**62
