"""Lower bounds of a planning problem: the breadth sweep and the alignment-aware bound."""

from __future__ import annotations

import random

import pytest

from viewer.planning import get_planner
from viewer.planning.types import Buffer, PlanningProblem


def test_lower_bound_is_the_widest_breadth():
    p = PlanningProblem((Buffer(0, 0, 1, 10), Buffer(1, 1, 2, 20), Buffer(2, 2, 2, 5), Buffer(3, 3, 3, 7)), 4)
    assert list(p.breadth()) == [10, 30, 25, 7]
    assert p.lower_bound() == 30


def test_huge_time_axis_costs_nothing():
    """minimalloc-style times up to 10**15: no array the size of the time axis."""
    p = PlanningProblem((Buffer(0, 0, 10**15, 5), Buffer(1, 10**14, 10**15 - 1, 7)), 10**15 + 1)
    assert p.lower_bound() == 12
    assert p.aligned_lower_bound(64) == 64 + 5  # the 5 B one on top, the 7 B one padded below


def test_aligned_bound_examples():
    p = PlanningProblem((Buffer(0, 0, 0, 12), Buffer(1, 0, 0, 12), Buffer(2, 0, 0, 12)), 1)
    assert p.lower_bound() == 36
    assert p.aligned_lower_bound(1) == 36
    assert p.aligned_lower_bound(64) == 64 + 64 + 12
    p = PlanningProblem((Buffer(0, 0, 0, 64), Buffer(1, 0, 0, 1)), 1)
    assert p.aligned_lower_bound(64) == 64 + 1


@pytest.mark.parametrize("alignment", [1, 8, 64])
def test_no_planner_beats_the_aligned_bound(alignment):
    rng = random.Random(alignment)
    for _ in range(150):
        ops = rng.randrange(1, 12)
        bufs = []
        for i in range(rng.randrange(1, 15)):
            f = rng.randrange(ops)
            bufs.append(Buffer(i, f, rng.randrange(f, ops), rng.randrange(0, 200)))
        p = PlanningProblem(tuple(bufs), ops)
        assert p.lower_bound() == int(p.breadth().max())
        bound = p.aligned_lower_bound(alignment)
        assert bound >= p.lower_bound()
        for name in ("greedy_by_size", "strip_packing", "litert", "naive"):
            assert get_planner(name).func(p, alignment).arena_bytes >= bound, name


def test_aligned_bound_sweep_equals_the_heap_sweep():
    """The vectorised aligned bound (per distinct waste value) against the heap sweep."""
    import random

    import numpy as np

    from viewer.analysis.problem import _aligned_bound_heap, _aligned_bound_sweep

    rng = random.Random(15)
    for _ in range(300):
        n = rng.randrange(1, 40)
        ops = rng.randrange(1, 20)
        bufs = []
        for i in range(n):
            f = rng.randrange(ops)
            bufs.append(Buffer(i, f, min(ops - 1, f + rng.choice([0, 1, 4, ops])),
                               rng.choice([0, 1, 17, 64, 100, rng.randrange(1, 5000)])))
        p = PlanningProblem(tuple(bufs), ops)
        _, first, last, size = p.arrays()
        for a in (2, 16, 64):
            padded = -(-size // a) * a
            waste = padded - size
            assert (_aligned_bound_sweep(first, last, padded, waste, np.unique(waste))
                    == _aligned_bound_heap(first, last, padded, waste))
            assert p.aligned_lower_bound(a) == _aligned_bound_heap(first, last, padded, waste)
