"""The independent verifier rejects every kind of bad plan, and accepts good ones."""

from __future__ import annotations

import itertools
import random

import pytest

from viewer.errors import PlanningError
from viewer.planning import verify_plan
from viewer.planning.types import Buffer, Plan, PlanningProblem

P = PlanningProblem((Buffer(0, 0, 1, 100), Buffer(1, 1, 2, 50), Buffer(2, 3, 3, 200)), 4)


def plan(offsets, arena=None, alignment=1):
    arena = arena if arena is not None else max(offsets[b.id] + b.size for b in P.buffers)
    return Plan("t", offsets, arena, alignment)


def test_accepts_a_valid_plan_reusing_bytes_across_time():
    verify_plan(P, plan({0: 0, 1: 100, 2: 0}))


@pytest.mark.parametrize(
    "offsets, arena, alignment, match",
    [
        ({0: 0, 1: 50, 2: 0}, None, 1, "overlaps"),  # 0 and 1 both live at op 1
        ({0: 0, 1: 100}, 150, 1, "no offset"),
        ({0: -64, 1: 100, 2: 0}, None, 1, "negative"),
        ({0: 0, 1: 100, 2: 0}, None, 64, "aligned"),
        ({0: 0, 1: 128, 2: 0}, 999, 64, "arena_bytes"),
    ],
)
def test_rejects(offsets, arena, alignment, match):
    with pytest.raises(PlanningError, match=match):
        verify_plan(P, plan(offsets, arena, alignment))


def test_touching_ends_and_zero_size_are_fine():
    p = PlanningProblem((Buffer(0, 0, 2, 64), Buffer(1, 0, 2, 64), Buffer(2, 1, 1, 0)), 3)
    verify_plan(p, Plan("t", {0: 0, 1: 64, 2: 0}, 128, 64))


def test_agrees_with_brute_force_pairwise_check():
    rng = random.Random(7)
    for _ in range(400):
        ops = rng.randrange(1, 8)
        bufs = []
        for i in range(rng.randrange(1, 7)):
            f = rng.randrange(ops)
            bufs.append(Buffer(i, f, rng.randrange(f, ops), rng.randrange(0, 5)))
        p = PlanningProblem(tuple(bufs), ops)
        offs = {b.id: rng.randrange(0, 8) for b in bufs}
        arena = max(offs[b.id] + b.size for b in bufs)
        clash = any(
            a.size and b.size and a.first <= b.last and b.first <= a.last
            and offs[a.id] < offs[b.id] + b.size and offs[b.id] < offs[a.id] + a.size
            for a, b in itertools.combinations(bufs, 2)
        )
        if clash:
            with pytest.raises(PlanningError, match="overlaps"):
                verify_plan(p, Plan("t", offs, arena, 1))
        else:
            verify_plan(p, Plan("t", offs, arena, 1))


def test_offline_aliases_kept_at_the_models_offsets_are_legal():
    """TFLM takes an offline plan as given (Vela aliases scratch and scratch_fast): two buffers
    the model places over the same bytes are its plan, not a planner error; any other overlap is."""
    from viewer.analysis.tflm import TflmProblem

    bufs = (Buffer(0, 0, 2, 64), Buffer(1, 0, 2, 64), Buffer(2, 1, 1, 16))
    p = TflmProblem(bufs, 3, (), {0: 0, 1: 0})
    keeps = {"keeps_offline": True}
    verify_plan(p, Plan("tflm_greedy", {0: 0, 1: 0, 2: 64}, 80, 16, stats=keeps))
    with pytest.raises(PlanningError, match="planned offline"):  # an online buffer over them
        verify_plan(p, Plan("tflm_greedy", {0: 0, 1: 0, 2: 48}, 64, 16, stats=keeps))
    with pytest.raises(PlanningError, match="overlaps"):  # an online plan may not alias them
        verify_plan(p, Plan("optimal", {0: 0, 1: 16, 2: 80}, 96, 16))
    with pytest.raises(PlanningError, match="overlaps"):  # nor one that does not say it keeps them
        verify_plan(p, Plan("optimal", {0: 0, 1: 0, 2: 64}, 80, 16))
