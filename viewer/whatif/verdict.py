"""The verdict on a device budget: fits, does not fit, or cannot tell; and the largest batch.

:func:`budget_terms` puts the footprint's terms (:mod:`viewer.whatif.footprint`) beside the ones
the user gives (runtime overhead) and the weights; :func:`verdict` never says "fits" when a term
is unknown, and says "does not fit" as soon as the known terms alone exceed the limit (they are
a lower bound). :func:`batch_growth` answers "largest batch" only where the runtime (or our own
shape inference, where the runtime cannot load the model) accepts batch 2.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from viewer.errors import ViewerError, WhatIfError
from viewer.whatif.edits import WhatIfEdits
from viewer.whatif.footprint import SOURCE_GIVEN, SOURCE_MEASURED, Footprint, Term, footprint_terms

VERDICT_FITS = "fits"
VERDICT_DOES_NOT_FIT = "does_not_fit"
VERDICT_CANNOT_TELL = "cannot_tell"

#: The runtime overhead's stated margin: the larger of this many bytes and this fraction of the
#: measured growth. Repeated runs in one setting agree within a page, but two processes whose
#: history differs (environment, import path, what Python freed before the interpreter was
#: built) measure the same model up to 9% apart (47 shared models, in the probe's process and in
#: one of its own: coral_deeplabv3 18.73 vs 17.06 MB, mobilenet_v2_224_int8 4.28 vs 3.96 MB,
#: small models within 24 KiB), so a verdict inside the margin is "cannot tell".
OVERHEAD_MARGIN_MIN_BYTES = 32 << 10
OVERHEAD_MARGIN_FRACTION = 0.10


def overhead_margin(grown_bytes: int) -> int:
    """The stated margin of a measured Pss_Anon growth of ``grown_bytes`` taken as a whole,
    bytes (a delegate's setup growth; two measurements of one growth compared). The no-delegate
    runtime overhead term states :func:`overhead_term_margin` instead."""
    return max(OVERHEAD_MARGIN_MIN_BYTES, -(-int(grown_bytes) * 10 // 100))

#: The stated margin of the runtime overhead *term* (the growth less the arena, persistent and
#: other subgraphs' terms): the larger of this many bytes and this fraction of the term. The
#: arena is LiteRT's own, replayed offset for offset, so it carries no margin; only the term
#: does (a tenth of the whole growth made unet_256's 1.38 MB term "±13.2 MB": newuser3 #24).
#: Measured (notes/overhead.md): 5 fresh ``check`` runs on 6 models (90 KB .. 10 MB terms,
#: TF_CPP_MIN_LOG_LEVEL set or not) agree within 4,096 B; the probe's process against one of
#: its own (47 shared models) differ by up to 37% of the term (mp_palm_detection_full 413,696 B
#: on 1,130,528 B; coral_deeplabv3 1,667,072 B on 8,332,000 B, 20%) and by up to 94,208 B where
#: the term is 0 (torchaudio_conformer). 40% and 128 KiB cover every one of them.
OVERHEAD_TERM_MARGIN_MIN_BYTES = 128 << 10
OVERHEAD_TERM_MARGIN_FRACTION = 0.40


def overhead_term_margin(term_bytes: int) -> int:
    """The stated margin of a runtime-overhead term of ``term_bytes``, bytes (at least
    :data:`OVERHEAD_TERM_MARGIN_MIN_BYTES`, else :data:`OVERHEAD_TERM_MARGIN_FRACTION` of it,
    rounded up)."""
    return max(OVERHEAD_TERM_MARGIN_MIN_BYTES, -(-int(term_bytes) * 40 // 100))

#: ``check``'s exit code for each verdict.
EXIT_CODES = {VERDICT_FITS: 0, VERDICT_DOES_NOT_FIT: 1, VERDICT_CANNOT_TELL: 3}


def budget_terms(fp: Footprint, *, runtime_bytes: int = 0, weights_mode: str = "copied",
                 overhead: Term | None = None) -> list[Term]:
    """The footprint's terms, then the runtime overhead and the weights.

    ``overhead`` (from :func:`overhead_term`) replaces the given ``runtime_bytes``. Weights are
    the model file's constant buffers (measured from the file); with ``weights_mode="mapped"``
    they are shown but not counted (page cache, reclaimable).
    """
    terms = list(fp.terms)
    terms.append(overhead if overhead is not None else
                 Term("runtime overhead", int(runtime_bytes), SOURCE_GIVEN, "--runtime-overhead"))
    terms.append(Term("weights", int(fp.weights_bytes), SOURCE_MEASURED,
                      "constant buffers in the model file, "
                      + ("copied into RAM" if weights_mode == "copied"
                         else "mapped from the file (page cache, reclaimable: not counted)"),
                      counted=weights_mode == "copied"))
    return terms


def overhead_term(fp: Footprint, grown_bytes: int, resolver: str, *, at_file_shapes: bool,
                  where: str = "in a fresh LiteRT process", file_fp: Footprint | None = None) -> Term:
    """The runtime's anonymous memory beyond the terms the measured interpreter already counts.

    ``grown_bytes`` is :func:`viewer.runtime.overhead.measure_overhead`'s Pss_Anon growth of one
    interpreter (arena, persistent, other subgraphs' arenas and everything else it keeps); the
    term is that growth minus the arena, persistent and other subgraphs' terms *of the model
    that process ran* (``Footprint.anonymous_bytes``), at least 0, so nothing is counted twice.
    Weights are mapped in that process (file-backed, not in Pss_Anon): the weights term is
    separate.

    ``at_file_shapes``: the process ran the file's shapes and types while ``fp`` is a what-if
    (or a tiled execution). The growth is then less ``file_fp``'s terms (the footprint of the
    file as stored, required then: the what-if's own arena is not what that process held), and
    the term is carried to the what-if unchanged, "estimated". Subtracting the what-if's arena
    instead would make an enlarging what-if's overhead 0 and a shrinking one's absorb the
    saving (newuser3 #8/#22). ``where``: the process measured (the probe's own, or one of its
    own), named in the method. The term carries its margin (``margin`` bytes:
    :func:`overhead_term_margin` of the term, not of the whole growth).

    Raises
    ------
    ValueError
        ``at_file_shapes`` without ``file_fp``.
    """
    from viewer.runtime.overhead import CONFIGURATIONS
    from viewer.whatif.footprint import SOURCE_ESTIMATED

    if at_file_shapes and file_fp is None:
        raise ValueError("overhead_term(at_file_shapes=True) needs the file's own footprint (file_fp)")
    base = file_fp if at_file_shapes else fp
    counted = int(base.anonymous_bytes)
    n = max(0, int(grown_bytes) - counted)
    whose = "the file's own (as stored)" if at_file_shapes else "the"
    method = (f"{CONFIGURATIONS[resolver]}: Pss_Anon (/proc/self/smaps_rollup) {where}, after "
              "allocate_tensors() and one Invoke minus before the interpreter was built = "
              f"{int(grown_bytes):,d} B, less {whose} arena, persistent and other subgraphs' terms "
              f"({counted:,d} B; interpreter and kernel state; the Python harness's few objects included)")
    if int(grown_bytes) < counted:
        method += ("; the process grew by less than those terms (below the measurement's "
                   "resolution): 0 B counted, the margin stands")
    if at_file_shapes:
        method += ("; measured at the file's shapes and types and carried to the what-if "
                   "unchanged; the what-if's own shapes were not run for it")
    method += ("; margin: 40% of this term, at least 128 KiB (processes of a different history "
               "measure it up to 37% apart)")
    return Term("runtime overhead", n, SOURCE_ESTIMATED if at_file_shapes else SOURCE_MEASURED, method,
                margin=overhead_term_margin(n))


def total_bytes(terms) -> int:
    """Sum of the counted terms, in bytes."""
    return sum(int(t.bytes) for t in terms if t.counted)


def margin_unknown(terms, total: int, limit: int) -> str:
    """"" unless the counted terms' stated margins (:attr:`Term.margin`) reach past the limit
    while ``total`` itself fits; then one phrase for the unknowns: such a "fits" can flip
    between runs, so the verdict is "cannot tell" (never a bare "fits")."""
    margin = sum(int(t.margin) for t in terms if t.counted)
    head = int(limit) - int(total)
    if margin <= 0 or head < 0 or head >= margin:
        return ""
    which = ", ".join(f"{t.name} ±{int(t.margin):,d} B" for t in terms if t.counted and t.margin)
    return (f"the headroom, {head:,d} B, is within the measurement's margin ({which}: two "
            "processes measure it up to that far apart), so it may not fit")


def verdict(total: int, limit: int, unknowns) -> str:
    """``"does_not_fit"`` when ``total > limit`` (also when ``total`` is only a lower bound),
    else ``"cannot_tell"`` when something is unknown, else ``"fits"``."""
    if int(total) > int(limit):
        return VERDICT_DOES_NOT_FIT
    return VERDICT_CANNOT_TELL if unknowns else VERDICT_FITS


@dataclass(frozen=True)
class BatchGrowth:
    """How the footprint grows with the batch.

    Attributes
    ----------
    per_example_bytes : int or None
        Bytes one more example adds (footprint at batch b+1 minus at b); None when the model
        cannot be re-batched.
    reason : str
        Why there is no answer (names the input or the operator), or how it was obtained.
    source : str
        "measured" (both footprints measured by the runtime) or "estimated".
    """

    per_example_bytes: int | None
    reason: str
    source: str = ""


def batch_dimension_problem(model, subgraph_index: int) -> str:
    """"" when dimension 0 of every graph input is a batch; else why not, naming the input.

    Dimension 0 is taken as a batch when the file marks it dynamic (-1 in ``shape_signature``)
    or stores 1 there on an input of rank >= 2. Otherwise (e.g. a conformer's 335 frames) it is
    a size of the data, never called a batch.
    """
    sg = model.subgraph(subgraph_index)
    inputs = [sg.tensors[t] for t in sg.inputs if t >= 0]
    ranked = [t for t in inputs if len(t.shape) >= 1]
    if not ranked:
        return "the model's inputs have no batch dimension (scalars)"
    for t in ranked:
        sig = tuple(t.shape_signature or ())
        if sig and sig[0] == -1:
            continue
        if len(t.shape) >= 2 and t.shape[0] == 1:
            continue
        return (f"dimension 0 of input '{t.name}' is {t.shape[0]}, a size of the data, not a "
                "batch (a batch is 1 or dynamic in the file)")
    return ""


def batch_growth(model, subgraph_index: int, edits: WhatIfEdits | None, fp: Footprint, *,
                 planner: str = "litert", measure: bool = True, timeout: float = 60.0,
                 time_limit: float | None = None) -> BatchGrowth:
    """Footprint growth per example, from the footprint at the next batch.

    The runtime resizes the inputs to batch b+1 (our shape inference where it cannot load the
    model); an operator that rejects it (a fixed RESHAPE) ends the answer with its name.
    """
    why = batch_dimension_problem(model, subgraph_index)
    if why:
        return BatchGrowth(None, why)
    base = edits if edits is not None else WhatIfEdits()
    b = base.batch or 1
    try:
        nxt = footprint_terms(model, subgraph_index, dataclasses.replace(base, batch=b + 1),
                              planner=planner, measure=measure, timeout=timeout,
                              time_limit=time_limit)
    except WhatIfError as e:
        msg = str(e)
        if msg.startswith(str(model.path) + ": "):
            msg = msg[len(str(model.path)) + 2:]
        return BatchGrowth(None, f"the model cannot take batch {b + 1}: {msg}")
    except ViewerError as e:
        return BatchGrowth(None, f"batch {b + 1} could not be evaluated: {e}")
    if nxt.unknowns:
        return BatchGrowth(None, f"at batch {b + 1}: cannot tell ({nxt.unknowns[0]})")
    per = total_bytes(nxt.terms) - total_bytes(fp.terms)
    both = fp.arena_term.source == nxt.arena_term.source == SOURCE_MEASURED
    return BatchGrowth(max(per, 0), f"extrapolated linearly from the footprints at batch {b} and {b + 1}"
                       + (" (both measured by the runtime)" if both else ""),
                       SOURCE_MEASURED if both else "estimated")


def largest_batch(limit: int, used: int, batch: int, growth: BatchGrowth) -> int | None:
    """Largest batch whose linearly extrapolated footprint fits (0: not even one); None when
    the model cannot be re-batched or the footprint does not grow with the batch."""
    if growth.per_example_bytes is None or growth.per_example_bytes <= 0:
        return None
    return max(0, int(batch) + (int(limit) - int(used)) // int(growth.per_example_bytes))


def largest_batch_answer(limit: int, used: int, batch: int,
                         growth: BatchGrowth) -> tuple[int | None, BatchGrowth]:
    """:func:`largest_batch` and the growth with the reason the user reads, as ``check`` and
    the window both say it (None: no batch answer; 0: not even one example fits)."""
    best = largest_batch(limit, used, batch, growth)
    if best is None and growth.per_example_bytes is not None:
        growth = dataclasses.replace(growth, reason="the footprint does not grow with the batch")
    elif best == 0:
        growth = dataclasses.replace(growth, reason="not even one example fits; " + growth.reason)
    return best, growth
