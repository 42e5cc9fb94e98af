"""A "fits" inside a measurement's stated margin is "cannot tell", never a bare "fits"."""

from __future__ import annotations

from viewer.whatif.footprint import SOURCE_MEASURED, Term
from viewer.whatif.verdict import (OVERHEAD_MARGIN_MIN_BYTES, VERDICT_CANNOT_TELL, VERDICT_DOES_NOT_FIT,
                                   VERDICT_FITS, margin_unknown, overhead_margin, total_bytes, verdict)

TERMS = [Term("tensor arena", 1_000_000, SOURCE_MEASURED, "LiteRT's arena"),
         Term("runtime overhead", 500_000, SOURCE_MEASURED, "Pss_Anon", margin=50_000),
         Term("weights", 9_000_000, SOURCE_MEASURED, "mapped", counted=False, margin=0)]


def _verdict(limit: int) -> str:
    used = total_bytes(TERMS)
    why = margin_unknown(TERMS, used, limit)
    return verdict(used, limit, [why] if why else [])


def test_inside_the_margin_is_cannot_tell_and_outside_it_the_verdict_stands():
    used = total_bytes(TERMS)
    assert used == 1_500_000
    assert _verdict(used + 50_000) == VERDICT_FITS  # the margin fits too
    assert _verdict(used + 49_999) == VERDICT_CANNOT_TELL
    assert _verdict(used) == VERDICT_CANNOT_TELL
    assert _verdict(used - 1) == VERDICT_DOES_NOT_FIT  # over is over: never reassuring
    why = margin_unknown(TERMS, used, used + 10)
    assert "10 B" in why and "runtime overhead ±50,000 B" in why


def test_the_overhead_margin_is_a_tenth_of_the_growth_and_at_least_32_kib():
    assert overhead_margin(0) == OVERHEAD_MARGIN_MIN_BYTES == 32 << 10
    assert overhead_margin(18_726_912) == 1_872_692
    assert margin_unknown([Term("a", 5, SOURCE_MEASURED)], 5, 5) == ""  # no margin stated
