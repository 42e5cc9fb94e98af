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
}
#: Bare prefixes, refused: "4m" could be 4 MiB or 4 MB, 4.9 % apart (a budget read the larger
#: way could say "fits" for a device that is 194 KB short).
_AMBIGUOUS = {"k": "K", "m": "M", "g": "G", "t": "T"}

#: The size syntax, as every SIZE option's --help and the README state it.
SIZE_SYNTAX = ("bytes, or a number with KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of "
               "1024), e.g. 4MiB, 512KB, 1.5GiB; a bare K/M/G is refused as ambiguous")


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

    KB/MB/GB/TB are decimal (1000-based), KiB/MiB/GiB/TiB binary, in any letter case
    (:data:`SIZE_SYNTAX`). A bare K/M/G/T is refused with a hint naming both readings.

    Raises
    ------
    viewer.errors.UsageError
        For a bare K/M/G/T, and anything else that is not a size.
    """
    m = re.fullmatch(r"\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if m and m.group(2).lower() in _AMBIGUOUS:
        num, u = m.group(1), _AMBIGUOUS[m.group(2).lower()]
        raise UsageError(
            f"size {text!r} is ambiguous: write {num}{u}iB ({_UNITS[u.lower() + 'ib']:,d} B per {u}iB) "
            f"or {num}{u}B ({_UNITS[u.lower() + 'b']:,d} B per {u}B)"
        )
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(
            f"cannot read size {text!r}: use {SIZE_SYNTAX}"
        )
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 0:
        raise UsageError(f"size {text!r} is negative")
    if not value <= MAX_SIZE_BYTES:  # also inf/nan
        raise UsageError(
            f"size {text!r} is too large: sizes above 2**62 bytes ({format_bytes(MAX_SIZE_BYTES)}) are not taken"
        )
    return int(round(value))
