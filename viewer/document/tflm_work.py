"""The window's analysis for the TensorFlow Lite Micro target (``Document.runtime == "tflm"``). No Qt.

Same request and response as :func:`viewer.document.work.compute`, built from
:func:`viewer.whatif.tflm_footprint.tflm_footprint`: TFLM's rules, every planner with 16-byte
alignment, ``tflm_greedy`` first, and TFLM's own plan (``tflm_measured``) when the optional
``tflite-micro`` package measured it. Kernel scratch buffers are drawn as temporaries.
"""

from __future__ import annotations

import time

from viewer.errors import PlanCancelled

#: Key of TFLM's own plan, as in ``plan --runtime tflm --json``.
TFLM_MEASURED = "tflm_measured"


def compute_tflm(request, model, report, is_cancelled, t0: float):
    """:class:`~viewer.document.work.AnalysisResponse` for ``request`` under TFLM."""
    from viewer.document.work import AnalysisResponse
    from viewer.planning.run import best_plan_name, default_planner_names
    from viewer.planning.types import Plan
    from viewer.whatif.pipeline import prepare
    from viewer.whatif.tflm_footprint import compare_runtimes, edited_model, tflm_footprint

    edits = request.edits
    edited = edits is not None and not edits.is_empty()
    notes: tuple[str, ...] = ()
    if edited:
        report(0.05, "applying what-if edits")
        prep = prepare(model, 0, edits, shape_source=request.shape_source)
        notes = tuple(prep.notes)
        model_t = edited_model(model, prep.analysis.subgraph)
    else:
        model_t = model
    if is_cancelled():
        raise PlanCancelled("cancelled: a newer request replaced this one")
    report(0.1, "measuring with TFLite Micro" if request.measure and not edited else "planning under TFLM's rules")
    names = list(request.planners) if request.planners is not None else default_planner_names(runtime="tflm")
    # min_arena: the prepare-time extra check counts, so the budget is check's tensor_arena_size
    fp = tflm_footprint(model_t, planners=names, measure=request.measure, edited=edited, min_arena=True)
    plans = dict(fp.plans)
    m = fp.measurement
    if m is not None and m.ok and m.hooks:
        offs = {b.id: int(o) for b, o in zip(fp.problem.buffers, m.planner_offsets)}
        plans[TFLM_MEASURED] = Plan(TFLM_MEASURED, offs, m.head_bytes, 16)
    best = best_plan_name(dict(fp.plans))
    summary, diffs = compare_runtimes(fp)
    lines = [f"TFLite Micro: head {fp.head_bytes:,d} B"
             + (f", tail {fp.tail_bytes:,d} B, tensor_arena_size {fp.tensor_arena_size_bytes:,d} B"
                if fp.tail_bytes is not None else ", scratch and persistent not measured"),
             f"LiteRT arena {summary['litert_arena_bytes']:,d} B; differences: "
             + "; ".join(f"{d.what} {d.bytes:+,d} B" for d in diffs if d.bytes)]
    why = "" if fp.measured else next((n for n in fp.notes if "not measured" in n), "not measured")
    measure_note = "\n".join(lines + ([why] if why else []))  # the Summary's measured box shows it
    view = (fp.analysis, plans, best)
    report(1.0, "done")
    return AnalysisResponse(
        request, model, fp.analysis, plans, best, None, measure_note,
        notes + tuple(fp.notes), False, time.perf_counter() - t0,
        tensor_view=view, temporaries_view=None, temporaries_shown=False, footprint=fp,
    )
