"""``--runtime tflm`` for plan, check, measure and export: TensorFlow Lite Micro's arena.

TFLM plans every subgraph in one arena from subgraph 0, frees graph inputs after their last
use, rounds sizes to 16 bytes and adds a persistent tail; see :mod:`viewer.analysis.tflm` and
:mod:`viewer.whatif.tflm_footprint`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from viewer.errors import UsageError
from viewer.units import format_bytes

RUNTIMES = ("litert", "tflm")


def add_runtime_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runtime", choices=RUNTIMES, default="litert",
                   help="whose arena: litert (default) or tflm (TensorFlow Lite Micro: its rules, "
                        "its greedy planner, its persistent tail; measured with the optional "
                        "tflite-micro package)")


def is_tflm(args) -> bool:
    return getattr(args, "runtime", "litert") == "tflm"


def _b(n: int | None) -> str:
    if n is None:
        return "not measured"
    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


def _model_and_edits(args):
    """The model to plan (subgraph 0 rewritten by what-if edits), and whether it was edited."""
    from viewer.cli._common import edits_from_args
    from viewer.whatif.pipeline import prepare
    from viewer.whatif.tflm_footprint import edited_model

    if getattr(args, "subgraph", 0) != 0:
        raise UsageError(f"{args.model}: --runtime tflm plans the whole model from subgraph 0 "
                         f"(every subgraph in one arena); drop --subgraph {args.subgraph}")
    from viewer.model.reader import load_model
    from viewer.whatif.edits import without_noop_storage

    edits = edits_from_args(args)
    model = load_model(args.model) if edits is not None and not edits.is_empty() else args.model
    noop = ""
    if not isinstance(model, str):  # a storage what-if that changes nothing keeps the measurement
        edits, noop = without_noop_storage(model, 0, edits)
    prep = prepare(model, 0, edits)
    edited = edits is not None and not edits.is_empty()
    notes = ([noop] if noop else []) + list(prep.notes)
    return edited_model(prep.model, prep.analysis.subgraph if edited else None), edited, notes


# --- check ------------------------------------------------------------------------------------

def run_check(args) -> int:
    """``check --runtime tflm``: head + tail + margins = tensor_arena_size, against the budget."""
    from viewer.analysis.tflm import kept_lower_bound
    from viewer.units import parse_size
    from viewer.whatif.tflm_footprint import arena_terms, tflm_footprint

    limit = parse_size(args.budget)
    if limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    if getattr(args, "find_resolution", False):
        raise UsageError(f"{args.model}: --find-resolution searches with LiteRT only; drop "
                         "--runtime tflm, or give --input-shape to check one size under TFLM")
    overhead = parse_size(args.runtime_overhead or "0")
    model, edited, notes = _model_and_edits(args)
    planner = "tflm_greedy" if args.planner in ("litert", None) else args.planner
    fp = tflm_footprint(model, planner=planner, measure=args.measure, edited=edited,
                        timeout=args.timeout, time_limit=args.time_limit)
    weights_mode = args.weights or "mapped"
    weights = model.weights_bytes if weights_mode == "copied" else 0
    size = fp.tensor_arena_size_bytes
    used = None if size is None else size + overhead + weights
    lower = fp.head_bytes + overhead + weights  # what is certain without the tail
    if used is not None:
        fits = used <= limit
        verdict = "fits" if fits else "DOES NOT FIT"
    else:
        fits = False
        verdict = ("DOES NOT FIT (the planned head alone is over)" if lower > limit
                   else "CANNOT TELL whether it fits (scratch and persistent not measured)")
    # Exit codes as for LiteRT: 0 fits, 1 does not fit, 3 cannot tell (not measured).
    code = 0 if fits else (1 if used is not None or lower > limit else 3)
    terms = arena_terms(fp)
    report = {
        "model": str(args.model), "runtime": "tflm", "delegates": "none", "planner": fp.planner,
        "fits": fits,
        "verdict": ("fits", "does_not_fit", "", "cannot_tell")[code], "verdict_text": verdict,
        "limit_bytes": limit, "measured": fp.measured,
        "head_bytes": fp.head_bytes, "tail_bytes": fp.tail_bytes,
        "prepare_extra_bytes": fp.prepare_extra_bytes, "alignment_margin_bytes": fp.margin_bytes,
        "tensor_arena_size_bytes": size, "weights_bytes": model.weights_bytes,
        "arena_bytes": fp.head_bytes, "persistent_bytes": fp.tail_bytes, "other_subgraphs_bytes": 0,
        "lower_bound_bytes": kept_lower_bound(fp.problem),
        "weights_counted": weights_mode == "copied", "runtime_bytes": overhead, "used_bytes": used,
        "headroom_bytes": None if used is None else limit - used,
        "kernels": "reference",
        "scratch": [],
        "terms": _json_terms(fp, terms, overhead, model.weights_bytes, weights_mode),
        "notes": notes + list(fp.notes),
    }
    report.update(_litert_keys(args, model, fp, report, limit))
    if fp.measurement is not None and fp.measurement.ok:
        report["scratch"] = [{"operator": r.op, "subgraph": r.subgraph, "bytes": r.nbytes}
                             for r in fp.measurement.scratch]
        report["measured_head_bytes"] = fp.measurement.head_bytes
        report["measured_total_bytes"] = fp.measurement.total_bytes
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return code
    out = print
    out(f"{args.model}: {verdict} in {_b(limit)} with TensorFlow Lite Micro (head planned by {fp.planner})")
    for note in report["notes"]:
        out(f"note: {note}")
    out("  (TFLM plans every subgraph in one head, so there is no separate subgraph term)"
        if len(model.subgraphs) > 1 else "  counted: head + tail + margins, as TFLM lays out its one arena")
    for label, v in terms:
        out(f"  {label:<72} {_b(v)}")
    if weights_mode == "copied":
        out(f"  {'+ weights (copied into RAM)':<72} {_b(model.weights_bytes)}")
    else:
        out(f"  {'  weights: in flash, not counted (--weights copied counts them)':<72} {_b(model.weights_bytes)}")
    if overhead:
        out(f"  {'+ runtime overhead (given)':<72} {_b(overhead)}")
    if used is not None:
        out(f"  {'= used':<72} {_b(used)}")
        out(f"  {'headroom':<72} {_b(limit - used)}")
        out(f"tensor_arena_size to compile in: {size}   (constexpr int kTensorArenaSize = {size};)")
        out("  kernels measured: TFLM's reference kernels; CMSIS-NN or Xtensa kernels request "
            "different scratch, measure with that build before trusting the last bytes")
    else:
        out("tensor_arena_size: not known without TFLM's measurement (pip install 'arena-viewer[tflm]'"
            " and a model TFLM loads)")
    return code


def _json_terms(fp, terms, overhead: int, weights_bytes: int, weights_mode: str) -> list[dict]:
    """``check --json``'s terms under TFLM in LiteRT's schema ({name, bytes, source, method,
    counted}), each keeping its TFLM label as ``term``; the closing sum is not a term."""
    sources = {"head": "planned", "+ tail": "measured", "+ prepare-time": "measured",
               "+ alignment": "estimated"}
    names = {"head": "tensor arena", "+ tail": "persistent (the arena's tail)",
             "+ prepare-time": "prepare-time extra", "+ alignment": "alignment margin"}
    out = []
    for label, v in terms:
        if label.startswith("="):
            continue
        key = next(k for k in names if label.startswith(k))
        src = "unknown" if v is None else sources[key]
        method = label.split(": ", 1)[-1] if ": " in label else label.lstrip("+ ")
        if key == "head":
            method = (f"planned by {fp.planner} under TFLM's rules (GreedyMemoryPlanner re-stated), "
                      + ("TFLM's measured scratch buffers included" if fp.measured else
                         "scratch NOT included"))
        elif key == "+ tail" and v is not None:
            method = "TFLM's recording allocator (persistent: structs, quantization, kernel buffers)"
        out.append({"name": names[key], "term": label, "bytes": int(v or 0), "source": src,
                    "method": method, "counted": True})
    out.append({"name": "runtime overhead", "term": "+ runtime overhead (given)", "bytes": int(overhead),
                "source": "given", "method": "--runtime-overhead (TFLM allocates in the arena only)",
                "counted": True})
    copied = weights_mode == "copied"
    out.append({"name": "weights", "term": "+ weights (copied into RAM)" if copied else "weights: in flash",
                "bytes": int(weights_bytes), "source": "measured",
                "method": "constant buffers in the model file, "
                          + ("copied into RAM" if copied else "in flash (not counted)"),
                "counted": copied})
    return out


def _litert_keys(args, model, fp, report: dict, limit: int) -> dict:
    """The keys LiteRT's ``check --json`` has that TFLM's report lacks, with TFLM's meaning (None
    where it does not apply), so one schema serves both runtimes (tests/cli/test_check_json_schema.py)."""
    from viewer.whatif.tflm_footprint import NOT_MEASURED_NOTE

    unknowns = []
    if fp.tail_bytes is None:
        unknowns.append(f"TFLM's scratch and persistent tail: {NOT_MEASURED_NOTE}")
    head = report["terms"][0]
    return {
        "subgraph": 0,
        "signatures": [s.key for s in model.signatures if s.subgraph_index == 0],
        "unknowns": unknowns,
        "configuration": "TensorFlow Lite Micro, reference kernels (one arena: head + tail)",
        "sized_at_invoke": None,
        "estimated": False,
        "dynamic_batch": False,
        "counted_arena": f"{head['source']}: {head['method']}",
        "arena_source": head["source"],
        "temporaries_included": bool(fp.measured),
        "planned_tensor_arena_bytes": fp.head_bytes,
        "measured_arena_bytes": (fp.measurement.head_bytes if fp.measurement is not None
                                 and fp.measurement.ok else None),
        "temporaries_count": len(report.get("scratch") or ()),
        "temporaries_bytes": sum(r["bytes"] for r in report.get("scratch") or ()),
        "other_subgraphs": [],
        "batch": 1,
        "largest_batch": None,
        "largest_batch_note": "not estimated under --runtime tflm",
        "widest_op": fp.analysis.widest_op if fp.analysis is not None else -1,
        "whatif_planner": None,
        "runtime": "tflm",
        "delegates": "none",
        "limit_bytes": limit,
    }


# --- measure ----------------------------------------------------------------------------------

def run_measure(args) -> int:
    """``measure --runtime tflm``: the recording allocator's numbers, and the replay."""
    from viewer.analysis.tflm import tflm_problem
    from viewer.model.reader import load_model
    from viewer.planning.tflm import plan_tflm_greedy
    from viewer.runtime.tflm_probe import measure_tflm

    model = load_model(args.model)
    r = measure_tflm(model, timeout=args.timeout, min_arena=True)
    if not r.ok:
        from viewer.errors import RuntimeProbeError

        raise RuntimeProbeError(r.error)
    report = r.to_json(model)
    report["model"] = str(args.model)
    p = tflm_problem(model, r.scratch)
    plan = plan_tflm_greedy(p)
    exact = r.hooks and [plan.offsets[b.id] for b in p.buffers] == list(r.planner_offsets)
    report["replay"] = {"planner": "tflm_greedy", "head_bytes": plan.arena_bytes,
                        "equal_head": plan.arena_bytes == r.head_bytes,
                        "every_offset_equal": bool(exact)}
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    w = sys.stdout.write
    w(f"model: {args.model}\nTensorFlow Lite Micro (recording allocator, reference kernels)\n")
    w(f"  head (planned tensors + scratch)   {_b(r.head_bytes)}\n")
    w(f"  tail (persistent)                  {_b(r.tail_bytes)}\n")
    w(f"  total                              {_b(r.total_bytes)}\n")
    if r.min_arena_bytes is not None:
        w(f"  smallest arena_size it accepts     {_b(r.min_arena_bytes)}\n")
    w(f"  tflm_greedy replay                 {_b(plan.arena_bytes)}   "
      f"{'exact: every offset equal' if exact else 'head equal' if plan.arena_bytes == r.head_bytes else 'DIFFERS'}\n")
    w(f"  kernel scratch buffers             {len(r.scratch)}"
      + ("" if r.hooks else " (not measured: TFLM build without the expected symbols)") + "\n")
    for s in r.scratch:
        op = model.subgraphs[s.subgraph].operators[s.op].op_name
        where = f"#{s.op}" if s.subgraph == 0 else f"subgraph {s.subgraph} #{s.op}"
        w(f"    {where:<8} {op:<24} {_b(s.nbytes)}\n")
    w("  allocations (tail and head records)\n")
    for a in r.allocations:
        w(f"    {a['type']:<44} {_b(a['used_bytes']):>22}  ({a['count']} {a['of']})\n")
    w(f"note: {report['note']}\n")
    return 0


