"""A model's memory under a delegate as the document's background work (no Qt).

Same pattern as :mod:`viewer.document.session_work`: an immutable :class:`DelegateRequest` built
on the GUI thread, :func:`compute_delegate` (a plain function; tests call it directly), a
:class:`DelegateResponse` applied on the GUI thread, and :func:`delegate_rows` for a view that
lists the terms. Two fresh LiteRT processes: the model under the delegate
(:func:`viewer.runtime.delegates.measure_delegate`, accounted by
:func:`viewer.whatif.delegate_terms.delegate_account`) and without one (the CPU arena LiteRT
would use, shown beside, not counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from viewer.errors import PlanCancelled, ViewerError
from viewer.runtime.delegates import DelegateSpec


@dataclass(frozen=True)
class DelegateRequest:
    """One delegate to measure the model under.

    Attributes
    ----------
    path : str
    spec : DelegateSpec
    timeout : float
        Seconds for each runtime process.
    model : Model or None
        The already-read model (for the weights figure; else ``path`` is read).
    serial : int
        Set by the window's :class:`~viewer.ui.workers.TaskRunner` (latest request wins).
    """

    path: str
    spec: DelegateSpec = DelegateSpec("xnnpack")
    timeout: float = 120.0
    model: object = field(default=None, compare=False)
    serial: int = 0


@dataclass(frozen=True)
class DelegateResponse:
    """What :func:`compute_delegate` found.

    Attributes
    ----------
    request : DelegateRequest
    account : DelegateAccount or None
        The delegate's terms; None when it could not be measured (``error`` says why).
    without_arena_bytes : int or None
        LiteRT's CPU arena without any delegate (measured the same way), bytes.
    error : str
        One line (a library that cannot load, a model LiteRT cannot run).
    """

    request: DelegateRequest
    account: object = None
    without_arena_bytes: int | None = None
    error: str = ""

    @property
    def serial(self) -> int:
        return self.request.serial


@dataclass(frozen=True)
class DelegateRow:
    """One term as a view lists it (bytes; ``counted`` False: shown, not in the sum)."""

    name: str
    bytes: int
    source: str
    method: str
    counted: bool


def compute_delegate(request: DelegateRequest, progress: Callable[[float, str], None] | None = None,
                     cancelled: Callable[[], bool] | None = None) -> DelegateResponse:
    """Measure the model without and under ``request.spec``; never raises a user's error.

    Raises
    ------
    viewer.errors.PlanCancelled
        ``cancelled()`` returned True between the two measurements.
    """
    from viewer.model.reader import load_model
    from viewer.runtime.delegates import measure_delegate
    from viewer.whatif.delegate_terms import delegate_account

    def say(frac: float, text: str) -> None:
        if progress is not None:
            progress(frac, text)
        if cancelled is not None and cancelled():
            raise PlanCancelled("cancelled")

    try:
        model = request.model if request.model is not None else load_model(request.path)
        say(0.05, f"measuring under {request.spec.name}")
        m = measure_delegate(request.path, request.spec, timeout=request.timeout)
        say(0.55, "measuring without a delegate")
        without = measure_delegate(request.path, DelegateSpec("none"), timeout=request.timeout)
    except ViewerError as e:
        return DelegateResponse(request, error=str(e))
    say(1.0, "done")
    return DelegateResponse(request, delegate_account(m, model.weights_bytes), without.arena_bytes)


def delegate_rows(resp: DelegateResponse) -> list[DelegateRow]:
    """The account's terms, then the no-delegate CPU arena (not counted); [] without an account."""
    from viewer.whatif.delegate_terms import comparison_term

    if resp.account is None:
        return []
    terms = list(resp.account.terms)
    if resp.without_arena_bytes is not None:
        terms.append(comparison_term(resp.without_arena_bytes, "LiteRT's CPU arena without a "
                                     "delegate: span of the arena tensors' data pointers"))
    return [DelegateRow(t.name, int(t.bytes), t.source, t.method, t.counted) for t in terms]


def delegate_summary(resp: DelegateResponse) -> str:
    """One paragraph for the view: the sum, what the delegate took, unknowns, notes."""
    if resp.account is None:
        return resp.error or "not measured"
    a, m = resp.account, resp.account.measurement
    parts = [f"{m.spec.configuration}: {a.counted_bytes:,d} B counted (CPU arena, persistent, "
             "the delegate's setup, runtime overhead; the weights apart)"
             + (", an upper bound (a term was clamped at 0)" if a.upper_bound else "")]
    if m.delegated_operators is not None:
        parts.append(f"{m.spec.name} took {m.delegated_operators} of {m.model_operators} "
                     f"operators in {m.delegate_kernels} partition(s)")
    parts += [f"unknown: {u}" for u in a.unknowns]
    parts += list(a.notes)
    return ". ".join(parts)
