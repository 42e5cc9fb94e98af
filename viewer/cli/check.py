"""``arena-viewer check MODEL --budget SIZE``: does the model's memory fit a device budget?

What counts (each term printed on its own line):

- the tensor arena: by default the one the LiteRT runtime really allocates (run in a subprocess,
  kernel temporaries included); with ``--no-measure`` the planner's arena of the model's tensors
  only (kernel temporaries missing, said in the output);
- persistent bytes outside the arena (prepare-time outputs such as dequantized fp16 weights,
  variables);
- the arenas of the other subgraphs reached through control flow (WHILE, IF, CALL_ONCE);
- the weights when copied into RAM (``--weights copied``, the default);
- the runtime overhead estimate (``--runtime-overhead``).

The sum comes from :func:`viewer.whatif.footprint.footprint`. Exit 0 when it fits, 1 when it
does not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from viewer.cli._common import add_model_args, known_planners_help
from viewer.cli._tile_check import add_tile_arg, apply_tile
from viewer.cli._tflm import add_runtime_arg, is_tflm, run_check as run_tflm_check
from viewer.cli._edits import add_edit_args, edit_notes, edits_from_args
from viewer.errors import UsageError
from viewer.model.reader import load_model
from viewer.units import format_bytes, parse_size
from viewer.whatif.budget import WEIGHTS_MODES, budget_report, fixed_bytes
from viewer.whatif.footprint import footprint

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
    p.add_argument("--budget", required=True, metavar="SIZE", help="device limit, e.g. 4MiB, 512KB, 1.5GiB")
    p.add_argument("--planner", default="litert", metavar="NAME",
                   help="planner whose arena counts: litert (default: what the runtime does), "
                        f"best (the smallest non-exact plan), or one of: {known_planners_help()}")
    p.add_argument("--no-measure", dest="measure", action="store_false",
                   help="plan only, without running LiteRT: kernel temporaries are then missing "
                        "and the runtime's arena may be larger")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds for an exact planner (optimal), > 0")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds before the LiteRT process is killed (default 120)")
    p.add_argument("--runtime-overhead", default="0", metavar="SIZE",
                   help="runtime overhead estimate added to the sum (default 0)")
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


def _batch_scales(sg) -> bool:
    """The graph inputs have a batch dimension (rank >= 2)."""
    return any(sg.tensors[i].shape is not None and len(sg.tensors[i].shape) >= 2 for i in sg.inputs)


def _arena_label(fp, planner_name: str) -> tuple[str, str]:
    """(label of the arena line, which arena counted) for a footprint."""
    if fp.measured and planner_name == "litert" and fp.measured_arena_bytes is not None:
        return ("tensor arena, measured by LiteRT (kernel temporaries included)",
                "the runtime's measured arena (LiteRT, kernel temporaries included)")
    if fp.measured:
        return (f"tensor arena, planner {fp.planner} with the runtime's kernel temporaries",
                f"planner {fp.planner}'s arena over the runtime's tensors (kernel temporaries included)")
    return (f"tensor arena, planned by {fp.planner} (kernel temporaries NOT included)",
            f"the planned arena (planner {fp.planner}): kernel temporaries are missing, "
            "the runtime's arena can be larger")


def _counted_arena(fp, planner_name: str) -> int:
    if fp.measured and planner_name == "litert" and fp.measured_arena_bytes is not None:
        return int(fp.measured_arena_bytes)
    return int(fp.arena_bytes)


def run(args: argparse.Namespace) -> int:
    if is_tflm(args):
        return run_tflm_check(args)
    args.weights = args.weights or "copied"
    limit = parse_size(args.budget)
    if limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    runtime = parse_size(args.runtime_overhead)
    time_limit = _positive_seconds("--time-limit", args.time_limit)
    timeout = _positive_seconds("--timeout", args.timeout)
    edits = edits_from_args(args, rescale_needs_shape=not args.find_resolution)
    args._edits = edits
    model = load_model(args.model)
    fp = footprint(model, args.subgraph, edits, planner=args.planner, measure=args.measure,
                   timeout=timeout, time_limit=time_limit)
    analysis = fp.analysis
    batch = edits.batch or 1 if edits is not None else 1
    w = analysis.widest_op
    arena = _counted_arena(fp, args.planner)
    label, counted = _arena_label(fp, args.planner)
    arena, label, counted, args._tile = apply_tile(args, arena, label, counted)
    if args._tile is not None:
        w = -1  # the untiled widest operator does not bind the tiled execution
    rep = budget_report(
        limit, arena_bytes=arena, weights_bytes=model.weights_bytes,
        runtime_bytes=runtime, batch=batch, weights_mode=args.weights,
        binding_op=w, binding_op_name=analysis.op_name(w) if w >= 0 else "",
        persistent_bytes=fp.persistent_bytes, other_subgraphs_bytes=fp.other_subgraphs_bytes,
        arena_label=label.replace("tensor arena", f"tensor arena at batch {batch}", 1), batch_scales=_batch_scales(analysis.subgraph),
    )
    found = None
    if args.find_resolution:
        found = _find_resolution(args, model, edits, limit, runtime, time_limit, timeout)
    if args.json:
        _print_json(args, model, fp, rep, counted, found, limit)
    else:
        _print_lines(args, model, fp, rep, counted, found, limit)
    return 0 if rep.fits else 1


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
        return _counted_arena(fp, args.planner) + fp.persistent_bytes + fp.other_subgraphs_bytes

    def progress(kind: str, side: int, nbytes: int | None) -> None:
        if time.monotonic() - t0 < PROGRESS_AFTER_S:
            return
        what = ("the model does not take it" if nbytes is None else
                f"{format_bytes(nbytes)}, {'fits' if nbytes <= avail else 'does not fit'}")
        print(f"find-resolution: {side}x{side} ({kind}): {what}", file=sys.stderr, flush=True)

    found = find_largest_square(model, args.subgraph, edits, avail, total=total,
                                planner=args.planner, measure=args.measure, timeout=timeout,
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


def _print_lines(args, model, fp, rep, counted, found, limit) -> None:
    out = print
    verdict = "fits" if rep.fits else "DOES NOT FIT"
    out(f"{model.path} subgraph {args.subgraph}: {verdict} in {_b(limit)} "
        f"with planner {fp.planner}")
    out(f"  counted: {counted}")
    notes = edit_notes(model, args.subgraph, _edits_of(args)) + list(fp.notes)
    for note in notes[:4]:
        out(f"note: {note}")
    if len(notes) > 4:
        out(f"note: ... {len(notes) - 4} more (see 'arena-viewer plan' for all)")
    lines = rep.lines()
    out(f"  {lines[0]}")
    if fp.measured and fp.temporaries_count and getattr(args, "_tile", None) is None:
        n = fp.temporaries_count
        big = fp.largest_temporary
        out(f"    kernel temporaries: {n} tensor{'s' if n != 1 else ''}, {_b(fp.temporaries_bytes)} in all "
            "(they share the arena over time)"
            + (f"; largest {_b(big[3])} at operator {big[1]} {big[2]}" if big else ""))
    for line in lines[1:]:
        out(f"  {line}")
        if line.startswith("+ other subgraphs"):
            for s in fp.other_subgraphs:
                out(f"    subgraph {s.index} ({s.reached_by}): {_b(s.arena_bytes)}, planned")
    lb = fp.analysis.lower_bound_bytes
    if fp.analysis.widest_op >= 0:
        what = "kernel temporaries included" if fp.measured else "model tensors only"
        untiled = "untiled " if getattr(args, "_tile", None) is not None else ""
        out(f"  {untiled}lower bound (widest operator's breadth, {what}): {_b(lb)}")
    if found is not None:
        for line in _resolution_lines(found):
            out(f"  {line}")


def _print_json(args, model, fp, rep, counted, found, limit) -> None:
    report = {
        "model": str(model.path),
        "subgraph": args.subgraph,
        "planner": fp.planner,
        "fits": rep.fits,
        "limit_bytes": limit,
        "measured": fp.measured,
        "counted_arena": counted,
        "arena_bytes": rep.arena_bytes,
        "planned_tensor_arena_bytes": fp.planned_tensor_arena_bytes,
        "measured_arena_bytes": fp.measured_arena_bytes,
        "temporaries_count": fp.temporaries_count,
        "temporaries_bytes": fp.temporaries_bytes,
        "persistent_bytes": rep.persistent_bytes,
        "other_subgraphs": [
            {"index": s.index, "reached_by": s.reached_by, "arena_bytes": s.arena_bytes}
            for s in fp.other_subgraphs
        ],
        "other_subgraphs_bytes": rep.other_subgraphs_bytes,
        "weights_bytes": rep.weights_bytes,
        "weights_counted": rep.weights_counted,
        "runtime_bytes": rep.runtime_bytes,
        "used_bytes": rep.used_bytes,
        "headroom_bytes": rep.headroom_bytes,
        "batch": rep.batch,
        "largest_batch": rep.largest_batch,
        "largest_batch_note": rep.largest_batch_note,
        "lower_bound_bytes": fp.analysis.lower_bound_bytes,
        "widest_op": fp.analysis.widest_op,
        "notes": edit_notes(model, args.subgraph, _edits_of(args)) + list(fp.notes),
    }
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
