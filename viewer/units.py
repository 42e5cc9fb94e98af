"""Byte sizes for people: format and parse (shared by every layer; no dependencies)."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from viewer.errors import UsageError

_BINARY = [("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
_UNITS = {
    "": 1, "b": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    "k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
}


_TENTH = Decimal("0.1")

#: The largest size :func:`parse_size` takes: 2**62 bytes (4 EiB), so sums of a few stay in int64.
MAX_SIZE_BYTES = 1 << 62


def format_bytes(n: int | float) -> str:
    """``1536 -> '1.5 KiB'``: the one byte formatter of every view (window, CLI, exports).

    Binary units (KiB ... EiB) with one digit after the point, a tie rounded away from zero
    as people round (2,304 B = 2.25 KiB reads "2.3 KiB"), computed exactly; whole bytes below
    1 KiB. The window, the CLI and the compare line all call this, so the same byte count reads
    the same everywhere (exact counts are printed beside it where they matter).
    """
    n = float(n)
    sign = "-" if n < 0 else ""
    a = abs(n)
    for unit, scale in _BINARY:
        if a >= scale:
            q = (Decimal(a) / scale).quantize(_TENTH, rounding=ROUND_HALF_UP)
            return f"{sign}{q} {unit}"
    return f"{sign}{int(a)} B"


def parse_size(text: str) -> int:
    """Parse a size such as ``4MiB``, ``512KB``, ``1.5GiB``, ``1000`` into bytes.

    KB/MB/GB are decimal (1000-based), KiB/MiB/GiB binary; a bare K/M/G is binary.

    Raises
    ------
    viewer.errors.UsageError
        For anything else.
    """
    m = re.fullmatch(r"\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(
            f"cannot read size {text!r}: use a number with an optional unit, e.g. 4MiB, 512KB, 1.5GiB"
        )
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 0:
        raise UsageError(f"size {text!r} is negative")
    if not value <= MAX_SIZE_BYTES:  # also inf/nan
        raise UsageError(
            f"size {text!r} is too large: sizes above 2**62 bytes ({format_bytes(MAX_SIZE_BYTES)}) are not taken"
        )
    return int(round(value))
