"""The delegate's terms (viewer.whatif.delegate_terms) partition one process's measured growth.

The figures are a real measurement (XNNPACK on mobilenet_v2_224_int8, a fresh LiteRT process);
the small cases built in code check the clamping and the unknowns a library delegate leaves.
"""

from __future__ import annotations

import pytest

from conftest import shared_model
from viewer.runtime.delegates import DelegateMeasurement, DelegateSpec, measure_delegate
from viewer.whatif.delegate_terms import delegate_account


@pytest.mark.shared
def test_xnnpack_terms_add_up_to_the_process_growth():
    m = measure_delegate(shared_model("mobilenet_v2_224_int8.tflite"), DelegateSpec("xnnpack"))
    a = delegate_account(m, weights_bytes=3_486_760)
    names = [t.name for t in a.terms]
    assert names[0] == "tensor arena" and "delegate: XNNPACK setup" in names and "runtime overhead" in names
    assert all(t.source == "measured" and t.method for t in a.terms)
    assert a.delegate_term_names == ("delegate: XNNPACK setup",) and not a.unknowns
    setup = {t.name: t for t in a.terms}["delegate: XNNPACK setup"]
    assert setup.bytes > 3_486_760  # XNNPACK's packed copy of the weights alone is about that
    # the terms are the measured growth, or above it by what a clamp at 0 left (at most the arena)
    assert m.total_growth <= a.counted_bytes <= m.total_growth + m.arena_bytes
    assert a.upper_bound == (a.counted_bytes > m.total_growth)


def _m(kind="xnnpack", setup=1000, invoke=300, arena=200, persistent=0, library=""):
    return DelegateMeasurement(DelegateSpec(kind, library), 10_000, 10_000 + setup,
                               10_000 + setup + invoke, arena, 2, (5, 6), 64, persistent,
                               2, 1, 1, 9, 8)


def test_clamped_terms_say_upper_bound():
    a = delegate_account(_m(invoke=100, arena=200))
    t = {x.name: x for x in a.terms}
    assert t["runtime overhead"].bytes == 0 and "upper bound" in t["runtime overhead"].method
    assert a.upper_bound and a.counted_bytes == 200 + 1000


def test_unclamped_terms_are_the_growth_exactly():
    a = delegate_account(_m(setup=1000, invoke=300, arena=200, persistent=50))
    assert [t.name for t in a.terms] == ["tensor arena", "persistent", "delegate: XNNPACK setup",
                                         "runtime overhead"]
    assert a.counted_bytes == 1300 and not a.upper_bound
    t = {x.name: x for x in a.terms}
    assert t["tensor arena"].margin == 0 and t["delegate: XNNPACK setup"].margin == 32 << 10
    assert a.margin_bytes == 2 * (32 << 10)  # the stated minimum on each Pss_Anon term


def test_a_library_delegate_leaves_its_device_memory_unknown():
    a = delegate_account(_m("external", library="/opt/npu/libnpu_delegate.so"))
    assert a.delegate_term_names == ("delegate: libnpu_delegate.so setup",)
    assert any("device memory" in u and "libnpu_delegate.so" in u for u in a.unknowns)


def test_no_smaps_is_unknown_not_zero():
    m = DelegateMeasurement(DelegateSpec("xnnpack"), None, None, None, 200, 2)
    a = delegate_account(m)
    assert a.unknowns and all(t.source == "unknown" for t in a.terms[1:])


def test_batch_split_is_a_line_through_two_measurements():
    from viewer.whatif.delegate_terms import batch_split

    a = delegate_account(_m(setup=1000, invoke=300, arena=200))
    s = batch_split(a, 1, _m(setup=1300, invoke=500, arena=400))
    t = {x.name: x for x in s.terms}
    assert t["delegate: XNNPACK setup: grows with the batch (workspace)"].bytes == 300
    assert t["delegate: XNNPACK setup: fixed (packed weights, runtime)"].bytes == 700
    assert s.per_example_bytes == 500 and not any(x.counted for x in s.terms)
    none = batch_split(a, 1, None, "dimension 0 of input 'x' is 335, a size of the data")
    assert none.per_example_bytes is None and "335" in none.reason and not none.terms
