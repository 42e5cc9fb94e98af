"""The device budget: does the model fit, how much headroom, how large a batch or input.

Pure arithmetic on bytes; the searches take the arena as a callable so that any planner (or a
test's lambda) supplies it.

Weights: a runtime that maps the .tflite file (LiteRT's default ``FlatBufferModel::BuildFromFile``
uses mmap) keeps the weights in the page cache: file-backed, reclaimable under memory pressure,
not anonymous memory. With ``weights_mode="mapped"`` they are therefore shown on a separate line
and *not* counted against the limit (they still need page cache to run at full speed). With
``weights_mode="copied"`` (the model copied into RAM, e.g. on a microcontroller without a memory
map, or ``BuildFromBuffer`` on a heap copy) they are counted. ``"copied"`` is the default: the
conservative answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from viewer.units import format_bytes

WEIGHTS_MODES = ("copied", "mapped")


@dataclass(frozen=True)
class BudgetReport:
    """How a plan fits a device limit. All sizes in bytes.

    Attributes
    ----------
    limit_bytes : int
        The device limit.
    weights_bytes : int
        The model's weights.
    weights_counted : bool
        True when ``weights_mode == "copied"``: weights count against the limit.
    runtime_bytes : int
        Runtime overhead estimate (interpreter, kernels' persistent state, allocator slack).
    arena_bytes : int
        Tensor arena at ``batch``.
    batch : int
        Batch the arena was planned for.
    used_bytes : int
        ``arena + runtime (+ weights when counted)``.
    headroom_bytes : int
        ``limit - used``; negative when over budget.
    fits : bool
    arena_per_example_bytes : int
        ``ceil(arena / batch)``: the arena one more example is assumed to add.
    largest_batch : int
        ``floor((limit - fixed) / arena_per_example)``, 0 when the fixed costs alone exceed
        the limit; ``fixed`` is runtime plus weights when counted.
    binding_op : int
        The widest operator (its breadth is the lower bound); -1 when unknown.
    binding_op_name : str
    message : str
        One line for the user.
    """

    limit_bytes: int
    weights_bytes: int
    weights_counted: bool
    runtime_bytes: int
    arena_bytes: int
    batch: int
    used_bytes: int
    headroom_bytes: int
    fits: bool
    arena_per_example_bytes: int
    largest_batch: int
    binding_op: int = -1
    binding_op_name: str = ""
    message: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    persistent_bytes: int = 0
    other_subgraphs_bytes: int = 0
    arena_label: str = ""
    largest_batch_note: str = ""

    def lines(self) -> list[str]:
        """Human lines, one figure each (bytes and a binary unit); each term of the sum once.

        ``message`` is not repeated here (a caller shows it apart, e.g. as a coloured title).
        """
        def f(n: int) -> str:
            return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")

        label = self.arena_label or f"tensor arena (batch {self.batch})"
        out = [f"{label}: {f(self.arena_bytes)}"]
        if self.persistent_bytes:
            out.append(f"+ persistent (outside the arena: prepare-time outputs, variables): "
                       f"{f(self.persistent_bytes)}")
        if self.other_subgraphs_bytes:
            out.append(f"+ other subgraphs' arenas (control flow): {f(self.other_subgraphs_bytes)}")
        out += [
            f"+ runtime overhead: {f(self.runtime_bytes)}",
            (f"+ weights (copied, counted): {f(self.weights_bytes)}" if self.weights_counted else
             f"  weights (mapped: page cache, reclaimable, not counted): {f(self.weights_bytes)}"),
            f"= used: {f(self.used_bytes)} of {f(self.limit_bytes)}",
            (f"headroom: {f(self.headroom_bytes)}" if self.fits else f"over budget by {f(-self.headroom_bytes)}"),
            f"largest batch: {self.largest_batch}"
            + (f" ({self.largest_batch_note})" if self.largest_batch_note else ""),
        ]
        if self.binding_op >= 0:
            out.append(f"binding (widest) operator: {self.binding_op} {self.binding_op_name}")
        return out


def fixed_bytes(weights_bytes: int, runtime_bytes: int, weights_mode: str = "copied") -> int:
    """Bytes that do not depend on the batch: runtime overhead plus weights when copied.

    Raises
    ------
    ValueError
        For a ``weights_mode`` other than "copied" or "mapped".
    """
    if weights_mode not in WEIGHTS_MODES:
        raise ValueError(f"weights_mode must be one of {WEIGHTS_MODES}, got {weights_mode!r}")
    return int(runtime_bytes) + (int(weights_bytes) if weights_mode == "copied" else 0)


def largest_batch(
    limit_bytes: int, weights_bytes: int, runtime_bytes: int, arena_per_example_bytes: int,
    weights_mode: str = "copied",
) -> int:
    """``floor((limit - weights - runtime) / arena_per_example)``; 0 when nothing fits.

    Weights are subtracted only when ``weights_mode == "copied"``. Assumes the arena grows
    linearly with the batch (every activation carries the batch dimension); an arena of 0
    bytes per example gives 0 (no meaningful answer) rather than infinity.
    """
    free = int(limit_bytes) - fixed_bytes(weights_bytes, runtime_bytes, weights_mode)
    if free <= 0 or arena_per_example_bytes <= 0:
        return 0
    return free // int(arena_per_example_bytes)


def budget_report(
    limit_bytes: int,
    *,
    arena_bytes: int,
    weights_bytes: int = 0,
    runtime_bytes: int = 0,
    batch: int = 1,
    weights_mode: str = "copied",
    binding_op: int = -1,
    binding_op_name: str = "",
    persistent_bytes: int = 0,
    other_subgraphs_bytes: int = 0,
    arena_label: str = "",
    batch_scales: bool = True,
) -> BudgetReport:
    """Fit ``arena_bytes`` (planned at ``batch``) plus fixed costs into ``limit_bytes``.

    ``used = arena + persistent + other subgraphs' arenas + runtime (+ weights when copied)``.
    Persistent bytes and the other subgraphs' arenas are treated as fixed (not growing with
    the batch) when the largest batch is estimated.

    Worked example (tests/whatif/test_budget.py): 10 float32 parameters (40 B weights, copied),
    8 B of activations per example, 12 B runtime, a 100 B limit: batch 2 uses 40 + 12 + 16 =
    68 B, 32 B headroom; the largest batch is floor((100 - 40 - 12) / 8) = 6.

    Parameters
    ----------
    batch_scales : bool
        False when the model's inputs have no batch dimension: the largest batch is then 0 with
        a note saying so.

    Raises
    ------
    ValueError
        Negative sizes, ``batch < 1`` or an unknown ``weights_mode``.
    """
    if min(limit_bytes, arena_bytes, weights_bytes, runtime_bytes, persistent_bytes,
           other_subgraphs_bytes) < 0:
        raise ValueError("sizes must be >= 0 bytes")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    extra_fixed = int(persistent_bytes) + int(other_subgraphs_bytes)
    fixed = fixed_bytes(weights_bytes, runtime_bytes, weights_mode) + extra_fixed
    used = fixed + int(arena_bytes)
    headroom = int(limit_bytes) - used
    per = -(-int(arena_bytes) // int(batch))
    lb = largest_batch(limit_bytes - extra_fixed, weights_bytes, runtime_bytes, per, weights_mode)
    parts = ["runtime"] + (["weights"] if weights_mode == "copied" else []) \
        + (["persistent"] if persistent_bytes else []) + (["other subgraphs"] if other_subgraphs_bytes else [])
    if fixed > limit_bytes:
        msg = (f"the fixed costs alone ({format_bytes(fixed)}: {' + '.join(parts)}) exceed the "
               f"{format_bytes(limit_bytes)} limit; no batch fits")
        note = f"the fixed costs alone, {format_bytes(fixed)} ({' + '.join(parts)}), exceed the limit"
    elif headroom >= 0:
        msg = f"fits with {format_bytes(headroom)} headroom"
        note = ""
    else:
        msg = f"over budget by {format_bytes(-headroom)}"
        note = ""
    if not batch_scales:
        lb, note = 0, "not estimated: the model's inputs have no batch dimension"
    elif lb == 0 and not note:
        note = ("not even one example fits" if per > 0 else
                "not estimated: the arena is 0 bytes")
    elif not note:
        note = "assumes the arena grows linearly with the batch"
    return BudgetReport(
        int(limit_bytes), int(weights_bytes), weights_mode == "copied", int(runtime_bytes),
        int(arena_bytes), int(batch), used, headroom, headroom >= 0, per, lb,
        binding_op, binding_op_name, msg,
        persistent_bytes=int(persistent_bytes), other_subgraphs_bytes=int(other_subgraphs_bytes),
        arena_label=arena_label, largest_batch_note=note,
    )


def largest_square_resolution(
    arena_at: Callable[[int], int | None],
    available_bytes: int,
    candidates: Iterable[int],
) -> tuple[int, int | None]:
    """The largest square input side whose arena fits in ``available_bytes``.

    Binary search over ``candidates`` (sorted ascending), assuming the arena grows with the
    resolution, as it does for convolutional models. A candidate the model cannot take
    (``arena_at`` returns None) is skipped in favour of its nearest accepted neighbour below.

    Parameters
    ----------
    arena_at : callable
        side (pixels) -> arena bytes at side x side, or None when the model rejects it.
    available_bytes : int
        Limit minus fixed costs.
    candidates : iterable of int
        Sides to consider.

    Returns
    -------
    (side, arena_bytes)
        ``(0, None)`` when none fits.
    """
    cand = sorted(set(int(c) for c in candidates if int(c) > 0))
    cache: dict[int, int | None] = {}

    def at(k: int) -> int | None:
        if k not in cache:
            cache[k] = arena_at(cand[k])
        return cache[k]

    def fits(k: int) -> bool | None:
        a = at(k)
        return None if a is None else a <= available_bytes

    best = (0, None)
    lo, hi = 0, len(cand) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        k = mid
        ok = fits(k)
        while ok is None and k > lo:  # rejected: look below for one it takes
            k -= 1
            ok = fits(k)
        if ok is None:
            lo = mid + 1
            continue
        if ok:
            if cand[k] > best[0]:
                best = (cand[k], at(k))
            lo = mid + 1
        else:
            hi = k - 1
    return best


@dataclass(frozen=True)
class SquareSearch:
    """The answer of :func:`search_largest_square`.

    Attributes
    ----------
    side : int
        Largest side (pixels) found to fit; 0 when none does.
    total_bytes : int or None
        What counted at that side (bytes); None when none fits.
    evaluated : Mapping[int, int or None]
        Every side tried -> its bytes (None: the model does not take that side).
    monotone : bool
        The bytes grew (weakly) with the side over every side tried.
    checked_above : tuple of int
        Sides above ``side`` tried one by one after the bisection, none of which fits.
    note : str
        One line saying how the answer was searched and what was verified.
    """

    side: int
    total_bytes: int | None
    evaluated: Mapping[int, int | None]
    monotone: bool
    checked_above: tuple[int, ...]
    note: str


def search_largest_square(
    total_at: Callable[[int], int | None],
    available_bytes: int,
    *,
    min_side: int = 1,
    max_side: int = 4096,
    verify_above: int = 8,
    progress: Callable[[int, int | None, bool | None], None] | None = None,
) -> SquareSearch:
    """Largest square side in ``[min_side, max_side]`` (every integer, step 1) that fits.

    Bisection on "fits" (``total_at(side) <= available_bytes``), valid when the bytes grow
    with the side; that is then checked, not assumed: the sides ``side + 1 .. side +
    verify_above`` are tried one by one and the bisection resumes above any that fits, and
    :attr:`SquareSearch.monotone` tells whether every side tried kept the order. A side the
    model rejects (``total_at`` returns None) is skipped for the nearest taken side below.

    Parameters
    ----------
    total_at : callable
        side -> bytes at ``side x side`` (None when the model takes no such input).
    available_bytes : int
    progress : callable, optional
        ``progress(side, bytes or None, fits or None)`` after each evaluation.
    """
    cache: dict[int, int | None] = {}

    def at(k: int) -> int | None:
        if k not in cache:
            cache[k] = total_at(k)
            if progress is not None:
                v = cache[k]
                progress(k, v, None if v is None else v <= available_bytes)
        return cache[k]

    def fits(k: int) -> bool | None:
        v = at(k)
        return None if v is None else v <= available_bytes

    best = 0

    def bisect(lo: int, hi: int) -> None:
        nonlocal best
        while lo <= hi:
            mid = (lo + hi) // 2
            k, ok = mid, fits(mid)
            while ok is None and k > lo:  # rejected: the nearest side below it takes
                k -= 1
                ok = fits(k)
            if ok is None:
                lo = mid + 1
            elif ok:
                best = max(best, k)
                lo = mid + 1
            else:
                hi = k - 1

    bisect(min_side, max_side)
    checked: list[int] = []
    while True:
        start = best + 1 if best else min_side
        found = 0
        for k in range(start, min(start + verify_above, max_side + 1)):
            checked.append(k)
            if fits(k):
                found = k
        if not found:
            break
        best = found
        bisect(found + 1, max_side)
    seen = sorted((k, v) for k, v in cache.items() if v is not None)
    monotone = all(a[1] <= b[1] for a, b in zip(seen, seen[1:]))
    above = tuple(k for k in checked if k > best)
    span = f"{above[0]}..{above[-1]}" if above else "none"
    note = (f"searched every side {min_side}..{max_side} (step 1) by bisection over {len(cache)} "
            f"evaluations; sides above the answer tried one by one: {span}; ")
    note += ("bytes grew with the side at every side tried" if monotone else
             "WARNING: bytes did not grow monotonically with the side, so a larger side "
             "outside those tried may fit")
    return SquareSearch(best, cache.get(best) if best else None, dict(cache), monotone, above, note)


# -- model-level helpers (planner in the loop) -------------------------------------------------
#: Sides tried by :func:`find_largest_square_side`: multiples of 8 from 32 to 4096.
DEFAULT_SIDES = tuple(range(32, 4097, 8))


def plan_arena(model, subgraph_index: int, edits, planner: str = "litert", *, shape_source: str = "auto"):
    """Apply ``edits``, analyse and plan with ``planner`` ("best": smallest non-exact plan).

    Returns
    -------
    (Analysis, Plan, EditedSubgraph)

    Raises
    ------
    viewer.errors.WhatIfError, viewer.errors.PlanningError, viewer.errors.SubgraphError
    """
    from viewer.analysis.intervals import analyze
    from viewer.planning.run import best_plan_name, run_planners
    from viewer.whatif.edits import apply_edits

    edited = apply_edits(model, subgraph_index, edits, shape_source=shape_source)
    analysis = analyze(edited.subgraph, model=model)
    if planner == "best":
        plans = run_planners(analysis.problem())
        plan = plans[best_plan_name(plans)]
    else:
        plan = run_planners(analysis.problem(), [planner])[planner]
    return analysis, plan, edited


def find_largest_square_side(
    model, subgraph_index: int, edits, available_bytes: int, planner: str = "litert",
    *, sides: Iterable[int] = DEFAULT_SIDES, shape_source: str = "auto",
) -> tuple[int, int | None]:
    """Largest square input side (H = W, NHWC image input) whose planned arena fits.

    Other edits (batch, dtype) are kept; the image input is the only rank-4 input (``""`` key).

    Returns
    -------
    (side, arena_bytes)
        ``(0, None)`` when no side fits or the model takes no other size.
    """
    import dataclasses

    from viewer.errors import WhatIfError

    def arena_at(side: int) -> int | None:
        shapes = dict(edits.input_shapes) if edits is not None else {}
        shapes[""] = (side, side)
        e = dataclasses.replace(edits, input_shapes=shapes) if edits is not None else None
        if e is None:
            from viewer.whatif.edits import WhatIfEdits

            e = WhatIfEdits(input_shapes=shapes)
        try:
            return plan_arena(model, subgraph_index, e, planner, shape_source=shape_source)[1].arena_bytes
        except WhatIfError:
            return None

    return largest_square_resolution(arena_at, available_bytes, sides)


# -- settings and the change vs baseline (for the GUI) ----------------------------------------
@dataclass(frozen=True)
class BudgetSettings:
    """What the what-if panel's budget controls hold.

    Attributes
    ----------
    limit_bytes : int or None
        Device limit in bytes; None when no budget is set.
    runtime_bytes : int
        Runtime overhead estimate, bytes.
    weights_mode : str
        "copied" (counted) or "mapped" (shown, not counted).
    """

    limit_bytes: int | None = None
    runtime_bytes: int = 0
    weights_mode: str = "copied"

    def report(self, *, arena_bytes: int, weights_bytes: int, batch: int = 1,
               binding_op: int = -1, binding_op_name: str = "") -> BudgetReport | None:
        """:func:`budget_report` with these settings; None when no limit is set."""
        if self.limit_bytes is None:
            return None
        return budget_report(self.limit_bytes, arena_bytes=arena_bytes, weights_bytes=weights_bytes,
                             runtime_bytes=self.runtime_bytes, batch=batch, weights_mode=self.weights_mode,
                             binding_op=binding_op, binding_op_name=binding_op_name)


def compare(baseline_analysis, baseline_plan, edited_analysis, edited_plan) -> dict:
    """The change a what-if made: arena, lower bound, naive sum, and whether the widest operator moved.

    Parameters
    ----------
    baseline_analysis, edited_analysis : viewer.analysis.types.Analysis
    baseline_plan, edited_plan : viewer.planning.types.Plan or None
        None leaves the arena figures out (``arena_*`` are None).

    Returns
    -------
    dict
        ``arena_before``, ``arena_after``, ``arena_delta`` (bytes, after - before),
        ``arena_ratio`` (after / before, None when before is 0); the same four for
        ``lower_bound_*`` and ``naive_*``; ``widest_before``/``widest_after`` (operator
        indices, -1 for none), ``widest_before_op``/``widest_after_op`` (op names),
        ``widest_moved`` (bool); ``lines`` (list of str, for display).
    """
    def four(key, before, after):
        d = {f"{key}_before": before, f"{key}_after": after}
        if before is None or after is None:
            d.update({f"{key}_delta": None, f"{key}_ratio": None})
        else:
            d.update({f"{key}_delta": after - before, f"{key}_ratio": (after / before) if before else None})
        return d

    a0, a1 = baseline_analysis, edited_analysis
    out: dict = {}
    out.update(four("arena", baseline_plan.arena_bytes if baseline_plan else None,
                    edited_plan.arena_bytes if edited_plan else None))
    out.update(four("lower_bound", a0.lower_bound_bytes, a1.lower_bound_bytes))
    out.update(four("naive", a0.naive_bytes, a1.naive_bytes))
    w0, w1 = a0.widest_op, a1.widest_op
    out.update({
        "widest_before": w0, "widest_after": w1,
        "widest_before_op": a0.op_name(w0) if w0 >= 0 else "",
        "widest_after_op": a1.op_name(w1) if w1 >= 0 else "",
        "widest_moved": w0 != w1,
    })

    def line(label, key):
        b, a, d, r = (out[f"{key}_{s}"] for s in ("before", "after", "delta", "ratio"))
        if b is None or a is None:
            return None
        rs = f" (x{r:.2f})" if r is not None else ""
        sign = "+" if d >= 0 else "-"
        return f"{label}: {format_bytes(b)} -> {format_bytes(a)}, {sign}{format_bytes(abs(d))}{rs}"

    lines = [x for x in (line("tensor arena", "arena"), line("lower bound", "lower_bound"),
                         line("naive sum", "naive")) if x]
    if out["widest_moved"]:
        lines.append(f"widest operator moved: {w0} {out['widest_before_op']} -> {w1} {out['widest_after_op']}")
    else:
        lines.append(f"widest operator unchanged: {w1} {out['widest_after_op']}")
    out["lines"] = lines
    return out
