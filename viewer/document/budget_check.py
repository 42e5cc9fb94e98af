"""The window's budget verdict, worded and counted as ``arena-viewer check`` words and counts it.

:func:`window_check` takes the footprint the document's response carries (computed as ``check``
computes it: :func:`viewer.whatif.footprint.footprint` with planner litert) and the What-if
panel's budget settings, and builds ``check --json``'s budget keys with ``check``'s own builders
(:mod:`viewer.whatif.verdict`, :mod:`viewer.whatif.check_report`). The window's verdict line,
its Summary headline and its JSON export all read this one result. No Qt.

The settings map to ``check`` flags: the limit is ``--budget``, the panel's runtime overhead is
``--runtime-overhead`` when above 0, else measured as ``check`` measures it
(:func:`window_overhead`), the weights mode ``--weights``,
the document's measure setting ``--no-measure`` when off, the shown subgraph ``--subgraph N``
(so other signatures leave check's "cannot tell" unknown, as ``check`` without ``--signature``).
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from viewer.whatif.check_report import (budget_json, dynamic_batch, invoke_qualifier,
                                        other_signatures_unknown, runtime_configuration, verdict_text)
from viewer.whatif.deployment import with_resource_caches
from viewer.whatif.footprint import SOURCE_ESTIMATED, SOURCE_MEASURED, Term
from viewer.whatif.verdict import (BatchGrowth, budget_terms, largest_batch_answer, margin_unknown,
                                   total_bytes, verdict)

#: Where the tiled term's figure comes from, by the window's label (TilingController.counted_arena).
_TILED_MEASURED = "measured by LiteRT"


def check_command(resp, settings) -> str:
    """The ``arena-viewer check`` command line that counts what :func:`window_check` counts."""
    r = resp.request
    given = ["--runtime-overhead", str(int(settings.runtime_bytes))] if settings.runtime_bytes else []
    words = ["arena-viewer", "check", str(resp.model.path), "--budget", str(int(settings.limit_bytes)),
             *given, "--weights", settings.weights_mode, "--subgraph", str(r.subgraph)]
    e = r.edits
    if e is not None and not e.is_empty():
        for k, shape in sorted(e.input_shapes.items()):
            words += ["--input-shape", f"{k}=" + "x".join(str(d) for d in shape)]
        if e.batch is not None:
            words += ["--batch", str(e.batch)]
        if e.activation_dtype:
            words += ["--activation-dtype", e.activation_dtype]
        for t, dt in sorted(e.tensor_dtypes.items()):
            words += ["--tensor-dtype", f"{t}={dt}"]
        if e.rescale_fixed_sizes:
            words += ["--rescale-fixed-sizes"]
    if not r.measure:
        words.append("--no-measure")
    return " ".join(shlex.quote(w) for w in words)


#: The unknown when the panel's runtime overhead is 0 (measure it) and nothing was measured.
NOT_MEASURED = ("runtime overhead (interpreter and kernel state beyond the arena): not measured "
                "here (the window measures it for the file as stored, with the runtime on); give "
                "it in the What if panel's runtime overhead field, or run check")


def window_overhead(resp, settings) -> tuple[Term, str]:
    """The runtime overhead term the window counts, as ``check`` counts it, and "" or the
    unknown it leaves (newuser3 #2/#23: a bare 0 B made a green "fits" where check said DOES
    NOT FIT).

    The panel's field above 0: given (``--runtime-overhead``). At 0 (its default, shown as
    "measured"): the growth the document's footprint measured in the probe's own process (the
    file as stored) less its terms (:func:`viewer.whatif.verdict.overhead_term`, check's
    function); when the footprint carries no measurement (a what-if, the runtime off, another
    subgraph), an unknown, never 0 B counted silently.
    """
    from viewer.whatif.footprint import SOURCE_GIVEN, SOURCE_UNKNOWN
    from viewer.whatif.verdict import overhead_term

    if settings.runtime_bytes:
        return Term("runtime overhead", int(settings.runtime_bytes), SOURCE_GIVEN,
                    "--runtime-overhead"), ""
    fp = resp.footprint
    edits = resp.request.edits
    grown = getattr(fp.probe, "overhead_grown_bytes", None) if fp.measured else None
    if grown is not None and (edits is None or edits.is_empty()):
        return overhead_term(fp, grown, "builtin", at_file_shapes=False,
                             where="in the probe's own fresh process"), ""
    return (Term("runtime overhead", 0, SOURCE_UNKNOWN, "not measured here; 0 B counted"),
            NOT_MEASURED)


def window_check(resp, settings, tiled: tuple[int, str] | None = None,
                 tile_grid: str | None = None) -> dict[str, Any] | None:
    """``check --json``'s budget keys (``verdict`` .. ``widest_op``) for the shown response.

    Parameters
    ----------
    resp : viewer.document.work.AnalysisResponse
        Its ``footprint`` (None: nothing to count) and ``batch_growth``.
    settings : viewer.whatif.budget.BudgetSettings
        None, or a ``limit_bytes`` of None: no budget set, None returned.
    tiled : (int, str), optional
        While the tiled execution is shown: the arena counted instead (bytes, label), as
        ``check --tile`` counts it; the largest batch is then not estimated, as there.
    tile_grid : str, optional
        ``"RxC@K"`` of the tiled execution, for the equivalent command.

    Returns
    -------
    dict or None
        The keys, plus ``check_command`` (the equivalent command line). None under TFLite
        Micro (its verdict is ``check --runtime tflm``'s, not built here) or without a
        footprint or a budget.
    """
    fp = getattr(resp, "footprint", None)
    if (settings is None or settings.limit_bytes is None or fp is None
            or hasattr(fp, "tensor_arena_size_bytes")):
        return None
    limit = int(settings.limit_bytes)
    model, sub, edits = resp.model, resp.request.subgraph, resp.request.edits
    overhead, not_measured = window_overhead(resp, settings)
    terms = budget_terms(fp, weights_mode=settings.weights_mode, overhead=overhead)
    terms = with_resource_caches(terms, model, sub)  # KV-cache storage: in no arena, as check counts it
    unknowns = list(fp.unknowns) + ([not_measured] if not_measured else [])
    others = other_signatures_unknown(model, sub)
    if others:  # each signature's runner allocates its own arena, as check says
        unknowns.append(others)
    if tiled is not None:  # the tiled term carries its own temporaries (measured or estimated)
        src = SOURCE_MEASURED if _TILED_MEASURED in tiled[1] else SOURCE_ESTIMATED
        terms[0] = Term("tensor arena", int(tiled[0]), src, tiled[1])
        unknowns = [u for u in unknowns if not u.startswith("kernel temporaries")]
    used = total_bytes(terms)
    within = margin_unknown(terms, used, limit)
    if within:  # a "fits" a measurement's own margin could turn, as check says
        unknowns.append(within)
    fp = dataclasses.replace(fp, unknowns=tuple(unknowns))
    result = verdict(used, limit, unknowns)
    batch = edits.batch or 1 if edits is not None else 1
    growth = getattr(resp, "batch_growth", None)
    if tiled is not None:
        growth = BatchGrowth(None, "not estimated for a tiled execution")
    elif growth is None:
        growth = BatchGrowth(None, "not evaluated (no footprint at the next batch)")
    best, growth = largest_batch_answer(limit, used, batch, growth)
    dynamic = dynamic_batch(model, sub, edits)
    text = verdict_text(result, terms, dynamic=dynamic) + invoke_qualifier(fp, result, used, limit)
    out = budget_json(fp, terms, limit=limit, used=used, verdict=result, text=text, dynamic=dynamic,
                      configuration=runtime_configuration(
                          fp.measured, overhead_given=overhead.source != SOURCE_MEASURED),
                      batch=batch, largest_batch=best, growth=growth)
    cmd = check_command(resp, settings)
    out["check_command"] = cmd + (f" --tile {tile_grid}" if tiled is not None and tile_grid else "")
    return out
