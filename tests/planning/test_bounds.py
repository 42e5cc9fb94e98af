"""Lower bounds of viewer.planning.bounds: never above a brute-forced optimum, and raised
above the breadth where a subset of the buffers cannot fit in it."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from viewer.planning.bounds import (default_subsets, section_loads, size_granularity,
                                    subset_bound, window_subset)
from viewer.planning.optimal import aligned_lower_bound


def _first_fit(tuples, order, alignment):
    """Place ``(first, last, size)`` buffers (inclusive) in ``order`` at their lowest aligned
    free offset; the arena."""
    placed = []
    for i in order:
        f, l, s = tuples[i]
        busy = sorted((o, o + tuples[j][2]) for j, o in placed
                      if tuples[j][0] <= l and f <= tuples[j][1])
        off = 0
        for a, b in busy:
            if off + s <= a:
                break
            off = max(off, -(-b // alignment) * alignment)
        placed.append((i, off))
    return max(o + tuples[i][2] for i, o in placed)


def _brute_force_optimum(tuples, alignment=1) -> int:
    """First fit over every order (taking an optimal plan's buffers by offset, first fit puts
    each at or below its offset there, so some order reaches the optimum)."""
    return min(_first_fit(tuples, p, alignment) for p in itertools.permutations(range(len(tuples))))


def _arrays(tuples):
    a = np.array(tuples, np.int64).reshape(-1, 3)
    return a[:, 0], a[:, 1] + 1, a[:, 2]  # half-open [start, end)


def _start_bound(tuples, alignment):
    s, e, z = _arrays(tuples)
    return aligned_lower_bound(s, e, z, alignment)


# (first, last, size) inclusive, alignment, brute-forced optimum, bound subset_bound proves with
# the default subsets. The first two: a gadget (times 0-5) whose aligned optimum is above its
# aligned breadth, plus two small buffers later; a subset (large buffers, or the window of the
# gadget's sections) proves the optimum, which the whole problem's bound does not see.
TABLE = [
    ([(3, 5, 12), (2, 4, 5), (1, 2, 9), (1, 1, 8), (7, 8, 2), (8, 9, 3)], 4, 20, 20),
    ([(3, 3, 9), (2, 4, 3), (0, 2, 5), (3, 3, 2), (0, 0, 9), (0, 2, 8), (7, 8, 2), (8, 9, 3)],
     8, 26, 26),
    ([(0, 1, 10), (1, 2, 20)], 1, 30, 30),  # already the breadth
    ([(0, 2, 4), (3, 8, 4), (0, 8, 4), (9, 20, 4), (0, 20, 4)], 1, 12, 12),  # input.12.csv
    ([(0, 1, 100), (1, 2, 30), (2, 3, 100), (0, 0, 30), (3, 3, 30)], 1, 130, 130),
]


@pytest.mark.parametrize("tuples, alignment, optimum, proven", TABLE)
def test_subset_bound_table(tuples, alignment, optimum, proven):
    assert _brute_force_optimum(tuples, alignment) == optimum  # the literal is right
    s, e, z = _arrays(tuples)
    start = _start_bound(tuples, alignment)
    r = subset_bound(s, e, z, start, alignment=alignment,
                     granularity=size_granularity(z, alignment), first_slice=1.0)
    assert start <= r.bound <= optimum
    assert r.bound == proven
    assert (r.bound > start) == bool(r.proofs)
    for p in r.proofs:  # every raise names a proper subset that was proven not to fit
        assert 0 < p["buffers"] < len(tuples) and p["capacity"] < r.bound


def test_subset_bound_never_above_the_optimum():
    """Random small problems, alignments 1, 4 and 8: breadth <= bound <= brute-forced optimum."""
    rng = random.Random(14)
    for _ in range(60):
        alignment = rng.choice([1, 4, 8])
        tuples = []
        for _ in range(rng.randint(3, 6)):
            f = rng.randint(0, 4)
            tuples.append((f, f + rng.randint(0, 2), rng.randint(1, 12)))
        opt = _brute_force_optimum(tuples, alignment)
        s, e, z = _arrays(tuples)
        start = _start_bound(tuples, alignment)
        r = subset_bound(s, e, z, start, alignment=alignment,
                         granularity=size_granularity(z, alignment), first_slice=1.0)
        assert start <= r.bound <= opt, tuples


def test_upper_stops_the_search_and_deadline_keeps_what_is_proven():
    tuples, alignment = TABLE[0][0], TABLE[0][1]
    s, e, z = _arrays(tuples)
    r = subset_bound(s, e, z, 17, alignment=alignment, upper=18, first_slice=1.0)
    assert r.bound == 18 and len(r.proofs) == 1
    r = subset_bound(s, e, z, 17, alignment=alignment, deadline=0.0)  # already past
    assert r.bound == 17 and r.log == []


def test_cancelled_returns_the_bound_so_far():
    tuples, alignment = TABLE[0][0], TABLE[0][1]
    s, e, z = _arrays(tuples)
    r = subset_bound(s, e, z, 17, alignment=alignment, cancelled=lambda: True)
    assert r.bound == 17


def test_section_loads_and_windows():
    # [0,2) 4 B, [1,3) 5 B, [2,4) 6 B: sections just before t = 2, 3, 4.
    s, e, z = np.array([0, 1, 2]), np.array([2, 3, 4]), np.array([4, 5, 6])
    times, loads = section_loads(s, e, z)
    assert times.tolist() == [2, 3, 4] and loads.tolist() == [9, 11, 6]
    w = window_subset(s, e, z, times, 1, 1)  # the buffers live just before t = 3
    assert w.index.tolist() == [1, 2] and w.start.tolist() == [1, 2] and w.end.tolist() == [3, 4]
    c = window_subset(s, e, z, times, 1, 1, clip=True)
    assert c.index.tolist() == [1, 2] and c.start.tolist() == [2, 2] and c.end.tolist() == [3, 3]
    names = [x.name for x in default_subsets(s, e, z)]
    assert all(0 < len(x.index) < 3 for x in default_subsets(s, e, z)) and names


def test_optimal_planner_uses_subset_bound_when_asked():
    from viewer.planning import Buffer, PlanningProblem
    from viewer.planning.optimal import INGREDIENTS, plan_optimal

    tuples, alignment, optimum, _ = TABLE[0]
    problem = PlanningProblem(tuple(Buffer(i, f, l, s) for i, (f, l, s) in enumerate(tuples)), 10)
    plan = plan_optimal(problem, alignment, time_limit=5,
                        ingredients=("aligned_bound", "subset_bound"))  # no search: bound only
    assert plan.bound_bytes == optimum
    assert plan.stats["ingredients"]["subset_bound"]["raised_bound"] == optimum - 17
    plan = plan_optimal(problem, alignment, time_limit=5)
    assert "subset_bound" not in plan.stats["ingredients"] and plan.arena_bytes == optimum
    assert "subset_bound" not in INGREDIENTS


def test_subsets_of_a_subset_that_fits_are_not_searched():
    from viewer.planning.bounds import Subset

    tuples, alignment = TABLE[0][0], TABLE[0][1]
    s, e, z = _arrays(tuples)

    def sub(name, idx):
        idx = np.array(idx)
        return Subset(name, idx, s[idx], e[idx], z[idx])

    r = subset_bound(s, e, z, 20, alignment=alignment, subsets=[sub("big", [0, 1, 2, 3]),
                                                               sub("small", [0, 2])])
    assert [x["status"] for x in r.log] == ["feasible", "feasible"]
    assert r.log[1]["nodes"] == 0 and "inside" in r.log[1]["note"]


def test_section_spans_are_the_sweeps_sections():
    """One definition of a section: the exact search's sweep (MiniMalloc's sweeper.cc) and the
    bounds' binary searches give every buffer the same span, and the same breadth per section."""
    from viewer.planning._mm_sweep import section_loads as loads_of, section_spans, sweep

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        s = rng.integers(0, 20, n)
        e = s + rng.integers(1, 8, n)
        z = rng.integers(1, 100, n)
        times, lo, hi = section_spans(s, e)
        sw = sweep(s, e)
        assert sw.num_sections == len(times)
        assert (sw.sec_lo == lo).all() and (sw.sec_hi == hi).all()
        loads = loads_of(lo, hi, z, len(times))
        for k, t in enumerate(times):  # live in section k iff start < times[k] <= end
            assert loads[k] == z[(s < t) & (t <= e)].sum()
        members = [sorted(int(i) for i in row if i >= 0) for row in sw.members]
        assert all(loads[k] == z[m].sum() for k, m in enumerate(members))
