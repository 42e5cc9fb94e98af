"""Greedy by Size (offsets) and Greedy by Breadth (shared objects), Pisarchyk & Lee 2020.

Problems are literal ``(first, last, size)`` tuples (inclusive operator indices, bytes) with the
expected tensor arena worked out by hand from TFLite's ``greedy_by_size_assignment.cc`` and
``greedy_by_breadth_assignment.cc``.
"""

from __future__ import annotations

import random

import pytest

from conftest import shared_model
from viewer.errors import PlanningError
from viewer.planning import get_planner, planner_names, verify_plan
from viewer.planning.greedy import plan_greedy_by_breadth, plan_greedy_by_size
from viewer.planning.types import Buffer, PlanningProblem


def problem(*tuples: tuple[int, int, int]) -> PlanningProblem:
    bufs = tuple(Buffer(i, f, l, s) for i, (f, l, s) in enumerate(tuples))
    return PlanningProblem(bufs, max((b.last for b in bufs), default=-1) + 1)


def test_registered():
    names = planner_names()
    assert "greedy_by_size" in names and "greedy_by_breadth" in names
    assert get_planner("greedy_by_size").func is plan_greedy_by_size
    assert not get_planner("greedy_by_breadth").exact


# --- greedy_by_size -----------------------------------------------------------------------


def test_greedy_by_size_stacks_overlapping_buffers():
    # Size order A32, C32, B16, D8. A@0; C meets no placed buffer -> 0; B is above A and C
    # -> 32; D above all -> 48. Arena 56 = the widest operator's breadth (ops 1 and 2).
    p = problem((0, 1, 32), (1, 2, 16), (2, 3, 32), (0, 3, 8))
    plan = plan_greedy_by_size(p, 1)
    assert dict(plan.offsets) == {0: 0, 2: 0, 1: 32, 3: 48}
    assert plan.arena_bytes == 56 == p.lower_bound()
    verify_plan(p, plan)


def test_greedy_by_size_takes_the_smallest_gap_not_the_lowest():
    # Placed: id2@0 (op 4 only), id0@40, id1@70, id4@100 (op 4 only), id3@130. Buffer 5 at
    # op 3 sees two gaps among the buffers it overlaps: [0, 40) and [100, 130). The smaller,
    # 30 bytes, wins, so it goes to 100 (a first-fit would put it at 0).
    p = problem((1, 4, 30), (0, 4, 30), (4, 4, 40), (0, 4, 10), (4, 4, 30), (3, 3, 10))
    plan = plan_greedy_by_size(p, 1)
    assert dict(plan.offsets) == {2: 0, 0: 40, 1: 70, 4: 100, 3: 130, 5: 100}
    assert plan.arena_bytes == 140 == p.lower_bound()


def test_greedy_by_size_aligns_gap_starts():
    # Unaligned: id1 and id2 would sit at 100 (arena 150). With 64-byte alignment the gap
    # above id0 starts at AlignByN(100, 64) = 128.
    p = problem((0, 1, 100), (1, 2, 50), (0, 0, 30))
    assert plan_greedy_by_size(p, 1).arena_bytes == 150
    plan = plan_greedy_by_size(p, 64)
    assert dict(plan.offsets) == {0: 0, 1: 128, 2: 128}
    assert plan.arena_bytes == 178
    verify_plan(p, plan)


# --- greedy_by_breadth --------------------------------------------------------------------


def test_greedy_by_breadth_reuses_objects():
    # Breadth: op0 50, op1 60, op2 60, op3 40 -> ops 1, 2, 0, 3. Op 1: b0 -> object 0 (40),
    # b1 -> object 1 (20). Op 2: b2 fits object 0 exactly. Op 0: b3 (10) cannot join b0's
    # object; object 1 (b1 at ops 1-2) takes it. Objects 40 + 20 = 60.
    p = problem((0, 1, 40), (1, 2, 20), (2, 3, 40), (0, 0, 10))
    plan = plan_greedy_by_breadth(p, 1)
    assert dict(plan.offsets) == {0: 0, 2: 0, 1: 40, 3: 40}
    assert plan.arena_bytes == 60 == p.lower_bound()
    assert plan.stats["objects"] == 2


def test_greedy_by_breadth_arena_is_sum_of_shared_objects():
    # Op 0: 30 -> object 0, 10 -> object 1. Op 1: the first 20 fits object 0 (30); the second
    # goes to object 1, which grows to 20. Objects 30 + 20 = 50 although the lower bound is
    # 40 (greedy by size reaches 40): the shared-object layout's price.
    p = problem((0, 0, 30), (0, 0, 10), (1, 1, 20), (1, 1, 20))
    plan = plan_greedy_by_breadth(p, 1)
    assert dict(plan.offsets) == {0: 0, 2: 0, 1: 30, 3: 30}
    assert plan.arena_bytes == 50
    assert p.lower_bound() == 40
    assert plan_greedy_by_size(p, 1).arena_bytes == 40
    aligned = plan_greedy_by_breadth(p, 64)
    assert dict(aligned.offsets) == {0: 0, 2: 0, 1: 64, 3: 64}
    assert aligned.arena_bytes == 84
    verify_plan(p, aligned)


