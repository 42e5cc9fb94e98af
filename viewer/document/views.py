"""Read-only views derived from a :class:`~viewer.document.state.Document`: the compare view's
two sides, the kernel temporaries' shapes for the tensor table, the JSON report's ``edits``.

Each function reads only the document's public state (``response``, ``full_response``,
``baseline``, ``other``, ``planner``, ``with_temporaries``) and changes nothing. No Qt.
"""

from __future__ import annotations

import math
import os
from typing import Any

from viewer.model.dtypes import BITS
from viewer.whatif.edits import WhatIfEdits, edits_label


#: What a chart's title adds when the kernel temporaries drawn are estimates (a storage what-if
#: the runtime cannot run: measured at the file's types, rescaled).
ESTIMATED_TITLE = " (kernel temporaries estimated)"


def unedited(edits: WhatIfEdits | None) -> bool:
    """True for no edits (None or empty): the model as stored."""
    return edits is None or edits.is_empty()


def compare_sides(doc) -> tuple[Any, Any, str] | str:
    """The compare view's two sides, like with like, or why there is nothing to compare.

    Returns
    -------
    tuple or str
        ``((analysis, plan, label), (analysis, plan, label), note)``: the baseline and the
        shown response under the same planner (their smallest when one lacks it), both
        with kernel temporaries or both without; or a one-line message.
    """
    resp, base = doc.response, doc.baseline
    if resp is not None and doc.other is not None:
        return _model_sides(doc, resp, doc.other)
    if resp is None or base is None:
        return "Open a model: the compare view shows its baseline beside the what-if."
    # A storage-dtype what-if is planned without the runtime, so it has no temporaries.
    with_t = doc.with_temporaries and bool(resp.temporaries_shown)
    note = "" if with_t or not doc.with_temporaries or not base.has_temporaries else (
        "both without kernel temporaries (the what-if was not measured)")
    base = base.showing(with_t)
    planner = doc.planner
    same = planner if planner in base.plans and planner in resp.plans else None
    left, right = base.plans.get(same or base.best), resp.plans.get(same or resp.best)
    if left is None or right is None:
        return "No plan to compare."
    name = os.path.basename(resp.model.path)
    what = edits_label(resp.request.edits)
    label = (f"what-if: {what}" if what
             else ("reordered" if resp.reorder is not None else f"shown: {name}"))
    if resp.temporaries_estimated and with_t:
        note = ("the what-if's kernel temporaries are estimated (the runtime cannot store "
                "tensors in another dtype)")
        label += ESTIMATED_TITLE  # on its chart's title, as the main chart's says
    return (base.analysis, left, f"baseline: {name}"), (resp.analysis, right, label), note


def _model_sides(doc, resp, other):
    """This model (as shown) beside the other one: both with kernel temporaries or both
    without, each under its smallest plan unless both have the shown planner."""
    full = doc.full_response
    with_t = doc.with_temporaries and full.has_temporaries and other.has_temporaries
    which = "neither was" if not (full.has_temporaries or other.has_temporaries) else "one was not"
    note = "" if with_t else f"both without kernel temporaries ({which} measured)"
    mine, theirs = full.showing(with_t), other.showing(with_t)
    planner = doc.planner
    same = planner if planner in mine.plans and planner in theirs.plans else None
    left, right = mine.plans.get(same or mine.best), theirs.plans.get(same or theirs.best)
    if left is None or right is None:
        return "No plan to compare."
    name = os.path.basename(resp.model.path)
    what = edits_label(resp.request.edits)
    if what:  # the edit is this model's: the other is compared as stored
        note = "; ".join(n for n in (
            f"the what-if ({what}) is applied to {name} only; "
            f"{os.path.basename(other.model.path)} is as stored", note) if n)
    est = ESTIMATED_TITLE if mine.temporaries_estimated else ""
    return ((mine.analysis, left, f"{name}" + (f" — what-if: {what}" if what else "") + est),
            (theirs.analysis, right, f"other: {os.path.basename(other.model.path)}"), note)


