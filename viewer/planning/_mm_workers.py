"""Decision searches in worker processes: one static preorder per process, all at once.

A :class:`~viewer.planning._minimalloc.Decision` runs one complete search per static preorder
(MiniMalloc's ``WAT``, ``TAW``, ``TWA``) and takes the first answer. In one Python process they
share one core in turns (the GIL; google/minimalloc's ``Solver::RoundRobin`` shares its one
thread the same way), so a decision that only the third preorder answers quickly costs about
three times that search. A :class:`WorkerPool` runs every preorder but the first in its own
process, so on a machine with more than one core they search at the same time; the first stays
in the planner's own process and starts at once, while the workers start.

Each worker holds resumable searches by capacity, like the planner's own: ``run`` resumes (or
starts) the one at a capacity for some seconds, ``drop`` ends it. Messages are pickles with a
length prefix over the worker's stdin/stdout pipes; the worker checks for a new message between
turns, so ``pause`` ends a run within one turn (10 ms). The workers compute nothing the planner
trusts blindly: a plan a worker finds goes through the planner's verifier like any other.

Workers are forked where that is safe (:func:`can_fork`: they start at once, holding the
problem), else started as ``python -m viewer.planning._mm_workers`` (a fresh interpreter: about
0.5 s, more under load). Only on POSIX and outside a frozen bundle; a worker that fails to
start or dies is dropped, and its preorder runs in the planner's process again.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import time
from pathlib import Path

_HEADER = struct.Struct("<Q")
#: Seconds a worker may take to answer ``pause`` / end its run before it is given up on.
REPLY_TIMEOUT = 5.0

_live: set[subprocess.Popen] = set()  # every worker not yet reaped (tests check it empties)


def available() -> bool:
    """Whether worker processes can be used here (POSIX, not frozen, more than one core)."""
    return (os.name == "posix" and not getattr(sys, "frozen", False)
            and (os.cpu_count() or 1) > 1 and os.environ.get("ARENA_VIEWER_SEARCH_PROCESSES") != "0")


def can_fork() -> bool:
    """Fork workers (instant: they inherit the problem) when no other thread runs in this
    process but paused searches of our own (the command line); else start fresh interpreters (a
    forked copy of a process with other threads, e.g. the window's, could inherit a lock held by
    one of them). A paused search holds no lock: it waits on an event."""
    import threading

    me = threading.current_thread()
    return hasattr(os, "fork") and all(
        t is me or t.name.startswith("minimalloc-") for t in threading.enumerate())


def live_workers() -> int:
    """Worker processes started and not yet ended (0 once every pool is closed)."""
    for p in [p for p in _live if p.poll() is not None]:
        _live.discard(p)
    return len(_live)


# -- framing -----------------------------------------------------------------------------------
def _read_exact(fd: int, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _recv(fd: int):
    head = _read_exact(fd, _HEADER.size)
    if head is None:
        return None
    body = _read_exact(fd, _HEADER.unpack(head)[0])
    return None if body is None else pickle.loads(body)


def _send(fd: int, msg) -> None:
    body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    data = _HEADER.pack(len(body)) + body
    while data:
        data = data[os.write(fd, data):]


def _readable(fd: int, timeout: float = 0.0) -> bool:
    return bool(select.select([fd], [], [], max(timeout, 0.0))[0])


# -- the worker process ------------------------------------------------------------------------
def worker_main() -> int:
    """A spawned worker: ``init`` on stdin, then :func:`_serve`."""
    inp = sys.stdin.fileno()
    out = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break the framing
    msg = _recv(inp)
    if msg is None or msg[0] != "init":
        return 1
    return _serve(inp, out, *msg[1:])


def _serve(inp: int, out: int, start, end, size, alignment, params) -> int:
    """Serve ``run`` / ``drop`` / ``pause`` / ``quit`` on ``inp``, answer on ``out``."""
    from viewer.planning import _minimalloc as mm

    sw = mm.sweep(start, end)
    searches: dict[int, mm.Decision] = {}
    _send(out, ("ready",))
    while True:
        msg = _recv(inp)
        if msg is None or msg[0] == "quit":
            break
        if msg[0] == "run":
            _, cap, seconds = msg
            d = searches.pop(cap, None) or mm.Decision(start, end, size, cap, alignment,
                                                       params=params, sw=sw)
            try:
                status = d.run(time.monotonic() + seconds, lambda: _readable(inp))
            except Exception as e:  # noqa: BLE001 - reported to the planner, which drops us
                _send(out, ("error", cap, f"{type(e).__name__}: {e}"))
                return 1
            if status in (mm.TIMEOUT, mm.CANCELLED):
                searches[cap] = d
            _send(out, ("status", cap, status, d.nodes,
                        d.offsets if status == mm.FEASIBLE else None))
        elif msg[0] == "drop":
            d = searches.pop(msg[1], None)
            if d is not None:
                d.close()
        # "pause" arrives after the run it meant to end: nothing to do.
    for d in searches.values():
        d.close()
    return 0


# -- the planner's side ------------------------------------------------------------------------
class _Forked:
    """A forked worker, with the part of :class:`subprocess.Popen`'s interface used here."""

    def __init__(self, pid: int, to_child: int, from_child: int):
        self.pid, self.to_child, self.from_child = pid, to_child, from_child
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("worker", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass

    def close_pipes(self) -> None:
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass


def _fork(start, end, size, alignment, params, inherited: list[int]) -> _Forked:
    """Fork a worker that already holds the problem (no start-up cost); ``inherited``: pipe
    ends of earlier workers, which the new one closes."""
    import warnings

    r1, w1 = os.pipe()  # planner -> worker
    r2, w2 = os.pipe()  # worker -> planner
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the worker: never returns
        code = 1
        try:
            for fd in [w1, r2, *inherited]:
                os.close(fd)
            code = _serve(r1, w2, start, end, size, alignment, params)
        finally:
            os._exit(code)
    os.close(r1)
    os.close(w2)
    return _Forked(pid, w1, r2)


class _Worker:
    def __init__(self, heuristic: str, proc):
        self.heuristic = heuristic
        self.proc = proc  # subprocess.Popen, or _Forked
        self.ready = False
        self.broken = False
        self.busy_cap: int | None = None  # capacity of the run it is on, if any

    @property
    def fd(self) -> int:
        if isinstance(self.proc, _Forked):
            return self.proc.from_child
        return self.proc.stdout.fileno()

    def send(self, msg) -> bool:
        try:
            fd = self.proc.to_child if isinstance(self.proc, _Forked) else self.proc.stdin.fileno()
            _send(fd, msg)
            return True
        except (OSError, ValueError):
            self.broken = True
            return False


class WorkerPool:
    """One worker process per preorder in ``heuristics`` (see the module docstring).

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals (time steps).
    size : ndarray of int, shape (n,)
        Bytes, all > 0.
    alignment : int
        Bytes.
    params : SearchParams
        Ingredients; each worker gets a copy with its one preorder.
    heuristics : sequence of str
        The preorders to hand to workers (the caller keeps the others).
    """

    def __init__(self, start, end, size, alignment, params, heuristics, command=None,
                 fork: bool | None = None):
        from dataclasses import replace

        self.workers: list[_Worker] = []
        if fork is None:
            fork = command is None and can_fork()
        self.forked = fork
        cmd = command or [sys.executable, "-m", "viewer.planning._mm_workers"]
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        for h in heuristics:
            one = replace(params, preordering_heuristics=(h,))
            try:
                if fork:
                    proc = _fork(start, end, size, alignment, one,
                                 [fd for w in self.workers for fd in (w.proc.to_child, w.proc.from_child)])
                else:
                    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, env=env, close_fds=True)
            except OSError:
                continue
            _live.add(proc)
            w = _Worker(h, proc)
            if not fork:
                w.send(("init", start, end, size, alignment, one))
            self.workers.append(w)

    def ready(self) -> list[_Worker]:
        """Workers that finished starting and have not failed (reads their ``ready``)."""
        for w in self.workers:
            if not w.ready and not w.broken and _readable(w.fd):
                msg = self._read(w)
                w.ready = msg is not None and msg[0] == "ready"
                w.broken = not w.ready
        return [w for w in self.workers if w.ready and not w.broken]

    def _read(self, w: _Worker):
        try:
            msg = _recv(w.fd)
        except (OSError, pickle.UnpicklingError, EOFError):
            msg = None
        if msg is None or msg[0] == "error":
            w.broken = True
            self._kill(w)
            return None
        return msg

    def start_run(self, w: _Worker, cap: int, seconds: float) -> None:
        """Let ``w`` search capacity ``cap`` for up to ``seconds`` (answer read by :meth:`poll`)."""
        if w.send(("run", int(cap), float(seconds))):
            w.busy_cap = int(cap)

    def poll(self, timeout: float = 0.0) -> list[tuple[_Worker, tuple | None]]:
        """Answers of busy workers that have one (``None`` for a worker that failed)."""
        busy = [w for w in self.workers if w.busy_cap is not None and not w.broken]
        if not busy:
            return []
        fds = select.select([w.fd for w in busy], [], [], max(timeout, 0.0))[0]
        out = []
        for w in busy:
            if w.fd in fds:
                msg = self._read(w)
                w.busy_cap = None
                out.append((w, msg))
        return out

    def pause(self, cap: int) -> list[tuple[_Worker, tuple | None]]:
        """End every run on ``cap`` within a turn; their answers (a worker may have answered
        just before it read ``pause``)."""
        busy = [w for w in self.workers if w.busy_cap == cap and not w.broken]
        for w in busy:
            w.send(("pause",))
        return self.wait(cap)

    def wait(self, cap: int) -> list[tuple[_Worker, tuple | None]]:
        """Every answer of a run on ``cap``; a worker silent for :data:`REPLY_TIMEOUT` is
        dropped (its answer ``None``)."""
        out = []
        end = time.monotonic() + REPLY_TIMEOUT
        while any(w.busy_cap == cap and not w.broken for w in self.workers):
            got = self.poll(min(0.05, end - time.monotonic()))
            out += got
            if time.monotonic() > end:
                for w in self.workers:
                    if w.busy_cap == cap:
                        w.broken, w.busy_cap = True, None
                        self._kill(w)
                        out.append((w, None))
        return out

    def drop(self, cap: int) -> None:
        """End the workers' searches at ``cap``."""
        for w in self.workers:
            if w.ready and not w.broken:
                w.send(("drop", int(cap)))

    def _kill(self, w: _Worker) -> None:
        if w.proc.poll() is None:
            w.proc.kill()
        w.proc.wait()
        _live.discard(w.proc)
        if isinstance(w.proc, _Forked):
            w.proc.close_pipes()
        else:
            for f in (w.proc.stdin, w.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass

    def close(self) -> None:
        """End every worker (``quit``, then kill after a second)."""
        for w in self.workers:
            if w.proc.poll() is None:
                w.send(("quit",))
                if not isinstance(w.proc, _Forked):
                    try:
                        w.proc.stdin.close()
                    except (OSError, BrokenPipeError):
                        pass
        end = time.monotonic() + 1.0
        for w in self.workers:
            try:
                w.proc.wait(max(end - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
            self._kill(w)
        self.workers = []


if __name__ == "__main__":
    sys.exit(worker_main())
