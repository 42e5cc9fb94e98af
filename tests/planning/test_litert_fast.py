"""The fast ``litert`` planner against the straightforward re-statement kept in
``tests/planning/_litert_reference.py`` (every active allocation walked per tensor, the unordered
set by list walk, the sort through a Python comparison): identical offsets, order and arena on
random problems full of ties, with and without LiteRT's queue, over one or several node ranges,
and on both of the fast planner's paths (listed overlaps, and the dense fallback)."""

from __future__ import annotations

import random

import pytest

from tests.planning import _litert_reference as ref
from viewer.planning import _litert_arena, _sweep, litert
from viewer.planning.types import Buffer, PlanningProblem


def _random_problem(rng: random.Random, with_queue: bool) -> PlanningProblem:
    ops = rng.randrange(1, 30)
    n = rng.randrange(0, 70)
    sizes = [0, 1, 16, 63, 64, 100, 1000, rng.randrange(1, 5000)]
    bufs = []
    for i in range(n):
        f = rng.randrange(ops)
        span = rng.choice([0, 0, 1, 2, 5, ops])
        bufs.append(Buffer(i, f, min(ops - 1, f + span), rng.choice(sizes), rng.random() < 0.2))
    queue = ()
    if with_queue and bufs:
        per = [[] for _ in range(ops)]
        for b in rng.sample(bufs, len(bufs)):
            per[b.first].append(b)
        extra = rng.randrange(0, 4)  # queued tensors outside the arena (aliases, persistent)
        for k in range(extra):
            node = rng.randrange(ops)
            per[node].append(Buffer(1000 + k, node, node, rng.choice(sizes[1:])))
        queue = tuple(tuple(q) for q in per)
    return PlanningProblem(tuple(bufs), ops, queue)


def _ranges(rng: random.Random, ops: int):
    if rng.random() < 0.6:
        return None
    cuts = sorted(rng.sample(range(1, ops), min(ops - 1, rng.randrange(0, 4)))) if ops > 1 else []
    bounds = [0, *cuts, ops]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(len(bounds) - 1)]


def _same(problem, alignment, ranges):
    new = litert.plan_litert(problem, alignment, node_ranges=ranges)
    old = ref.plan_litert(problem, alignment, node_ranges=ranges)
    assert dict(new.offsets) == dict(old.offsets)
    assert new.arena_bytes == old.arena_bytes
    assert new.stats["order"] == old.stats["order"]
    assert new.stats["high_water_mark"] == old.stats["high_water_mark"]


@pytest.mark.parametrize("path", ["python", "numpy_fit", "rounds", "dense", "sweep"])
def test_random_problems_match_the_reference(path, monkeypatch):
    monkeypatch.setattr(_sweep, "ENABLED", path == "sweep")
    if path == "sweep":  # equal aligned sizes: LiteRT's order is time order, placed by one sweep
        monkeypatch.setattr(_litert_arena, "_overlap_lists", None)  # unless ranges leave survivors
    if path == "numpy_fit":  # every tensor's gap search in numpy
        monkeypatch.setattr(_litert_arena, "_NUMPY_FIT", 0)
    if path == "rounds":  # every round in one segmented numpy pass
        monkeypatch.setattr(_litert_arena, "_SMALL_ROUND", 1)
    if path == "dense":  # no pair lists: every tensor takes the vectorised mask
        monkeypatch.setattr(_litert_arena, "_overlap_lists", lambda *a: None)
    rng = random.Random(len(path))
    for _ in range(250):
        if path == "sweep":
            alignment = rng.choice([1, 4, 64])
            problem = _equal_sizes(_random_problem(rng, with_queue=rng.random() < 0.5),
                                   alignment * rng.choice([1, 2, 25, 64]))
            _same(problem, alignment, None)
        else:
            problem = _random_problem(rng, with_queue=rng.random() < 0.5)
            _same(problem, rng.choice([1, 4, 64]), _ranges(rng, problem.num_ops))


def _equal_sizes(problem, size: int):
    """``problem`` with every non-zero size (queue included) set to ``size``."""

    def fix(b):
        return Buffer(b.id, b.first, b.last, size if b.size else 0, b.pinned)

    return PlanningProblem(tuple(map(fix, problem.buffers)), problem.num_ops,
                           tuple(tuple(map(fix, q)) for q in problem.alloc_queue))


@pytest.mark.parametrize("small_round", [48, 1])
def test_wide_problem_matches_the_reference(small_round, monkeypatch):
    """Long candidate lists (numpy gap search) and many equal sizes (the simulated introsort)."""
    monkeypatch.setattr(_litert_arena, "_SMALL_ROUND", small_round)
    rng = random.Random(7)
    ops = 300
    bufs = []
    for i in range(600):
        f = rng.randrange(ops)
        bufs.append(Buffer(i, f, min(ops - 1, f + rng.choice([1, 3, 50, ops])),
                           rng.choice([16, 64, 100, 4096]), rng.random() < 0.1))
    _same(PlanningProblem(tuple(bufs), ops), 64, None)


def test_ranked_sort_matches_std_sort():
    rng = random.Random(3)
    for n in (0, 1, 2, 16, 17, 40, 300, 2000):
        keys = [rng.randrange(max(n // 8, 1)) for _ in range(n)]
        shift = max(n.bit_length(), 1)
        a = [(k << shift) | i for i, k in enumerate(keys)]
        b = list(range(n))
        litert.std_sort_ranked(a, shift)
        litert.std_sort(b, lambda x, y: keys[x] < keys[y])
        assert [v & ((1 << shift) - 1) for v in a] == b


def test_unordered_set_matches_the_list_walk():
    rng = random.Random(5)
    for n in (1, 5, 14, 30, 200):
        new, old = litert.UnorderedIntSet(), ref.UnorderedIntSet()
        for _ in range(n):
            k = rng.randrange(4 * n)
            new.insert(k)
            old.insert(k)
        assert list(new) == list(old) and len(new) == len(old)