# --- plan -------------------------------------------------------------------------------------

def plan_for(args):
    """(footprint, analysis, plans, notes) for ``plan --runtime tflm``."""
    from viewer.cli._common import planner_choice
    from viewer.whatif.tflm_footprint import tflm_footprint

    model, edited, notes = _model_and_edits(args)
    names = (planner_choice(args.planner) if args.planner not in (None, "all")
             else None)
    if names is not None:
        names = ["tflm_greedy" if n == "litert" else n for n in names]
    else:
        from viewer.planning.run import default_planner_names

        names = default_planner_names(runtime="tflm")
    fp = tflm_footprint(model, planners=names, measure=args.measure, edited=edited,
                        time_limit=args.time_limit, min_arena=args.measure)
    return fp, notes


def run_plan(args) -> int:
    """``plan --runtime tflm``: TFLM's problem, every planner under its rules, both runtimes."""
    from viewer.analysis.tflm import kept_lower_bound
    from viewer.cli.plan import _print_table
    from viewer.export.report import build_report
    from viewer.planning.run import best_plan_name
    from viewer.planning.types import Plan
    from viewer.whatif.tflm_footprint import compare_runtimes

    fp, notes = plan_for(args)
    plans = dict(fp.plans)
    best = best_plan_name(plans)
    m = fp.measurement
    if m is not None and m.ok and m.hooks:
        offs = {b.id: int(o) for b, o in zip(fp.problem.buffers, m.planner_offsets)}
        plans["tflm_measured"] = Plan("tflm_measured", offs, m.head_bytes, 16,
                                      stats={"source": "TFLM's recording allocator and planner"})
    notes = notes + list(fp.notes)
    if args.export_csv:
        from viewer.export.problem_csv import write_problem_csv

        write_problem_csv(fp.problem, args.export_csv, plans.get(best) if best else None, None,
                          args.model, force=args.force)
    report = build_report(fp.model, 0, fp.analysis, plans, best, notes=tuple(notes), alignment=16)
    summary, diffs = compare_runtimes(fp)
    summary["tensor_arena_size_bytes"] = fp.tensor_arena_size_bytes
    report["runtime"] = "tflm"
    report["lower_bound_bytes"] = kept_lower_bound(fp.problem)
    report["tflm"] = {
        "head_bytes": fp.head_bytes, "tail_bytes": fp.tail_bytes,
        "total_bytes": None if fp.tail_bytes is None else fp.head_bytes + fp.tail_bytes,
        "tensor_arena_size_bytes": fp.tensor_arena_size_bytes,
        "measured": fp.measured, "kernels": "reference",
        "scratch": [] if not fp.measured else [{"operator": r.op, "subgraph": r.subgraph, "bytes": r.nbytes}
                                                for r in m.scratch],
        "measured_head_bytes": m.head_bytes if fp.measured else None,
        "allocations": [dict(a) for a in m.allocations] if fp.measured else [],
    }
    report["runtimes"] = {**summary, "differences": [d.__dict__ for d in diffs]}
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print("TensorFlow Lite Micro target: one arena for every subgraph, graph inputs freed after "
          "their last use, sizes rounded to 16 B")
    _print_table(report, fp.analysis, args.top)
    print_side_by_side(summary, diffs)
    return 0


