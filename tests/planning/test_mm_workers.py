"""Decision searches in worker processes (viewer/planning/_mm_workers.py): the same answers,
valid plans, a failed worker's preorder back in the planner's process, no worker left over."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import SHARED
from viewer.errors import PlanCancelled
from viewer.planning import verify_plan
from viewer.planning import _minimalloc as mm
from viewer.planning import _mm_workers as workers
from viewer.planning.csv_io import read_problem_csv
from viewer.planning.optimal import plan_optimal

CAP = 1048576


def _j():
    """Instance J: at its capacity WAT searches for seconds, TWA decides in ~400 nodes."""
    p = SHARED / "benchmarks" / "minimalloc" / "J.1048576.csv"
    if not p.exists():
        pytest.skip(f"{p} not present (../shared is not beside this checkout)")
    problem = read_problem_csv(p)[0]
    ids, first, last, size = problem.arrays()
    return problem, first, last + 1, size


def _valid(start, end, size, offsets, cap):
    top = offsets + size
    assert top.max() <= cap and offsets.min() >= 0
    for i in range(len(size)):
        j = np.nonzero((start < end[i]) & (start[i] < end) & (offsets < top[i]) & (offsets[i] < top))[0]
        assert list(j) == [i], (i, j)


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_worker_answers_for_its_preorder(fork):
    if not fork and not workers.available():
        pytest.skip("worker processes not available here")
    _, start, end, size = _j()
    params = mm.SearchParams(preordering_heuristics=("WAT", "TWA"))
    pool = workers.WorkerPool(start, end, size, 1, params, ["TWA"], fork=fork)
    try:
        with mm.Decision(start, end, size, CAP, 1, params=params, pool=pool) as d:
            assert d.run() == mm.FEASIBLE
            assert d.heuristic == "TWA"
            _valid(start, end, size, d.offsets, CAP)
    finally:
        pool.close()
    assert workers.live_workers() == 0


def test_a_worker_that_dies_hands_its_preorder_back():
    _, start, end, size = _j()
    params = mm.SearchParams(preordering_heuristics=("WAT", "TWA"))
    pool = workers.WorkerPool(start, end, size, 1, params, ["TWA"],
                              command=[sys.executable, "-c", "pass"])  # exits at once
    try:
        with mm.Decision(start, end, size, CAP, 1, params=params, pool=pool) as d:
            assert d.run() == mm.FEASIBLE and d.heuristic == "TWA"  # searched here
            _valid(start, end, size, d.offsets, CAP)
    finally:
        pool.close()
    assert workers.live_workers() == 0


def test_planner_with_processes_gives_a_verified_plan_and_ends_them(monkeypatch):
    import viewer.planning._optimal_search as search

    monkeypatch.setattr(search, "PROCESSES_AFTER", 0.0)
    problem, *_ = _j()
    plan = plan_optimal(problem, 1, time_limit=30, target_bytes=CAP, stop_at_target=True,
                        search_processes=True)
    verify_plan(problem, plan)
    assert plan.arena_bytes <= CAP
    assert any("workers" in e for e in plan.stats["log"])
    assert workers.live_workers() == 0


def test_cancel_with_processes_ends_them(monkeypatch):
    import viewer.planning._optimal_search as search

    monkeypatch.setattr(search, "PROCESSES_AFTER", 0.0)
    problem, *_ = _j()
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 30

    with pytest.raises(PlanCancelled):
        plan_optimal(problem, 1, time_limit=30, target_bytes=990000, cancelled=cancelled,
                     search_processes=True, ingredients=("minimalloc",))
    assert workers.live_workers() == 0
