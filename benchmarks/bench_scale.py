"""plan, check and export at 10k, 50k and 100k operators: seconds and peak RSS per command.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 10000,50000,100000] [--timeout 120]
                                               [--commands plan,check,check-measured,export,export-svg]

The models are built in code (LiteRT's schema object API, cached in a temporary folder): a
chain of ADD operators on 8 KiB float tensors, ``t[k+1] = ADD(t[k], t[j])``, where ``j`` is
``k`` itself or, one time in five, an earlier tensor 2..64 operators back (a skip connection),
with a few long skips reaching up to a quarter of the graph: the shape of a deep residual
network, as large as LLM-sized LiteRT graphs get.

Each command runs as ``arena-viewer ...`` in a fresh Python process (as a user runs it, imports
included) with a 4 GiB address-space limit; the wall time, the CPU time (user + system, its
children included: the LiteRT worker of ``check``) and the peak RSS are printed. On this shared
machine the wall time mostly measures the others' load (the load average is printed beside it);
CPU time is the fair figure then. ``plan`` runs every fast planner (``--planner all``: naive,
litert, greedy_by_size, greedy_by_breadth, strip_packing) and verifies each plan; ``check``
plans only (``--no-measure``); ``check-measured`` also runs LiteRT (at batch 1, where the same
process measures the runtime overhead, and, for the batch growth, batch 2 as totals only, in a
second process beside it); ``export`` writes a 1600x1000 PNG with LiteRT's measured arena,
``export-svg`` the same chart as an SVG (every tensor's rectangle; the breadth curve at most 4
steps per pixel).
Two anchors, measured in the same run: ``plan --planner greedy_by_size`` (issue 15: under a
second at 100k tensors on an idle machine), and ``litert``: LiteRT alone, ``Interpreter(...)``
+ ``allocate_tensors()`` in a fresh process, the floor of every measured command (``check``
allocates twice: batch 1 and batch 2). Target: each command under 10 s at 100k.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402



def build_model(n_ops: int, seed: int = 0) -> bytes:
    """The residual ADD chain of ``n_ops`` operators as .tflite bytes (see the module doc)."""
    from tests.tflite_builder import build, tensor

    rng = np.random.default_rng(seed)
    shape = (1, 16, 16, 8)  # 8 KiB of float32
    back = np.where(rng.random(n_ops) < 0.2, rng.integers(2, 65, size=n_ops), 0)
    far = rng.random(n_ops) < 0.005
    back = np.where(far, rng.integers(64, max(n_ops // 4, 65), size=n_ops), back)
    ts = [tensor(f"t{i}", shape) for i in range(n_ops + 1)]
    ops = []
    for k in range(n_ops):
        j = k - int(back[k]) if back[k] and k - int(back[k]) >= 0 else k
        ops.append((0, [k, j], [k + 1]))
    return build(ts, ops, [0], [n_ops])


def model_path(n_ops: int, folder: Path) -> Path:
    p = folder / f"residual_add_{n_ops}.tflite"
    if not p.exists():
        t0 = time.perf_counter()
        p.write_bytes(build_model(n_ops))
        print(f"built {p.name}: {p.stat().st_size:,d} B in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
    return p


COMMANDS = {
    "anchor": lambda m, out: ["plan", m, "--planner", "greedy_by_size"],
    "litert": None,  # LiteRT alone (see _LITERT)
    "plan": lambda m, out: ["plan", m],
    "check": lambda m, out: ["check", m, "--budget", "1GiB", "--no-measure"],
    "check-measured": lambda m, out: ["check", m, "--budget", "1GiB"],
    "export": lambda m, out: ["export", m, "-o", out, "--force"],
    "export-svg": lambda m, out: ["export", m, "-o", out[:-4] + ".svg", "--force"],
}

_CLI = "import sys; from viewer.cli import main; sys.exit(main(sys.argv[1:]))"
_LITERT = ("import sys; from ai_edge_litert.interpreter import Interpreter, OpResolverType; "
           "Interpreter(model_path=sys.argv[1], experimental_op_resolver_type="
           "OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES).allocate_tensors()")
AS_LIMIT = 4 << 30


class Outcome:
    """One fresh process: exit code (None when killed), wall and CPU seconds (children
    included), peak RSS in bytes (the largest of it and its children), last stderr line."""

    def __init__(self, rc, seconds, cpu, rss, err, timed_out):
        self.rc, self.seconds, self.cpu_seconds, self.max_rss = rc, seconds, cpu, rss
        self.stderr, self.timed_out = err, timed_out


def run_fresh(code: str, argv: list[str], timeout: float) -> Outcome:
    """``python -c code argv...`` with RLIMIT_AS 4 GiB and RLIMIT_CPU ``timeout``; waited for
    with wait4, so its CPU time and peak RSS include the children it reaped (LiteRT's worker)."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        cpu = int(timeout) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))

    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    err = tempfile.TemporaryFile()
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.DEVNULL,
                            stderr=err, env=env, preexec_fn=limits, cwd=str(ROOT))
    timed_out = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            proc.kill()
            timed_out = True
            pid, status, ru = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    seconds = time.monotonic() - t0
    proc.returncode = 0  # reaped above; keep Popen from waiting again
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return Outcome(rc, seconds, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, text, timed_out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000,100000")
    ap.add_argument("--commands", default="anchor,litert,plan,check,check-measured,export,export-svg")
    ap.add_argument("--timeout", type=float, default=120.0, metavar="S")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "arena-bench-scale")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    names = args.commands.split(",")
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        ap.error(f"unknown command(s) {unknown}; known: {', '.join(COMMANDS)}")
    print(f"{'operators':>9}  {'command':<15} {'wall s':>8} {'CPU s':>7}  {'peak RSS':>9}  {'exit':>4}  load  note")
    for n in (int(s) for s in args.sizes.split(",")):
        m = model_path(n, args.cache)
        out = str(args.cache / f"chart_{n}.png")
        for name in names:
            if name == "litert":
                o = run_fresh(_LITERT, [str(m)], args.timeout)
            else:
                o = run_fresh(_CLI, COMMANDS[name](str(m), out), args.timeout)
            lines = o.stderr.strip().splitlines()
            note = "TIMED OUT" if o.timed_out else (lines[-1][:90] if o.rc not in (0, 3) and lines else "")
            print(f"{n:>9,d}  {name:<15} {o.seconds:>8.2f} {o.cpu_seconds:>7.2f}  {o.max_rss / 2**20:>6.0f} MiB  "
                  f"{'-' if o.rc is None else o.rc:>4}  {os.getloadavg()[0]:4.1f}  {note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
