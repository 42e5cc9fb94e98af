"""overhead_term: a what-if's term is the growth less the *file's* own terms (newuser3 #8/#22)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from viewer.whatif.verdict import overhead_term


def _fp(anon: int):
    return SimpleNamespace(anonymous_bytes=anon)


def test_a_whatif_carries_the_files_overhead_whatever_its_own_arena():
    grown, stored = 3_956_736, _fp(1_655_808)  # mobilenet_v2_224_int8 at batch 1 (newuser3 #22)
    bigger = overhead_term(_fp(3_311_616), grown, "builtin", at_file_shapes=True, file_fp=stored)
    smaller = overhead_term(_fp(800_000), grown, "builtin", at_file_shapes=True, file_fp=stored)
    assert bigger.bytes == smaller.bytes == 3_956_736 - 1_655_808  # was 645,120 and 3,156,736
    assert bigger.source == "estimated" and "file's shapes" in bigger.method
    at_file = overhead_term(stored, grown, "builtin", at_file_shapes=False)
    assert at_file.bytes == bigger.bytes and at_file.source == "measured"


def test_a_whatif_without_the_files_footprint_is_refused():
    with pytest.raises(ValueError):
        overhead_term(_fp(1), 10, "builtin", at_file_shapes=True)


def test_the_margin_scales_with_the_term_not_the_arena():
    """newuser3 #24: unet_256's 1,380,352 B term under a 130,809,856 B measured arena was
    ±13,219,021 B (a tenth of the growth), so 9 MB of headroom at 140 MiB was "cannot tell"."""
    from viewer.whatif.verdict import (OVERHEAD_TERM_MARGIN_MIN_BYTES, margin_unknown,
                                       overhead_term_margin)

    unet = _fp(130_809_856)
    t = overhead_term(unet, 132_190_208, "builtin", at_file_shapes=False)
    assert t.bytes == 1_380_352 and t.margin == overhead_term_margin(1_380_352) == 552_141
    used = 130_809_856 + t.bytes
    limit = 140 << 20
    assert margin_unknown([t], used, limit) == ""  # 9.1 MB headroom: fits
    assert margin_unknown([t], used, used + 500_000)  # inside ±552,141 B: cannot tell
    assert overhead_term_margin(0) == OVERHEAD_TERM_MARGIN_MIN_BYTES == 128 << 10
