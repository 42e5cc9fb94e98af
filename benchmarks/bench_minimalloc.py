"""Our exact planner against MiniMalloc on its benchmark instances A-K: time to a plan <= capacity.

The instances (google/minimalloc, benchmarks/challenging; ../shared/benchmarks/minimalloc,
see SOURCE.txt there) have half-open lifetimes and the capacity 1,048,576 bytes that MiniMalloc
proves feasible. For each instance and repetition this runs, one after the other (interleaved,
so both see the same load):

- MiniMalloc (C++, ``--capacity=1048576``), wall time of its process;
- ours **given the capacity**, the same question MiniMalloc is asked
  (``plan-csv --capacity 1048576``: ``plan_optimal(target_bytes=1048576,
  stop_at_target=True)``), in a fresh Python process: the time from reading the CSV to the
  first plan at or below the capacity (its ``improved`` callback; imports not counted), where
  the planner stops;
- ours **not told** the capacity (``plan-csv --planner optimal``, which minimises the arena):
  the time from reading the CSV to its first plan at or below the capacity, then on until it
  proves its arena optimal or ``--time-limit``, which gives the proven bound. CP-SAT gets one
  worker.

MiniMalloc searches its preorders in one thread (RoundRobin); ours runs them in worker
processes at the same time once a search has run 0.1 s (``ARENA_VIEWER_SEARCH_PROCESSES=0``
keeps everything in one process), so the CPU columns say what each used in all.

It prints per instance the median of ``--repeats`` (default 3) runs of each, the ratios
ours / MiniMalloc (<= 1.0: ours is as fast or faster), and our final arena, bound and whether it
is proven. Run:

    .venv/bin/python benchmarks/bench_minimalloc.py --minimalloc-src PATH     # builds MiniMalloc
    .venv/bin/python benchmarks/bench_minimalloc.py --minimalloc-bin PATH     # a built binary
    .venv/bin/python benchmarks/bench_minimalloc.py                           # recorded times
    .venv/bin/python benchmarks/bench_minimalloc.py --heuristics-only         # every planner once

MiniMalloc is not part of this project and nothing here downloads it. ``--minimalloc-src`` (or
``$MINIMALLOC_SRC``) is a checkout of google/minimalloc whose ``external/abseil-cpp`` submodule is
present (or give ``--abseil-src`` / ``$ABSEIL_SRC``); it is built with cmake and g++ -O3 into
``--build-dir`` (default a folder in the system's temp dir), once. Without a compiler or the
source, the MiniMalloc column comes from ``minimalloc_times.csv`` beside this file (recorded on
another run, which it says), so the ratio is against another moment's load: only indicative.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
BENCH = SHARED / "benchmarks" / "minimalloc"
CAPACITY = 1048576
INSTANCES = "ABCDEFGHIJK"
RECORDED = Path(__file__).with_name("minimalloc_times.csv")

_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(minimalloc_bench CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(ABSL_PROPAGATE_CXX_STD ON)
add_subdirectory("{absl}" absl EXCLUDE_FROM_ALL)
set(S "{src}/src")
add_executable(minimalloc ${{S}}/main.cc ${{S}}/converter.cc ${{S}}/minimalloc.cc ${{S}}/solver.cc
               ${{S}}/sweeper.cc ${{S}}/validator.cc)
target_include_directories(minimalloc PRIVATE ${{S}})
target_link_libraries(minimalloc PRIVATE absl::flags absl::flags_parse absl::statusor absl::log
                      absl::log_initialize absl::btree absl::flat_hash_map absl::flat_hash_set
                      absl::strings absl::time)
"""


