"""The memory of a model under a delegate, as named terms beside the CPU arena.

:func:`delegate_account` turns one :class:`~viewer.runtime.delegates.DelegateMeasurement` (a
fresh LiteRT process under XNNPACK or a delegate library) into the terms a budget counts, each
with its source and method, in the order a report shows them:

``tensor arena``
    LiteRT's CPU arena beside the delegate: the span of the ``kTfLiteArenaRw`` tensors' data
    pointers after ``allocate_tensors()`` and one Invoke. Tensors inside a delegated partition
    are not in it: after ``Subgraph::ReplaceNodeSubsetsWithDelegateKernels`` no execution node
    touches them and ``ArenaPlanner::PlanAllocations`` (arena_planner.cc) plans the execution
    nodes' tensors only. Measured.
``persistent``
    CPU tensors outside the arena (prepare-time outputs, variables) with memory. Measured.
``delegate: NAME setup``
    ``Pss_Anon`` growth from before the interpreter (before ``load_delegate`` for a library) to
    after ``allocate_tensors()``, less the persistent term: where XNNPACK packs its own copy of
    the delegated operators' weights (anonymous memory, beside the file's mapped weights),
    creates its runtime and plans its workspace. Measured.
``runtime overhead``
    ``Pss_Anon`` growth over setting the inputs and the first Invoke, less the CPU arena (whose
    pages the Invoke touches first): workspace pages first touched then, kernel state. Measured.

The terms add up to the process's measured growth (``total_growth``) unless a subtraction
would go below 0 (clamped to 0, said on the term: the sum is then an upper bound). A delegate
loaded from a library may hold device memory (GPU/NPU buffers) that is not in this process's
anonymous memory: that is an unknown, so such a verdict is never a bare "fits".

:func:`batch_split` splits the setup term along a line through a second measurement at another
batch (what grows with the batch: workspace; what does not: packed weights, runtime), shown
beside it and not counted; :mod:`viewer.whatif.delegate_batch` searches the largest batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.runtime.delegates import DelegateMeasurement
from viewer.whatif.footprint import SOURCE_MEASURED, SOURCE_UNKNOWN, Term

#: The method every Pss_Anon term names.
_PSS = "Pss_Anon (/proc/self/smaps_rollup) of a fresh LiteRT process"


@dataclass(frozen=True)
class DelegateAccount:
    """The terms of one delegated interpreter. Sizes in bytes.

    Attributes
    ----------
    measurement : DelegateMeasurement
    terms : tuple of Term
        CPU arena, persistent (when any), the delegate's setup, the runtime overhead (see the
        module docstring).
    unknowns : tuple of str
        What the terms cannot hold (device memory of a library delegate, Pss not readable).
    notes : tuple of str
        What a reader should know (no operator delegated, tensors left out of the CPU arena).
    upper_bound : bool
        A term was clamped at 0: the sum exceeds the measured growth.
    """

    measurement: DelegateMeasurement
    terms: tuple
    unknowns: tuple = ()
    notes: tuple = ()
    upper_bound: bool = False

    @property
    def delegate_term_names(self) -> tuple:
        """Names of the terms that are the delegate's own (not LiteRT's CPU side)."""
        return tuple(t.name for t in self.terms if t.name.startswith("delegate:"))

    @property
    def counted_bytes(self) -> int:
        return sum(int(t.bytes) for t in self.terms if t.counted)

    @property
    def margin_bytes(self) -> int:
        """The counted terms' stated margins, summed (bytes)."""
        return sum(int(t.margin) for t in self.terms if t.counted)

    def as_dict(self) -> dict:
        """The ``delegate`` object of ``check --json`` (every size in bytes)."""
        m = self.measurement
        return {
            "kind": m.spec.kind, "name": m.spec.name, "library": m.spec.library or None,
            "options": dict(m.spec.options), "configuration": m.spec.configuration,
            "terms": list(self.delegate_term_names),
            "cpu_arena_bytes": m.arena_bytes, "cpu_arena_tensors": m.arena_tensors,
            "tensors_without_cpu_memory": len(m.without_memory),
            "tensors_without_cpu_memory_bytes": m.without_memory_bytes,
            "nodes": m.nodes, "delegate_kernels": m.delegate_kernels, "cpu_nodes": m.cpu_nodes,
            "model_operators": m.model_operators, "delegated_operators": m.delegated_operators,
            "pss_anon_before_bytes": m.pss_before, "pss_anon_after_setup_bytes": m.pss_after_setup,
            "pss_anon_after_invoke_bytes": m.pss_after_invoke, "pss_anon_growth_bytes": m.total_growth,
            "upper_bound": self.upper_bound, "unknowns": list(self.unknowns), "notes": list(self.notes),
        }


