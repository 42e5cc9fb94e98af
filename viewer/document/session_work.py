"""A dynamic-shape session as the document's background work (no Qt).

Same pattern as :mod:`viewer.document.work`: an immutable :class:`SessionRequest` built on the
GUI thread, :func:`compute_session` (a plain function; progress and cancellation through
callbacks; tests call it directly), a :class:`SessionResponse` applied on the GUI thread, and
:func:`session_rows` for a view that lists the steps with their sizes. The prediction (ours,
no runtime, milliseconds) comes first, so a view can draw it before LiteRT has measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from viewer.errors import PlanCancelled, ViewerError


@dataclass(frozen=True)
class SessionRequest:
    """One session to predict and (optionally) measure.

    Attributes
    ----------
    path : str
    subgraph : int
    steps : tuple of mapping
        Per step ``{input name, position or "*": shape}`` (``"*"``: every dynamic input).
    limit : int or None
        Budget in bytes for the verdict on the high-water mark.
    weights_mode : str
        ``copied`` or ``mapped``.
    measure : bool
        Also run the steps in one LiteRT interpreter (a subprocess).
    other_signatures : str
        Signatures not run (an unknown of the verdict), e.g. ``"sub -> subgraph 1"``.
    timeout : float
        Seconds for the runtime process.
    model : Model or None
        The already-read model (else ``path`` is read).
    serial : int
        Set by the window's :class:`~viewer.ui.workers.TaskRunner` (latest request wins).
    """

    path: str
    subgraph: int = 0
    steps: tuple[Mapping, ...] = ()
    limit: int | None = None
    weights_mode: str = "copied"
    measure: bool = True
    other_signatures: str = ""
    timeout: float = 300.0
    model: object = field(default=None, compare=False)
    serial: int = 0


@dataclass(frozen=True)
class SessionResponse:
    """What :func:`compute_session` found.

    Attributes
    ----------
    request : SessionRequest
    predicted : tuple of PlannedStep
        Ours without the runtime (empty when our shape inference cannot take a step:
        ``prediction_error`` says why).
    report : SessionReport or None
        Measured and replayed (None when not measured: ``error`` says why, or not asked).
    error : str
        One line naming the file ("" when all went well).
    prediction_error : str
    """

    request: SessionRequest
    predicted: tuple = ()
    report: object = None
    error: str = ""
    prediction_error: str = ""


def compute_session(request: SessionRequest, progress: Callable[[float, str], None] | None = None,
                    cancelled: Callable[[], bool] | None = None) -> SessionResponse:
    """Validate the steps, predict them, then (``request.measure``) measure them in LiteRT.

    Raises
    ------
    viewer.errors.PlanCancelled
        ``cancelled()`` returned True between the stages.
    """
    from viewer.model.reader import load_model
    from viewer.runtime.session import measure_session
    from viewer.whatif.session import session_report
    from viewer.whatif.session_plan import plan_session, session_steps

    report = progress or (lambda _f, _what: None)
    stop = cancelled or (lambda: False)
    try:
        model = request.model if request.model is not None else load_model(request.path)
        steps = session_steps(model, request.subgraph, list(request.steps))
    except ViewerError as e:
        return SessionResponse(request, error=str(e))
    report(0.05, "predicting the session")
    try:
        predicted, why = tuple(plan_session(model, request.subgraph, steps)), ""
    except ViewerError as e:
        predicted, why = (), str(e)
    if not request.measure:
        return SessionResponse(request, predicted, prediction_error=why)
    if stop():
        raise PlanCancelled("session cancelled")
    report(0.2, "measuring the session in LiteRT")
    run = measure_session(model.path, steps, request.subgraph, request.timeout)
    if stop():
        raise PlanCancelled("session cancelled")
    if not run.ok:
        return SessionResponse(request, predicted, error=run.error, prediction_error=why)
    rep = session_report(model, run, limit=request.limit, weights_mode=request.weights_mode,
                         other_signatures=request.other_signatures,
                         predicted=predicted or None)
    report(1.0, "session measured")
    return SessionResponse(request, predicted, rep, prediction_error=why)


@dataclass(frozen=True)
class SessionRow:
    """One step as a view lists it; sizes in bytes, None where not known.

    Attributes
    ----------
    step : int
        From 1.
    shapes : str
        E.g. ``"arg0 1x128x4, arg1 1x128x4"``.
    needed, held : int or None
        The plan's arena and the buffer held, LiteRT's (measured) when measured, else ours.
    needed_predicted, held_predicted : int
        Ours without the runtime (0 when not predicted).
    grew : bool
    total : int or None
        The step's counted total (measured sessions only).
    source : str
        ``measured`` or ``predicted``.
    """

    step: int
    shapes: str
    needed: int | None
    held: int | None
    needed_predicted: int
    held_predicted: int
    grew: bool
    total: int | None
    source: str


def session_rows(response: SessionResponse) -> list[SessionRow]:
    """The response's steps as rows (the measured report's when there is one)."""
    pred = {p.index: p for p in response.predicted}

    def shape_text(shapes: Sequence) -> str:
        return ", ".join(f"{n} {'x'.join(map(str, s))}" for n, s in shapes)

    rows = []
    if response.report is not None:
        for s in response.report.steps:
            p = pred.get(s.index)
            rows.append(SessionRow(s.index + 1, shape_text(s.shapes), s.needed, s.held,
                                   p.buffer.needed if p else 0, p.buffer.held if p else 0,
                                   s.grew, s.total, "measured"))
        return rows
    for p in response.predicted:
        rows.append(SessionRow(p.index + 1, shape_text(p.shapes), p.buffer.needed, p.buffer.held,
                               p.buffer.needed, p.buffer.held, p.buffer.grew and p.index > 0, None,
                               "predicted"))
    return rows