def build_minimalloc(src: Path, absl: Path, build_dir: Path) -> Path:
    """Build MiniMalloc's command-line solver from its source (cmake, g++ -O3, one job).

    Our own CMakeLists (in ``build_dir``) lists MiniMalloc's sources, so neither its tests
    nor googletest are needed. Returns the binary; raises RuntimeError naming what is missing.
    """
    if not (src / "src" / "solver.cc").exists():
        raise RuntimeError(f"{src}: not a google/minimalloc checkout (no src/solver.cc)")
    if not (absl / "CMakeLists.txt").exists():
        raise RuntimeError(f"{absl}: no abseil-cpp source (MiniMalloc's external/abseil-cpp "
                           "submodule; give --abseil-src)")
    for tool in ("cmake", "g++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found")
    binary = build_dir / "minimalloc"
    if binary.exists():
        return binary
    wrap = build_dir / "wrap"
    wrap.mkdir(parents=True, exist_ok=True)
    (wrap / "CMakeLists.txt").write_text(_CMAKE.format(src=src.resolve(), absl=absl.resolve()))
    log = build_dir / "build.log"
    with log.open("w") as f:
        for cmd in (["cmake", "-S", str(wrap), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DCMAKE_CXX_COMPILER=g++", "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG"],
                    ["cmake", "--build", str(build_dir), "--target", "minimalloc", "-j", "1"]):
            if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode != 0:
                raise RuntimeError(f"building MiniMalloc failed, see {log}")
    return binary


def run_minimalloc(binary: Path, csv_path: Path, time_limit: float, out_dir: Path):
    """Wall seconds MiniMalloc's process takes to find a solution at the capacity (None: none)
    and its CPU seconds."""
    import resource

    out = out_dir / f"{csv_path.stem}.solution.csv"
    out.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([str(binary), f"--capacity={CAPACITY}", f"--input={csv_path}",
                        f"--output={out}", f"--timeout={time_limit:g}s"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    ok = r.returncode == 0 and out.exists() and out.stat().st_size > 0
    return (dt if ok else None), cpu


def run_ours(csv_path: Path, time_limit: float, given: bool) -> dict:
    """Our planner in a fresh process (see :func:`child`)."""
    r = subprocess.run([sys.executable, __file__, "--child", str(csv_path),
                        "--time-limit", str(time_limit)] + (["--given"] if given else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"our planner failed on {csv_path}: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def child(csv_path: Path, time_limit: float, given: bool) -> int:
    """Plan one instance; print JSON: seconds to a plan <= capacity, arena, bound, proven.

    ``given``: tell the planner the capacity and stop at the first plan within it."""
    from viewer.planning import verify_plan
    from viewer.planning.csv_io import read_problem_csv
    from viewer.planning.optimal import plan_optimal

    t0 = time.perf_counter()
    problem, _ = read_problem_csv(csv_path)
    hit: list[float] = []

    def improved(plan):
        if not hit and plan.arena_bytes <= CAPACITY:
            hit.append(time.perf_counter() - t0)

    if given:
        plan = plan_optimal(problem, 1, time_limit=time_limit, cp_sat_workers=1,
                            improved=improved, target_bytes=CAPACITY, stop_at_target=True)
        verify_plan(problem, plan)
        print(json.dumps({"seconds": hit[0] if hit else None, "cpu": _cpu()}))
        return 0
    plan = plan_optimal(problem, 1, time_limit=time_limit, cp_sat_workers=1, improved=improved)
    verify_plan(problem, plan)
    print(json.dumps({"seconds": hit[0] if hit else None, "arena": plan.arena_bytes,
                      "bound": plan.bound_bytes, "proven": plan.proven_optimal,
                      "total": time.perf_counter() - t0, "cpu": _cpu()}))
    return 0


def _cpu() -> float:
    """CPU seconds of this process and its finished children (user + system)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def read_recorded() -> tuple[dict[str, float], str]:
    times, note = {}, ""
    with RECORDED.open() as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            times[row["instance"]] = float(row["minimalloc_s"])
    note = next((line[1:].strip() for line in RECORDED.open() if line.startswith("#")), "")
    return times, note


def heuristics_table(files, time_limit: float) -> None:
    """Every registered planner once per instance: arena / capacity and seconds."""
    from viewer.planning import get_planner, planner_names, verify_plan
    from viewer.planning.csv_io import read_problem_csv

    specs = [get_planner(n) for n in planner_names() if not get_planner(n).exact]
    print(f"{'inst':<5}" + "".join(f"{s.name:>24}" for s in specs))
    for letter, f in files:
        problem, _ = read_problem_csv(f)
        row = f"{letter:<5}"
        for s in specs:
            t0 = time.perf_counter()
            plan = s.func(problem, 1)
            dt = time.perf_counter() - t0
            verify_plan(problem, plan)
            row += f"{plan.arena_bytes / CAPACITY:>15.3f} {dt:>7.2f}s"
        print(row, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minimalloc-src", type=Path, default=os.environ.get("MINIMALLOC_SRC"),
                    help="google/minimalloc checkout to build (default $MINIMALLOC_SRC)")
    ap.add_argument("--abseil-src", type=Path, default=os.environ.get("ABSEIL_SRC"),
                    help="abseil-cpp source (default $ABSEIL_SRC or SRC/external/abseil-cpp)")
    ap.add_argument("--minimalloc-bin", type=Path, default=os.environ.get("MINIMALLOC_BIN"),
                    help="an already built minimalloc binary (default $MINIMALLOC_BIN)")
    ap.add_argument("--build-dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "arena-viewer-minimalloc-build")
    ap.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                    help="seconds per run for both solvers (default 60)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each per instance (default 3)")
    ap.add_argument("--instances", default=",".join(INSTANCES), help="e.g. A,B,C (default A-K)")
    ap.add_argument("--dir", type=Path, default=BENCH, help=f"instance folder (default {BENCH})")
    ap.add_argument("--modes", default="given,blind",
                    help="ours timed given the capacity (given), not told it (blind), or both "
                         "(default given,blind)")
    ap.add_argument("--heuristics-only", action="store_true",
                    help="only the heuristic planners, once per instance")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--given", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.time_limit, args.given)

    files = []
    for letter in [x.strip() for x in args.instances.split(",") if x.strip()]:
        f = args.dir / f"{letter}.{CAPACITY}.csv"
        if not f.exists():
            print(f"missing {f}", file=sys.stderr)
            return 2
        files.append((letter, f))
    if args.heuristics_only:
        heuristics_table(files, args.time_limit)
        return 0

    binary, recorded, note = args.minimalloc_bin, {}, ""
    if binary is None and args.minimalloc_src is not None:
        absl = args.abseil_src or args.minimalloc_src / "external" / "abseil-cpp"
        try:
            print(f"building MiniMalloc from {args.minimalloc_src} into {args.build_dir} ...",
                  flush=True)
            binary = build_minimalloc(args.minimalloc_src, absl, args.build_dir)
        except RuntimeError as e:
            print(f"cannot build MiniMalloc: {e}; using recorded times", flush=True)
    if binary is None:
        recorded, note = read_recorded()
        print(f"MiniMalloc times recorded, not measured now: {note}")
    out_dir = Path(tempfile.mkdtemp(prefix="bench-minimalloc-"))

    modes = [m for m in ("given", "blind") if m in args.modes.split(",")]
    print(f"load average at start: {_load()}", flush=True)
    mm_runs = {k: [] for k, _ in files}
    ours = {m: {k: [] for k, _ in files} for m in modes}
    for rep in range(args.repeats):
        for letter, f in files:
            if binary is not None:
                mm_runs[letter].append(run_minimalloc(binary, f, args.time_limit, out_dir))
            for m in modes:
                ours[m][letter].append(run_ours(f, args.time_limit, m == "given"))
            mt = mm_runs[letter][-1] if binary is not None else (recorded.get(letter), None)
            line = f"  run {rep + 1} {letter}: MiniMalloc {_s(mt[0])} s ({_s(mt[1])} CPU)"
            for m in modes:
                o = ours[m][letter][-1]
                line += f", ours {LABELS[m]} {_s(o['seconds'])} s ({_s(o['cpu'])} CPU)"
            if "blind" in modes:
                o = ours["blind"][letter][-1]
                line += (f" (arena {o['arena'] / CAPACITY:.4f}, bound {o['bound'] / CAPACITY:.4f}, "
                         f"{'proven' if o['proven'] else 'not proven'}, {o['total']:.1f} s in all)")
            print(line, flush=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    print(f"load average at end: {_load()}")
    print(f"\ntime to a plan <= {CAPACITY:,} bytes (wall s), median of {args.repeats}"
          f"{' (MiniMalloc: recorded)' if binary is None else ', interleaved'}; "
          f"time limit {args.time_limit:g} s; CPU = CPU seconds of the whole process (ours: with "
          "Python start-up, imports and any worker processes)")
    head = f"{'inst':<5}{'MiniMalloc':>11}{'CPU':>7}"
    for m in modes:
        head += f"{'ours ' + LABELS[m]:>26}{'CPU':>7}{'ratio':>7}"
    print(head + ("   not told: arena / bound (x capacity)" if "blind" in modes else ""))
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    inf = float("inf")
    for letter, _ in files:
        if binary is None:
            m_s, m_cpu = recorded.get(letter), None
        else:
            m_s = _median([r[0] for r in mm_runs[letter]])
            m_cpu = _median([r[1] for r in mm_runs[letter] if r[0] is not None])
        row = f"{letter:<5}{_s(m_s):>11}{_s(m_cpu):>7}"
        for m in modes:
            t = _median([r["seconds"] if r["seconds"] is not None else inf for r in ours[m][letter]])
            cpu = _median([r["cpu"] for r in ours[m][letter]])
            r = t / m_s if (m_s and t is not None and t != inf) else None
            if r is not None:
                ratios[m].append(r)
            row += f"{_s(t):>26}{_s(cpu):>7}{_s(r):>7}"
        if "blind" in modes:
            last = ours["blind"][letter][-1]
            proof = "proven" if last["proven"] else "not proven"
            row += f"   {last['arena'] / CAPACITY:.4f} / {last['bound'] / CAPACITY:.4f} {proof}"
        print(row)
    for m in modes:
        rs = ratios[m]
        if rs:
            print(f"ours {LABELS[m]}: geometric mean ratio {statistics.geometric_mean(rs):.2f}, "
                  f"<= MiniMalloc on {sum(r <= 1.0 for r in rs)} of {len(files)}")
    return 0


#: Column names of the two ways ours is timed.
LABELS = {"given": "given capacity", "blind": "not told"}


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _s(x, digits: int = 2) -> str:
    """A number, or "-" for none (no plan <= capacity within the time limit)."""
    return "-" if x is None or x == float("inf") else f"{x:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
