"""``arena-viewer measure MODEL --cgroup``: check's predicted total against this machine's kernel.

Runs N invocations of MODEL (LiteRT, no delegates) in fresh memory cgroups and bisects the
smallest limit at which the process survives; prints it beside ``check``'s predicted total under
the same conventions (the runtime overhead measured as check measures it unless
``--runtime-overhead`` gives it; ``--weights copied|mapped``), the difference, and
the process baseline (the same child with no model: Python, numpy and LiteRT), which is what
most of the difference consists of.

Exit 0 when measured; 2 bad input or a runtime failure; 3 when no memory cgroup can be created
here (one line says why: no cgroup file system, no memory controller, no permission).
"""

from __future__ import annotations

import argparse
import json
import sys

from viewer.units import SIZE_SYNTAX, format_bytes, parse_size

#: Exit status when no memory cgroup can be created: the check cannot be made here.
EXIT_NO_CGROUP = 3


def add_args(p) -> None:
    """The ``--cgroup`` flag and the conventions of check's total (on ``measure``'s parser)."""
    from viewer.whatif.budget import WEIGHTS_MODES

    p.add_argument("--cgroup", action="store_true",
                   help="run N invocations inside fresh memory cgroups (v2, or v1 where that is "
                        "what the machine has), bisect the smallest limit at which the process "
                        "survives and print it beside check's predicted total and the process "
                        f"baseline; exit {EXIT_NO_CGROUP} with one line when no cgroup can be created")
    p.add_argument("--weights", choices=WEIGHTS_MODES, default="copied",
                   help="with --cgroup: count the weights in check's total (copied, default) or not "
                        "(mapped), as check does")
    p.add_argument("--runtime-overhead", default=None, metavar="SIZE",
                   help="with --cgroup: the runtime overhead check's total adds instead of the "
                        "one check measures (by default measured as check does: the anonymous "
                        "memory one LiteRT interpreter adds in a fresh process beyond the arena "
                        f"and persistent terms), in {SIZE_SYNTAX}")


def _b(n) -> str:
    if n is None:
        return "n/a"
    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


def predicted_total(model_path: str, weights: str, runtime_bytes: int | None, timeout: float) -> dict:
    """What ``check`` counts for ``model_path`` (subgraph 0, no edits, XNNPACK off): its terms
    and their sum, in bytes.

    The terms are check's own (:func:`viewer.whatif.verdict.budget_terms` and
    :func:`viewer.whatif.verdict.total_bytes`), and so is the runtime overhead: measured as
    check measures it (``viewer.cli.check._overhead``), or ``runtime_bytes`` when given. When it
    cannot be measured it is 0 B in the sum, ``unknowns`` says so and the total is a lower bound.

    Returns
    -------
    dict
        ``total_bytes``, ``measured`` (the arena was measured by LiteRT), ``terms`` (the byte
        figures by name, below), ``term_list`` [{name, bytes, source, method, counted}] as
        ``check --json`` prints them, ``unknowns`` and ``notes``.
    """
    from types import SimpleNamespace

    from viewer.cli.check import _counted_arena, _overhead
    from viewer.model.reader import load_model
    from viewer.whatif.footprint import footprint
    from viewer.whatif.verdict import budget_terms, total_bytes

    model = load_model(model_path)
    fp = footprint(model, 0, None, measure=True, timeout=timeout,
                   runtime_overhead=runtime_bytes is None)  # as check: in the probe's process
    args = SimpleNamespace(measure=True, delegates="none", tile=None)
    overhead, unknown = _overhead(args, model, fp, None, runtime_bytes, timeout)
    term_list = budget_terms(fp, weights_mode=weights, overhead=overhead)
    terms = {"arena_bytes": _counted_arena(fp), "persistent_bytes": fp.persistent_bytes,
             "other_subgraphs_bytes": fp.other_subgraphs_bytes, "runtime_bytes": overhead.bytes,
             "runtime_source": overhead.source, "runtime_method": overhead.method,
             "weights_bytes": model.weights_bytes, "weights_counted": weights == "copied"}
    return {"total_bytes": total_bytes(term_list), "measured": fp.measured, "terms": terms,
            "term_list": [t.as_dict() for t in term_list],
            "unknowns": list(fp.unknowns) + ([unknown] if unknown else []),
            "notes": list(fp.notes)}


def run(args: argparse.Namespace) -> int:
    from viewer.runtime import cgroup as cg

    path = cg.check_model(args.model)
    runtime = parse_size(args.runtime_overhead) if args.runtime_overhead is not None else None
    try:
        support = cg.detect()
    except cg.CgroupUnavailable as e:
        print(f"arena-viewer measure --cgroup: no memory cgroup can be created here: {e}",
              file=sys.stderr)
        return EXIT_NO_CGROUP
    predicted = predicted_total(path, args.weights, runtime, args.timeout)

    def progress(r) -> None:
        if not args.json:
            lim = "no limit" if r.limit_bytes is None else _b(r.limit_bytes)
            print(f"  run at {lim}: {'survived' if r.survived else r.how} "
                  f"(peak charge {_b(r.peak_bytes)}, {r.seconds:.1f} s)", file=sys.stderr)

    try:
        found = cg.smallest_surviving_limit(cg.measure_args(path, args.runs), support=support,
                                            timeout=args.timeout, progress=progress)
        base = cg.process_baseline(support=support, timeout=args.timeout)
    except cg.CgroupUnavailable as e:
        print(f"arena-viewer measure --cgroup: {e}", file=sys.stderr)
        return EXIT_NO_CGROUP
    report = _report(args, path, support, predicted, found, base)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print(report)
    return 0