def print_side_by_side(summary: dict, diffs) -> None:
    """Both runtimes' arenas and the reason for each difference."""
    out = print
    out("\nLiteRT vs TFLite Micro (model tensors, subgraph 0)")
    out(f"  {'LiteRT arena (litert planner)':<44} {_b(summary['litert_arena_bytes'])}")
    out(f"  {'TFLM head, tensors only (tflm_greedy)':<44} {_b(summary['tflm_head_tensors_only_bytes'])}")
    if summary["tflm_head_bytes"] != summary["tflm_head_tensors_only_bytes"]:
        out(f"  {'TFLM head, as counted (scratch incl.)':<44} {_b(summary['tflm_head_bytes'])}")
    out(f"  {'TFLM tail (persistent)':<44} {_b(summary['tflm_tail_bytes'])}")
    out(f"  {'TFLM total (head + tail)':<44} {_b(summary['tflm_total_bytes'])}")
    if summary.get("tensor_arena_size_bytes"):
        out(f"  {'TFLM tensor_arena_size (see check)':<44} {_b(summary['tensor_arena_size_bytes'])}")
    out("  why they differ:")
    for d in diffs:
        amount = "" if d.bytes is None else f"{d.bytes:+,d} B  "
        out(f"    {d.what:<32} LiteRT: {d.litert}; TFLM: {d.tflm}.  {amount}{d.reason}")


def tflm_view(args, planner: str | None):
    """The footprint ``export`` and ``overlay`` draw under TFLM: measured by TFLM unless
    ``--no-measure`` (then the kernel scratch is missing, as ``check`` says), so the head is
    ``check --runtime tflm``'s for the same file and planner."""
    from viewer.whatif.tflm_footprint import tflm_footprint

    model, edited, notes = _model_and_edits(args)
    planner = "tflm_greedy" if planner in (None, "litert") else planner
    fp = tflm_footprint(model, planner=planner, planners=[planner],
                        measure=getattr(args, "measure", False), edited=edited,
                        timeout=getattr(args, "timeout", 120.0), time_limit=getattr(args, "time_limit", None),
                        min_arena=False)
    return fp, notes + list(fp.notes)


def export_plan(args):
    """(analysis, plan, notes, title suffix) for ``export --runtime tflm``."""
    fp, notes = tflm_view(args, args.planner)
    suffix = " (TFLite Micro)" + ("" if fp.measured else " — kernel scratch NOT included (TFLM not run)")
    return fp.analysis, fp.plans[fp.planner], notes, suffix


def display(path) -> str:
    return os.fspath(path)
