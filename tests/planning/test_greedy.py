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


# --- the fast planners equal a straightforward reference ------------------------------------
#
# The planners list overlapping pairs with numpy, take a range minimum over the task order,
# and so on. These references are the algorithms as the TFLite GPU delegate writes them:
# quadratic, obviously right, and small enough to read next to the C++.


def reference_greedy_by_size(p: PlanningProblem, alignment: int) -> dict[int, int]:
    """``GreedyBySizeAssignment`` (greedy_by_size_assignment.cc), walking every placed buffer."""
    order = sorted(range(len(p.buffers)), key=lambda i: -p.buffers[i].size)
    placed: list[tuple[int, int]] = []  # (offset, position), sorted by offset
    offsets = {}
    for i in order:
        b = p.buffers[i]
        if b.size == 0:
            offsets[b.id] = 0
            continue
        prev, best, best_gap = 0, None, None
        for off, j in placed:
            o = p.buffers[j]
            if o.last < b.first or o.first > b.last:
                continue
            if off >= prev and off - prev >= b.size and (best_gap is None or off - prev < best_gap):
                best, best_gap = prev, off - prev
            prev = max(prev, -(-(off + o.size) // alignment) * alignment)
        offsets[b.id] = prev if best is None else best
        placed.append((offsets[b.id], i))
        placed.sort(key=lambda t: t[0])  # stable: after equal offsets, as the reference inserts
    return offsets


def reference_greedy_by_breadth(p: PlanningProblem, alignment: int) -> dict[int, int]:
    """``GreedyByBreadthAssignment`` (greedy_by_breadth_assignment.cc) over every operator."""
    bufs = p.buffers
    ops = max((b.last for b in bufs), default=-1) + 1
    by_size = sorted(range(len(bufs)), key=lambda i: -bufs[i].size)
    profiles = [[i for i in by_size if bufs[i].first <= t <= bufs[i].last] for t in range(ops)]
    tasks = sorted(range(ops), key=lambda t: -sum(bufs[i].size for i in profiles[t]))
    objects: list[list[int]] = []  # positions sharing each object
    obj_size: list[int] = []
    obj_of = {}
    for t in tasks:
        for i in profiles[t]:
            if i in obj_of:
                continue
            b = bufs[i]
            free = [o for o in range(len(objects))
                    if all(bufs[j].last < b.first or bufs[j].first > b.last for j in objects[o])]
            big = [o for o in free if obj_size[o] >= b.size]
            if big:  # the smallest object that holds it (first created on ties)
                o = min(big, key=lambda o: (obj_size[o], o))
            elif free:  # else the largest, which grows
                o = min(free, key=lambda o: (-obj_size[o], o))
            else:
                o = len(objects)
                objects.append([])
                obj_size.append(0)
            objects[o].append(i)
            obj_size[o] = max(obj_size[o], b.size)
            obj_of[i] = o
    starts, top = [], 0
    for s in obj_size:
        top = -(-top // alignment) * alignment
        starts.append(top)
        top += s
    return {b.id: starts[obj_of[i]] if b.size else 0 for i, b in enumerate(bufs)}


def tie_heavy_problem(rng: random.Random) -> PlanningProblem:
    """Random problem rich in ties: equal sizes, equal and nested intervals, zero sizes."""
    ops = rng.randrange(1, 25)
    bufs = []
    for i in range(rng.randrange(1, 45)):
        f = rng.randrange(ops)
        l = min(ops - 1, f + rng.choice([0, 0, 1, 2, 4, ops, rng.randrange(ops)]))
        bufs.append(Buffer(i, f, l, rng.choice([0, 1, 8, 64, 64, 64, 100, rng.randrange(1, 3000)])))
    return PlanningProblem(tuple(bufs), ops)


@pytest.mark.parametrize("path", ["python", "numpy", "sweep"])
def test_greedy_by_size_equals_reference(path, monkeypatch):
    from viewer.planning import _overlap, _sweep

    monkeypatch.setattr(_sweep, "ENABLED", path == "sweep")
    if path == "numpy":  # every candidate list through the vectorised gap search
        import viewer.planning.greedy as greedy

        monkeypatch.setattr(greedy, "_SMALL", 0)
        monkeypatch.setattr(_overlap, "_CHUNK", 5)  # pair lists built in many chunks
    rng = random.Random(f"gbs-{path}")
    for _ in range(250):
        p = tie_heavy_problem(rng) if path != "sweep" else time_ordered_problem(rng)
        a = rng.choice([1, 16, 64])
        plan = plan_greedy_by_size(p, a)
        assert dict(plan.offsets) == reference_greedy_by_size(p, a), p
        assert plan.arena_bytes == max(plan.offsets[b.id] + b.size for b in p.buffers)


def time_ordered_problem(rng: random.Random) -> PlanningProblem:
    """Random problem of equal sizes (some zero) in order of first operator: greedy_by_size and
    litert place it in time order, so they take the sweep (viewer.planning._sweep)."""
    ops = rng.randrange(1, 30)
    size = rng.choice([1, 8, 64, 100, 128, rng.randrange(1, 3000)])
    firsts = sorted(rng.randrange(ops) for _ in range(rng.randrange(1, 60)))
    bufs = []
    for i, f in enumerate(firsts):
        l = min(ops - 1, f + rng.choice([0, 0, 1, 2, 4, 9, ops, rng.randrange(ops)]))
        bufs.append(Buffer(i, f, l, 0 if rng.random() < 0.05 else size, rng.random() < 0.1))
    return PlanningProblem(tuple(bufs), ops)


def test_the_sweep_is_taken_in_time_order(monkeypatch):
    import viewer.planning.greedy as greedy

    monkeypatch.setattr(greedy, "_overlap_lists", None)  # building pair lists would fail
    p = time_ordered_problem(random.Random(3))
    assert dict(plan_greedy_by_size(p, 64).offsets) == reference_greedy_by_size(p, 64)


def test_greedy_by_size_without_pair_lists_equals_reference(monkeypatch):
    # Past _MAX_PAIRS overlapping pairs the planner scans every placed buffer instead.
    from viewer.planning import _overlap, _sweep

    monkeypatch.setattr(_overlap, "_MAX_PAIRS", 0)
    monkeypatch.setattr(_sweep, "ENABLED", False)
    rng = random.Random("gbs-scan")
    for _ in range(100):
        p = tie_heavy_problem(rng)
        assert dict(plan_greedy_by_size(p, 64).offsets) == reference_greedy_by_size(p, 64), p


def test_greedy_by_breadth_equals_reference():
    rng = random.Random("gbb")
    for _ in range(250):
        p = tie_heavy_problem(rng)
        a = rng.choice([1, 16, 64])
        plan = plan_greedy_by_breadth(p, a)
        assert dict(plan.offsets) == reference_greedy_by_breadth(p, a), p


# --- cancellation and progress --------------------------------------------------------------


def chain_problem(n: int, seed: int = 0) -> PlanningProblem:
    """Operator k makes tensor k, read by k+1; one in five also read 2-40 operators on."""
    rng = random.Random(seed)
    bufs = []
    for k in range(n):
        reach = rng.randrange(2, 41) if rng.random() < 0.2 else 1
        bufs.append(Buffer(k, k, min(n - 1, k + reach), rng.choice([1024, 4096, 65536, 150528])))
    return PlanningProblem(tuple(bufs), n)


class CallCounter:
    """``cancelled`` callback: False until its ``stop_at``-th call (1-based), then True."""

    def __init__(self, stop_at: int | None = None):
        self.stop_at = stop_at
        self.calls = 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.stop_at is not None and self.calls >= self.stop_at


# naive has no test module of its own; its cancellation is checked here with the greedy ones.
HEURISTICS = ["naive", "greedy_by_size", "greedy_by_breadth"]


@pytest.mark.parametrize("name", HEURISTICS)
def test_cancelled_before_work_raises(name):
    from viewer.errors import PlanCancelled

    stop = CallCounter(stop_at=1)
    with pytest.raises(PlanCancelled):
        get_planner(name).func(chain_problem(3000), 64, cancelled=stop)
    assert stop.calls == 1


@pytest.mark.parametrize("name", HEURISTICS)
def test_cancellation_is_polled_often_and_honoured_at_once(name):
    from viewer.errors import PlanCancelled

    n = 6000
    p = chain_problem(n)
    count = CallCounter()
    get_planner(name).func(p, 64, cancelled=count)
    # Polled at least once per 512 buffers of work (naive, a few ns a buffer, per 4096).
    assert count.calls >= n // (4096 if name == "naive" else 512)
    # Cancelled half-way: the planner raises at that very call and polls no more.
    stop = CallCounter(stop_at=max(2, count.calls // 2))
    with pytest.raises(PlanCancelled):
        get_planner(name).func(p, 64, cancelled=stop)
    assert stop.calls == stop.stop_at


@pytest.mark.parametrize("name", HEURISTICS)
def test_progress_rises_to_one(name):
    seen: list[tuple[float, str]] = []
    plan = get_planner(name).func(chain_problem(4000), 64, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions and fractions[-1] == 1.0
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert fractions == sorted(fractions)
    assert all(isinstance(m, str) and m for _, m in seen)
    assert plan.arena_bytes > 0


@pytest.mark.parametrize("name", ["greedy_by_size", "greedy_by_breadth"])
def test_chain_with_skips_equals_reference(name):
    # Larger than the random problems, so the numpy paths (long candidate lists) run too.
    p = chain_problem(400, seed=3)
    ref = reference_greedy_by_size if name == "greedy_by_size" else reference_greedy_by_breadth
    assert dict(get_planner(name).func(p, 64).offsets) == ref(p, 64)


def test_breadth_dense_search_takes_the_same_objects(monkeypatch):
    """The numpy search over busy objects (used after 32 busy objects) picks what trying every
    object one by one picks: compare both on random problems full of ties."""
    import random

    from viewer.planning import greedy

    rng = random.Random(14)
    problems = []
    for _ in range(120):
        ops = rng.randrange(1, 25)
        bufs = []
        for i in range(rng.randrange(1, 80)):
            f = rng.randrange(ops)
            bufs.append(Buffer(i, f, min(ops - 1, f + rng.choice([0, 1, 3, ops])),
                               rng.choice([0, 16, 64, 100, rng.randrange(1, 3000)])))
        problems.append(PlanningProblem(tuple(bufs), ops))
    one_by_one = [plan_greedy_by_breadth(p, 16).offsets for p in problems]
    monkeypatch.setattr(greedy, "_TRIES", 0)  # every tensor: busy objects from the overlap lists
    assert [plan_greedy_by_breadth(p, 16).offsets for p in problems] == one_by_one
    monkeypatch.setattr(greedy, "_adjacency", lambda *a: None)  # every tensor: the numpy mask
    assert [plan_greedy_by_breadth(p, 16).offsets for p in problems] == one_by_one
