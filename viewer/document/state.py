"""The open document: what the window shows, without Qt.

Follows napari's split of a Qt-free ``ViewerModel`` from the ``QtViewer`` that renders it: the
:class:`Document` holds the model, the subgraph, the runtime target, the what-if edits (applied
and pending), the responses (current, full, baseline, the order before a reorder), the planner,
the selection and the kind of work pending. It says what changed through plain callbacks
(:class:`Callbacks`); the window renders it and forwards the user's actions to it. Slow work is
never run here: the document builds an immutable request and asks for it to be run through the
``work_requested`` callback; whoever runs it (the window's ``TaskRunner``, or a test calling the
function directly) hands the response back with :meth:`Document.receive`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from viewer.document.work import (
    OPTIMAL,
    AnalysisRequest,
    AnalysisResponse,
    OptimizeRequest,
    OptimizeResponse,
    ReorderRequest,
    compute,
    compute_optimal,
    compute_reorder,
    optimal_summary,
)
from viewer.document import views
from viewer.document.events import EVENTS, VERBS, Callbacks
from viewer.document.runtime_plan import runtime_plan_name
from viewer.planning.types import DEFAULT_ALIGNMENT
from viewer.whatif.edits import WhatIfEdits

#: Runtime targets a document can be planned and measured for.
RUNTIMES = ("litert",)
#: Seconds the exact planner ``optimal`` may run by default.
OPTIMAL_TIME_LIMIT = 60.0
#: Seconds the operator reorder search may run by default.
REORDER_TIME_LIMIT = 10.0

_unedited = views.unedited

__all__ = ["Callbacks", "Document", "EVENTS", "RUNTIMES", "VERBS"]


class Document:
    """The open model and everything the window shows of it. No Qt.

    Parameters
    ----------
    measure : bool
        Run the real runtime (in a subprocess) for each analysis.
    runtime : str
        Runtime target, one of :data:`RUNTIMES`.

    Notes
    -----
    Callbacks (``doc.events.connect(name, fn)``) are listed in :data:`EVENTS`.
    """

    def __init__(self, measure: bool = True, runtime: str = "litert"):
        self.events = Callbacks(EVENTS)
        self.measure = bool(measure)
        self.runtime = runtime
        self._full: AnalysisResponse | None = None  # as delivered (+ optimal plans)
        self._with_temporaries = True
        self._baseline: AnalysisResponse | None = None  # the unedited subgraph, stored order
        self._before_reorder: AnalysisResponse | None = None
        self._planner: str | None = None
        self._selected: int | None = None
        self._edits: WhatIfEdits | None = None  # applied (those of the shown response)
        self._pending_edits: WhatIfEdits | None = None  # asked for, not yet shown
        self._panel_edits = WhatIfEdits()  # the edit controls' part (shapes, batch, dtype)
        self._tensor_dtypes: dict[int, str] = {}  # per-tensor storage what-ifs
        self._pending: str | None = None  # kind of the work running
        self._other: AnalysisResponse | None = None  # a second model, compared side by side
        self._last_kind = "open"

    # --- state ------------------------------------------------------------------------------

    @property
    def response(self) -> AnalysisResponse | None:
        """What is shown: the full response with or without kernel temporaries."""
        return None if self._full is None else self._full.showing(self._with_temporaries)

    @property
    def full_response(self) -> AnalysisResponse | None:
        """The response as computed: both views (with and without kernel temporaries)."""
        return self._full

    @property
    def baseline(self) -> AnalysisResponse | None:
        """The unedited subgraph in its stored order (what-ifs and reorders compare with it)."""
        return self._baseline

    @property
    def before_reorder(self) -> AnalysisResponse | None:
        """The order shown before a reorder (to go back to), or None."""
        return self._before_reorder

    @property
    def model(self):
        return None if self._full is None else self._full.model

    @property
    def subgraph(self) -> int | None:
        return None if self._full is None else self._full.request.subgraph

    @property
    def planner(self) -> str | None:
        return self._planner

    @property
    def selected(self) -> int | None:
        return self._selected

    @property
    def edits(self) -> WhatIfEdits | None:
        """The edits of the shown response (None or empty: the model as stored)."""
        return self._edits

    @property
    def pending_edits(self) -> WhatIfEdits | None:
        """The edits asked for last (shown once their response arrives)."""
        return self._pending_edits

    @property
    def tensor_dtypes(self) -> dict[int, str]:
        """Per-tensor storage what-ifs asked for (tensor index -> dtype)."""
        return dict(self._tensor_dtypes)

    @property
    def pending(self) -> str | None:
        """Kind of the work running ("open", "what-if", "optimize", ...), or None."""
        return self._pending

    @property
    def with_temporaries(self) -> bool:
        return self._with_temporaries

    @property
    def has_temporaries(self) -> bool:
        return self._full is not None and self._full.has_temporaries

    @property
    def other(self) -> AnalysisResponse | None:
        """The second model the compare view shows beside this one (None: the baseline)."""
        return self._other

    @property
    def is_reordered(self) -> bool:
        return self._full is not None and self._full.reorder is not None

    # --- work ------------------------------------------------------------------------------

    def _submit(self, request, kind: str, fn=compute) -> None:
        self._pending = self._last_kind = kind
        self.events.emit("status", f"{VERBS[kind]} {os.path.basename(request.path)}…")
        self.events.emit("work_requested", request, fn, kind)

    def _request(self, edits: WhatIfEdits | None, subgraph: int | None = None, **kw) -> AnalysisRequest:
        r = self._full.request
        kw.setdefault("runtime", self.runtime)
        if self.runtime == "tflm":
            kw.setdefault("alignment", 16)
        return AnalysisRequest(r.path, r.subgraph if subgraph is None else subgraph, self._full.model,
                               edits, measure=self.measure, **kw)

    def open(self, path: str, *, model=None, subgraph: int = 0) -> None:
        """Read, analyse and plan ``path`` (work ``"open"``); what was shown stays until then."""
        self._submit(AnalysisRequest(str(path), subgraph, model, None, measure=self.measure,
                                     runtime=self.runtime,
                                     alignment=16 if self.runtime == "tflm" else DEFAULT_ALIGNMENT), "open")

    def set_runtime(self, runtime: str) -> None:
        """Switch the runtime target (``"litert"`` or ``"tflm"``) and re-analyse the open model.

        TFLM plans the whole model from subgraph 0, so the tflm target always shows subgraph 0.
        """
        if runtime not in ("litert", "tflm"):
            raise ValueError(f"unknown runtime {runtime!r}")
        if runtime == self.runtime:
            return
        self.runtime = runtime
        if self._full is not None:
            self._submit(self._request(self._edits, subgraph=0 if runtime == "tflm" else None), "open")

    def set_measure(self, on: bool) -> None:
        """Measure with the runtime (or not) and re-analyse the open model at once, with its
        edits, so what is shown follows the setting (work ``"open"``)."""
        if bool(on) == self.measure:
            return
        self.measure = bool(on)
        if self._full is not None:
            self._submit(self._request(self._edits), "open")

    def select_subgraph(self, index: int) -> None:
        """Analyse subgraph ``index`` of the open model (work ``"subgraph"``)."""
        if self._full is None:
            return
        self._selected = None
        self._submit(self._request(None, subgraph=index), "subgraph")

    def set_panel_edits(self, edits: WhatIfEdits | None) -> None:
        """The edit controls changed (shapes, batch, activation dtype, rescale): re-plan with
        them and the per-tensor storage what-ifs."""
        self._panel_edits = edits if edits is not None else WhatIfEdits()
        self._request_whatif(self._merged_edits())

    def set_tensor_dtype(self, tensor: int, dtype: str) -> None:
        """Store ``tensor`` as ``dtype`` ("" = as in the model) and re-plan."""
        if self._full is None:
            return
        if dtype:
            self._tensor_dtypes[int(tensor)] = dtype
        else:
            self._tensor_dtypes.pop(int(tensor), None)
        self._request_whatif(self._merged_edits())

    def reset_edits(self) -> None:
        """Every edit undone (the controls' and the per-tensor storage what-ifs); the edit
        controls are told (``edits_restored(None)``) and the model as stored is re-planned."""
        self._panel_edits = WhatIfEdits()
        self._tensor_dtypes = {}
        self.events.emit("edits_restored", None)
        self._request_whatif(WhatIfEdits())

    def _merged_edits(self) -> WhatIfEdits:
        panel = self._panel_edits
        if not self._tensor_dtypes:
            return panel
        return dataclasses.replace(panel, tensor_dtypes={**dict(panel.tensor_dtypes), **self._tensor_dtypes})

    def _request_whatif(self, edits: WhatIfEdits) -> None:
        """A quick estimate first (resized inputs / batch: our shape inference,
        ``shape_source="inferred"``), then the runtime's confirmation, which replaces it."""
        if self._full is None:
            return
        self._pending_edits = edits
        reshaped = bool(edits.input_shapes) or edits.batch is not None
        if reshaped and not edits.rescale_fixed_sizes:
            self._submit(self._request(edits, shape_source="inferred"), "what-if-estimate")
        else:
            self._submit(self._request(edits), "what-if")

    def optimize(self, time_limit: float = OPTIMAL_TIME_LIMIT) -> None:
        """Run the exact planner ``optimal`` on the analysis shown (work ``"optimize"``)."""
        resp = self.response
        if resp is None:
            return
        req = OptimizeRequest(resp.request.path, resp.analysis, resp.request.alignment, float(time_limit))
        self._submit(req, "optimize", compute_optimal)

    def reorder(self, time_limit: float = REORDER_TIME_LIMIT) -> None:
        """Search an operator order with a smaller lower bound (work ``"reorder"``)."""
        base = self._baseline if self._baseline is not None else self._full
        if base is None:
            return
        self._submit(ReorderRequest(base.request.path, base, float(time_limit)), "reorder", compute_reorder)

    def restore_original_order(self) -> None:
        """Show the order before the reorder again (no recomputation)."""
        if self._before_reorder is not None:
            self._show(self._before_reorder)

    # --- responses --------------------------------------------------------------------------

    def open_other(self, path: str, subgraph: int = 0) -> None:
        """Read, analyse and plan a second model (work ``"other-model"``) to compare this one
        with, on one y scale, under the same runtime and measurement; ``other_changed`` then."""
        self._submit(AnalysisRequest(str(path), subgraph, None, None, measure=self.measure,
                                     runtime=self.runtime,
                                     alignment=16 if self.runtime == "tflm" else DEFAULT_ALIGNMENT),
                     "other-model")

    def close_other(self) -> None:
        """Compare with the baseline again (``other_changed(None)``)."""
        if self._other is not None:
            self._other = None
            self.events.emit("other_changed", None)

    def receive(self, resp) -> None:
        """Show ``resp`` (an :class:`AnalysisResponse` or :class:`OptimizeResponse`).

        When showing it fails (a callback raised), the previous state comes back and
        ``failed("show", message)`` says why; set ``ARENA_VIEWER_DEBUG`` to re-raise.
        """
        kind, self._pending = self._pending, None
        saved = dict(vars(self))
        try:
            if kind == "other-model" and isinstance(resp, AnalysisResponse):
                self._other = resp
                self.events.emit("status", f"Comparing with {os.path.basename(resp.model.path)}: "
                                 f"lower bound {resp.analysis.lower_bound_bytes:,} bytes")
                self.events.emit("other_changed", resp)
            elif isinstance(resp, OptimizeResponse):
                self._show_optimal(resp)
            else:
                self._show(resp)
        except Exception as e:  # never a crash: say what failed, keep the document usable
            if os.environ.get("ARENA_VIEWER_DEBUG"):
                raise
            vars(self).update(saved)
            self._redraw_restored(resp)
            self.events.emit("failed", "show",
                             f"{resp.request.path}: cannot show the result: {type(e).__name__}: {e}")
            return
        if kind == "what-if-estimate" and isinstance(resp, AnalysisResponse) and not _unedited(resp.request.edits):
            self._submit(self._request(resp.request.edits), "what-if")  # the runtime confirms it

    def _redraw_restored(self, failed) -> None:
        """After showing ``failed`` raised part-way, the renderer draws the restored state
        again: the model (``model_changed``, then its edit controls: ``edits_restored``) when
        the failed response was another model's, and the view (``shown``), so title, chart and
        panels are all the previous model's again. Nothing to draw when nothing was shown."""
        full = self._full
        if full is None or not isinstance(failed, AnalysisResponse):
            return
        try:
            if failed.model is not full.model or failed.request.subgraph != full.request.subgraph:
                self.events.emit("model_changed", full)
                self.events.emit("edits_restored", self._edits)
            self.events.emit("shown")
        except Exception:  # the previous view cannot be drawn either: the failure is reported
            if os.environ.get("ARENA_VIEWER_DEBUG"):
                raise

    def _show(self, resp: AnalysisResponse) -> None:
        previous = self._full
        new_model = previous is None or previous.model is not resp.model
        new_subgraph = new_model or previous.request.subgraph != resp.request.subgraph
        self._full = resp
        self._edits = resp.request.edits
        if new_model or previous.request.runtime != resp.request.runtime:
            self._selected = None if new_model else self._selected
            self._planner = None  # another model or runtime: that runtime's own plan first
        if new_subgraph:
            self._tensor_dtypes = {}
            self._panel_edits = WhatIfEdits()
        unedited = _unedited(resp.request.edits)
        if resp.reorder is None:
            self._before_reorder = None
            if unedited:
                self._baseline = resp
        if self._baseline is not None and (self._baseline.model is not resp.model
                                           or self._baseline.request.subgraph != resp.request.subgraph):
            self._baseline = None
        if resp.reorder is not None:
            self._before_reorder = self._baseline
        self._fit_planner_and_selection()
        if new_subgraph:
            self.events.emit("model_changed", resp)
        self.events.emit("status", self._shown_status(resp))
        self.events.emit("shown")

    def _shown_status(self, resp: AnalysisResponse) -> str:
        name = os.path.basename(resp.model.path)
        a = self.response.analysis
        extra = " (shapes estimated)" if resp.estimated else ""
        stage = ""
        if resp.request.shape_source == "inferred" and not _unedited(resp.request.edits):
            stage = " — estimated; confirming with the runtime…"
        elif resp.reorder is not None:
            stage = f" — reordered: {len(resp.reorder.moved_ops)} operators moved"
        return (f"{name}: {a.num_ops} operators, {len(a.usages)} arena tensors; planned in "
                f"{resp.seconds:.2f} s{extra}{stage}"
                # one line: the Measured box shows the whole note (TFLM's has two lines)
                + (f" — {'; '.join(resp.measure_note.splitlines())}" if resp.measure_note and not stage else ""))

    def _fit_planner_and_selection(self) -> None:
        """Keep the planner when the shown response has that plan, else the runtime's own plan
        (:func:`~viewer.document.runtime_plan.runtime_plan_name`); drop a selection the shown
        analysis does not hold."""
        resp = self.response
        if self._planner not in resp.plans:
            self._planner = runtime_plan_name(resp.request.runtime, resp.plans, resp.best)
        if self._selected is not None and resp.analysis.usage(self._selected) is None:
            self._selected = None

    def _show_optimal(self, resp: OptimizeResponse) -> None:
        full = self._full
        if full is None:
            return
        for with_t in (True, False):
            view = full.showing(with_t)
            if view.analysis is resp.request.analysis:
                break
        else:  # the view it was run for is gone (another model or what-if)
            self.events.emit("status", "Optimize finished for a view no longer shown; ignored.")
            return
        self._full = view.with_plan(OPTIMAL, resp.plan)
        if self._baseline is full:
            self._baseline = self._full
        if full.has_temporaries:
            self._with_temporaries = view.temporaries_shown
        self._planner = OPTIMAL
        self._fit_planner_and_selection()
        p = resp.plan
        self.events.emit("status", f"Optimal: arena {p.arena_bytes:,} bytes, {optimal_summary(p)} "
                                   f"({p.stats.get('seconds', 0.0):.1f} s)")
        self.events.emit("shown")

    def fail(self, message: str) -> None:
        """The running work failed with the one-line ``message``.

        A failed quick estimate lets the runtime try; a rejected what-if puts the edit
        controls back to the applied edits (``edits_restored``); then ``failed(kind, message)``.
        """
        kind, self._pending = self._pending or self._last_kind, None
        if kind == "what-if-estimate" and self._pending_edits is not None and self._full is not None:
            self._submit(self._request(self._pending_edits), "what-if")  # our inference could not
            return
        if kind in ("what-if", "what-if-estimate"):
            applied = self._edits if self._full is not None else None
            self._pending_edits = applied
            self._tensor_dtypes = dict(applied.tensor_dtypes) if applied is not None else {}
            self._panel_edits = (dataclasses.replace(applied, tensor_dtypes={})
                                 if applied is not None else WhatIfEdits())
            self.events.emit("edits_restored", applied)
        self._runtime_back_to_shown(kind)
        shown = " (the previous view stays)" if self._full is not None else ""
        self.events.emit("status", message + shown)
        self.events.emit("failed", kind, message)

    def _runtime_back_to_shown(self, kind: str) -> None:
        """After a runtime switch failed or was cancelled, the target goes back to the runtime
        of what is shown (``runtime_changed``), so the selector never names another one."""
        shown = self._full.request.runtime if self._full is not None else self.runtime
        if kind == "open" and shown != self.runtime:
            self.runtime = shown
            self.events.emit("runtime_changed", shown)

    def cancelled(self) -> None:
        """The running work was cancelled (``cancelled(kind)``); nothing changes."""
        kind, self._pending = self._pending or self._last_kind, None
        self._runtime_back_to_shown(kind)
        what = {"optimize": "Optimize", "reorder": "Reorder"}.get(kind, "Work")
        self.events.emit("status", f"{what} cancelled; the view is unchanged.")
        self.events.emit("cancelled", kind)

    # --- view state -------------------------------------------------------------------------

    def set_planner(self, name: str) -> None:
        """Show plan ``name`` of the shown response (``planner_changed``); unknown names are ignored."""
        resp = self.response
        if resp is None or name not in resp.plans or name == self._planner:
            return
        self._planner = name
        self.events.emit("planner_changed", name)

    def select(self, tensor: int | None) -> None:
        """Select ``tensor`` (None or < 0 clears); ``selection_changed``."""
        tensor = None if tensor is None or tensor < 0 else int(tensor)
        self._selected = tensor
        self.events.emit("selection_changed", tensor)

    def set_with_temporaries(self, on: bool) -> None:
        """Show the analysis with (True) or without the runtime's kernel temporaries."""
        on = bool(on)
        if on == self._with_temporaries:
            return
        self._with_temporaries = on
        if self._full is None:
            return
        self._fit_planner_and_selection()
        resp = self.response
        which = "with kernel temporaries" if resp.temporaries_shown else "tensors only"
        self.events.emit("status", f"Showing {which}: lower bound {resp.analysis.lower_bound_bytes:,} bytes")
        self.events.emit("shown")

    # --- derived views ----------------------------------------------------------------------

    def compare_sides(self) -> tuple[Any, Any, str] | str:
        """The compare view's two sides; see :func:`viewer.document.views.compare_sides`."""
        return views.compare_sides(self)

    def temporary_shapes(self) -> dict[int, tuple[tuple[int, ...], str]]:
        """Shape and dtype of each kernel temporary shown; see
        :func:`viewer.document.views.temporary_shapes`."""
        return views.temporary_shapes(self.response)

    def edits_report(self) -> dict | None:
        """The shown edits as the JSON report's ``edits`` object, or None when unedited."""
        return views.edits_report(self._full)
