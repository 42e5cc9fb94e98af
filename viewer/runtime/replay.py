"""Replay: feed a planner the runtime's own tensors and compare its plan with the runtime's arena.

The ``litert`` planner, given the shapes LiteRT resolved and the kernel temporaries it added
(each attributed to its operator), must reproduce LiteRT's arena byte for byte: the same arena
size and every offset equal. Anything else is reported tensor by tensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from viewer.planning.registry import get_planner
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.runtime.probe import RuntimeProbe, probe_analysis


@dataclass(frozen=True)
class TensorMismatch:
    """One tensor the replay placed differently from the runtime.

    Attributes
    ----------
    id : int
        Runtime tensor index.
    planned, measured : int or None
        Byte offsets; None when one side did not place it in the arena.
    nbytes : int
    reason : str
        ``"offset"``, ``"not in the runtime's arena"`` or ``"not planned"``.
    """

    id: int
    planned: int | None
    measured: int | None
    nbytes: int
    reason: str


@dataclass(frozen=True)
class ReplayResult:
    """The replay of one probe.

    Attributes
    ----------
    planner : str
    arena_bytes : int
        The planner's arena, in bytes.
    measured_arena_bytes : int
        The runtime's arena span, in bytes.
    mismatched : tuple of TensorMismatch
        Empty when every arena tensor sits at the runtime's offset.
    plan : Plan
        The planner's plan, offsets resolved for in-place aliases.
    """

    planner: str
    arena_bytes: int
    measured_arena_bytes: int
    mismatched: tuple[TensorMismatch, ...] = ()
    plan: Plan | None = field(default=None, compare=False)

    @property
    def exact(self) -> bool:
        """Same arena size and every offset equal."""
        return self.arena_bytes == self.measured_arena_bytes and not self.mismatched

    @property
    def mismatched_tensors(self) -> list[int]:
        return [m.id for m in self.mismatched]


def with_runtime_aliases(analysis, aliases):
    """``analysis`` with LiteRT's in-place sharing applied (alias -> root, from the runtime).

    Each alias usage gets ``alias_of`` = its root; the root then lives until the alias's last
    consumer (LiteRT counts the alias's readers on the root: ``FindSharedTensor`` in
    ``ArenaPlanner::PlanAllocations``). Usages the analysis already aliases are left alone.
    """
    import dataclasses

    by_id = {u.tensor: u for u in analysis.usages}
    last = {}
    for a, r in aliases.items():
        ua, ur = by_id.get(a), by_id.get(r)
        if ua is None or ur is None or ua.alias_of is not None:
            continue
        end = ua.last_op if ua.consumers else ua.first_op
        last[r] = max(last.get(r, ur.last_op), end)
    usages = []
    for u in analysis.usages:
        if u.tensor in aliases and u.alias_of is None and aliases[u.tensor] in by_id:
            u = dataclasses.replace(u, alias_of=aliases[u.tensor])
        elif u.tensor in last:
            u = dataclasses.replace(u, last_op=last[u.tensor])
        usages.append(u)
    return dataclasses.replace(analysis, usages=tuple(usages))


def with_runtime_placement(analysis, probe: RuntimeProbe):
    """``analysis`` without the tensors the runtime keeps outside its arena.

    Kernels decide at prepare time that some outputs are dynamic (``kTfLiteDynamic``), persistent
    (``SetTensorToPersistentRo``) or never get memory (e.g. WHILE outputs that forward an
    unchanged input); the model file does not say so. This drops every usage whose runtime
    region is not the arena.
    """
    import dataclasses

    keep = tuple(
        u for u in analysis.usages
        if u.tensor >= len(probe.tensors) or probe.tensors[u.tensor].in_arena
        or (u.nbytes == 0)
    )
    return dataclasses.replace(analysis, usages=keep)


def replay(model, probe: RuntimeProbe, planner: str = "litert",
           alignment: int = DEFAULT_ALIGNMENT, *, runtime_inplace: bool = False,
           runtime_placement: bool = False) -> ReplayResult:
    """Plan the runtime's tensors with ``planner`` and compare with where the runtime put them.

    Parameters
    ----------
    model : viewer.model.types.Model
        The model file ``probe`` was made from.
    probe : RuntimeProbe
        A successful probe (runtime shapes, kernel temporaries, offsets).
    planner : str
        Registry name; ``"litert"`` is expected to match exactly.
    alignment : int
        Bytes (LiteRT's ``kDefaultTensorAlignment`` = 64).
    runtime_inplace : bool
        Apply the runtime's in-place sharing (``probe.inplace_aliases``) on top of the
        analysis, so that only the planner is tested; False tests analysis and planner together.
    runtime_placement : bool
        Drop the tensors the runtime keeps outside its arena (:func:`with_runtime_placement`).

    When the probe was taken after an invocation, the planner (``litert`` only) is run over the
    runtime's node ranges (:attr:`RuntimeProbe.node_ranges`).

    Returns
    -------
    ReplayResult

    Raises
    ------
    viewer.errors.RuntimeProbeError
        The probe failed or does not belong to ``model``.
    viewer.errors.PlanningError
        Unknown planner.
    """
    analysis = probe_analysis(model, probe)
    if runtime_inplace:
        analysis = with_runtime_aliases(analysis, probe.inplace_aliases)
    if runtime_placement:
        analysis = with_runtime_placement(analysis, probe)
    problem = analysis.problem()
    ranges = probe.node_ranges
    if planner == "litert" and len(ranges) > 1:
        plan = get_planner(planner).func(problem, alignment, node_ranges=list(ranges))
    else:
        plan = get_planner(planner).func(problem, alignment)
    planned = analysis.resolve_alias_offsets(plan.offsets)
    sizes = {u.tensor: u.nbytes for u in analysis.usages}
    measured = probe.offsets
    out: list[TensorMismatch] = []
    for tid in sorted(set(measured) | {t for t, n in sizes.items() if n > 0}):
        m = measured.get(tid)
        p = planned.get(tid) if sizes.get(tid, 0) > 0 else None
        if m is None and p is None:
            continue
        nbytes = probe.tensors[tid].nbytes if tid < len(probe.tensors) else sizes.get(tid, 0)
        if m is None:
            out.append(TensorMismatch(tid, p, None, nbytes, "not in the runtime's arena"))
        elif p is None:
            out.append(TensorMismatch(tid, None, m, nbytes, "not planned"))
        elif p != m:
            out.append(TensorMismatch(tid, p, m, nbytes, "offset"))
    plan = Plan(plan.planner, planned, plan.arena_bytes, plan.alignment, plan.proven_optimal,
                plan.bound_bytes, plan.stats)
    return ReplayResult(planner, plan.arena_bytes, int(probe.arena_bytes or 0), tuple(out), plan)
