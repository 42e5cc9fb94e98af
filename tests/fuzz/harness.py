"""Fuzz harness: structured mutants of .tflite files, each run in a child with limits.

Used by the seeded CI campaign (tests/fuzz/test_campaign.py), the regression corpus
(tests/fuzz/test_corpus.py) and the on-demand campaign (tools/fuzz_campaign.py).

A :class:`Runner` starts one worker process that imports the viewer once; for each job it
forks a child that sets an address-space limit (``RLIMIT_AS``) and a CPU limit, sends stdout
to /dev/null and stderr to a file, and calls :func:`viewer.cli.main` in process. The worker
kills the child at the wall-clock limit and reports its exit code or signal, its stderr, its
wall and CPU time and its peak RSS (``ru_maxrss`` and ``ru_utime + ru_stime`` from ``wait4``,
which include the child's own waited-for children such as the LiteRT probe).

The time limit of 10 s is on CPU time (the kernel stops the child at 11 CPU seconds): this
2-core machine is shared by eight people and its wall clock measures their load more than our
work. A child that does not use the CPU (a hang on a FIFO, a lock) is killed at 60 s of wall
time. :func:`classify` sorts each outcome:

- ``result``: exit 0 or 1 (``check``: does not fit), nothing on stderr but ``note:`` lines;
- ``error``: exit 2 and exactly one stderr line ``arena-viewer: error: ...`` (a ViewerError);
- ``other``: anything else: exit 3 (internal error), a signal, the time limit, a traceback,
  more than one line, a warning on stderr.

POSIX only (fork, rlimits).
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: CPU-time limit per command, seconds (what "within 10 s" is measured in).
TIME_LIMIT = 10.0
#: Wall-clock limit per command, seconds: kills children that hang without using the CPU.
WALL_LIMIT = 60.0
#: Peak RSS above which an outcome is reported as over memory, bytes.
RSS_LIMIT = 1 << 30
#: Address-space limit of each child, bytes (hostile input fails inside it, not the machine).
AS_LIMIT = 4 << 30
ERROR_PREFIX = "arena-viewer: error: "

#: 32-bit values that break offsets, counts and sizes.
_WORDS = (0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x10000, 0xFFFF, 0x40000000)


def mutate(data: bytes, rng: random.Random, log: list[str] | None = None) -> bytes:
    """One structured mutant of a flatbuffer: 1 to 3 stacked mutations.

    Mutations: flip a few bytes; truncate; set an aligned 32-bit word (offset, vtable entry,
    vector length) to 0, 2^31-1, -1, 2^31 or another large count; set a 16-bit vtable field to
    0 or 0xFFFF; duplicate a 4-byte word elsewhere (shared offsets). The first 8 bytes (root
    offset, identifier) are hit less often, so most mutants get past the header.

    ``log``, when given, receives one short line per mutation (``flip 1234^0x10``,
    ``truncate 5000``, ``u32 1024=0x7fffffff``, ``u16 60=0xffff``, ``copy 96->1040``; byte
    offsets) so that a finding says what was changed. The mutant depends only on ``data`` and
    ``rng``'s state.
    """
    b = bytearray(data)
    note = log.append if log is not None else (lambda _: None)
    for _ in range(rng.choice((1, 1, 2, 3))):
        n = len(b)
        if n < 16:
            break
        kind = rng.random()
        lo = 0 if rng.random() < 0.05 else 8
        if kind < 0.25:
            for _ in range(rng.randint(1, 4)):
                i, bit = rng.randrange(lo, n), 1 << rng.randrange(8)
                b[i] ^= bit
                note(f"flip {i}^{bit:#x}")
        elif kind < 0.35:
            i = rng.randrange(max(lo, n // 4), n)
            del b[i:]
            note(f"truncate {i}")
        elif kind < 0.75:
            i = rng.randrange(lo, n - 4) & ~3
            v = rng.choice(_WORDS) if rng.random() < 0.8 else rng.randrange(1 << 32)
            b[i:i + 4] = struct.pack("<I", v)
            note(f"u32 {i}={v:#x}")
        elif kind < 0.9:
            i = rng.randrange(lo, n - 2) & ~1
            v = rng.choice((0, 0xFFFF, 4, 0x7FFF))
            b[i:i + 2] = struct.pack("<H", v)
            note(f"u16 {i}={v:#x}")
        else:
            i, j = (rng.randrange(lo, n - 4) & ~3 for _ in range(2))
            b[j:j + 4] = b[i:i + 4]
            note(f"copy {i}->{j}")
    return bytes(b)


@dataclass(frozen=True)
class Outcome:
    """What one command did in its child.

    Attributes
    ----------
    rc : int or None
        Exit code; None when killed by a signal (``signal``) or the time limit.
    signal : int or None
    timed_out : bool
        Killed at the wall-clock limit.
    seconds : float
        Wall time, seconds.
    max_rss : int
        Peak resident set of the child (and its waited-for children), bytes.
    stderr : str
    cpu_seconds : float
        User + system CPU time of the child (and its waited-for children): on a loaded
        machine the wall time says more about the load than about the work.
    """

    rc: int | None
    signal: int | None
    timed_out: bool
    seconds: float
    max_rss: int
    stderr: str
    cpu_seconds: float = 0.0

    @property
    def over_time(self) -> bool:
        """Over :data:`TIME_LIMIT` CPU seconds, or killed at the wall-clock limit."""
        return self.timed_out or self.cpu_seconds > TIME_LIMIT

    @property
    def kind(self) -> str:
        """``result``, ``error`` or ``other`` (see the module docstring)."""
        return classify(self)


def classify(o: Outcome) -> str:
    """``result`` / ``error`` (one-line ViewerError) / ``other``."""
    if o.timed_out or o.rc is None or "Traceback" in o.stderr:
        return "other"
    lines = [line for line in o.stderr.splitlines() if line.strip() and not line.startswith("note: ")]
    if o.rc in (0, 1) and not lines:
        return "result"
    if o.rc == 3 and len(lines) == 1 and "cannot tell" in lines[0]:
        return "result"  # check's verdict "cannot tell", one line naming what is unknown
    if o.rc == 2 and len(lines) == 1 and lines[0].startswith(ERROR_PREFIX):
        return "error"
    return "other"


def _wait(pid: int, deadline: float):
    """Wait for child ``pid`` until ``deadline`` (time.monotonic()); SIGKILL it then.

    Returns (status, rusage, timed_out). Sleeps on a pidfd (Linux 5.3+) rather than polling;
    falls back to polling wait4 every 2 ms elsewhere.
    """
    import select
    import signal

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        while True:
            wpid, status, ru = os.wait4(pid, os.WNOHANG)
            if wpid:
                return status, ru, False
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                _, status, ru = os.wait4(pid, 0)
                return status, ru, True
            if fd is None:
                time.sleep(min(0.002, left))
            else:
                select.select([fd], [], [], left)
    finally:
        if fd is not None:
            os.close(fd)


#: Modules the worker does not import: Qt's (unless asked) and the window's.
_NOT_PRELOADED = ("viewer.ui", "viewer.cli.gui", "viewer.__main__", "viewer.cli.__main__")
_QT_MODULES = ("viewer.export.chart_items", "viewer.export.chart_scene")


def _preload(qt: bool) -> None:
    """Import every viewer module (and numpy's lazily imported ones) once, in the worker.

    Commands import much lazily (numpy.ma, the options table, the probe); a child that
    imports them itself pays ~25 ms per command, more than a small model's ``plan``. Modules
    only: no command is run, so no cache holds anything of a previous input. With ``qt``
    also pyqtgraph and the chart modules (no QApplication: each export child makes its own).
    """
    import importlib
    import pkgutil

    import numpy
    import numpy.ma  # noqa: F401
    import viewer

    skip = _NOT_PRELOADED + (() if qt else _QT_MODULES)
    todo = [viewer]
    while todo:  # not pkgutil.walk_packages: it imports the skipped packages to list them
        pkg = todo.pop()
        for m in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            if not m.name.startswith(skip):
                mod = importlib.import_module(m.name)
                if m.ispkg:
                    todo.append(mod)
    if qt:
        from pyqtgraph.Qt import QtGui, QtSvg, QtWidgets  # noqa: F401
    numpy.zeros(1)


def _serve() -> int:
    """Worker loop: one JSON job per stdin line -> one JSON outcome per stdout line."""
    import gc
    import resource

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.pop("DISPLAY", None)
    os.environ.pop("WAYLAND_DISPLAY", None)
    import viewer.cli as cli

    _preload(qt=bool(os.environ.get("ARENA_FUZZ_QT")))
    parser = cli.build_parser()  # and every command module
    # The parser is the same for every job and a child's parse cannot change the worker's copy:
    # building it once here saves ~11 ms of argparse per command (60% of a small plan).
    cli.build_parser = lambda only=None: parser
    gc.collect()
    gc.freeze()  # the imported objects stay out of the children's collections (less copy-on-write)
    out = sys.stdout
    err_path = tempfile.mkstemp(prefix="arena-fuzz-", suffix=".err")[1]
    try:
        for line in sys.stdin:
            job = json.loads(line)
            t0 = time.monotonic()
            pid = os.fork()
            if pid == 0:  # child
                try:
                    resource.setrlimit(resource.RLIMIT_AS, (job["as_limit"], job["as_limit"]))
                    cpu = int(job["cpu_limit"]) + 1
                    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
                    fd = os.open(err_path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT)
                    os.dup2(fd, 2)
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    sys.stderr = os.fdopen(2, "w", buffering=1)
                    sys.stdout = os.fdopen(1, "w")
                    rc = cli.main(job["argv"])
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(rc)
                except MemoryError:
                    os._exit(101)
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    sys.stderr.flush()
                    os._exit(102)
            status, ru, timed_out = _wait(pid, t0 + job["timeout"])
            seconds = time.monotonic() - t0
            with open(err_path, encoding="utf-8", errors="replace") as f:
                stderr = f.read(20000)
            rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            out.write(json.dumps({"rc": rc, "signal": sig, "timed_out": timed_out,
                                  "seconds": seconds, "max_rss": ru.ru_maxrss * 1024,
                                  "stderr": stderr,
                                  "cpu_seconds": ru.ru_utime + ru.ru_stime}) + "\n")
            out.flush()
    finally:
        os.unlink(err_path)
    return 0


class Runner:
    """A worker process that runs viewer commands in forked, limited children.

    Use as a context manager; :meth:`run` is synchronous. ``qt``: the worker also imports
    pyqtgraph and the chart modules (for ``export``; it makes every fork ~20 ms dearer, so
    keep a second Runner for the other commands). ``nice``: run the worker under ``nice -n``.
    """

    def __init__(self, *, nice: int = 0, qt: bool = False):
        env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen",
                   PYTHONDONTWRITEBYTECODE="1", PYTHONWARNINGS="default", OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1")
        env.pop("ARENA_FUZZ_QT", None)
        if qt:  # export jobs: the worker imports Qt's modules once (each child makes its app)
            env["ARENA_FUZZ_QT"] = "1"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve"]
        if nice:
            cmd = ["nice", "-n", str(nice), *cmd]
        self._p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, env=env, cwd=str(ROOT))

    def run(self, argv: list[str], *, timeout: float = WALL_LIMIT, cpu_limit: float = TIME_LIMIT,
            as_limit: int = AS_LIMIT) -> Outcome:
        """Run ``arena-viewer ARGV`` in a fresh child; its :class:`Outcome`.

        ``timeout``: wall-clock seconds before SIGKILL; ``cpu_limit``: CPU seconds (the child
        gets SIGXCPU one second past it); ``as_limit``: bytes of address space.
        """
        self._p.stdin.write(json.dumps({"argv": [str(a) for a in argv], "timeout": timeout,
                                        "cpu_limit": cpu_limit, "as_limit": as_limit}) + "\n")
        self._p.stdin.flush()
        line = self._p.stdout.readline()
        if not line:
            raise RuntimeError("fuzz worker died")
        return Outcome(**json.loads(line))

    def close(self) -> None:
        if self._p.poll() is None:
            self._p.stdin.close()
            try:
                self._p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._p.kill()
                self._p.wait()
        for f in (self._p.stdin, self._p.stdout):
            if f is not None and not f.closed:
                f.close()

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    sys.path.insert(0, str(ROOT))
    sys.exit(_serve())
