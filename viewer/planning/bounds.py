"""Lower bounds on the tensor arena beyond the widest operator's breadth.

Each takes half-open usage intervals ``[start, end)`` (time steps) and sizes (bytes) as numpy
arrays of shape (n,) and returns bytes. :mod:`viewer.planning.optimal` raises its proven
bound with them.
"""

from __future__ import annotations

import math

import numpy as np


def size_granularity(size: np.ndarray, alignment: int = 1) -> int:
    """Bytes of which some optimal arena is a multiple.

    Push every buffer of an optimal plan down as far as it goes (to offset 0 or, aligned, onto
    the top of a buffer below): the plan stays valid and no higher. With ``alignment`` 1 every
    offset is then a sum of sizes, so every top, and the arena, is a multiple of
    ``g = gcd(size)``; with a larger alignment every offset is a multiple of the alignment, so
    every top is a multiple of ``gcd(alignment, g)``. A proof that the arena cannot be ``c``
    bytes therefore proves it cannot be less than the next multiple above ``c``.

    Parameters
    ----------
    size : ndarray of int, shape (n,)
        Bytes, zero-size buffers ignored.
    alignment : int
        Bytes (>= 1).

    Returns
    -------
    int
        >= 1 (1 when there is no buffer of positive size).
    """
    g = 0
    for s in np.asarray(size).tolist():
        g = math.gcd(g, int(s))
    if g == 0:
        return 1
    return g if alignment <= 1 else math.gcd(int(alignment), g)


def round_up(bound: int, granularity: int) -> int:
    """The smallest multiple of ``granularity`` that is >= ``bound`` (bytes)."""
    return -(-int(bound) // granularity) * granularity
