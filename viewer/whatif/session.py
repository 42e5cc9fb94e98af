"""Dynamic-shape sessions: one interpreter serving inputs of changing shape, step by step.

LiteRT keeps one tensor-arena buffer per subgraph for the life of the interpreter. Each
``ResizeInputTensor`` + ``AllocateTensors`` plans the arena again from scratch, but the buffer
only grows: ``ResizableAlignedBuffer::Resize`` (tflite/simple_memory_arena.cc) skips any size
that is not larger, and a larger one is a new ``aligned_alloc`` block into which the old one is
copied before it is freed. So after step k the buffer holds the largest plan of steps 0..k, and
during a step that grows it the old and the new block are both allocated.

:func:`buffer_steps` states that rule on a list of planned sizes (no runtime: the window can
show a session from our planner alone; :mod:`viewer.whatif.session_plan` parses and checks a
session's steps and predicts them without the runtime). :func:`session_report` puts a measured session
(:func:`viewer.runtime.session.measure_session`) beside our planner's replay of every step and
counts, per step, what the process must hold; the session's high-water mark is the largest of
those, and the verdict on a budget is taken there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

from viewer.whatif.footprint import SOURCE_ESTIMATED, SOURCE_MEASURED, SOURCE_UNKNOWN, Term
from viewer.whatif.verdict import total_bytes, verdict

#: ``kDefaultArenaAlignment`` (tflite/arena_planner.h): the buffer's alignment.
ARENA_ALIGNMENT = 64

#: Control-flow operators whose bodies run in other subgraphs, with arenas of their own.
_CONTROL_FLOW = {"WHILE", "IF", "CALL_ONCE", "STABLEHLO_WHILE", "STABLEHLO_CASE"}


@dataclass(frozen=True)
class BufferStep:
    """LiteRT's arena buffer after one step, by its growth rule.

    Attributes
    ----------
    needed : int
        The arena the step's plan needs (its high-water mark), bytes.
    held : int
        The buffer's size after the step: the largest ``needed`` so far, bytes.
    grew : bool
        The step asked for more than the buffer held: a new block was allocated.
    during_growth : int
        Bytes allocated at the step's worst instant: ``previous held + held`` while the old
        block is copied into the new one when it grew, else ``held``.
    request : int
        What ``AlignedAlloc`` asks the allocator for the buffer: ``held + 63`` rounded up to
        64 (the ``aligned_alloc`` path of simple_memory_arena.cc), bytes; 0 for an empty arena.
    """

    needed: int
    held: int
    grew: bool
    during_growth: int
    request: int


def aligned_request(held: int, alignment: int = ARENA_ALIGNMENT) -> int:
    """Bytes ``AlignedAlloc(held, alignment)`` requests from ``aligned_alloc``: ``held +
    alignment - 1`` rounded up to ``alignment`` (tflite/simple_memory_arena.cc); 0 for 0."""
    if held <= 0:
        return 0
    n = held + alignment - 1
    return -(-n // alignment) * alignment


def buffer_steps(needed: Sequence[int], start_held: int = 0) -> list[BufferStep]:
    """The arena buffer across a session, from each step's planned arena.

    Parameters
    ----------
    needed : sequence of int
        Bytes each step's plan needs, in step order.
    start_held : int
        The buffer before the first step (0: a fresh interpreter).

    Returns
    -------
    list of BufferStep
        Follows ``SimpleMemoryArena::Commit`` -> ``ResizableAlignedBuffer::Resize``
        (tflite/simple_memory_arena.cc): never shrinks; grows to the new plan exactly.
    """
    out, held = [], int(start_held)
    for n in needed:
        n = int(n)
        grew = n > held
        old, held = held, max(held, n)
        out.append(BufferStep(n, held, grew, old + held if grew and old else held,
                              aligned_request(held)))
    return out


@dataclass(frozen=True)
class SessionStep:
    """One step of a session, measured by LiteRT and predicted by our planner.

    Every size is in bytes. ``*_planned`` figures come from our ``litert`` planner replayed on
    the runtime's own tensors and kernel temporaries of this step, and :func:`buffer_steps`;
    they are None under a delegate (the planner re-states LiteRT's CPU arena without one).

    Attributes
    ----------
    index : int
        From 0.
    shapes : tuple of (str, tuple of int)
        (input name, shape) set for the step.
    needed, needed_planned : int
        The arena the step's plan needs: LiteRT's (span of its arena tensors after Invoke) and
        ours.
    replay_exact : bool
        Our plan has LiteRT's size and every offset.
    needed_predicted : int or None
        Ours without the runtime (:func:`viewer.whatif.session_plan.plan_session`: inferred shapes, estimated kernel
        temporaries); None when not predicted.
    held, held_planned : int or None
        The buffer after the step: measured ``malloc_usable_size`` (None if not read) and
        ours (largest planned so far).
    request_planned : int
        What LiteRT asks ``aligned_alloc`` for ``held_planned`` (:func:`aligned_request`).
    grew : bool
        LiteRT allocated a new buffer in this step (its address moved).
    grew_during_invoke : bool
        ... during ``Invoke`` (tensors deferred to it), which the planned figures do not model.
    growth_extra, growth_extra_planned : int
        The old block still allocated while it is copied into the new one (0 when the buffer
        did not grow): the measured previous block's usable size, and ours.
    peak_above_end : int or None
        Measured: how far the process's RSS peaked above its end within the step.
    peak_above_end_planned : int
        The same by the copy rule: the old block resident while the new one receives its
        ``old`` bytes, then the old freed and the new one filled: ``max(0, 2 old - new)`` with
        the measured block sizes (0 when the buffer did not grow).
    dynamic_count, dynamic_bytes, dynamic_held : int
        Dynamic tensors (malloc'd outside the arena): how many, their ``bytes``, and what their
        blocks hold (``malloc_usable_size``).
    terms : tuple of Term
        What the process must hold at the step's worst instant; ``total`` adds the counted ones.
    total, total_planned : int
        Counted sum with the measured arena figures, and with ours in their place.
    plan : Plan or None
        Our replay's plan of the step (offsets of every arena tensor), for a chart of the step.
    """

    index: int
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    needed: int
    needed_planned: int | None
    replay_exact: bool | None
    held: int | None
    held_planned: int | None
    request_planned: int | None
    grew: bool
    grew_during_invoke: bool
    growth_extra: int
    growth_extra_planned: int | None
    peak_above_end: int | None
    peak_above_end_planned: int
    dynamic_count: int
    dynamic_bytes: int
    dynamic_held: int
    terms: tuple[Term, ...]
    total: int
    total_planned: int | None
    needed_predicted: int | None = None
    plan: object = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict:
        return {
            "step": self.index + 1,
            "shapes": {name: list(shape) for name, shape in self.shapes},
            "arena_needed_bytes": {"measured": self.needed, "planned": self.needed_planned,
                                   "replay_exact": self.replay_exact,
                                   "predicted": self.needed_predicted},
            "arena_held_bytes": {"measured": self.held, "planned": self.held_planned,
                                 "planned_request": self.request_planned},
            "grew": self.grew, "grew_during_invoke": self.grew_during_invoke,
            "growth_extra_bytes": {"measured": self.growth_extra,
                                   "planned": self.growth_extra_planned},
            "peak_rss_above_end_bytes": {"measured": self.peak_above_end,
                                         "planned": self.peak_above_end_planned},
            "dynamic_tensors": {"count": self.dynamic_count, "bytes": self.dynamic_bytes,
                                "held_bytes": self.dynamic_held},
            "terms": [t.as_dict() for t in self.terms],
            "total_bytes": self.total, "total_planned_bytes": self.total_planned,
        }


@dataclass(frozen=True)
class SessionReport:
    """A session: its steps, its high-water mark and (given a budget) the verdict there.

    Attributes
    ----------
    path : str
    subgraph : int
    steps : tuple of SessionStep
    high_water_step : int or None
        Index of the step with the largest ``total`` (None without steps).
    limit : int or None
        The budget, bytes (None: no verdict).
    verdict : str or None
        ``fits`` / ``does_not_fit`` / ``cannot_tell`` on the high-water mark.
    unknowns : tuple of str
        What the sum could not count (each makes a "fits" a "cannot tell").
    error : str
        The step LiteRT refused ("" when every step ran).
    notes : tuple of str
    """

    path: str
    subgraph: int
    steps: tuple[SessionStep, ...]
    high_water_step: int | None
    limit: int | None = None
    verdict: str | None = None
    unknowns: tuple[str, ...] = ()
    error: str = ""
    notes: tuple[str, ...] = field(default=())
    #: The interpreter's configuration: ``builtin`` (no default delegates) or ``default``.
    resolver: str = "builtin"

    @property
    def high_water_bytes(self) -> int | None:
        """The largest step total (measured figures), bytes."""
        return None if self.high_water_step is None else self.steps[self.high_water_step].total

    @property
    def high_water_planned_bytes(self) -> int | None:
        """The largest step total with our planner's arena figures, bytes."""
        got = [s.total_planned for s in self.steps if s.total_planned is not None]
        return max(got, default=None)

    @property
    def warm_up_bytes(self) -> int | None:
        """The high-water mark had the largest step run first (a warm-up): the buffer allocated
        once at its final size, no growth copies; each step's other terms as measured, bytes.
        Estimated by the buffer rule from the measured terms (None without steps)."""
        if not self.steps:
            return None
        final = max((s.held or 0) for s in self.steps)
        return max(s.total - _term_bytes(s, "tensor arena") - _term_bytes(s, "arena growth") + final
                   for s in self.steps)

    def as_dict(self) -> dict:
        return {
            "model": self.path, "subgraph": self.subgraph,
            "steps": [s.as_dict() for s in self.steps],
            "high_water": {"step": None if self.high_water_step is None else self.high_water_step + 1,
                           "bytes": self.high_water_bytes,
                           "planned_bytes": self.high_water_planned_bytes,
                           "warm_up_bytes": self.warm_up_bytes},
            "budget_bytes": self.limit, "verdict": self.verdict,
            "unknowns": list(self.unknowns), "error": self.error or None,
            "notes": list(self.notes),
        }


def _term_bytes(step: SessionStep, name: str) -> int:
    return sum(int(t.bytes) for t in step.terms if t.name == name and t.counted)


def session_report(model, run, *, limit: int | None = None, weights_mode: str = "copied",
                   other_signatures: str = "", predicted=None) -> SessionReport:
    """Measured session + our planner's replay of every step -> per-step terms and verdict.

    Parameters
    ----------
    model : viewer.model.types.Model
    run : viewer.runtime.session.SessionRun
        ``ok`` (its steps may stop at a refused one: the report says so and cannot tell).
    limit : int, optional
        Budget in bytes; the verdict is taken on the high-water mark.
    weights_mode : str
        ``copied`` (weights counted) or ``mapped`` (shown, not counted).
    other_signatures : str
        Signatures this session did not run (each has its own arena): an unknown when not "".
    predicted : sequence of PlannedStep, optional
        :func:`plan_session` of the same steps, shown beside (never counted).

    Raises
    ------
    viewer.errors.RuntimeProbeError
        ``run`` failed.
    """
    from viewer.errors import RuntimeProbeError
    from viewer.runtime.replay import replay

    if not run.ok:
        raise RuntimeProbeError(run.error)
    sg = model.subgraph(run.subgraph)
    delegated = getattr(run, "resolver", "builtin") != "builtin"
    replays = [None if delegated else replay(model, s.probe) for s in run.steps]
    planned = (buffer_steps([r.arena_bytes for r in replays]) if not delegated
               else [None] * len(run.steps))
    steps, prev_held = [], 0
    for s, r, b in zip(run.steps, replays, planned):
        step = _step(model, sg, run, s, r, b, prev_held, weights_mode)
        if predicted is not None and s.index < len(predicted):
            step = dataclasses.replace(step, needed_predicted=predicted[s.index].buffer.needed)
        steps.append(step)
        prev_held = s.held_bytes if s.held_bytes is not None else prev_held
    unknowns = _unknowns(model, run, steps, other_signatures)
    high = max(range(len(steps)), key=lambda k: steps[k].total) if steps else None
    result = None
    if limit is not None and high is not None:
        result = verdict(steps[high].total, limit, unknowns)
    elif limit is not None:
        result = "cannot_tell"
    return SessionReport(run.path, run.subgraph, tuple(steps), high, limit, result,
                         tuple(unknowns), run.error, tuple(run.notes) + _notes(steps),
                         getattr(run, "resolver", "builtin"))


def _unknowns(model, run, steps, other_signatures: str) -> list[str]:
    out = []
    if run.failed_step is not None:
        out.append(f"step {run.failed_step + 1} and later were not run ({run.error})")
    if any(s.held is None for s in steps):
        out.append("the arena buffer's held size was not read (malloc_usable_size)")
    for name in dict.fromkeys(t.name for s in steps for t in s.terms if t.source == SOURCE_UNKNOWN):
        if name != "tensor arena":
            out.append(f"{name}: " + next(t.method for s in steps for t in s.terms if t.name == name))
    sg = model.subgraph(run.subgraph)
    flow = sorted({op.op_name for op in sg.operators if op.op_name in _CONTROL_FLOW})
    if flow:
        out.append(f"the arenas of the subgraphs {'/'.join(flow)} runs are not counted")
    if other_signatures:
        out.append(f"the model has other signatures ({other_signatures}), each with its own arena, "
                   "that this session did not run: run each with --signature KEY")
    return out


def _notes(steps) -> tuple[str, ...]:
    out = []
    off = [s.index + 1 for s in steps if s.needed_predicted is not None and s.needed_predicted != s.needed]
    if off:
        out.append(f"our prediction without the runtime differs from LiteRT's arena at step(s) {off}")
    inexact = [s.index + 1 for s in steps if s.replay_exact is False]
    if inexact:
        out.append(f"our litert planner did not reproduce LiteRT's arena byte for byte at step(s) "
                   f"{inexact}: the planned figures there are ours, the verdict uses LiteRT's")
    late = [s.index + 1 for s in steps if s.grew_during_invoke]
    if late:
        out.append(f"LiteRT grew the arena during Invoke at step(s) {late} (tensors deferred to "
                   "Invoke are planned there): the planned growth figures leave that copy out")
    return tuple(out)


def _step(model, sg, run, s, r, b: BufferStep, prev_held: int, weights_mode: str) -> SessionStep:
    moved_at_alloc = (s.buffer_address_after_allocate is not None and s.index > 0
                      and s.buffer_address_after_allocate != _prev_address(run, s.index))
    grew_in_invoke = (s.buffer_address is not None and s.buffer_address_after_allocate is not None
                      and s.buffer_address != s.buffer_address_after_allocate)
    extra = 0
    if moved_at_alloc:
        extra = max(extra, prev_held)
    if grew_in_invoke:
        extra = max(extra, s.held_after_allocate_bytes or 0)
    shapes = tuple((sg.tensors[t].name if 0 <= t < len(sg.tensors) else str(t), shape)
                   for t, shape in s.shapes)
    terms = _terms(model, run, s, extra, weights_mode)
    resident = max(0, 2 * extra - (s.held_bytes or 0)) if extra else 0
    grew = moved_at_alloc or grew_in_invoke
    dyn = (len(s.dynamic), sum(d.nbytes for d in s.dynamic), s.dynamic_held_bytes)
    if r is None or b is None:  # under a delegate: LiteRT's figures only
        return SessionStep(s.index, shapes, s.needed_bytes, None, None, s.held_bytes, None, None,
                           grew, grew_in_invoke, extra, None, s.peak_above_end_bytes, resident,
                           *dyn, tuple(terms), total_bytes(terms), None)
    extra_planned = (b.during_growth - b.held) if b.grew else 0
    planned_terms = [Term(t.name, b.request if t.name == "tensor arena" else
                          extra_planned if t.name == "arena growth" else t.bytes,
                          t.source, t.method, t.counted) for t in terms]
    return SessionStep(
        s.index, shapes, s.needed_bytes, r.arena_bytes, r.exact, s.held_bytes, b.held,
        b.request, grew, grew_in_invoke, extra, extra_planned, s.peak_above_end_bytes, resident,
        *dyn, tuple(terms), total_bytes(terms), total_bytes(planned_terms), plan=r.plan,
    )


def _prev_address(run, k: int):
    return run.steps[k - 1].buffer_address if k > 0 else None


def _terms(model, run, s, extra: int, weights_mode: str) -> list[Term]:
    from viewer.runtime.probe_types import REGION_PERSISTENT, REGION_PERSISTENT_ARENA

    held = s.held_bytes
    arena = (Term("tensor arena", held, SOURCE_MEASURED,
                  "malloc_usable_size of LiteRT's arena buffer after the step: the largest plan "
                  "so far, never shrunk (ResizableAlignedBuffer::Resize)")
             if held is not None else
             Term("tensor arena", aligned_request(s.needed_bytes), SOURCE_UNKNOWN,
                  "buffer not read; this step's plan only (an earlier, larger plan is left out)"))
    growth = Term("arena growth", extra, SOURCE_MEASURED,
                  ("the previous buffer, still allocated while AlignedRealloc copies it into the "
                   "new one (simple_memory_arena.cc); its usable size as measured"
                   + (f"; the process's RSS peaked {s.peak_above_end_bytes:,d} B above the step's end"
                      if s.peak_above_end_bytes else ""))
                  if extra else "the buffer did not grow")
    dyn = Term("dynamic tensors", s.dynamic_held_bytes, SOURCE_MEASURED,
               f"{len(s.dynamic)} kTfLiteDynamic tensor(s) malloc'd outside the arena: "
               "malloc_usable_size of their blocks")
    persistent = sum(t.nbytes for t in s.probe.tensors
                     if t.region in (REGION_PERSISTENT, REGION_PERSISTENT_ARENA))
    pers = Term("persistent", persistent, SOURCE_MEASURED,
                "kTfLiteArenaRwPersistent and kTfLitePersistentRo tensors' bytes now (the persistent "
                "arena's own buffer, which never shrinks either, is not read: after a larger step "
                "it can hold more)")
    counted = (held or 0) + s.dynamic_held_bytes + persistent
    terms = [arena, growth, dyn, pers, _overhead(run, s, counted)]
    if getattr(run, "resolver", "builtin") != "builtin":
        terms.insert(2, _delegate_transient(s, extra))
    terms.append(Term("weights", int(model.weights_bytes), SOURCE_MEASURED,
                      "constant buffers in the model file, " + (
                          "copied into RAM" if weights_mode == "copied"
                          else "mapped from the file (page cache, reclaimable: not counted)"),
                      counted=weights_mode == "copied"))
    return terms


def _delegate_transient(s, extra: int) -> Term:
    """Under a delegate: what the step's RSS peaked above its end beyond the arena's copy (a
    delegate's workspace, reallocated as the shapes grow, is copied or rebuilt the same way)."""
    peak = s.peak_above_end_bytes
    if peak is None:
        return Term("delegate transient", 0, SOURCE_UNKNOWN,
                    "VmHWM could not be reset per step (/proc/self/clear_refs); 0 B counted")
    return Term("delegate transient", max(0, peak - extra), SOURCE_MEASURED,
                f"the process's RSS peaked {peak:,d} B above the step's end (VmHWM reset before "
                "the step), less the arena growth term")


def _overhead(run, s, counted: int) -> Term:
    before, after = run.pss_anon_before_bytes, s.pss_anon_bytes
    if before is None or after is None:
        return Term("runtime overhead", 0, SOURCE_UNKNOWN,
                    "Pss_Anon not readable here (/proc/self/smaps_rollup); 0 B counted")
    grown = after - before
    delegate = ("; with the default delegates (XNNPACK) also their packed weights and workspace"
                if getattr(run, "resolver", "builtin") != "builtin" else "")
    return Term("runtime overhead", max(0, grown - counted), SOURCE_ESTIMATED,
                f"Pss_Anon after the step minus before the interpreter was built = {grown:,d} B, "
                "less the arena, dynamic and persistent terms (interpreter and kernel state, and "
                f"the harness's and allocator's leftovers: an upper bound{delegate})")
