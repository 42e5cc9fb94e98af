"""The ``litert`` planner against the cases of LiteRT's own tflite/arena_planner_test.cc.

Each case re-states one C++ test as literal buffers ``(id, first, last, size, pinned)``: the usage
interval LiteRT's ``PlanAllocations`` gives each tensor (inclusive operator indices; pinned =
never deallocated), with the C++ test's sizes (tensor i has ``(i + 1) * 3`` bytes unless the test
changes it) and its 4-byte alignment, and the offsets the C++ test expects.
"""

from __future__ import annotations

import random

import pytest

from viewer.errors import PlanCancelled, PlanningError
from viewer.planning import PLANNERS
from viewer.planning.litert import UnorderedIntSet, allocation_order, plan_litert, std_sort
from viewer.planning.types import Buffer, PlanningProblem
from viewer.planning.verify import verify_plan


def _sz(i: int) -> int:
    return (i + 1) * 3


# name, num_ops, buffers (id, first, last, size, pinned), node_ranges or None, expected offsets
CASES = [
    (  # GraphWithOneOp2: inputs {1}; {1}->{2}; outputs {2}
        "GraphWithOneOp2", 1,
        [(1, 0, 0, _sz(1), True), (2, 0, 0, _sz(2), True)],
        None, {1: 0, 2: 8},
    ),
    (  # ZeroSizedTensors: tensor 1 has 0 bytes and stays out of the arena
        "ZeroSizedTensors", 1,
        [(1, 0, 0, 0, True), (2, 0, 0, _sz(2), True)],
        None, {1: 0, 2: 0},
    ),
    (  # SimpleGraph: inputs {0,1}; {0,1}->{2}; {2,0}->{4,5}; {4,5}->{3}; outputs {3}
        "SimpleGraph", 3,
        [(0, 0, 2, _sz(0), True), (1, 0, 2, _sz(1), True), (2, 0, 1, _sz(2), False),
         (3, 2, 2, _sz(3), True), (4, 1, 2, _sz(4), False), (5, 1, 2, _sz(5), False)],
        None, {0: 0, 1: 4, 5: 12, 4: 32, 3: 48, 2: 48},
    ),
    (  # SimpleGraphWithTemporary: {2,0}->{4} with temporary 5
        "SimpleGraphWithTemporary", 3,
        [(0, 0, 2, _sz(0), True), (1, 0, 2, _sz(1), True), (2, 0, 1, _sz(2), False),
         (3, 2, 2, _sz(3), True), (4, 1, 2, _sz(4), False), (5, 1, 1, _sz(5), False)],
        None, {0: 0, 1: 4, 3: 12, 5: 12, 4: 32, 2: 48},
    ),
    (  # SimpleGraphWithLargeTensor: tensor 1 is 40 bytes; its gap is reused by 5, 4 and 3
        "SimpleGraphWithLargeTensor", 4,
        [(0, 0, 3, _sz(0), True), (1, 0, 1, 40, False), (2, 1, 2, _sz(2), False),
         (3, 3, 3, _sz(3), True), (4, 2, 3, _sz(4), False), (5, 2, 2, _sz(5), False)],
        None, {0: 0, 1: 4, 2: 44, 3: 4, 5: 4, 4: 24},
    ),
    (  # SimpleGraphWithPersistentTensor: tensor 1 is a variable in the persistent arena
        "SimpleGraphWithPersistentTensor", 3,
        [(0, 0, 2, _sz(0), True), (2, 0, 1, _sz(2), False), (3, 2, 2, _sz(3), True),
         (4, 1, 2, _sz(4), False), (5, 1, 1, _sz(5), False)],
        None, {0: 0, 5: 4, 4: 24, 3: 4, 2: 40},
    ),
    (  # SimpleGraphWithOptionals / SimpleGraphWithOptionalOutput: same plan as SimpleGraph
        "SimpleGraphWithOptionals", 3,
        [(0, 0, 2, _sz(0), True), (1, 0, 2, _sz(1), True), (2, 0, 1, _sz(2), False),
         (3, 2, 2, _sz(3), True), (4, 1, 2, _sz(4), False), (5, 1, 2, _sz(5), False)],
        None, {5: 12, 4: 32, 3: 48, 2: 48},
    ),
    (  # LargerGraphAndStepwiseAllocation: Execute(0,0) ... Execute(4,4)
        "LargerGraphAndStepwiseAllocation", 5,
        [(0, 0, 4, _sz(0), True), (1, 0, 4, _sz(1), True), (2, 0, 1, _sz(2), False),
         (3, 0, 3, _sz(3), False), (4, 1, 4, _sz(4), False), (5, 1, 4, _sz(5), False),
         (6, 1, 1, _sz(6), False), (7, 2, 3, _sz(7), False), (8, 3, 4, _sz(8), False),
         (9, 3, 3, _sz(9), False), (10, 4, 4, _sz(10), True)],
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)],
        {3: 12, 2: 24, 6: 36, 5: 60, 4: 80, 7: 24, 9: 96, 8: 128, 10: 12},
    ),
]


@pytest.mark.parametrize("name,num_ops,bufs,ranges,expected", CASES, ids=[c[0] for c in CASES])
def test_arena_planner_test_cases(name, num_ops, bufs, ranges, expected):
    problem = PlanningProblem(tuple(Buffer(*b) for b in bufs), num_ops)
    plan = plan_litert(problem, 4, node_ranges=ranges)
    for t, off in expected.items():
        assert plan.offsets[t] == off, f"{name}: tensor {t}"
    verify_plan(problem, plan)
    assert plan.arena_bytes == max(plan.offsets[b[0]] + b[3] for b in bufs)