def _run_json(r) -> dict:
    return {"limit_bytes": r.limit_bytes, "survived": r.survived, "how": r.how or None,
            "peak_bytes": r.peak_bytes, "events": dict(r.events), "pressure": r.pressure,
            "seconds": round(r.seconds, 3), "vmhwm_bytes": r.answer.get("vmhwm_bytes")}


def _report(args, path, support, predicted, found, base) -> dict:
    limit = found.smallest_surviving_bytes
    diff = limit - predicted["total_bytes"]
    base_bytes = base.peak_bytes if base.survived else None
    return {
        "model": path, "runs": args.runs, "cgroup_version": support.version,
        "cgroup_parent": support.parent,
        "predicted_total_bytes": predicted["total_bytes"], "predicted_terms": predicted["terms"],
        "predicted_measured": predicted["measured"],
        "predicted_term_list": predicted["term_list"],
        "predicted_unknowns": predicted["unknowns"],
        "predicted_is_lower_bound": bool(predicted["unknowns"]),
        "smallest_surviving_limit_bytes": limit,
        "largest_failing_limit_bytes": found.largest_failing_bytes,
        "difference_bytes": diff,
        "process_baseline_bytes": base_bytes,
        "process_baseline_vmhwm_bytes": base.answer.get("vmhwm_bytes"),
        "remainder_bytes": diff - base_bytes if base_bytes is not None else None,
        "unlimited_peak_bytes": found.unlimited.peak_bytes,
        "runs_made": [_run_json(r) for r in found.runs],
        "notes": predicted["notes"] + [
            "the limit is the cgroup's (anonymous memory plus the page cache the process "
            "faulted in, which the kernel reclaims before it OOM-kills); bisected to 1 MiB",
            "process baseline: the same child with no model (Python, numpy, LiteRT imported), "
            "its peak charge in a cgroup without a limit (shared libraries already in the page "
            "cache are charged to whoever read them first, so VmHWM is larger)",
        ] + ([
            "this process maps the model file (LiteRT's BuildFromFile): its weights are page "
            "cache, reclaimable at the limit, yet --weights copied counts them; compare with "
            "--weights mapped"] if args.weights == "copied" else []),
    }


def _print(r: dict) -> None:
    w = sys.stdout.write
    t = r["predicted_terms"]
    w(f"model: {r['model']}   {r['runs']} invocations per process   cgroup {r['cgroup_version']} "
      f"(children of {r['cgroup_parent']})\n")
    low = " (a lower bound: " + "; ".join(r["predicted_unknowns"]) + ")" if r["predicted_unknowns"] else ""
    w(f"check's predicted total          {_b(r['predicted_total_bytes'])}{low}\n")
    w(f"  tensor arena{' (measured by LiteRT)' if r['predicted_measured'] else ' (planned)'}"
      f"   {_b(t['arena_bytes'])}\n")
    if t["persistent_bytes"]:
        w(f"  + persistent                   {_b(t['persistent_bytes'])}\n")
    if t["other_subgraphs_bytes"]:
        w(f"  + other subgraphs' arenas      {_b(t['other_subgraphs_bytes'])}\n")
    src = t["runtime_source"]
    w(f"  + runtime overhead             {_b(t['runtime_bytes'])}   ["
      + ("measured as check measures it" if src == "measured" else
         "given (--runtime-overhead)" if src == "given" else f"{src}: left out of the total")
      + "]\n")
    w(f"  {'+ weights (copied, counted)' if t['weights_counted'] else '  weights (mapped, not counted)'}"
      f"    {_b(t['weights_bytes'])}\n")
    fail = r["largest_failing_limit_bytes"]
    w(f"smallest limit the process survives  {_b(r['smallest_surviving_limit_bytes'])}"
      + (f"   (killed at {_b(fail)})" if fail else "") + "\n")
    w(f"difference (limit - predicted)   {_b(r['difference_bytes'])}\n")
    w(f"  process baseline (no model)    {_b(r['process_baseline_bytes'])}   "
      f"(Python + numpy + LiteRT; VmHWM {_b(r['process_baseline_vmhwm_bytes'])})\n")
    given = r["predicted_terms"]["runtime_source"] != "measured"
    rest = r["remainder_bytes"]
    why = ("(negative: check's total and the baseline hold more than the process needed at the "
           "limit, so check's total is above this machine's by up to that much, within the 1 MiB "
           "bisection step and the baseline's reclaimable page cache)" if rest is not None and rest < 0
           else "(in neither: "
           + ("the interpreter's own state (runtime overhead not measured), " if given else "")
           + "the child's inputs and modules, the page cache the run needs at the limit, the 1 MiB "
           "bisection step)")
    w(f"  remainder                      {_b(rest)}   {why}\n")
    for run in r["runs_made"]:
        if run["limit_bytes"] in (r["smallest_surviving_limit_bytes"], fail):
            ev = ", ".join(f"{k} {v}" for k, v in run["events"].items() if v) or "none"
            w(f"kernel record at {_b(run['limit_bytes'])}: "
              f"{'survived' if run['survived'] else run['how']}; peak charge {_b(run['peak_bytes'])}; "
              f"events: {ev}" + (f"; pressure: {run['pressure']}" if run["pressure"] else "") + "\n")
    for note in r["notes"]:
        w(f"note: {note}\n")
