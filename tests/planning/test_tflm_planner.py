"""``tflm_greedy`` / ``tflm_linear``: greedy_memory_planner_test.cc re-stated, and the compiled
GreedyMemoryPlanner of the tflite-micro wheel as the oracle on random problems."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from viewer.analysis.tflm import TflmProblem
from viewer.planning import verify_plan
from viewer.planning.tflm import plan_tflm_greedy, plan_tflm_linear
from viewer.planning.types import Buffer, PlanningProblem


def _problem(rows, offline=None):
    """rows: (size, first, last) in AddBuffer order, as the C++ tests write them."""
    bufs = tuple(Buffer(i, f, l, s) for i, (s, f, l) in enumerate(rows))
    n = max((l for _, _, l in rows), default=0) + 1
    return TflmProblem(bufs, n, (), offline or {})


def _offsets(plan, n):
    return [plan.offsets[i] for i in range(n)]


def test_greedy_basics():  # TestGreedyBasics
    p = _problem([(10, 0, 1), (20, 2, 3)])
    plan = plan_tflm_greedy(p, 1)
    assert plan.arena_bytes == 20 and _offsets(plan, 2) == [0, 0]


def test_greedy_medium():  # TestGreedyMedium
    p = _problem([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])
    plan = plan_tflm_greedy(p, 1)
    assert _offsets(plan, 5) == [50, 70, 40, 0, 0]
    assert plan.arena_bytes == 90
    verify_plan(p, plan)


PERSON_DETECTION = [
    (9216, 0, 29), (3, 28, 29), (256, 27, 28), (2304, 26, 27), (2304, 25, 26), (2304, 24, 25),
    (1152, 23, 24), (4608, 22, 23), (4608, 21, 22), (4608, 20, 21), (4608, 19, 20), (4608, 18, 19),
    (4608, 17, 18), (4608, 16, 17), (4608, 15, 16), (4608, 14, 15), (4608, 13, 14), (4608, 12, 13),
    (2304, 11, 12), (9216, 10, 11), (9216, 9, 10), (9216, 8, 9), (4608, 7, 8), (18432, 6, 7),
    (18432, 5, 6), (18432, 4, 5), (9216, 3, 4), (36864, 2, 3), (18432, 1, 2), (18432, 0, 1),
]


def test_person_detection_model():  # TestPersonDetectionModel: no overlap, below 241027
    p = _problem(PERSON_DETECTION)
    plan = plan_tflm_greedy(p, 1)
    verify_plan(p, plan)
    assert plan.arena_bytes < 241027


def test_overlap_case():  # TestOverlapCase
    p = _problem([(100, 0, 1), (50, 2, 3), (20, 1, 2)])
    assert plan_tflm_greedy(p, 1).arena_bytes == 120


def test_reverse_sort_is_stable_on_reversed_order():
    """ReverseSortInPlace test c: equal sizes come out latest-added first (ids 9, 19, ...)."""
    rows = [((i % 10) + 1, 0, 0) for i in range(100)]
    order = plan_tflm_greedy(_problem(rows), 1).stats["order"]
    # The online buffers are read from the tail (reverse AddBuffer order) before the stable sort.
    assert order[:3] == [99, 89, 79]
    assert order[-3:] == [20, 10, 0]


def test_offline_offsets_are_kept_and_others_fit_around():
    p = _problem([(32, 0, 2), (32, 1, 2), (16, 0, 0)], offline={0: 32})
    plan = plan_tflm_greedy(p, 16)
    assert plan.offsets[0] == 32
    assert plan.offsets[1] == 0  # the gap below the offline buffer
    assert plan.offsets[2] == 0 and plan.arena_bytes == 64


def test_linear_is_the_sum():
    p = _problem([(10, 0, 1), (20, 2, 3), (16, 0, 0)])
    plan = plan_tflm_linear(p, 16)
    assert _offsets(plan, 3) == [0, 16, 48] and plan.arena_bytes == 64


# --- the compiled planner as the oracle --------------------------------------------------------

def _native():
    try:
        from tflite_micro.python.tflite_micro import _runtime
    except ImportError:
        pytest.skip("tflite-micro not installed (pip install 'arena-viewer[tflm]')")
    return ctypes.CDLL(_runtime.__file__)


def _native_plan(lib, rows, offline):
    obj = ctypes.create_string_buffer(4096)
    scratch = ctypes.create_string_buffer(64 * 1024)
    f = lambda n: getattr(lib, n)  # noqa: E731
    f("_ZN6tflite5micro19GreedyMemoryPlannerC1Ev")(obj)
    f("_ZN6tflite5micro19GreedyMemoryPlanner4InitEPhi")(obj, scratch, ctypes.c_int(len(scratch)))
    for i, (s, a, b) in enumerate(rows):
        if i in offline:
            f("_ZN6tflite5micro19GreedyMemoryPlanner9AddBufferEiiii")(obj, s, a, b, offline[i])
        else:
            f("_ZN6tflite5micro19GreedyMemoryPlanner9AddBufferEiii")(obj, s, a, b)
    get_max = f("_ZN6tflite5micro19GreedyMemoryPlanner20GetMaximumMemorySizeEv")
    get_max.restype = ctypes.c_size_t
    arena = get_max(obj)
    out = []
    for i in range(len(rows)):
        o = ctypes.c_int(-1)
        f("_ZN6tflite5micro19GreedyMemoryPlanner18GetOffsetForBufferEiPi")(obj, i, ctypes.byref(o))
        out.append(o.value)
    return arena, out


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_compiled_planner(seed):
    lib = _native()
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    rows = []
    for _ in range(n):
        a = int(rng.integers(0, 20))
        rows.append((16 * int(rng.integers(1, 8 if seed % 2 else 64)), a, a + int(rng.integers(0, 6))))
    offline = {}
    if seed % 5 == 0:
        for i in rng.choice(n, size=max(1, n // 8), replace=False):
            offline[int(i)] = 16 * int(rng.integers(0, 40))
    arena, offsets = _native_plan(lib, rows, offline)
    plan = plan_tflm_greedy(_problem(rows, offline), 16)
    assert _offsets(plan, n) == offsets
    assert plan.arena_bytes == arena


def test_person_detection_matches_the_compiled_planner():
    lib = _native()
    arena, offsets = _native_plan(lib, PERSON_DETECTION, {})
    plan = plan_tflm_greedy(_problem(PERSON_DETECTION), 1)
    assert (plan.arena_bytes, _offsets(plan, len(PERSON_DETECTION))) == (arena, offsets)


def test_on_a_plain_planning_problem_offsets_are_aligned():
    p = PlanningProblem((Buffer(0, 0, 1, 10), Buffer(1, 1, 2, 7), Buffer(2, 2, 2, 100)), 3)
    plan = plan_tflm_greedy(p, 64)
    verify_plan(p, plan)
    assert all(o % 64 == 0 for o in plan.offsets.values())