def test_stepwise_differs_from_one_call():
    """Allocating node by node places tensors differently from one ExecuteAllocations call."""
    _, num_ops, bufs, ranges, _ = CASES[-1]
    problem = PlanningProblem(tuple(Buffer(*b) for b in bufs), num_ops)
    once = plan_litert(problem, 4)
    stepwise = plan_litert(problem, 4, node_ranges=ranges)
    assert once.offsets != stepwise.offsets
    verify_plan(problem, once)


def test_registered_with_label_and_default_alignment():
    spec = PLANNERS["litert"]
    assert spec.label == "LiteRT ArenaPlanner" and not spec.exact
    assert "arena_planner.cc" in spec.source
    problem = PlanningProblem((Buffer(0, 0, 1, 10, True), Buffer(1, 0, 0, 100)), 2)
    plan = spec.func(problem)
    assert plan.offsets == {0: 0, 1: 64} and plan.arena_bytes == 164 and plan.alignment == 64


@pytest.mark.parametrize(
    "bufs,expected",
    [
        # (offset, size): 0..9 live, a 70-byte gap at [64, 134) before 192; 50 bytes fit there.
        ([(0, 0, 2, 10, True), (1, 0, 0, 60, False), (2, 0, 2, 20, True),
          (3, 1, 2, 50, False)], {0: 0, 2: 64, 1: 128, 3: 128}),
        # Best fit: at op 1 the gaps are [64, 320) and [447, 512); the 60-byte tensor 6 takes
        # the smaller, later one (at the aligned 448).
        ([(0, 0, 2, 64, True), (1, 0, 0, 256, False), (2, 0, 2, 64, False), (3, 0, 2, 63, False),
          (4, 0, 0, 62, False), (5, 0, 2, 61, False), (6, 1, 1, 60, False)],
         {0: 0, 1: 64, 2: 320, 3: 384, 4: 448, 5: 512, 6: 448}),
    ],
)
def test_best_fit_gap(bufs, expected):
    problem = PlanningProblem(tuple(Buffer(*b) for b in bufs), 3)
    plan = plan_litert(problem, 64)
    verify_plan(problem, plan)
    assert plan.offsets == expected


def test_whole_inference_first_by_index_then_size_then_alloc_node():
    problem = PlanningProblem(
        (Buffer(7, 0, 3, 8, True), Buffer(2, 0, 3, 4, True), Buffer(3, 1, 2, 100),
         Buffer(4, 2, 3, 100), Buffer(5, 0, 1, 200), Buffer(6, 3, 3, 50, True)),
        4,
    )
    assert [b.id for b in allocation_order(problem)] == [2, 7, 5, 3, 4, 6]


def test_equal_ties_follow_unordered_set_iteration():
    """Two equal outputs of one operator: libstdc++'s set lists the later-inserted key first
    (different buckets), and insertion sort keeps that order, so it gets the lower offset."""
    problem = PlanningProblem(
        (Buffer(0, 0, 1, 16, True), Buffer(4, 0, 1, 32), Buffer(5, 0, 1, 32), Buffer(6, 1, 1, 8, True)),
        2,
    )
    assert [b.id for b in allocation_order(problem)] == [0, 5, 4, 6]
    plan = plan_litert(problem)
    assert plan.offsets[5] < plan.offsets[4]


def test_stale_alloc_queue_defers_to_the_buffers():
    """A queue made before a what-if resized a buffer (or without one of them) still plans it."""
    bufs = (Buffer(0, 0, 1, 16, True), Buffer(1, 0, 0, 500), Buffer(2, 1, 1, 100))
    stale = ((Buffer(0, 0, 1, 16, True), Buffer(1, 0, 0, 5)), ())
    problem = PlanningProblem(bufs, 2, stale)
    assert [b.id for b in allocation_order(problem)] == [0, 1, 2]
    assert [b.size for b in allocation_order(problem)] == [16, 500, 100]
    plan = plan_litert(problem)
    verify_plan(problem, plan)


def test_unordered_set_order_and_rehash():
    s = UnorderedIntSet()
    for k in (3, 16, 5):  # 13 buckets: 3 and 16 share bucket 3
        s.insert(k)
    assert list(s) == [5, 16, 3]
    s.insert(3)  # duplicate: no change
    assert list(s) == [5, 16, 3] and len(s) == 3
    t = UnorderedIntSet()
    for k in range(14):  # the 14th key rehashes 13 -> 29 buckets
        t.insert(k)
    assert sorted(t) == list(range(14))
    # the rehash re-inserts 12..0 each at the front (0..12), then 13 goes in front
    assert list(t) == [13, *range(13)]


@pytest.mark.parametrize("n", [0, 1, 5, 16, 17, 40, 300])
def test_std_sort_sorts(n):
    rng = random.Random(n)
    a = [rng.randrange(10) for _ in range(n)]
    b = list(a)
    std_sort(b, lambda x, y: x < y)
    assert b == sorted(a)


def test_std_sort_is_not_stable_on_large_inputs():
    """libstdc++ introsort reorders equal keys once there are more than 16 elements."""
    a = [(0, i) for i in range(40)]
    std_sort(a, lambda x, y: x[0] < y[0])
    assert sorted(a) != a


def test_cancel_and_bad_input():
    problem = PlanningProblem((Buffer(0, 0, 0, 8),), 1)
    with pytest.raises(PlanCancelled):
        plan_litert(problem, cancelled=lambda: True)
    with pytest.raises(PlanningError):
        plan_litert(problem, 0)
    with pytest.raises(PlanningError):
        plan_litert(PlanningProblem((Buffer(0, 3, 3, 8),), 4), node_ranges=[(0, 1)])


def test_empty_problem():
    plan = plan_litert(PlanningProblem((), 0))
    assert plan.offsets == {} and plan.arena_bytes == 0
