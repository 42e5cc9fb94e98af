"""What-if: reorder operators to lower the peak (the lower bound of the tensor arena).

Every topological order of a subgraph computes the same outputs, but the tensors live at each
operator differ, and with them the widest operator's breadth: the lower bound no arena plan can
beat. :func:`reorder` searches orders for the smallest lower bound under LiteRT's interval rules
(:func:`viewer.analysis.intervals.analyze`, after ``ArenaPlanner::PlanAllocations`` in
tflite/arena_planner.cc).

The search runs over *executed-operator sets*: after a set ``S`` of operators has run, the bytes
live are fixed whatever order ran them, so the smallest achievable peak is a function of ``S``
(Liberis & Lane, "Neural networks on microcontrollers: saving memory at inference via operator
reordering", arXiv:1910.05110). Sets are expanded level by level (all sets of ``k`` operators,
then ``k + 1``), keeping for each set the smallest peak reached so far; with every set kept this
is exact. When a level grows past a cap, or time runs short, the same expansion keeps only the
best ``width`` sets per level (beam search), widening the beam while time remains.

Among the orders with the best peak the search prefers the one closest to the original (fewest
inversions), so that operators move only when that lowers the peak.

Operators with side effects keep their relative order (:mod:`viewer.whatif.op_order`, which
also holds the dependency masks, :func:`apply_order` and :func:`moved_operators`, re-exported
here).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from viewer.analysis.intervals import analyze
from viewer.analysis.types import KIND_INPUT, KIND_OUTPUT, KIND_TEMPORARY, KIND_VARIABLE, Analysis, Temporary
from viewer.errors import PlanCancelled
from viewer.model.types import Subgraph
from viewer.whatif.op_order import (  # noqa: F401 (re-exported: imported from here)
    SIDE_EFFECT_OPS,
    apply_order,
    dependencies,
    predecessors,
    has_side_effects,
    moved_count,
    moved_operators,
)

#: Sets of one size before the exact search gives way to beam search.
EXACT_LEVEL_CAP = 20_000
#: Sets in all before the exact search gives way (bounds memory when there is no time limit).
EXACT_TOTAL_CAP = 1_000_000
#: Beam widths tried in turn while time remains.
BEAM_WIDTHS = (8, 32, 128, 512, 2048)

ProgressFn = Callable[[float, str], None]
CancelledFn = Callable[[], bool]


@dataclass(frozen=True)
class ReorderResult:
    """The best operator order found.

    Attributes
    ----------
    order : tuple of int
        Original operator indices in their new execution order (a permutation of
        ``range(num_ops)``); the original order when nothing better was found.
    lower_bound_before, lower_bound_after : int
        Widest operator's breadth in bytes (:func:`~viewer.analysis.intervals.analyze`) under
        the original order and under ``order``; ``after <= before`` always.
    moved_ops : tuple of int
        Original indices of the fewest operators that must move to turn the original order into
        ``order`` (those outside a longest increasing subsequence), ascending.
    exact : bool
        The search proved that no topological order has a smaller lower bound (under the
        search's live-bytes model, which matches ``analyze`` without kernel temporaries unless
        they are given).
    stats : dict
        ``method`` ("exact", "beam" or "none"), ``states`` expanded, ``seconds``, ``width``.
    """

    order: tuple[int, ...]
    lower_bound_before: int
    lower_bound_after: int
    moved_ops: tuple[int, ...]
    exact: bool
    stats: dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    @property
    def saving_bytes(self) -> int:
        """``lower_bound_before - lower_bound_after`` in bytes (>= 0)."""
        return self.lower_bound_before - self.lower_bound_after

    @property
    def changed(self) -> bool:
        """True when the order differs from the original."""
        return bool(self.moved_ops)


# --------------------------------------------------------------------------------------------
# The live-bytes model the search runs on.


@dataclass
class _Graph:
    n: int
    preds: list[list[int]]  # per operator: the operators that must run before it
    succs: list[list[int]]
    base: int  # bytes live throughout (graph inputs)
    extra: list[int]  # per-operator bytes live only while it runs (temporaries)
    # Per operator: buffers it uses, as (buffer id) lists.
    uses: list[list[int]]
    size: list[int]  # per buffer
    users: list[tuple[int, ...]]  # per buffer: the operators that touch it
    pinned: list[bool]  # per buffer: never freed once allocated


def _build_graph(subgraph: Subgraph, analysis: Analysis) -> _Graph:
    n = len(subgraph.operators)
    preds = predecessors(subgraph)
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, p in enumerate(preds):
        for i in p:
            succs[i].append(j)
    base = 0
    extra = [0] * n
    # One buffer per alias root: an in-place alias shares its root's bytes and extends its life.
    root_of: dict[int, int] = {}
    members: dict[int, list] = {}
    for u in analysis.usages:
        if u.kind == KIND_TEMPORARY:
            if 0 <= u.first_op < n:
                extra[u.first_op] += u.nbytes
            continue
        r = u.alias_of if u.alias_of is not None else u.tensor
        root_of[u.tensor] = r
        members.setdefault(r, []).append(u)
    size: list[int] = []
    users: list[tuple[int, ...]] = []
    pinned: list[bool] = []
    uses: list[list[int]] = [[] for _ in range(n)]
    for r, us in members.items():
        root = next((u for u in us if u.tensor == r), us[0])
        kinds = {u.kind for u in us}
        if KIND_INPUT in kinds or KIND_VARIABLE in kinds:
            base += root.nbytes  # allocated at operator 0, never freed: same for every order
            continue
        touch = sorted({o for u in us for o in (u.producer, *u.consumers)
                        if o is not None and 0 <= o < n})
        if not touch:
            continue
        consumed = any(u.consumers for u in us)
        b = len(size)
        size.append(root.nbytes)
        users.append(tuple(touch))
        pinned.append(KIND_OUTPUT in kinds or not consumed)
        for o in touch:
            uses[o].append(b)
    return _Graph(n, preds, succs, base, extra, uses, size, users, pinned)


# Sets of executed operators are Python ints (bit o set: operator o ran). Membership is tested
# with ``s >> o & 1``; the graph's own relations are index lists, so memory stays linear in the
# graph (only the kept sets are n-bit masks).


def _any_in(s: int, ops: Sequence[int]) -> bool:
    """Some operator of ``ops`` is in the set ``s``."""
    for o in ops:
        if s >> o & 1:
            return True
    return False


def _all_in(s: int, ops: Sequence[int]) -> bool:
    """Every operator of ``ops`` is in the set ``s``."""
    for o in ops:
        if not s >> o & 1:
            return False
    return True


def _peak_of(g: _Graph, order: Sequence[int]) -> int:
    """Peak live bytes of ``order`` under the search model (equals the analysed lower bound)."""
    done = 0
    live = g.base
    peak = g.base if g.n == 0 else 0
    for o in order:
        alloc = 0
        for b in g.uses[o]:
            if not _any_in(done, g.users[b]):
                alloc += g.size[b]
        peak = max(peak, live + alloc + g.extra[o])
        done |= 1 << o
        live += alloc
        for b in g.uses[o]:
            if not g.pinned[b] and _all_in(done, g.users[b]):
                live -= g.size[b]
    return peak


class _OutOfTime(Exception):
    pass


class _TooManySets(Exception):
    """The exact search met more than :data:`EXACT_LEVEL_CAP` sets of one size, or
    :data:`EXACT_TOTAL_CAP` in all."""


#: Candidate expansions between two looks at the clock and at ``cancelled`` (a few ms at most).
POLL_EVERY = 64
#: Seconds between two progress reports inside one level.
PROGRESS_EVERY = 0.1


class _Poll:
    """Deadline, cancellation and progress, looked at every :data:`POLL_EVERY` expansions.

    ``tried`` counts candidate expansions (one operator appended to one kept set); ``polls``
    counts the looks at ``cancelled``, so a test can bound the work done after a cancel.
    """

    def __init__(self, deadline, cancelled, progress):
        self.deadline, self.cancelled, self.progress = deadline, cancelled, progress
        self.tried = 0
        self.polls = 0
        self.last_report = 0.0

    def check(self, fraction: float, message) -> None:
        self.polls += 1
        now = time.perf_counter()
        if now > self.deadline:
            raise _OutOfTime
        if self.cancelled is not None and self.cancelled():
            raise PlanCancelled("operator reordering cancelled")
        if self.progress is not None and now - self.last_report >= PROGRESS_EVERY:
            self.last_report = now
            self.progress(fraction, message())


def _prune(level: dict, width: int, by_moves: bool) -> dict:
    """The best ``width`` sets of ``level`` by (peak, live, inversions), or inversions first."""
    if by_moves:
        key = lambda kv: (kv[1][1], kv[1][2])  # noqa: E731
    else:
        key = lambda kv: (kv[1][0], kv[1][2], kv[1][1])  # noqa: E731
    return dict(sorted(level.items(), key=key)[:width])


def _search(
    g: _Graph,
    *,
    width: int | None,
    bound: int | None,
    deadline: float,
    cancelled: CancelledFn | None,
    progress: ProgressFn | None,
    progress_span: tuple[float, float],
    label: str,
    by_moves: bool = False,
    poll: _Poll | None = None,
) -> tuple[int, int, list[int], bool, int] | None:
    """Search over executed-operator sets, in order of set size.

    Each set (bit mask) maps to ``[peak, inversions, live, ready, parent node, ops]``; a set
    that survives its level gets a node (``parents``, ``node_ops``: the node it came from and
    the operators run on the way), so a path costs two small entries per kept set, never a copy
    of a mask. With ``width=None`` every set is kept (exact); when a set size exceeds
    :data:`EXACT_LEVEL_CAP` it raises ``_TooManySets``. With ``width`` the next level is cut
    back to the best ``width`` sets whenever it holds more than ``2 * width + 16``: memory is
    O(width * n) bits whatever the graph's breadth (16,000 ready operators included). With
    ``bound`` given, only steps whose breadth is <= bound are taken (a valid pruning when some
    order is known to reach ``bound``). Sets are ranked by (peak, inversions), or with
    ``by_moves`` by inversions alone (then ``bound`` should be the best peak: the result is the
    order closest to the original among those that reach it).

    The deadline and ``cancelled`` are looked at every :data:`POLL_EVERY` expansions, and
    ``progress`` called at most every :data:`PROGRESS_EVERY` s, so one level of a wide graph
    (width x ready operators expansions) is no longer the unit of cancellation.

    Operators that touch no arena bytes (e.g. DEQUANTIZE folded into persistent memory) run as
    soon as they are ready, in index order: that never raises any breadth, and keeps the number
    of sets small.

    Returns
    -------
    (peak, inversions, order, pruned, states) or None
        None when no order keeps every step within ``bound`` (proof, when ``width`` is None).
    """
    n = g.n
    full = (1 << n) - 1
    uses, users, size, pinned, extra, succs, preds = (
        g.uses, g.users, g.size, g.pinned, g.extra, g.succs, g.preds
    )
    poll = poll or _Poll(deadline, cancelled, progress)
    poll.deadline = deadline
    free = 0
    for o in range(n):
        if not uses[o] and not extra[o]:
            free |= 1 << o

    def earlier_unplaced(unplaced: int, o: int) -> int:
        # Operators below ``o`` not yet run: the inversions of running ``o`` now.
        return (unplaced & ((1 << o) - 1)).bit_count()

    def close(s: int, ready: int, inv: int, ops: list[int]) -> tuple[int, int, int]:
        # Run every ready memory-free operator (and those they make ready), lowest index first.
        while True:
            r = ready & free
            if not r:
                return s, ready, inv
            low = r & -r
            o = low.bit_length() - 1
            inv += earlier_unplaced(full & ~s, o)
            s |= low
            ready ^= low
            for q in succs[o]:
                if _all_in(s, preds[q]):
                    ready |= 1 << q
            ops.append(o)

    ready0 = 0
    for o in range(n):
        if not preds[o]:
            ready0 |= 1 << o
    first_ops: list[int] = []
    s0, ready0, inv0 = close(0, ready0, 0, first_ops)
    parents: list[int] = []
    node_ops: list[tuple[int, ...]] = []
    buckets: list[dict[int, list]] = [dict() for _ in range(n + 1)]
    buckets[s0.bit_count()][s0] = [0, inv0, g.base, ready0, -1, tuple(first_ops)]
    pruned = False
    states = 0
    lo, hi = progress_span
    cap = None if width is None else 2 * width + 16
    k = 0

    def message() -> str:
        return f"{label}: operator {k + 1} of {n}, {poll.tried:,d} steps tried"

    for k in range(n + 1):
        level = buckets[k]
        if not level:
            continue
        if width is not None and len(level) > width:
            pruned = True
            level = _prune(level, width, by_moves)
        for rec in level.values():  # each surviving set becomes a node of the path tree
            parents.append(rec[4])
            node_ops.append(rec[5])
            rec[4] = len(parents) - 1
        if k == n:
            buckets[k] = level
            break
        fraction = lo + (hi - lo) * k / max(n, 1)
        poll.check(fraction, message)
        for s, (peak, inv, live, ready, node, _ops) in level.items():
            r = ready
            unplaced = full & ~s
            while r:
                low = r & -r
                r ^= low
                o = low.bit_length() - 1
                poll.tried += 1
                if not poll.tried % POLL_EVERY:
                    poll.check(fraction, message)
                alloc = 0
                for b in uses[o]:
                    if not _any_in(s, users[b]):
                        alloc += size[b]
                step = live + alloc + extra[o]
                if bound is not None and step > bound:
                    continue
                s2 = s | low
                p2 = peak if peak >= step else step
                i2 = inv + earlier_unplaced(unplaced, o)
                live2 = live + alloc
                for b in uses[o]:
                    if not pinned[b] and _all_in(s2, users[b]):
                        live2 -= size[b]
                ready2 = ready ^ low
                for q in succs[o]:
                    if _all_in(s2, preds[q]):
                        ready2 |= 1 << q
                ops = [o]
                if ready2 & free:
                    s2, ready2, i2 = close(s2, ready2, i2, ops)
                c = s2.bit_count()
                nb = buckets[c]
                cur = nb.get(s2)
                if cur is not None and (
                    cur[1] <= i2 if by_moves else (cur[0], cur[1]) <= (p2, i2)
                ):
                    continue
                nb[s2] = [p2, i2, live2, ready2, node, tuple(ops)]
                states += 1
                if width is None:
                    if len(nb) > EXACT_LEVEL_CAP or states > EXACT_TOTAL_CAP:
                        raise _TooManySets
                elif len(nb) > cap:
                    pruned = True
                    buckets[c] = _prune(nb, width, by_moves)
        buckets[k] = {}  # done with this size
    final = buckets[n].get(full)
    if final is None:
        return None  # nothing fits under ``bound``
    order: list[int] = []
    node = final[4]
    while node != -1:
        order.extend(reversed(node_ops[node]))
        node = parents[node]
    order.reverse()
    return final[0], final[1], order, pruned, states


def reorder(
    subgraph: Subgraph,
    *,
    time_limit: float | None = 10.0,
    cancelled: CancelledFn | None = None,
    progress: ProgressFn | None = None,
    temporaries: Iterable[Temporary] = (),
) -> ReorderResult:
    """Search topological operator orders of ``subgraph`` for the smallest lower bound.

    Parameters
    ----------
    subgraph : Subgraph
    time_limit : float or None
        Seconds for the search (None: no limit), from the end of the preparation (the analysis
        of the stored order and the search graph, linear in the graph: ``stats
        ["prepare_seconds"]``) to the best order found; the clock is read every
        :data:`POLL_EVERY` steps, so it holds to a few milliseconds. The check of the order
        found (one analysis, ``stats["check_seconds"]``) and the caller's loading and writing
        come on top. A narrow beam search first gives an
        upper bound; the exact search gets 60% of what is left; beam search of growing width and
        the fewest-moves pass use the rest. The best order found by then is returned.
    cancelled : callable, optional
        Polled every :data:`POLL_EVERY` candidate steps (milliseconds apart, whatever the
        graph's width); when it returns True the search raises ``PlanCancelled``.
    progress : callable, optional
        ``progress(fraction, message)``, at most every :data:`PROGRESS_EVERY` s during the
        search; with a time limit the fraction is at least the elapsed share of it.
    temporaries : iterable of Temporary
        Kernel temporaries measured from the runtime, with operator indices in the original
        order; each adds its bytes to its operator's breadth wherever that operator moves.

    Returns
    -------
    ReorderResult
        With ``order`` the original one when no order lowers the lower bound.

    Raises
    ------
    viewer.errors.PlanCancelled
        When ``cancelled()`` turned true.

    Notes
    -----
    Follows Liberis & Lane (arXiv:1910.05110): the peak after a set of executed operators
    depends only on the set; a level-by-level dynamic programme over sets is exact, and beam
    search bounds it for large graphs. Interval rules are LiteRT's (tflite/arena_planner.cc):
    graph inputs live throughout, outputs and never-consumed tensors live to the end, anything
    else from its first to its last user.
    """
    t0 = time.perf_counter()
    temporaries = tuple(temporaries)
    before = analyze(subgraph, temporaries=temporaries)
    n = len(subgraph.operators)
    identity = tuple(range(n))
    if n < 3:
        return ReorderResult(identity, before.lower_bound_bytes, before.lower_bound_bytes, (), True,
                             {"method": "none", "states": 0, "seconds": time.perf_counter() - t0})
    g = _build_graph(subgraph, before)
    best_peak = _peak_of(g, identity)
    limit = float("inf") if time_limit is None else max(float(time_limit), 0.0)
    t_search = time.perf_counter()  # the limit counts the search from here
    deadline = t_search + limit
    best_order: list[int] = list(identity)
    exact = False
    stats: dict = {"method": "beam", "states": 0, "width": 0}
    shown = [0.0]

    def report(fraction: float, message: str) -> None:
        # With a time limit the search ends by the deadline at the latest: the elapsed share of
        # it is a fraction that moves even while one level of a wide graph takes seconds.
        if limit > 0 and math.isfinite(limit):
            fraction = max(fraction, min((time.perf_counter() - t_search) / limit, 0.99))
        shown[0] = max(shown[0], fraction)
        progress(shown[0], message)

    poll = _Poll(deadline, cancelled, report if progress is not None else None)
    common = dict(cancelled=cancelled, progress=progress, poll=poll)

    def run(**kw):
        try:
            res = _search(g, **common, **kw)
        finally:
            stats["steps"] = poll.tried
        if res is not None:
            stats["states"] += res[4]
        return res

    try:
        # 1. A narrow beam gives an upper bound that prunes the exact search.
        res = run(width=16, bound=best_peak, deadline=deadline, progress_span=(0.0, 0.1),
                  label="beam search (width 16)")
        if res is not None and res[0] < best_peak:
            best_peak, best_order = res[0], res[2]
        # 2. Exact search over every executed-operator set for a strictly smaller peak: finding
        #    none proves the best order so far optimal.
        exact_deadline = time.perf_counter() + (deadline - time.perf_counter()) * 0.6
        try:
            res = run(width=None, bound=best_peak - 1, deadline=exact_deadline,
                      progress_span=(0.1, 0.6), label="exact search")
            exact = True
            stats["method"] = "exact"
            if res is not None and res[0] < best_peak:
                best_peak, best_order = res[0], res[2]
        except (_OutOfTime, _TooManySets):
            pass
        # 3. Otherwise beam search of growing width.
        if not exact:
            beam_deadline = t_search + 0.8 * limit  # leave time for the fewest-moves pass
            for width in BEAM_WIDTHS[1:]:
                if time.perf_counter() > beam_deadline:
                    break
                try:
                    res = run(width=width, bound=best_peak, deadline=beam_deadline,
                              progress_span=(0.6, 0.9), label=f"beam search (width {width})")
                except _OutOfTime:
                    break
                stats["width"] = width
                if res is None:
                    continue
                if res[0] < best_peak:
                    best_peak, best_order = res[0], res[2]
                if not res[3]:
                    exact = True  # the beam never had to drop a set: this was exhaustive
                    stats["method"] = "exact"
                    break
        # 4. Among orders reaching the best peak, the one closest to the original: a beam
        #    first (cheap), then the exact search when time remains.
        if best_order != list(identity):
            for width in (256, None):
                try:
                    res = run(width=width, bound=best_peak, deadline=deadline, by_moves=True,
                              progress_span=(0.9, 1.0), label="fewest moves")
                except _TooManySets:
                    break
                if res is not None and res[0] <= best_peak:
                    if moved_count(res[2]) < moved_count(best_order):
                        best_order = res[2]
    except _OutOfTime:
        pass

    t_check = time.perf_counter()
    order = tuple(best_order)
    after_lb = before.lower_bound_bytes
    if order != identity:
        pos = {o: k for k, o in enumerate(order)}
        temps_after = [dataclasses.replace(t, op=pos.get(t.op, t.op)) for t in temporaries]
        after_lb = analyze(apply_order(subgraph, order), temporaries=temps_after).lower_bound_bytes
        if after_lb >= before.lower_bound_bytes:  # no gain under the full rules: keep the file's order
            order, after_lb = identity, before.lower_bound_bytes
    if progress is not None:
        progress(1.0, "reordered")
    t_end = time.perf_counter()
    stats.update(seconds=t_end - t0, prepare_seconds=t_search - t0,
                 search_seconds=t_check - t_search, check_seconds=t_end - t_check)
    return ReorderResult(order, before.lower_bound_bytes, after_lb, moved_operators(order), exact, stats)

