"""The device budget: does the model fit, how much headroom, how large a batch or input.

Pure arithmetic on bytes. The largest input resolution that fits is searched by
:mod:`viewer.whatif.resolution`.

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
    largest_batch : int or None
        ``floor((limit - fixed) / arena_per_example)``, 0 when the fixed costs alone exceed
        the limit; ``fixed`` is runtime plus weights when counted. None: no batch answer (the
        model cannot take another batch; the window puts ``check``'s answer here).
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
    largest_batch: int | None
    binding_op: int = -1
    binding_op_name: str = ""
    message: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    persistent_bytes: int = 0
    other_subgraphs_bytes: int = 0
    arena_label: str = ""
    largest_batch_note: str = ""
    runtime_label: str = ""

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
            f"+ runtime overhead ({self.runtime_label or 'given here, not measured; check measures it'}): "
            f"{f(self.runtime_bytes)}",
            (f"+ weights (copied, counted): {f(self.weights_bytes)}" if self.weights_counted else
             f"  weights (mapped: page cache, reclaimable, not counted): {f(self.weights_bytes)}"),
            f"= used: {f(self.used_bytes)} of {f(self.limit_bytes)}",
            (f"headroom: {f(self.headroom_bytes)}" if self.headroom_bytes >= 0
             else f"over budget by {f(-self.headroom_bytes)}"),
            f"largest batch: {'none' if self.largest_batch is None else self.largest_batch}"
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