def _plan_phrase(m: DelegateMeasurement) -> str:
    if m.delegated_operators is None:
        return "execution plan not read"
    return (f"{m.spec.name} took {m.delegated_operators} of {m.model_operators} operators in "
            f"{m.delegate_kernels} partition(s); {m.cpu_nodes} node(s) stay on LiteRT's CPU kernels")


def _arena_term(m: DelegateMeasurement) -> Term:
    left = (f"; {len(m.without_memory)} tensor(s), {m.without_memory_bytes:,d} B, are inside the "
            f"delegated partitions and have no CPU memory (ArenaPlanner plans the execution "
            f"nodes' tensors only)" if m.without_memory else "")
    return Term("tensor arena", int(m.arena_bytes), SOURCE_MEASURED,
                f"LiteRT's CPU arena beside {m.spec.name}: span of the {m.arena_tensors} "
                "kTfLiteArenaRw tensors' data pointers after allocate_tensors() and one Invoke "
                f"(kernel temporaries of the CPU nodes included){left}")


def _pss_terms(m: DelegateMeasurement, weights_bytes: int | None) -> tuple[list[Term], bool]:
    setup = int(m.setup_growth) - int(m.persistent_bytes)
    first = int(m.invoke_growth) - int(m.arena_bytes)
    where = ("before load_delegate" if m.spec.kind == "external" else "before the interpreter was built")
    setup_m = (f"{_PSS} (heap trimmed first): after allocate_tensors() minus {where} = "
               f"{m.setup_growth:,d} B, less the "
               f"persistent term: {m.spec.name}'s copy of the delegated weights (packed"
               + (f"; the file holds {weights_bytes:,d} B of weights" if weights_bytes else "")
               + "), its runtime and workspace as far as touched by then; LiteRT's own interpreter "
               f"and node structures included; {_plan_phrase(m)}")
    first_m = (f"{_PSS}: after the inputs were set and one Invoke minus after allocate_tensors() "
               f"= {m.invoke_growth:,d} B, less the CPU arena (its pages are first touched "
               "then): delegate workspace pages first touched by the Invoke, kernel state; the "
               "Python harness's few objects included")
    clamped = False
    if setup < 0:
        setup_m += "; the process grew by less than the persistent term: 0 B counted here (upper bound)"
        setup, clamped = 0, True
    if first < 0:
        first_m += ("; the Invoke grew the process by less than the CPU arena (some of its pages "
                    "were touched before, or never): 0 B counted here, the sum is an upper bound")
        first, clamped = 0, True
    from viewer.whatif.verdict import overhead_margin

    # Pss_Anon growths carry the runtime overhead's stated margin (two processes with another
    # history measure up to 9% apart): a verdict inside it is "cannot tell" (margin_unknown).
    return [Term(f"delegate: {m.spec.name} setup", setup, SOURCE_MEASURED, setup_m,
                 margin=overhead_margin(max(0, int(m.setup_growth)))),
            Term("runtime overhead", first, SOURCE_MEASURED, first_m,
                 margin=overhead_margin(max(0, int(m.invoke_growth))))], clamped