def outside_arena(resp) -> tuple[int, int] | None:
    """``(persistent_bytes, other_subgraphs_bytes)`` of ``resp``'s footprint (the terms
    ``check`` counts beside the arena), or None when it has none (not known)."""
    fp = getattr(resp, "footprint", None) if resp is not None else None
    if fp is None:
        return None
    return int(fp.persistent_bytes), int(fp.other_subgraphs_bytes)


def compare_outside(doc) -> tuple[Any, Any]:
    """Both compare sides' :func:`outside_arena`: (this model, the other model) while one is
    compared, else (the baseline, the shown response)."""
    if doc.other is not None:
        return outside_arena(doc.full_response), outside_arena(doc.other)
    return outside_arena(doc.baseline), outside_arena(doc.response)


def temporary_shapes(resp) -> dict[int, tuple[tuple[int, ...], str]]:
    """Shape and dtype of each kernel temporary shown in ``resp`` (runtime tensor id ->
    ``(shape, dtype)``); empty when none are shown.

    Measured: the runtime's own. Under a storage what-if the runtime cannot run, the
    temporaries are the ones measured at the file's types, rescaled
    (:mod:`viewer.whatif.footprint`): the measured shape, with the dtype whose element size
    the rescaled bytes imply, marked "(estimated)"; a temporary whose bytes no longer divide
    by its shape (shapes changed too) is left out (shown as "-").
    """
    if resp is None or not resp.temporaries_shown:
        return {}
    probe = getattr(resp, "probe", None)
    if probe is not None and getattr(probe, "ok", False):
        return {tp.id: (tuple(int(d) for d in (probe.tensors[tp.id].shape or ())),
                        str(probe.tensors[tp.id].dtype))
                for tp in getattr(probe, "arena_temporaries", ()) or ()}
    fp = getattr(resp, "footprint", None)
    probe = getattr(fp, "probe", None)
    if probe is None or not getattr(probe, "ok", False):
        return {}
    return _estimated_temporary_shapes(resp.analysis, probe)


def edits_report(full) -> dict | None:
    """The edits of ``full`` (the document's full response) as the JSON report's ``edits``
    object, or None when unedited."""
    if full is None or unedited(full.request.edits):
        return None
    e = full.request.edits
    return {"input_shapes": {str(k): list(v) for k, v in e.input_shapes.items()},
            "batch": e.batch, "activation_dtype": e.activation_dtype,
            "tensor_dtypes": {str(k): v for k, v in e.tensor_dtypes.items()},
            "rescale_fixed_sizes": bool(e.rescale_fixed_sizes)}


def _estimated_temporary_shapes(analysis, probe) -> dict[int, tuple[tuple[int, ...], str]]:
    """Rescaled temporaries (:func:`temporary_shapes`): the shape the runtime measured
    at the file's types and the dtype of the rescaled element size, "(estimated)"."""
    sizes: dict[int, list[str]] = {}
    for name, bits in BITS.items():
        if bits and bits % 8 == 0:
            sizes.setdefault(bits // 8, []).append(name)
    sg = analysis.subgraph
    out = {}
    for u in analysis.usages:
        if u.tensor not in analysis.temporaries_ops or u.tensor >= len(probe.tensors):
            continue
        rt = probe.tensors[u.tensor]
        shape = tuple(int(d) for d in (rt.shape or ()))
        n = math.prod(shape) if shape else 0
        if n <= 0 or u.nbytes % n:
            continue
        elem = u.nbytes // n
        if BITS.get(str(rt.dtype), 0) == 8 * elem:
            out[u.tensor] = (shape, str(rt.dtype))
            continue
        # The dtype of its operator's (edited) input with that element size, else any.
        op = sg.operators[u.first_op] if 0 <= u.first_op < len(sg.operators) else None
        x = op.inputs[0] if op is not None and op.inputs and op.inputs[0] >= 0 else None
        given = sg.tensors[x].dtype if x is not None and x < len(sg.tensors) else None
        names = sizes.get(elem, [])
        dtype = given if given in names else (names[0] if names else None)
        if dtype is not None:
            out[u.tensor] = (shape, f"{dtype} (estimated)")
    return out
