"""``arena-viewer check MODEL --budget SIZE``: does the model's memory fit a device budget?

What counts (each term printed on its own line):

- the tensor arena: by default the one the LiteRT runtime really allocates (run in a subprocess,
  kernel temporaries included); with ``--no-measure`` the planner's arena of the model's tensors
  only (kernel temporaries missing, said in the output);
- persistent bytes outside the arena (prepare-time outputs such as dequantized fp16 weights,
  variables);
- the arenas of the other subgraphs reached through control flow (WHILE, IF, CALL_ONCE);
- the weights when copied into RAM (``--weights copied``, the default);
- the runtime overhead: by default measured (the Pss_Anon one LiteRT interpreter adds in a fresh
  process, less the terms above: :func:`viewer.whatif.verdict.overhead_term`), or the size given
  with ``--runtime-overhead``; unknown (cannot tell) when nothing was measured.

The sum comes from :func:`viewer.whatif.footprint.footprint`. Exit 0 when it fits, 1 when it
does not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time

from viewer.cli._common import StoreOnce, positive_seconds, add_model_args, known_planners_help
from viewer.cli._delegate_check import add_delegate_args, delegate_spec, run_delegate_check
from viewer.cli._tile_check import add_tile_arg, apply_tile
from viewer.cli._deployment import add_deployment_args, run_check as run_deployment_check, wanted as deployment_wanted
from viewer.cli._tflm import add_runtime_arg, is_tflm, run_check as run_tflm_check
from viewer.cli._edits import add_edit_args, edit_notes, edits_from_args
from viewer.errors import UsageError, ViewerError
from viewer.model.reader import load_model
from viewer.planning.registry import get_planner
from viewer.units import SIZE_SYNTAX, format_bytes, parse_size
from viewer.whatif.budget import WEIGHTS_MODES, fixed_bytes
from viewer.whatif.check_report import (budget_json, dynamic_batch, invoke_qualifier,
                                        other_signatures_unknown, runtime_configuration, verdict_text)
from viewer.whatif.deployment import with_resource_caches
from viewer.whatif.edits import without_noop_storage
from viewer.whatif.footprint import SOURCE_ESTIMATED, SOURCE_MEASURED, Term, footprint, signature_keys
from viewer.whatif.verdict import (EXIT_CODES, VERDICT_CANNOT_TELL, VERDICT_FITS, batch_growth,
                                   BatchGrowth, budget_terms, largest_batch_answer, margin_unknown,
                                   total_bytes, verdict)

#: The planner LiteRT's own arena follows (ArenaPlanner, re-stated byte for byte): the verdict's.
RUNTIME_PLANNER = "litert"
#: Largest square side ``--find-resolution`` tries (pixels).
MAX_SIDE = 4096
#: Seconds after which ``--find-resolution`` reports each evaluation on stderr.
PROGRESS_AFTER_S = 2.0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check that the model's memory (runtime's tensor arena, persistent, other "
             "subgraphs, weights, overhead) fits a device budget (exit 0 fits, 1 does not)",
        description="Add up what MODEL needs (after any what-if edits): the tensor arena the "
        "LiteRT runtime allocates (kernel temporaries included; --no-measure: planned, without "
        "them), persistent bytes, the arenas of subgraphs reached through control flow, weights "
        "when copied, and the runtime overhead; compare with a device budget. Exit 0 when it "
        "fits, 1 when not.",
    )
    add_model_args(p)
    p.add_argument("--budget", required=True, action=StoreOnce, metavar="SIZE", help=f"device limit in {SIZE_SYNTAX}")
    p.add_argument("--planner", default="litert", metavar="NAME",
                   help="also print what the arena would be with this planner's layout, as a "
                        "what-if: best (the smallest non-exact plan) or one of: "
                        f"{known_planners_help()}. LiteRT lays out its own arena, so the verdict "
                        "always counts the runtime's (litert, the default)")
    p.add_argument("--no-measure", dest="measure", action="store_false",
                   help="plan only, without running LiteRT: kernel temporaries are then missing "
                        "and the runtime's arena may be larger")
    p.add_argument("--time-limit", type=positive_seconds, default=None, metavar="S",
                   help="seconds for an exact planner (optimal), > 0")
    p.add_argument("--timeout", type=positive_seconds, default=120.0, metavar="S",
                   help="seconds before the LiteRT process is killed (default 120)")
    p.add_argument("--runtime-overhead", default=None, metavar="SIZE",
                   help="runtime overhead added to the sum instead of the measured one (by "
                        "default: the anonymous memory one LiteRT interpreter adds in a fresh "
                        f"process beyond the arena, persistent and other subgraphs' terms), in {SIZE_SYNTAX}")
    p.add_argument("--delegates", choices=("none", "default"), default="none",
                   help="none (LiteRT without default delegates, XNNPACK off, the default) or "
                        "default (a stock interpreter: XNNPACK on; its CPU arena, packed weights "
                        "and runtime are each measured as their own terms)")
    add_delegate_args(p)
    p.add_argument("--weights", choices=WEIGHTS_MODES, default=None,
                   help="copied: weights count against the budget (default for litert); mapped: "
                        "file-backed page cache (or flash, the default for --runtime tflm), shown "
                        "but not counted")
    p.add_argument("--find-resolution", action="store_true",
                   help="also search the largest square input resolution that fits (image models; "
                        "every side 1..4096, step 1, by bisection on our estimate, the answer and "
                        "the next side confirmed by LiteRT, at most 20 runtime probes; a model "
                        "whose size is fixed names the operator; combine with --rescale-fixed-sizes)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    add_edit_args(p)
    add_runtime_arg(p)
    add_tile_arg(p)
    add_deployment_args(p)
    p.set_defaults(run=run)


def _positive_seconds(flag: str, value: float | None) -> float | None:
    if value is None:
        return None
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} {value:g}: need a positive, finite number of seconds "
                         "(e.g. 10; omit it for no limit)")
    return float(value)


def _image_input(model, subgraph: int) -> bool:
    sg = model.subgraph(subgraph)
    return any(sg.tensors[i].shape is not None and len(sg.tensors[i].shape) == 4 for i in sg.inputs)


def _counted_arena(fp) -> int:
    """The tensor-arena term of ``fp`` (the runtime's own arena when measured with litert)."""
    return int(fp.arena_bytes)


def _counted_label(fp) -> str:
    t = fp.arena_term
    return f"{t.source}: {t.method}"


def _other_signatures(model, args) -> str:
    """The unknown for signatures that run another subgraph than the one checked, when no
    ``--signature`` chose one; "" otherwise (:func:`~viewer.whatif.check_report.other_signatures_unknown`)."""
    if getattr(args, "signature", None) is not None:
        return ""
    return other_signatures_unknown(model, args.subgraph)


def run(args: argparse.Namespace) -> int:
    spec = delegate_spec(args)
    if spec is not None:  # every term measured under the delegate (viewer/cli/_delegate_check.py)
        return run_delegate_check(args, spec)
    if deployment_wanted(args):  # several signatures in one interpreter, KV caches counted once
        return run_deployment_check(args)
    if is_tflm(args):
        return run_tflm_check(args)
    args.weights = args.weights or "copied"
    limit = parse_size(args.budget)
    if limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    runtime = parse_size(args.runtime_overhead) if args.runtime_overhead is not None else None
    time_limit = _positive_seconds("--time-limit", args.time_limit)
    timeout = _positive_seconds("--timeout", args.timeout)
    edits = edits_from_args(args, rescale_needs_shape=not args.find_resolution)
    args._edits = edits
    if args.planner != "best":
        get_planner(args.planner)  # an unknown name: one line before any work
    overhead_in_probe = runtime is None and args.delegates == "none"
    model = load_model(args.model)
    edits, noop = without_noop_storage(model, args.subgraph, edits)  # keeps the measurement
    args._edits = edits
    _ask_ahead_next_batch(args, model, edits, timeout)
    # LiteRT plans its own arena (ArenaPlanner): the verdict counts that one; another planner's
    # layout is a what-if the board would not see (args._whatif, printed beside the verdict).
    fp = footprint(model, args.subgraph, edits, planner=RUNTIME_PLANNER, measure=args.measure,
                   timeout=timeout, time_limit=time_limit,
                   runtime_overhead=overhead_in_probe)
    if noop:
        fp = dataclasses.replace(fp, notes=(noop, *fp.notes))
    args._whatif = (None if args.planner == RUNTIME_PLANNER else
                    footprint(model, args.subgraph, edits, planner=args.planner,
                              measure=args.measure, timeout=timeout, time_limit=time_limit))
    batch = edits.batch or 1 if edits is not None else 1
    overhead, overhead_unknown = _overhead(args, model, fp, edits, runtime, timeout)
    runtime = overhead.bytes
    terms = budget_terms(fp, weights_mode=args.weights, overhead=overhead)
    terms = with_resource_caches(terms, model, args.subgraph)  # KV-cache storage: in no arena
    tiled, _, counted, args._tile = apply_tile(args, fp.arena_bytes, fp.arena_term.method,
                                               fp.arena_term.method)
    if args._tile is not None:  # the tiled execution's peak replaces the arena term
        src = SOURCE_MEASURED if "measured by LiteRT" in counted else SOURCE_ESTIMATED
        terms[0] = Term("tensor arena", int(tiled), src, counted)
    unknowns = list(fp.unknowns)
    if overhead_unknown:
        unknowns.append(overhead_unknown)
        fp = dataclasses.replace(fp, unknowns=tuple(unknowns))
    others = _other_signatures(model, args)
    if others:  # each signature's runner allocates its own arena: one checked is not all checked
        unknowns.append(others)
        fp = dataclasses.replace(fp, unknowns=tuple(unknowns))
    if args._tile is not None:  # the tiled term carries its own temporaries (measured or estimated)
        unknowns = [u for u in unknowns if not u.startswith("kernel temporaries")]
        fp = dataclasses.replace(fp, unknowns=tuple(unknowns))
    used = total_bytes(terms)
    within = margin_unknown(terms, used, limit)
    if within:  # a "fits" the measurement's own margin could turn: not a bare "fits"
        unknowns.append(within)
        fp = dataclasses.replace(fp, unknowns=tuple(unknowns))
    result = verdict(used, limit, unknowns)
    if args._tile is not None:
        growth = BatchGrowth(None, "not estimated for a tiled execution")
    else:
        growth = batch_growth(model, args.subgraph, edits, fp, planner=RUNTIME_PLANNER,
                              measure=args.measure, timeout=timeout, time_limit=time_limit)
    best_batch, growth = largest_batch_answer(limit, used, batch, growth)
    found = None
    if args.find_resolution:
        found = _find_resolution(args, model, edits, limit, runtime, time_limit, timeout)
    rep = _Report(limit, used, batch, result, terms, best_batch, growth)
    args._whatif_used = None
    if args._whatif is not None:
        wterms = with_resource_caches(budget_terms(args._whatif, weights_mode=args.weights, overhead=overhead),
                                      model, args.subgraph)
        args._whatif_used = total_bytes(wterms)
    if args.json:
        _print_json(args, model, fp, rep, found)
    else:
        _print_lines(args, model, fp, rep, found)
    if result == VERDICT_CANNOT_TELL:
        print(f"arena-viewer: cannot tell whether {model.path} fits in {_b(limit)}: "
              + "; ".join(fp.unknowns), file=sys.stderr)
    return EXIT_CODES[result]


def _ask_ahead_next_batch(args, model, edits, timeout: float) -> None:
    """Start the next batch's totals (:func:`viewer.whatif.footprint.footprint_terms`) in a
    process of their own, once the reader has accepted the file, while the batch-1 probe runs:
    a second core does it meanwhile (at 100k operators ~3 s of wall time)."""
    import dataclasses as dc

    from viewer.whatif.edits import WhatIfEdits
    from viewer.whatif.footprint import totals_shapes
    from viewer.whatif.verdict import batch_dimension_problem

    if not args.measure or getattr(args, "tile", None) or batch_dimension_problem(model, args.subgraph):
        return
    base = edits if edits is not None else WhatIfEdits()
    shapes = totals_shapes(model, args.subgraph, dc.replace(base, batch=(base.batch or 1) + 1))
    if shapes is not None:
        from viewer.runtime.worker import prefetch_totals

        prefetch_totals(model.path, shapes, timeout)


#: JSON ``delegates`` of the no-delegate check: LiteRT with BUILTIN_WITHOUT_DEFAULT_DELEGATES.
DELEGATES_NONE = "none"


def _delegates_headline(args) -> str:  # noqa: ARG001 - one configuration here
    """What the headline says of the delegates measured: this check (the project's oracle)
    runs LiteRT with XNNPACK off, which a stock interpreter does not (newuser3 #19)."""
    return " (XNNPACK off; a stock interpreter: --delegates default)"


def configuration(args, fp) -> str:
    """The runtime configuration the verdict's figures are for, as the verdict line names it."""
    return runtime_configuration(fp.measured, delegates=args.delegates,
                                 overhead_given=args.runtime_overhead is not None)


def _overhead(args, model, fp, edits, given: int | None, timeout: float) -> tuple[Term, str]:
    """(the runtime overhead term, "" or the unknown it leaves): given, else measured in the
    batch-1 probe's own process when it ran at the file's shapes (``footprint(...,
    runtime_overhead=True)``), else in a fresh LiteRT process of its own
    (:func:`viewer.runtime.overhead.measure_overhead`): the same definition either way.

    For a what-if (or a tiled execution) the growth is measured at the file's shapes and types,
    so it is less the *file's* own terms (:func:`_file_footprint`), and that term is carried to
    the what-if unchanged, "estimated" (:func:`viewer.whatif.verdict.overhead_term`)."""
    from viewer.runtime.overhead import measure_overhead
    from viewer.whatif.footprint import SOURCE_GIVEN, SOURCE_UNKNOWN
    from viewer.whatif.verdict import overhead_term

    if given is not None:
        return Term("runtime overhead", int(given), SOURCE_GIVEN, "--runtime-overhead"), ""
    why = "not measured (--no-measure)" if not args.measure else \
        "not measured (the runtime did not load the model)"
    if fp.measured:
        resolver = "default" if args.delegates == "default" else "builtin"
        edited = edits is not None and not edits.is_empty()
        shifted = edited or bool(getattr(args, "tile", None))
        base = _file_footprint(model, args.subgraph, timeout, resolver) if edited else fp
        if base is None or not base.measured:
            why = "not measured (the runtime did not run the file as stored)"
        else:
            grown = getattr(base.probe, "overhead_grown_bytes", None) if resolver == "builtin" else None
            if grown is not None:
                return overhead_term(fp, grown, resolver, at_file_shapes=shifted, file_fp=base,
                                     where="in the probe's own fresh process"), ""
            m = measure_overhead(model.path, resolver, timeout)
            if m.grown_bytes is not None:
                return overhead_term(fp, m.grown_bytes, resolver, at_file_shapes=shifted,
                                     file_fp=base), ""
            why = f"not measured ({m.error})"
    return (Term("runtime overhead", 0, SOURCE_UNKNOWN, why + "; 0 B counted"),
            f"runtime overhead (interpreter and kernel state beyond the arena): {why}; "
            "give --runtime-overhead SIZE")


def _file_footprint(model, subgraph: int, timeout: float, resolver: str):
    """The footprint of the file as stored (no what-if), measured by LiteRT, with the runtime
    overhead metered in the probe's own process where it can be (subgraph 0, builtin
    resolver); None when the runtime does not run it."""
    try:
        return footprint(model, subgraph, None, planner=RUNTIME_PLANNER, measure=True,
                         timeout=timeout, detail=False, runtime_overhead=resolver == "builtin")
    except ViewerError:  # the stored file's own footprint fails: the overhead is then unknown
        return None


@dataclasses.dataclass(frozen=True)
class _Report:
    limit: int
    used: int
    batch: int
    verdict: str
    terms: list
    largest_batch: int | None
    growth: object

    @property
    def fits(self) -> bool:
        return self.verdict == VERDICT_FITS


def _find_resolution(args, model, edits, limit, runtime, time_limit, timeout):
    """(ResolutionSearch or None, reason when not searched)."""
    from viewer.whatif.resolution import find_largest_square, square_input_problem

    if not _image_input(model, args.subgraph):
        return None, "not an image model (no rank-4 NHWC input), so no square resolution to search"
    problem = square_input_problem(model, args.subgraph)
    if problem:
        return None, f"not searched: {problem}"
    avail = limit - fixed_bytes(model.weights_bytes, runtime, args.weights)
    t0 = time.monotonic()

    def total(fp) -> int:
        return _counted_arena(fp) + fp.persistent_bytes + fp.other_subgraphs_bytes

    def progress(kind: str, side: int, nbytes: int | None) -> None:
        if time.monotonic() - t0 < PROGRESS_AFTER_S:
            return
        what = ("the model does not take it" if nbytes is None else
                f"{format_bytes(nbytes)}, {'fits' if nbytes <= avail else 'does not fit'}")
        print(f"find-resolution: {side}x{side} ({kind}): {what}", file=sys.stderr, flush=True)

    found = find_largest_square(model, args.subgraph, edits, avail, total=total,
                                planner=RUNTIME_PLANNER, measure=args.measure, timeout=timeout,
                                time_limit=time_limit, max_side=MAX_SIDE, progress=progress)
    return found, ""


def _resolution_lines(found) -> list[str]:
    search, reason = found
    if search is None:
        return [f"largest square input that fits: {reason}"]
    if search.cannot_tell:
        return [f"largest square input that fits: cannot tell ({search.cannot_tell})"]
    if search.fixed_by:
        s = search.side
        head = ("largest square input that fits: "
                + (f"{s}x{s}, the only size the model takes ({_b(search.total_bytes)})" if s else
                   "none: the model takes only its stored size, which does not fit"))
        return [head, f"  fixed by: {search.fixed_by}", f"  ({search.note}; {_probes(search)})"]
    if search.side:
        head = (f"largest square input that fits: {search.side}x{search.side} "
                f"({_b(search.total_bytes)}: arena + persistent + other subgraphs"
                + ("" if search.confirmed else "; NOT confirmed by the runtime") + ")")
    else:
        head = "largest square input that fits: none (no resolution the model takes fits)"
    return [head, f"  ({search.note}; {_probes(search)})"]


def _probes(search) -> str:
    err = search.estimate_error
    return (f"{search.runtime_probes} runtime probe{'s' if search.runtime_probes != 1 else ''}, "
            f"{search.estimates} estimates"
            + (f", estimate within {err:.1%} of the runtime where both ran" if err is not None else ""))


def _edits_of(args):
    return getattr(args, "_edits", None)


def _b(n: int) -> str:
    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


def _invoke_qualifier(fp, rep) -> str:
    return invoke_qualifier(fp, rep.verdict, rep.used, rep.limit)


def _dynamic_batch(args, model) -> bool:
    """No --batch given and a graph input's batch is dynamic (-1 first in shape_signature)."""
    return dynamic_batch(model, args.subgraph, _edits_of(args))


def _verdict_text(args, model, rep) -> str:
    """The headline's verdict word with what it rests on (:func:`~viewer.whatif.check_report.verdict_text`)."""
    tiled = getattr(args, "_tile", None)
    return verdict_text(rep.verdict, rep.terms, dynamic=_dynamic_batch(args, model),
                        tile_stages=tiled.get("stages") if tiled is not None else None)


def _term_line(t, batch: int, first: bool) -> str:
    name = f"tensor arena at batch {batch}" if first else t.name
    if t.name == "weights":
        name = "weights (copied, counted)" if t.counted else \
            "weights (mapped: page cache, reclaimable, not counted)"
    lead = "" if first else ("+ " if t.counted else "  ")
    margin = f" ±{t.margin:,d} B" if getattr(t, "margin", 0) else ""
    return f"{lead}{name}: {_b(t.bytes)}  [{t.source}{margin}: {t.method}]"


def _print_lines(args, model, fp, rep, found) -> None:
    out = print
    tiled = getattr(args, "_tile", None)
    sigs = signature_keys(model, args.subgraph)
    where = f"subgraph {args.subgraph}" + (f" (signature {', '.join(sigs)})" if sigs else "")
    out(f"{model.path} {where}: {_verdict_text(args, model, rep)}{_invoke_qualifier(fp, rep)} in "
        f"{_b(rep.limit)} with planner {fp.planner}{_delegates_headline(args)}")
    out(f"  configuration: {configuration(args, fp)}")
    out(f"  counted: {rep.terms[0].source}: {rep.terms[0].method}")
    for u in fp.unknowns:
        out(f"  unknown: {u}")
    notes = edit_notes(model, args.subgraph, _edits_of(args)) + list(fp.notes)
    for note in notes[:4]:
        out(f"note: {note}")
    if len(notes) > 4:
        out(f"note: ... {len(notes) - 4} more note(s) (see 'arena-viewer plan' for all)")
    for k, t in enumerate(rep.terms):
        if k > 0 and not t.bytes and t.name.startswith("persistent"):
            continue
        out(f"  {_term_line(t, rep.batch, k == 0)}")
        if k == 0 and fp.temporaries_count and fp.temporaries_included and tiled is None:
            n, big = fp.temporaries_count, fp.largest_temporary
            out(f"    kernel temporaries: {n} tensor{'s' if n != 1 else ''}, "
                f"{_b(fp.temporaries_bytes)} in all (they share the arena over time)"
                + (f"; largest {_b(big[3])} at operator {big[1]} {big[2]}" if big else ""))
    bound = " (a lower bound: something is unknown)" if fp.unknowns else ""
    out(f"  = used: {_b(rep.used)} of {_b(rep.limit)}{bound}")
    head = rep.limit - rep.used
    out(f"  headroom: {_b(head)}" if head >= 0 else f"  over budget by {_b(-head)}")
    for line in _whatif_lines(args, rep):
        out(f"  {line}")
    g = rep.growth
    lb_text = "none" if rep.largest_batch is None else str(rep.largest_batch)
    out(f"  largest batch: {lb_text} ({g.reason})")
    w = fp.analysis.widest_op
    if w >= 0:
        if tiled is None:  # the untiled widest operator does not bind the tiled execution
            out(f"  binding (widest) operator: {w} {fp.analysis.op_name(w)}")
        what = "kernel temporaries included" if fp.temporaries_included else "model tensors only"
        out(f"  {'' if tiled is None else 'untiled '}lower bound (widest operator's breadth, {what}): "
            f"{_b(fp.analysis.lower_bound_bytes)}")
    if found is not None:
        for line in _resolution_lines(found):
            out(f"  {line}")


def _whatif_lines(args, rep) -> list[str]:
    """The other planner's layout, said as a what-if LiteRT does not run (not the verdict)."""
    w = getattr(args, "_whatif", None)
    if w is None:
        return []
    used = args._whatif_used
    head = rep.limit - used
    t = w.arena_term
    first = (f"what-if: with {w.planner}'s layout the tensor arena would be {_b(t.bytes)} "
             f"[{t.source}: {t.method}], used {_b(used)}, "
             + (f"headroom {_b(head)}" if head >= 0 else f"over budget by {_b(-head)}"))
    if w.plan is not None and w.plan.planner == RUNTIME_PLANNER:  # best = litert: the same layout
        return [first, "  that is the layout LiteRT itself plans (litert): the verdict above counts it"]
    return [first, "  LiteRT does not use that layout (it plans its own arena, re-stated as litert): "
                   "the verdict above counts that one"]


def _whatif_json(args, rep) -> dict | None:
    w = getattr(args, "_whatif", None)
    if w is None:
        return None
    t = w.arena_term
    return {"planner": w.planner, "arena_bytes": int(t.bytes), "arena_source": t.source,
            "arena_method": t.method, "used_bytes": int(args._whatif_used),
            "headroom_bytes": int(rep.limit - args._whatif_used),
            "note": "a what-if: LiteRT does not use this layout; the verdict counts the "
                    "runtime's own arena"}


def _print_json(args, model, fp, rep, found) -> None:
    report = {
        "model": str(model.path),
        "runtime": "litert",
        "subgraph": args.subgraph,
        "signatures": list(signature_keys(model, args.subgraph)),
        "planner": fp.planner,
        "delegates": DELEGATES_NONE,
        **budget_json(fp, rep.terms, limit=rep.limit, used=rep.used, verdict=rep.verdict,
                      text=_verdict_text(args, model, rep) + _invoke_qualifier(fp, rep),
                      dynamic=_dynamic_batch(args, model), configuration=configuration(args, fp),
                      batch=rep.batch, largest_batch=rep.largest_batch, growth=rep.growth),
        "notes": edit_notes(model, args.subgraph, _edits_of(args)) + list(fp.notes),
    }
    report["whatif_planner"] = _whatif_json(args, rep)
    if getattr(args, "_tile", None) is not None:
        report["tile"] = args._tile
    if found is not None:
        search, reason = found
        report["find_resolution"] = (
            {"side": None, "reason": reason} if search is None else
            {"side": search.side or None, "total_bytes": search.total_bytes,
             "confirmed": search.confirmed, "neighbour": search.neighbour,
             "neighbour_bytes": search.neighbour_bytes, "fixed_by": search.fixed_by or None,
             "runtime_probes": search.runtime_probes, "estimates": search.estimates,
             "estimate_error": search.estimate_error, "cannot_tell": search.cannot_tell or None,
             "note": search.note}
        )
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
