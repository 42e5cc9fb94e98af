"""Best-fit strip packing with fixed x-intervals (Sekiyama et al. 2018).

Problems are literal ``(first, last, size)`` tuples with the skyline worked out by hand.
"""

from __future__ import annotations

import random

import pytest

from conftest import SHARED
from viewer.errors import PlanningError
from viewer.planning import get_planner, verify_plan
from viewer.planning.strip_packing import plan_strip_packing
from viewer.planning.types import Buffer, PlanningProblem


def problem(*tuples: tuple[int, int, int]) -> PlanningProblem:
    bufs = tuple(Buffer(i, f, l, s) for i, (f, l, s) in enumerate(tuples))
    return PlanningProblem(bufs, max((b.last for b in bufs), default=-1) + 1)


# Skyline by hand (alignment 1):
#   [0,3]@0   -> longest b0 (0-3)                      -> [0,3]@10
#   [0,3]@10  -> b1, b2, b3 all 2 long: largest, b2     -> [0,1]@10 [2,3]@40
#   [0,1]@10  -> b1 fits                                -> [0,1]@30 [2,3]@40
#   [0,1]@30  -> b3 (1-2) does not fit: waste, raise     -> [0,3]@40
#   [0,3]@40  -> b3                                     -> arena 45 (= lower bound)
HAND = ((0, 3, 10), (0, 1, 20), (2, 3, 30), (1, 2, 5))


def test_registered():
    assert get_planner("strip_packing").func is plan_strip_packing


def test_hand_worked_skyline():
    p = problem(*HAND)
    plan = plan_strip_packing(p, 1)
    assert dict(plan.offsets) == {0: 0, 2: 10, 1: 10, 3: 40}
    assert plan.arena_bytes == 45 == p.lower_bound()
    assert plan.stats["wasted_steps"] == 1
    verify_plan(p, plan)


def test_hand_worked_skyline_aligned():
    # Same order; each offset is the step height rounded up to 64: b2 at 64 (top 94),
    # b1 at 64 (top 84), raise [0,1] to 94, b3 at 128.
    p = problem(*HAND)
    plan = plan_strip_packing(p, 64)
    assert dict(plan.offsets) == {0: 0, 2: 64, 1: 64, 3: 128}
    assert plan.arena_bytes == 133
    verify_plan(p, plan)


def test_waste_raises_to_the_lower_neighbour():
    # [0,3]@0: a (0-1, 50) is longest and largest -> [0,1]@50 [2,3]@0. [2,3]@0: b -> @0;
    # [2,3]@10: c -> @10, leaving [0,1]@50 [2]@10 [3]@15. Nothing fits [2]: it rises to its
    # lower neighbour, 15 (not 50), merging into [2,3]@15; d (1-2) still does not fit, so a
    # second waste lifts it to 50, where d goes. Arena 80 = lower bound (op 1).
    p = problem((0, 1, 50), (2, 3, 10), (3, 3, 5), (1, 2, 30))
    plan = plan_strip_packing(p, 1)
    assert dict(plan.offsets) == {0: 0, 1: 0, 2: 10, 3: 50}
    assert plan.stats["wasted_steps"] == 2
    assert plan.arena_bytes == 80 == p.lower_bound()


def test_empty_zero_size_and_bad_alignment():
    assert plan_strip_packing(PlanningProblem((), 0), 64).arena_bytes == 0
    p = problem((0, 1, 0), (1, 1, 7))
    plan = plan_strip_packing(p, 64)
    assert dict(plan.offsets) == {0: 0, 1: 0} and plan.arena_bytes == 7
    with pytest.raises(PlanningError, match="alignment"):
        plan_strip_packing(p, 0)


@pytest.mark.parametrize("alignment", [1, 8, 64])
def test_random_problems_verify_and_respect_lower_bound(alignment):
    rng = random.Random(alignment)
    for _ in range(80):
        ops = rng.randrange(1, 30)
        bufs = []
        for i in range(rng.randrange(1, 40)):
            f = rng.randrange(ops)
            l = min(ops - 1, f + rng.choice([0, 1, 3, ops]))
            bufs.append(Buffer(i, f, l, rng.choice([0, 1, 48, 100, rng.randrange(1, 4000)])))
        p = PlanningProblem(tuple(bufs), ops)
        plan = plan_strip_packing(p, alignment)
        verify_plan(p, plan)
        assert plan.arena_bytes >= p.lower_bound()


