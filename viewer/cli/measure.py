"""``arena-viewer measure MODEL``: the real runtime's arena and a real process's memory.

Runs LiteRT in fresh subprocesses: one reads the tensor arena back (offsets, kernel temporaries)
and replays it with the ``litert`` planner; one runs N invocations without delegates and one with
the default XNNPACK delegate, each reporting VmHWM, Rss/Pss split and page faults; then suggests
cgroup v2 limits. A crash, hang or failure of the runtime is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from viewer.cli import _cgroup
from viewer.cli._common import add_runtime_args
from viewer.cli._tflm import add_runtime_arg, is_tflm, run_measure as run_tflm_measure
from viewer.errors import UsageError
from viewer.units import format_bytes


#: Most invocations per process ``--runs`` takes: each process runs them all (with --cgroup,
#: once per bisection step), so an unbounded count is an unbounded wait.
MAX_RUNS = 1000


def add_parser(sub) -> None:
    p = sub.add_parser(
        "measure",
        help="run the model in LiteRT (subprocess): measured arena, temporaries, VmHWM, Rss/Pss, "
             "page faults, with and without XNNPACK; cgroup limits",
        description="Run MODEL in LiteRT in fresh subprocesses: read back the runtime's tensor "
        "arena (offsets, kernel temporaries) and replay it with the litert planner; then run N "
        "invocations on random inputs, without delegates and with the default XNNPACK delegate, "
        "and report VmHWM, Rss, Pss_Anon, Pss_File, page faults (first run and later runs) and "
        "suggested cgroup v2 memory.max / memory.high / memory.min. Sizes in bytes.",
    )
    p.add_argument("model", metavar="MODEL", help="a .tflite model")
    p.add_argument("--runs", type=int, default=3, metavar="N",
                   help=f"invocations per process, 1..{MAX_RUNS} (default 3; the first is reported apart)")
    add_runtime_args(p, timeout_help="seconds before a runtime process is killed")
    p.add_argument("--no-xnnpack", action="store_true", help="skip the run with XNNPACK")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_runtime_arg(p)
    _cgroup.add_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from viewer.runtime.measure import measure_report

    if args.runs < 1:
        raise UsageError(f"--runs {args.runs}: need at least 1 invocation")
    if args.runs > MAX_RUNS:
        raise UsageError(f"--runs {args.runs}: at most {MAX_RUNS:,d} invocations per process (page "
                         "faults and VmHWM settle after the first few; the default is 3)")
    if is_tflm(args):
        return run_tflm_measure(args)
    if args.cgroup:
        return _cgroup.run(args)
    from viewer.model.reader import load_model

    # A file that is no flatbuffer: our reader says what is wrong (LiteRT only "not a valid
    # Flatbuffer"); graphs it reads but LiteRT refuses are left to LiteRT to say.
    load_model(args.model, graph_rules=False)
    report = measure_report(args.model, args.runs, args.timeout, xnnpack=not args.no_xnnpack)
    report["footprint"] = _footprint_terms(args.model, args.timeout)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    _print_table(report)
    return 0


def _footprint_terms(path: str, timeout: float) -> dict:
    """The terms ``check`` counts (viewer.whatif.footprint), each with its source."""
    from viewer.errors import ViewerError
    from viewer.whatif.footprint import footprint

    try:
        fp = footprint(path, 0, None, planner="litert", measure=True, timeout=timeout, detail=False)
    except ViewerError as e:
        return {"terms": [], "unknowns": [str(e)]}
    return {"terms": [t.as_dict() for t in fp.terms], "unknowns": list(fp.unknowns)}


def _b(n) -> str:
    if n is None:
        return "n/a"
    return f"{n:>12,d} B  ({format_bytes(n)})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _n(n) -> str:
    return "n/a" if n is None else f"{n:,d}"


def _print_table(r: dict) -> None:
    from viewer.runtime.probe import display_path

    w = sys.stdout.write
    w(f"model: {display_path(r['model'])}   runs per process: {r['runs']}\n\n")
    w("LiteRT tensor arena (allocate_tensors, no delegates)\n")
    w(f"  arena (measured)          {_b(r['arena_bytes'])}\n")
    rp = r["replay"]
    verdict = ("exact: same size, every offset equal" if rp.get("exact")
               else f"{len(rp['mismatched_tensors'] or [])} tensors differ" if rp.get("exact") is False
               else "not run")
    w(f"  litert planner replay     {_b(rp.get('arena_bytes'))}   {verdict}\n")
    w(f"  persistent / dynamic      {_b(r['persistent_bytes'])}   (outside the arena)\n")
    for t in (r.get("footprint") or {}).get("terms", ()):
        w(f"  footprint: {t['name'][:30]:<30} {_b(t['bytes'])}  [{t['source']}]\n")
    temps = r["temporaries"]
    w(f"  kernel temporaries        {_b(sum(t['bytes'] for t in temps))}   "
      f"({_count(len(temps), 'tensor')})\n")
    for t in temps:
        where = "arena" if t["in_arena"] else "outside"
        w(f"    tensor {t['id']:>5}  op #{t['op']:<4} {t['op_name']:<22} {_b(t['bytes'])}  {where}\n")
    w("\n")
    rows = [
        ("VmHWM (high-water mark)", "vmhwm_bytes", _b),
        ("Rss", "rss_bytes", _b),
        ("Pss_Anon", "pss_anon_bytes", _b),
        ("Pss_File", "pss_file_bytes", _b),
        ("Anonymous", "anonymous_bytes", _b),
        ("model file mapped (Rss)", "model_mapping_rss_bytes", _b),
        ("minor faults, load", "minor_faults_load", _n),
        ("minor faults, first run", "minor_faults_first_run", _n),
        ("minor faults, later runs", "minor_faults_later_runs", _n),
        ("major faults, first run", "major_faults_first_run", _n),
        ("major faults, later runs", "major_faults_later_runs", _n),
    ]
    p, x = r["process"], r["xnnpack"]
    w(f"{'process':<26} {'no delegates':>32}   {'XNNPACK':>32}\n")
    for label, key, fmt in rows:
        w(f"  {label:<24} {fmt(p.get(key)):>32}   {fmt(x.get(key)):>32}\n")
    base = p.get("baseline") or {}
    w(f"  {'baseline (LiteRT imported)':<24} {_b(base.get('vmhwm_bytes')):>32}\n")
    for sec, name in ((p, "no delegates"), (x, "XNNPACK")):
        if sec.get("error"):
            w(f"  {name}: {sec['error']}\n")
    s = r["split"]
    w("\nsplit (no delegates; Pss_Anon from just before the interpreter was built)\n")
    w(f"  file-backed weights       {_b(s['weights_file_backed_bytes'])}\n")
    w(f"  anonymous added by model  {_b(s['anonymous_added_by_model_bytes'])}\n")
    w(f"    of which tensor arena   {_b(s['arena_bytes'])}\n")
    if s.get("beyond_arena_unresolved"):
        w("    beyond the arena        not resolved (the process grew by less than the arena; "
          "see notes)\n")
    else:
        w(f"    beyond the arena        {_b(s['anonymous_beyond_arena_bytes'])}   (interpreter and "
          "kernel state; the harness's own allocations not in it)\n")
    if s.get("xnnpack_added_by_model_bytes") is not None:
        w(f"  with XNNPACK: added       {_b(s['xnnpack_added_by_model_bytes'])}   (the same growth "
          "in the XNNPACK process: its packed weights and workspace included)\n")
    w(f"  harness (measured apart)  {_b(s['harness_bytes'])}   (our random inputs, made "
      "before the interpreter; Python, numpy and LiteRT in the baseline)\n")
    c = r["cgroup"]
    w("\ncgroup v2\n")
    for k in ("memory_max", "memory_high", "memory_min"):
        w(f"  {k.replace('_', '.'):<12} {_b(c[k])}\n    {c['why'][k]}\n")
    if r["notes"]:
        w("\nnotes\n")
        for note in r["notes"]:
            w(f"  - {note}\n")
