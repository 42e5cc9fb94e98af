"""Byte sizes stay exact: beyond 2^53 B per tensor or 2^62 B in total, one error naming it.

A file with such a tensor is refused by the reader (tests/model/test_fuzz_corpus_reader.py);
these are what-if results (batch 10^12, ...) reaching analyze(), and plans reaching
verify_plan(), which must never wrap an int64 or print a numpy RuntimeWarning.
"""

from __future__ import annotations

import warnings

import pytest

from tests.analysis.test_intervals import make
from viewer.analysis.intervals import analyze
from viewer.errors import PlanningError, SizeLimitError
from viewer.planning.types import Plan
from viewer.planning.verify import verify_plan


def test_a_tensor_over_2pow53_is_one_error_naming_it():
    sg = make([16, 2**53 + 1, 16], [("ADD", [0], [1]), ("ADD", [1], [2])], [0], [2])
    with pytest.raises(SizeLimitError, match=r"tensor 1 \(t1\).*beyond what any device can hold"):
        analyze(sg)


def test_sizes_summing_over_2pow62_are_refused_not_wrapped():
    n = 1025  # 1025 tensors of 2^52 B, all live together: 2^62 + 2^52 B
    sizes = [2**52] * n
    ops = [("ADD", [0], [i]) for i in range(1, n)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning either
        with pytest.raises(SizeLimitError, match="add up to"):
            analyze(make(sizes, ops, [0], list(range(1, n))))


def test_exact_sums_just_below_the_ceiling():
    sizes = [2**53, 2**53, 2**53]
    a = analyze(make(sizes, [("ADD", [0], [1]), ("ADD", [0, 1], [2])], [0], [2]))
    assert a.naive_bytes == 3 * 2**53 and a.lower_bound_bytes == 3 * 2**53


def test_verify_plan_refuses_offsets_beyond_2pow62_instead_of_wrapping():
    a = analyze(make([8, 8], [("ADD", [0], [1])], [0], [1]))
    p = a.problem()
    bad = Plan("bad", {0: 0, 1: 2**63 + 8}, 2**63 + 16, alignment=0)
    with pytest.raises(PlanningError, match="beyond 2\\^62"):
        verify_plan(p, bad)