def test_minimalloc_input_12_is_packed_optimally():
    # The MiniMalloc README example: capacity 12 is feasible and is the lower bound.
    from viewer.planning.csv_io import read_problem_csv

    path = SHARED / "benchmarks" / "minimalloc" / "input.12.csv"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not beside this checkout)")
    p, _ = read_problem_csv(path)
    plan = plan_strip_packing(p, 1)
    verify_plan(p, plan)
    assert plan.arena_bytes == 12


# --- the fast planner equals a straightforward reference ------------------------------------


def reference_strip_packing(p: PlanningProblem, alignment: int) -> tuple[dict[int, int], int]:
    """The best-fit loop as written in the docstring: a list of steps, scanned every time.

    Returns offsets by id and the number of wasted steps.
    """
    bufs = [b for b in p.buffers if b.size > 0]
    offsets = {b.id: 0 for b in p.buffers if b.size == 0}
    if not bufs:
        return offsets, 0
    steps = [[min(b.first for b in bufs), max(b.last for b in bufs), 0]]  # [first, last, height]
    wasted = 0
    while bufs:
        k = min(range(len(steps)), key=lambda j: (steps[j][2], j))
        s0, s1, h = steps[k]
        fits = [b for b in bufs if s0 <= b.first and b.last <= s1]
        if fits:
            b = min(fits, key=lambda b: (-(b.last - b.first + 1), -b.size, b.id))
            bufs.remove(b)
            offsets[b.id] = -(-h // alignment) * alignment
            new = [[s0, b.first - 1, h], [b.first, b.last, offsets[b.id] + b.size],
                   [b.last + 1, s1, h]]
            steps[k:k + 1] = [s for s in new if s[0] <= s[1]]
        else:
            wasted += 1
            steps[k][2] = min(steps[j][2] for j in (k - 1, k + 1) if 0 <= j < len(steps))
        merged = [steps[0]]
        for s in steps[1:]:
            if s[2] == merged[-1][2]:
                merged[-1] = [merged[-1][0], s[1], s[2]]
            else:
                merged.append(s)
        steps = merged
    return offsets, wasted


@pytest.mark.parametrize("path", ["python", "numpy"])
def test_equals_reference_on_random_problems(path, monkeypatch):
    import viewer.planning.strip_packing as strip

    if path == "numpy":  # every fit search through the vectorised scan
        monkeypatch.setattr(strip, "_SMALL", 0)
    from test_greedy import tie_heavy_problem

    rng = random.Random(f"strip-{path}")
    for _ in range(250):
        p = tie_heavy_problem(rng)
        a = rng.choice([1, 16, 64])
        plan = plan_strip_packing(p, a)
        offsets, wasted = reference_strip_packing(p, a)
        assert dict(plan.offsets) == offsets, p
        assert plan.stats["wasted_steps"] == wasted


def test_chain_with_skips_equals_reference():
    from test_greedy import chain_problem

    p = chain_problem(400, seed=5)
    plan = plan_strip_packing(p, 64)
    assert (dict(plan.offsets), plan.stats["wasted_steps"]) == reference_strip_packing(p, 64)


# --- cancellation and progress --------------------------------------------------------------


def test_cancelled_before_work_raises():
    from test_greedy import CallCounter, chain_problem

    from viewer.errors import PlanCancelled

    stop = CallCounter(stop_at=1)
    with pytest.raises(PlanCancelled):
        plan_strip_packing(chain_problem(3000), 64, cancelled=stop)
    assert stop.calls == 1


def test_cancellation_is_polled_often_and_honoured_at_once():
    from test_greedy import CallCounter, chain_problem

    from viewer.errors import PlanCancelled

    n = 6000
    p = chain_problem(n)
    count = CallCounter()
    plan_strip_packing(p, 64, cancelled=count)
    assert count.calls >= n // 512  # at least once per 512 buffers placed
    stop = CallCounter(stop_at=count.calls // 2)
    with pytest.raises(PlanCancelled):
        plan_strip_packing(p, 64, cancelled=stop)
    assert stop.calls == stop.stop_at


def test_progress_rises_to_one():
    from test_greedy import chain_problem

    seen: list[float] = []
    plan_strip_packing(chain_problem(4000), 64, progress=lambda f, m: seen.append(f))
    assert len(seen) > 2 and seen[-1] == 1.0
    assert seen == sorted(seen) and all(0.0 <= f <= 1.0 for f in seen)
