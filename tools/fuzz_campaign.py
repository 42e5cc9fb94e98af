"""On-demand fuzz campaign: many structured mutants of shared models, each in a limited child.

    nice -n 19 .venv/bin/python tools/fuzz_campaign.py --mutants 100000 --workers 2 \\
        [--seed 15] [--models a.tflite,b.tflite,...] [--out FILE.jsonl] [--keep DIR] \\
        [--time-budget S]
    .venv/bin/python tools/fuzz_campaign.py --summary [--out FILE.jsonl]
    .venv/bin/python tools/fuzz_campaign.py --replay K [--seed 15] [--models ...] -o mutant.tflite

Mutant K is a pure function of (seed, K, model list): model ``models[K % M]``, mutation from
``random.Random(seed * 1_000_003 + K)`` through tests/fuzz/harness.py :func:`mutate` (byte
flips, truncations, offsets and counts set to 0 / 2^31-1 / -1 / large, 16-bit vtable fields,
copied words; 1-3 stacked), command ``MIX[(K // M) % len(MIX)]``, so every model meets every
command. Each mutant runs in its own forked child (harness :class:`Runner`) with a 4 GiB
address-space limit, stopped at 11 CPU seconds (10 s of CPU is the limit counted; 60 s of
wall time kills a hang), its peak RSS measured.

The command mix (:data:`MIX`, 100 slots): 78 ``plan`` (every fast planner: litert,
greedy_by_size, greedy_by_breadth, strip_packing, naive; table output), 10 ``plan --json
--export-csv`` (the JSON report and the minimalloc CSV export), 10 ``check --budget 1MiB
--no-measure`` (footprint, verdict), 1 ``export --no-measure`` to SVG and 1 to PNG (the chart
through Qt, offscreen, 800x500: ~150 ms of CPU each, ten times a plan, hence only 2%).

One JSON line per mutant is appended to ``--out`` (seed, index, model, mutation, command,
outcome, rc, signal, cpu s, wall s, peak RSS, load average, stderr's line); a rerun with
the same seed and models skips the indices already in the file, so an interrupted campaign
continues where it stopped. ``--summary`` prints the counts per outcome, model and command,
the slowest CPU time, the largest peak RSS and the rate from the file.

Outcomes (harness :func:`classify`): ``result`` (exit 0/1, or check's one-line "cannot
tell"), ``error`` (exit 2, one ``arena-viewer: error:`` line), ``other`` (anything else).
An ``other``, or anything over 10 s of CPU or 1 GiB peak RSS, is a finding: printed with the
command that reproduces it, its mutant saved in ``--keep``. Exit 1 when there is a finding.
Run it niced with at most 2 workers on a shared machine. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import RSS_LIMIT, TIME_LIMIT, Runner, mutate  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
DEFAULT_MODELS = (
    "coral_split_concat.tflite", "dyn_hw.tflite", "fixed_flatten.tflite",
    "litert_test_topo_sort_fork_split.tflite", "litert_testdata_call_once_mul.tflite",
    "litert_testdata_dynamic_shapes.tflite", "litert_testdata_lstm.tflite",
    "litert_testdata_multi_signatures.tflite", "litert_testdata_multi_subgraphs_while.tflite",
    "litert_testdata_nested_while.tflite", "litert_testdata_while_op_with_forwarding_input.tflite",
    "mlperftiny_ic_resnet8_int8.tflite", "mlperftiny_kws_dscnn_int8.tflite",
    "mlperftiny_streaming_wakeword.tflite", "mp_face_detection_short_range.tflite",
    "multi_out_sigs.tflite", "tfmicro_audio_preprocessor_int8.tflite",
    "tfmicro_hello_world_int8.tflite", "tfmicro_micro_speech_int8.tflite",
    "litert_test_torchaudio_conformer.tflite", "litert_test_qwen_fc_blockwise_quantized.tflite",
    "se_dynbatch.tflite", "tfmicro_person_detect_vela.tflite", "tfmicro_dtln_noise_suppression.tflite",
)
MUTANT = "{mutant}"  # placeholder in a command for the mutant's path; {out} for an output file
_PLAN = ("plan", MUTANT)
_JSON = ("plan", "--json", MUTANT, "--export-csv", "{out}.csv", "--force")
_CHECK = ("check", MUTANT, "--budget", "1MiB", "--no-measure")
_SVG = ("export", MUTANT, "--no-measure", "-o", "{out}.svg", "--force", "--width", "800",
        "--height", "500")
_PNG = ("export", MUTANT, "--no-measure", "-o", "{out}.png", "--force", "--width", "800",
        "--height", "500")
#: The command of mutant K is MIX[(K // len(models)) % len(MIX)]; see the module docstring.
MIX = tuple(_SVG if i == 0 else _PNG if i == 50 else _CHECK if i % 10 == 3
            else _JSON if i % 10 == 7 else _PLAN for i in range(100))
DEFAULT_OUT = ROOT / "out" / "fuzz_campaign.jsonl"  # /out/ is git-ignored


def command_label(cmd: tuple[str, ...]) -> str:
    """``plan``, ``plan-json``, ``check``, ``export-svg`` or ``export-png``."""
    if cmd[0] == "export":
        return "export-" + cmd[cmd.index("-o") + 1].rsplit(".", 1)[1]
    return "plan-json" if "--json" in cmd else cmd[0]


def make_mutant(seed: int, k: int, models: list[tuple[str, bytes]]):
    """Mutant ``k``: (model name, mutant bytes, mutation lines, command template)."""
    name, src = models[k % len(models)]
    rng = random.Random(seed * 1_000_003 + k)
    log: list[str] = []
    data = mutate(src, rng, log)
    return name, data, log, MIX[(k // len(models)) % len(MIX)]


def _argv(cmd, mutant: Path, out: Path) -> list[str]:
    return [a.replace(MUTANT, str(mutant)).replace("{out}", str(out)) for a in cmd]


def _line(stderr: str) -> str:
    """The line that says what happened: the first that is not a note (or the last note)."""
    lines = [x for x in stderr.splitlines() if x.strip()]
    main = [x for x in lines if not x.startswith("note: ")]
    return ((main or lines or [""])[-1 if "Traceback" in stderr else 0])[:300]


class Campaign:
    """The results file: records already there, appending new ones, findings kept."""

    def __init__(self, out: Path, keep: Path, seed: int, models: list[str]):
        self.out, self.keep, self.seed, self.models = out, keep, seed, models
        self.lock = threading.Lock()
        self.done = {r["index"] for r in read_records(out)
                     if r.get("seed") == seed and r.get("models") == len(models)
                     and r.get("model") == models[r["index"] % len(models)]}
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists() and out.stat().st_size and not out.read_bytes().endswith(b"\n"):
            with out.open("a") as f:  # an interrupted last line: start on a fresh one
                f.write("\n")
        self.f = out.open("a", encoding="utf-8")
        self.f.write(json.dumps({"session": round(time.time(), 2), "seed": seed, "models": models,
                                 "commit": _commit(), "argv": sys.argv[1:],
                                 "load": os.getloadavg()}) + "\n")
        self.f.flush()
        self.count = Counter()
        self.findings: list[str] = []

    def add(self, k: int, name: str, log, cmd, o, data: bytes) -> None:
        rec = {"seed": self.seed, "index": k, "models": len(self.models), "model": name,
               "mutation": log, "command": command_label(cmd), "argv": list(cmd),
               "outcome": o.kind, "rc": o.rc, "signal": o.signal, "timed_out": o.timed_out,
               "cpu_s": round(o.cpu_seconds, 4), "wall_s": round(o.seconds, 4),
               "peak_rss": o.max_rss, "over_time": o.over_time, "over_rss": o.max_rss > RSS_LIMIT,
               "load1": round(os.getloadavg()[0], 2), "t": round(time.time(), 2),
               "stderr": _line(o.stderr)}
        finding = rec["outcome"] == "other" or rec["over_time"] or rec["over_rss"]
        if finding:
            self.keep.mkdir(parents=True, exist_ok=True)
            p = self.keep / f"{Path(name).stem}_s{self.seed}_k{k}_{rec['command']}.tflite"
            p.write_bytes(data)
            rec["kept"] = str(p)
            (self.keep / (p.stem + ".stderr")).write_text(o.stderr)
        with self.lock:
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()
            self.done.add(k)
            self.count[rec["outcome"]] += 1
            self.count["over_time"] += rec["over_time"]
            self.count["over_rss"] += rec["over_rss"]
            if finding:
                msg = (f"FINDING mutant {k} of {name} ({', '.join(log)}), {rec['command']}: "
                       f"{rec['outcome']}, rc {o.rc}, signal {o.signal}, {o.cpu_seconds:.2f} s CPU, "
                       f"{o.max_rss >> 20} MiB: {rec['stderr']}\n  reproduce: .venv/bin/arena-viewer "
                       + " ".join(_argv(cmd, p, Path("/tmp/fuzz-out"))) +
                       f"\n  regenerate: .venv/bin/python tools/fuzz_campaign.py --seed {self.seed} "
                       f"--replay {k} -o {p.name}")
                self.findings.append(msg)
                print(msg, flush=True)

    def close(self) -> None:
        self.f.close()


def _commit() -> str:
    """The checkout's commit (and "+dirty" when its tracked files differ), or "unknown"
    ($ARENA_FUZZ_COMMIT when set: a snapshot made with ``git archive`` has no .git)."""
    import subprocess

    if os.environ.get("ARENA_FUZZ_COMMIT"):
        return os.environ["ARENA_FUZZ_COMMIT"]

    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def read_records(path: Path) -> list[dict]:
    """Every complete JSON record of a results file (an interrupted last line is skipped), each
    with ``commit``: the code it ran, from the session line that precedes it."""
    out = []
    if not path.is_file():
        return out
    commit = "unknown"
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and "session" in r:
                commit = str(r.get("commit", "unknown"))
            elif isinstance(r, dict) and "index" in r:
                r.setdefault("commit", commit)
                out.append(r)
    return out


_STOP = threading.Event()  # set by SIGTERM / SIGINT: finish the running mutants, then stop


def _worker(wid: int, jobs: queue.Queue, models, camp: Campaign, args, deadline: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"arena-fuzz-w{wid}-",
                                dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    path, out = tmp / "mutant.tflite", tmp / "out"
    runners: dict[bool, Runner] = {}
    try:
        while time.monotonic() < deadline and not _STOP.is_set():
            try:
                k = jobs.get_nowait()
            except queue.Empty:
                break
            name, data, log, cmd = make_mutant(args.seed, k, models)
            path.write_bytes(data)
            qt = cmd[0] == "export"
            if qt not in runners:
                runners[qt] = Runner(nice=args.nice, qt=qt)
            camp.add(k, name, log, cmd, runners[qt].run(_argv(cmd, path, out)), data)
            n = len(camp.done)
            if n % args.progress == 0:
                print(f"... {n:,d} done: {dict(camp.count)}, load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for r in runners.values():
            r.close()
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()


def _load_models(names: list[str]) -> list[tuple[str, bytes]]:
    missing = [n for n in names if not (SHARED / "models" / n).is_file()]
    if missing:
        raise SystemExit(f"fuzz_campaign: not in {SHARED / 'models'}: {', '.join(missing)}")
    return [(n, (SHARED / "models" / n).read_bytes()) for n in names]


def run(args) -> int:
    names = args.models.split(",")
    models = _load_models(names)
    camp = Campaign(args.out, args.keep, args.seed, names)
    todo = [k for k in range(args.mutants) if k not in camp.done]
    print(f"{len(camp.done):,d} of {args.mutants:,d} mutants already in {args.out}; "
          f"{len(todo):,d} to run over {len(models)} models, {args.workers} workers, "
          f"nice {args.nice}, load {os.getloadavg()[0]:.1f}", flush=True)
    jobs: queue.Queue = queue.Queue()
    for k in todo:
        jobs.put(k)
    deadline = time.monotonic() + (args.time_budget or float("inf"))
    t0, before = time.monotonic(), len(camp.done)
    threads = [threading.Thread(target=_worker, args=(w, jobs, models, camp, args, deadline),
                                daemon=True) for w in range(args.workers)]
    import signal

    _STOP.clear()
    old = {sig: signal.signal(sig, lambda *_: _STOP.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    for th in threads:
        th.start()
    try:
        while any(th.is_alive() for th in threads):
            for th in threads:
                th.join(0.5)
    finally:
        camp.close()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    dt = time.monotonic() - t0
    ran = len(camp.done) - before
    print(f"this run: {ran:,d} mutants in {dt:.0f} s ({ran / max(dt, 1e-9):.1f} per s), "
          f"load {os.getloadavg()[0]:.1f}")
    summary(args.out, args.seed, len(names))
    return 1 if camp.findings else 0


def summary(path: Path, seed: int | None = None, n_models: int | None = None) -> int:
    """Print the counts of a results file; 1 when it holds a finding."""
    recs = [r for r in read_records(path)
            if (seed is None or r["seed"] == seed) and (n_models is None or r["models"] == n_models)]
    seen: dict[tuple, dict] = {}
    for r in recs:  # one record per (seed, index): the last one
        seen[(r["seed"], r["index"])] = r
    recs = list(seen.values())
    if not recs:
        print(f"{path}: no records")
        return 0
    kinds = ("result", "error", "other")
    by = {"model": defaultdict(Counter), "command": defaultdict(Counter),
          "commit": defaultdict(Counter)}
    total = Counter()
    for r in recs:
        total[r["outcome"]] += 1
        for key in by:
            by[key][r[key]][r["outcome"]] += 1
    over_t = sum(r["over_time"] for r in recs)
    over_m = sum(r["over_rss"] for r in recs)
    slow = max(recs, key=lambda r: r["cpu_s"])
    wall = max(recs, key=lambda r: r["wall_s"])
    big = max(recs, key=lambda r: r["peak_rss"])
    seeds = sorted({r["seed"] for r in recs})
    print(f"{path}: {len(recs):,d} mutants (seed {', '.join(map(str, seeds))}) of "
          f"{len(by['model'])} models")
    print("  " + ", ".join(f"{k} {total[k]:,d}" for k in kinds)
          + f"; over {TIME_LIMIT:.0f} s CPU {over_t}; over 1 GiB peak RSS {over_m}")
    print(f"  slowest: {slow['cpu_s']:.2f} s CPU (mutant {slow['index']}, {slow['model']}, "
          f"{slow['command']}); longest wall {wall['wall_s']:.2f} s (mutant {wall['index']}); "
          f"largest peak RSS {big['peak_rss'] / 2**20:.0f} MiB (mutant {big['index']}, "
          f"{big['model']}, {big['command']})")
    cpu = sum(r["cpu_s"] for r in recs)
    print(f"  CPU in children: {cpu:,.0f} s ({cpu / len(recs) * 1000:.1f} ms per mutant); "
          f"load average (1 min) at the records: mean {sum(r['load1'] for r in recs) / len(recs):.1f}, "
          f"max {max(r['load1'] for r in recs):.1f}")
    _rate(recs)
    for key in ("commit", "command", "model"):
        print(f"  per {key}:")
        for name, c in sorted(by[key].items()):
            print(f"    {name:<55} {sum(c.values()):>7,d}   "
                  + "  ".join(f"{k} {c[k]:,d}" for k in kinds))
    bad = [r for r in recs if r["outcome"] == "other" or r["over_time"] or r["over_rss"]]
    for r in bad[:50]:
        print(f"  FINDING mutant {r['index']} of {r['model']} ({r['command']}): {r['outcome']}, "
              f"rc {r['rc']}, {r['cpu_s']:.2f} s CPU, {r['peak_rss'] >> 20} MiB: {r['stderr']}"
              f"  [{r.get('kept', '')}]")
    return 1 if bad else 0


def _rate(recs: list[dict]) -> None:
    """Mutants per second over the spans in which records were written (gaps > 60 s are
    between runs, not counted)."""
    ts = sorted(r["t"] for r in recs)
    span = sum(min(b - a, 60.0) for a, b in zip(ts, ts[1:]) if b - a <= 60.0)
    print(f"  rate: {len(ts) / max(span, 1e-9):.1f} mutants/s over {span / 60:.1f} min of running "
          f"({time.strftime('%H:%M', time.gmtime(ts[0]))}-{time.strftime('%H:%M', time.gmtime(ts[-1]))} UTC)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=100_000, help="indices 0..N-1 (default 100000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated names in ../shared/models")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results, JSON lines (appended)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="folder for the mutants of findings (default: beside --out)")
    ap.add_argument("--time-budget", type=float, default=None, metavar="S",
                    help="stop starting mutants after S seconds (rerun to continue)")
    ap.add_argument("--nice", type=int, default=19, help="nice of the workers (default 19)")
    ap.add_argument("--progress", type=int, default=2000, help="print progress every N")
    ap.add_argument("--summary", action="store_true", help="print the counts in --out and exit")
    ap.add_argument("--replay", type=int, default=None, metavar="K",
                    help="write mutant K to -o and print its command; runs nothing")
    ap.add_argument("-o", "--output", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.keep is None:
        args.keep = args.out.parent / "fuzz_findings"
    if args.summary:
        return summary(args.out)
    if args.replay is not None:
        name, data, log, cmd = make_mutant(args.seed, args.replay, _load_models(args.models.split(",")))
        out = args.output or Path(f"mutant_s{args.seed}_k{args.replay}.tflite")
        out.write_bytes(data)
        print(f"{out}: mutant {args.replay} of {name} ({', '.join(log)})\n  "
              f".venv/bin/arena-viewer {' '.join(_argv(cmd, out, Path('/tmp/fuzz-out')))}")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
