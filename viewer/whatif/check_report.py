"""What ``arena-viewer check`` says about a budget, for anyone who says the same: the headline's
verdict words with their qualifiers, the unknowns check adds to the footprint's, and the budget
keys of ``check --json``. ``viewer.cli.check`` and the window's JSON export both build from here,
so the two cannot drift apart.

No Qt; plain values in (a :class:`~viewer.whatif.footprint.Footprint`, the counted terms, the
verdict of :func:`viewer.whatif.verdict.verdict`), plain values out.
"""

from __future__ import annotations

from typing import Any

from viewer.whatif.footprint import SOURCE_ESTIMATED, Footprint
from viewer.whatif.verdict import VERDICT_CANNOT_TELL, VERDICT_DOES_NOT_FIT, VERDICT_FITS, BatchGrowth

#: The headline's word for each verdict.
VERDICT_TEXT = {VERDICT_FITS: "fits", VERDICT_DOES_NOT_FIT: "DOES NOT FIT",
                VERDICT_CANNOT_TELL: "CANNOT TELL whether it fits"}


def estimated_terms(terms) -> list:
    """The counted terms computed by a stated rule rather than measured or planned."""
    return [t for t in terms if t.counted and t.source == SOURCE_ESTIMATED]


def dynamic_batch(model, subgraph_index: int, edits) -> bool:
    """No batch edit and a graph input's batch is dynamic (-1 first in ``shape_signature``):
    a "fits" holds at batch 1 only."""
    if edits is not None and edits.batch is not None:
        return False
    sg = model.subgraph(subgraph_index)
    return any(sg.tensors[t].shape_signature and sg.tensors[t].shape_signature[0] == -1
               for t in sg.inputs if t >= 0)


def other_signatures_unknown(model, subgraph_index: int) -> str:
    """The unknown check adds when no signature was chosen and other signatures run other
    subgraphs (each allocates its own arena), "" when there are none."""
    others = ", ".join(f"{s.key} -> subgraph {s.subgraph_index}" for s in model.signatures
                       if s.subgraph_index != subgraph_index)
    if not others:
        return ""
    return (f"the model has other signatures ({others}) that this check did not count, "
            "each with its own arena: check each with --signature KEY, or all together with "
            "--signatures all")


def invoke_qualifier(fp: Footprint, verdict: str, used: int, limit: int) -> str:
    """What a verdict on an arena measured after one synthetic Invoke rests on ("" otherwise):
    sizes that follow the input values make it "cannot tell" (an unknown of the footprint);
    sizes that follow the input shapes only qualify the "fits"."""
    s = fp.invoke_sizing
    if s is None or verdict == VERDICT_DOES_NOT_FIT:
        return ""
    if s.value_dependent:
        return (f" (fits at the sizes of one synthetic invoke; {s.tensors} tensor(s) are sized by "
                f"input values: {', '.join(s.by_values[:3])})" if used <= limit else "")
    return (f" at the sizes of one synthetic invoke ({s.tensors} tensor(s) sized during Invoke "
            "from the input shapes only: the same at these shapes)")


def verdict_text(verdict: str, terms, *, dynamic: bool = False, tile_stages: str | None = None) -> str:
    """The headline's verdict word with what it rests on: an assumed batch 1 of a dynamic
    batch (``dynamic``), an estimated term, an assumption of ``--tile-stages in-turn``."""
    text = VERDICT_TEXT[verdict]
    if verdict == VERDICT_FITS and dynamic:  # over at batch 1 is over anyway
        text += " at batch 1 (dynamic batch)"
    est = estimated_terms(terms)
    if est:
        text += " (estimated: " + ", ".join(t.name for t in est) + ", by the rule the terms below state)"
    if tile_stages == "in-turn" and verdict != VERDICT_DOES_NOT_FIT:
        text += " (assuming the tiled stages share one arena in turn: --tile-stages in-turn)"
    return text


def runtime_configuration(measured: bool, *, delegates: str = "none", overhead_given: bool) -> str:
    """The runtime configuration the verdict's figures are for, as the verdict line names it:
    ``delegates`` "none" or "default" (the overhead measured with XNNPACK on), and whether
    the runtime overhead was given rather than measured."""
    from viewer.runtime.overhead import CONFIGURATIONS

    if not measured:
        return CONFIGURATIONS["builtin"] + ", planned only (not measured)"
    if delegates == "default" and not overhead_given:
        return ("LiteRT with its default delegates (XNNPACK on): runtime overhead measured so; "
                "the arena measured without delegates")
    return CONFIGURATIONS["builtin"] + ("" if overhead_given else
                                        " (a stock interpreter applies XNNPACK: --delegates default measures that)")


def budget_json(fp: Footprint, terms, *, limit: int, used: int, verdict: str, text: str,
                dynamic: bool, configuration: str, batch: int, largest_batch: int | None,
                growth: BatchGrowth) -> dict[str, Any]:
    """The budget keys of ``check --json``, in its order (``verdict`` .. ``widest_op``).

    Parameters
    ----------
    fp : Footprint
        What the verdict counts (its ``unknowns`` are the verdict's, check's additions in).
    terms : list of Term
        The counted terms (:func:`viewer.whatif.verdict.budget_terms`), the tensor arena first.
    limit, used : int
        Bytes.
    text : str
        :func:`verdict_text` + :func:`invoke_qualifier`.
    """
    by_name = {t.name: t for t in terms}
    weights = by_name["weights"]
    return {
        "verdict": verdict,
        "fits": verdict == VERDICT_FITS,
        "verdict_text": text,
        "estimated": bool(estimated_terms(terms)),
        "dynamic_batch": bool(dynamic),
        "configuration": configuration,
        "sized_at_invoke": fp.invoke_sizing.as_dict() if fp.invoke_sizing is not None else None,
        "unknowns": list(fp.unknowns),
        "terms": [{"name": t.name, "bytes": int(t.bytes), "source": t.source, "method": t.method,
                   "counted": t.counted, "margin_bytes": int(getattr(t, "margin", 0))}
                  for t in terms],
        "limit_bytes": int(limit),
        "measured": fp.measured,
        "counted_arena": f"{terms[0].source}: {terms[0].method}",
        "arena_bytes": terms[0].bytes,
        "arena_source": terms[0].source,
        "temporaries_included": fp.temporaries_included,
        "planned_tensor_arena_bytes": fp.planned_tensor_arena_bytes,
        "measured_arena_bytes": fp.measured_arena_bytes,
        "temporaries_count": fp.temporaries_count,
        "temporaries_bytes": fp.temporaries_bytes,
        "persistent_bytes": fp.persistent_bytes,
        "other_subgraphs": [
            {"index": s.index, "reached_by": s.reached_by, "arena_bytes": s.arena_bytes,
             "source": s.source}
            for s in fp.other_subgraphs
        ],
        "other_subgraphs_bytes": fp.other_subgraphs_bytes,
        "weights_bytes": weights.bytes,
        "weights_counted": weights.counted,
        "runtime_bytes": by_name["runtime overhead"].bytes,
        "used_bytes": int(used),
        "headroom_bytes": int(limit) - int(used),
        "batch": int(batch),
        "largest_batch": largest_batch,
        "largest_batch_note": growth.reason,
        "lower_bound_bytes": fp.analysis.lower_bound_bytes,
        "widest_op": fp.analysis.widest_op,
    }