def test_greedy_by_breadth_large_time_axis_is_cheap():
    # MiniMalloc-style times in the millions: compressed, not walked operator by operator.
    p = problem((0, 999_999, 8), (500_000, 4_000_000, 16), (2_000_000, 3_000_000, 8))
    plan = plan_greedy_by_breadth(p, 1)
    verify_plan(p, plan)
    assert plan.arena_bytes == 24 == p.lower_bound()


# --- both ---------------------------------------------------------------------------------


@pytest.mark.parametrize("func", [plan_greedy_by_size, plan_greedy_by_breadth])
def test_empty_and_zero_size(func):
    assert func(PlanningProblem((), 0), 64).arena_bytes == 0
    p = problem((0, 2, 0), (1, 1, 100), (0, 0, 0))
    plan = func(p, 64)
    verify_plan(p, plan)
    assert plan.offsets[0] == 0 and plan.offsets[2] == 0
    assert plan.arena_bytes == 100


@pytest.mark.parametrize("func", [plan_greedy_by_size, plan_greedy_by_breadth])
@pytest.mark.parametrize("alignment", [0, -64])
def test_bad_alignment(func, alignment):
    with pytest.raises(PlanningError, match="alignment"):
        func(problem((0, 0, 8)), alignment)


def random_problem(rng: random.Random, n: int, ops: int) -> PlanningProblem:
    bufs = []
    for i in range(n):
        f = rng.randrange(ops)
        l = min(ops - 1, f + rng.choice([0, 0, 1, 2, 5, ops]))
        bufs.append(Buffer(i, f, l, rng.choice([0, 1, 3, 64, 100, 1000, rng.randrange(1, 5000)])))
    return PlanningProblem(tuple(bufs), ops)


@pytest.mark.parametrize("name", ["greedy_by_size", "greedy_by_breadth"])
@pytest.mark.parametrize("alignment", [1, 16, 64])
def test_random_problems_verify_and_respect_lower_bound(name, alignment):
    rng = random.Random(f"{name}-{alignment}")
    func = get_planner(name).func
    for _ in range(60):
        p = random_problem(rng, rng.randrange(1, 40), rng.randrange(1, 30))
        plan = func(p, alignment)
        verify_plan(p, plan)
        assert plan.arena_bytes >= p.lower_bound()
        assert plan.alignment == alignment
        assert func(p, alignment).offsets == plan.offsets  # deterministic


# --- MobileNet v2 acceptance (../shared) ----------------------------------------------------


@pytest.mark.shared
def test_mobilenet_v2_matches_the_paper():
    """Pisarchyk & Lee report, for MobileNet v2 (float32, 224x224): naive 27.6 MB, Greedy by
    Size for offset calculation 5.742 MB.

    The paper's usage records free the graph input after its last consumer (the GPU
    delegate's convention); LiteRT keeps graph inputs for the whole inference, which adds the
    602,112-byte input to the widest operator. Both are checked.
    """
    from viewer.analysis.intervals import analyze
    from viewer.analysis.types import KIND_INPUT
    from viewer.model.reader import load_model

    analysis = analyze(load_model(shared_model("mobilenet_v2_224.tflite")).subgraph(0))
    # Every op-produced tensor counted with its own bytes (in-place aliases included).
    produced = [u for u in analysis.usages if u.producer is not None]
    naive = sum(u.nbytes for u in produced)
    assert abs(naive - 27.6e6) / 27.6e6 < 0.02, naive

    # The paper's convention: every tensor freed after its last use.
    bufs = []
    for u in analysis.usages:
        if u.alias_of is not None:
            continue
        last = max(u.consumers) if u.kind == KIND_INPUT and u.consumers else u.last_op
        bufs.append(Buffer(u.tensor, u.first_op, last, u.nbytes))
    paper = PlanningProblem(tuple(bufs), analysis.num_ops)
    plan = plan_greedy_by_size(paper, 1)
    verify_plan(paper, plan)
    assert abs(plan.arena_bytes - 5.742e6) / 5.742e6 < 0.10, plan.arena_bytes
    # It reaches that problem's lower bound: 5.742 MiB = 112x112x96 + 56x56x96 float32.
    assert plan.arena_bytes == paper.lower_bound() == (112 * 112 * 96 + 56 * 56 * 96) * 4

    # LiteRT's convention (graph input pinned) with LiteRT's 64-byte alignment.
    litert = analysis.problem()
    plan64 = plan_greedy_by_size(litert, 64)
    verify_plan(litert, plan64)
    assert plan64.arena_bytes == litert.lower_bound() == analysis.lower_bound_bytes