def delegate_account(m: DelegateMeasurement, weights_bytes: int | None = None) -> DelegateAccount:
    """The named terms of ``m`` (see the module docstring); never raises.

    Parameters
    ----------
    m : DelegateMeasurement
        From :func:`viewer.runtime.delegates.measure_delegate`.
    weights_bytes : int, optional
        The model file's constant buffers, named beside the setup term (the delegate's packed
        copy is of these).

    Returns
    -------
    DelegateAccount
    """
    terms = [_arena_term(m)]
    if m.persistent_bytes:
        terms.append(Term("persistent", int(m.persistent_bytes), SOURCE_MEASURED,
                          "CPU tensors outside the arena with memory (persistent arena, "
                          "prepare-time outputs, dynamic) beside the delegate"))
    unknowns, notes, clamped = [], list(m.notes), False
    if m.measured:
        pss, clamped = _pss_terms(m, weights_bytes)
        terms += pss
    else:
        why = "not measured (/proc/self/smaps_rollup is not readable here); 0 B counted"
        terms += [Term(f"delegate: {m.spec.name} setup", 0, SOURCE_UNKNOWN, why),
                  Term("runtime overhead", 0, SOURCE_UNKNOWN, why)]
        unknowns.append(f"{m.spec.name}'s memory beside the CPU arena (packed weights, workspace, "
                        "runtime): not measured here (no /proc/self/smaps_rollup)")
    if m.spec.kind == "external":
        unknowns.append(f"device memory {m.spec.name} holds outside this process's anonymous "
                        "memory (GPU/NPU buffers, driver allocations): not measured")
    if m.delegated_operators == 0:
        notes.append(f"{m.spec.name} took no operator: every node runs on LiteRT's CPU kernels")
    elif m.without_memory:
        notes.append(f"{len(m.without_memory)} tensor(s) ({m.without_memory_bytes:,d} B) live inside "
                     f"{m.spec.name}'s partitions, not in the CPU arena")
    return DelegateAccount(m, tuple(terms), tuple(unknowns), tuple(notes), clamped)


def comparison_term(arena_bytes: int, method: str) -> Term:
    """The CPU arena without any delegate, shown beside a delegated account but not counted."""
    return Term("tensor arena without the delegate", int(arena_bytes), SOURCE_MEASURED,
                f"for comparison, not counted: {method}", counted=False)


@dataclass(frozen=True)
class BatchSplit:
    """The delegate's setup split by how it grows with the batch, from two measurements.

    Attributes
    ----------
    batch : int
        The batch of the account (``b``).
    per_example_bytes : int or None
        Pss_Anon growth of the whole interpreter per example (CPU arena, the delegate's
        workspace, runtime) along the line to the other measured batch, at least 0; None when
        there is no second measurement.
    terms : tuple of Term
        Two terms shown but not counted (the measured setup term already holds them): the part
        of the setup that grows with the batch (workspace) and the part that does not (packed
        weights, runtime objects), both "estimated" (a straight line through two points).
    reason : str
        How it was obtained, or why there is none (names the operator or input).
    """

    batch: int
    per_example_bytes: int | None
    terms: tuple = ()
    reason: str = ""


def batch_split(account: DelegateAccount, batch: int, far: DelegateMeasurement | None,
                why: str = "", at: int | None = None) -> BatchSplit:
    """Split ``account``'s setup term using ``far``, the same delegate at batch ``at``.

    Parameters
    ----------
    account : DelegateAccount
        At batch ``batch`` (>= 1).
    batch : int
    far : DelegateMeasurement or None
        None when no other batch could be measured; ``why`` then says why.
    at : int, optional
        The batch ``far`` ran at (> ``batch``; default ``batch + 1``).

    Returns
    -------
    BatchSplit
        With ``step = (setup(at) - setup(b)) / (at - b)`` (at least 0), the part that grows is
        ``b * step`` clamped to ``[0, setup(b)]`` and the fixed part the rest; the per-example
        growth of the whole interpreter is ``(total(at) - total(b)) / (at - b)``.
    """
    m = account.measurement
    at = batch + 1 if at is None else int(at)
    if far is None or not (m.measured and far.measured) or at <= batch:
        return BatchSplit(batch, None, (), why or "no other batch was measured")
    name = m.spec.name
    step = max(0, int(far.setup_growth) - int(m.setup_growth)) // (at - batch)
    setup = int(m.setup_growth) - int(m.persistent_bytes)
    grows = min(max(setup, 0), batch * step)
    rule = (f"a straight line through setup at batch {batch} ({m.setup_growth:,d} B) and "
            f"{at} ({far.setup_growth:,d} B), both measured; inside the setup term, not counted again")
    terms = (Term(f"delegate: {name} setup: grows with the batch (workspace)", grows,
                  "estimated", rule, counted=False),
             Term(f"delegate: {name} setup: fixed (packed weights, runtime)",
                  max(setup, 0) - grows, "estimated", rule, counted=False))
    per = max(0, int(far.total_growth) - int(m.total_growth)) // (at - batch)
    return BatchSplit(batch, per, terms,
                      f"from the delegate's footprints at batch {batch} and {at} (both measured "
                      "by the runtime, Pss_Anon of the whole interpreter)")
