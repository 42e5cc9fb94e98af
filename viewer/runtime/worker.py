"""A resident LiteRT worker: one child process per open model, answering probes over a pipe.

Starting a fresh Python process with numpy and LiteRT costs ~150 ms; a probe inside a warm
process costs a few milliseconds (MobileNet v2: ~3 ms for a fresh ``Interpreter``,
``resize_tensor_input``, ``allocate_tensors`` and the read-back). :class:`RuntimeWorker` keeps
one ``viewer.runtime._child serve MODEL`` process alive (started through
:func:`viewer.runtime.spawn.child_command`) and sends it the same arguments the
one-shot child takes, so its answers are the one-shot probe's (:func:`probe_resident` returns
a :class:`~viewer.runtime.probe.RuntimeProbe` built by the same code). Every request builds a
fresh ``Interpreter``: nothing from an earlier request (a resize, a delegate) carries over.

Isolation: the worker is a separate process. When it dies (a kernel's segfault, SIGKILL, the
OOM killer) the request in flight gets one line saying so, and the next request starts a new
worker (its probe carries one note saying the old one had died). A request that does not answer
within its timeout kills the worker. While the worker is busy with another thread's request, a
request does not wait for it: it runs in a one-shot process instead.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import queue
import subprocess
import threading

from viewer.runtime.probe import (
    _CHILD,
    _ROOT,
    _answered,
    _child_env,
    _crashed,
    _run_child,
    display_path,
    model_file_error,
    probe_model,
)
from viewer.runtime.spawn import child_command

_TIMEOUT, _EOF = object(), object()

#: Workers kept alive at once (the open model and the one it is compared with); the least
#: recently used one is closed when a third model is probed.
MAX_WORKERS = 2
#: Answers kept per worker: the window asks the same question twice per what-if (the shapes,
#: then the arena at those shapes).
ANSWERS_KEPT = 8
#: Seconds allowed for a worker to start (import numpy and LiteRT) and say it is ready.
START_TIMEOUT = 60.0
#: Seconds a request waits for a worker busy with another thread's request before running
#: in a one-shot process.
BUSY_WAIT = 0.05


class RuntimeWorker:
    """One resident LiteRT child for the model at ``path``.

    Parameters
    ----------
    path : str
        The .tflite file (absolute, UTF-8 encodable; see :func:`probe_resident`).

    Attributes
    ----------
    events : list of str
        One line per worker that died or was killed, oldest first (what the user was told).
    starts : int
        Processes started so far.
    requests : int
        Requests answered by a resident process (not by the one-shot fallback, nor from the
        answers kept: the same arguments on an unchanged file get the same answer).
    """

    def __init__(self, path: str):
        self.path = path
        self.events: list[str] = []
        self.starts = 0
        self.requests = 0
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue | None = None
        self._stderr: collections.deque = collections.deque(maxlen=20)
        self._lock = threading.Lock()
        self._pumps: list[threading.Thread] = []
        self._answers: collections.OrderedDict = collections.OrderedDict()
        self._probes: collections.OrderedDict = collections.OrderedDict()  # parsed, see probe_resident
        self._cache_lock = threading.Lock()
        self._last_raw = None  # the last JSON answer line as the child wrote it
        self._served = 0

    # -- process --------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The live worker's process id, or None when none runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self, shown: str) -> str:
        """Start the child and wait until it is ready; "" or one line saying why not."""
        env = _child_env()
        env.pop("ARENA_VIEWER_CHILD_HOOK", None)  # sent with each request instead
        try:
            proc = subprocess.Popen(
                child_command(_CHILD, "serve", self.path), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=_ROOT,
            )
        except OSError as e:
            return f"{shown}: could not start the LiteRT worker process: {e}"
        self.starts += 1
        self._proc, self._lines = proc, queue.Queue()
        self._served = 0  # requests this process has answered (see run: --overhead)
        self._stderr.clear()
        self._pumps = [threading.Thread(target=_pump, args=(proc.stdout, self._lines), daemon=True),
                       threading.Thread(target=_drain, args=(proc.stderr, self._stderr), daemon=True)]
        for t in self._pumps:
            t.start()
        line = self._read(START_TIMEOUT)
        if not isinstance(line, dict) or not line.get("ready"):
            return self._death(shown, "starting", START_TIMEOUT if line is _TIMEOUT else None)
        return ""

    def _read(self, timeout: float):
        """The next JSON line from the child: a dict ({} for a line that is not JSON), or
        :data:`_TIMEOUT` or :data:`_EOF`."""
        try:
            raw = self._lines.get(timeout=timeout)
        except queue.Empty:
            return _TIMEOUT
        if raw is None:
            return _EOF
        try:
            out = json.loads(raw)
        except ValueError:
            return {}
        if not isinstance(out, dict):
            return {}
        self._last_raw = raw
        return out

    def _kill(self) -> int | None:
        """Kill the child (if alive) and reap it; its return code."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None
        finally:
            for t in self._pumps:  # they close stdout and stderr at EOF
                t.join(timeout=2)

    def _death(self, shown: str, what: str, timed_out: float | None,
               then: str = "the next request starts a new worker") -> str:
        """Kill what is left of the worker; one line saying what happened (also in events)."""
        if timed_out is not None:
            self._kill()
            err = (f"{shown}: LiteRT did not finish {what} within {timed_out:g} s (hang?); "
                   "the runtime process was killed")
        else:
            code = self._kill()
            tail = _last(self._stderr)  # _kill joined the stderr pump
            if code is not None and code < 0:
                err = _crashed(shown, -code, tail, what)["error"]
            else:
                err = (f"{shown}: the LiteRT worker exited with status {code} without an answer "
                       f"while {what}" + (f"; last message: {tail}" if tail else ""))
        err += f"; {then}"
        self.events.append(err)
        return err

    def close(self) -> None:
        """Stop the worker (EOF on its stdin, then a kill if it lingers)."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            try:
                proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill()

    # -- requests -------------------------------------------------------------------------
    def run(self, args: list[str], shown: str, timeout: float, what: str) -> dict:
        """Answer the one-shot child's ``args`` in the resident process (same JSON).

        The signature of :func:`viewer.runtime.probe._run_child`, so that
        ``probe_model(..., runner=worker.run)`` builds the probe from the same answer. A request
        made while another thread's is in flight runs in a one-shot process instead.
        """
        key = self._cache_key(args)
        with self._cache_lock:
            kept = self._answers.get(key) if key is not None else None
        if kept is not None:
            return json.loads(kept)  # a fresh copy; json is ~50x faster than deepcopy here
        if not self._lock.acquire(timeout=BUSY_WAIT):
            return _run_child(args, shown, timeout, what)
        if "--overhead" in args and self._proc is not None and self._served:
            # The overhead is one interpreter's growth in a process that built none before:
            # a live worker has built some, so a fresh one-shot process answers.
            self._lock.release()
            return _run_child(args, shown, timeout, what)
        try:
            self._last_raw = None
            out = self._run_locked(args, shown, timeout, what)
            raw = self._last_raw
        finally:
            self._lock.release()
        if key is not None and out.get("ok") and not out.get("notes"):
            with self._cache_lock:  # the child's own line (re-encoding 100k tensors: ~0.4 s)
                self._answers[key] = raw if raw is not None else json.dumps(out)
                while len(self._answers) > ANSWERS_KEPT:
                    self._answers.popitem(last=False)
        return out

    def _cache_key(self, args: list[str]):
        """The same request on the same file gets the same answer (a fresh ``Interpreter``
        each time); None (no caching) while a test hook is set."""
        if os.environ.get("ARENA_VIEWER_CHILD_HOOK"):
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (tuple(args), st.st_mtime_ns, st.st_size)

    def _run_locked(self, args: list[str], shown: str, timeout: float, what: str) -> dict:
        note = ""
        if self._proc is not None and self._proc.poll() is not None:
            note = self._death(shown, "idle between requests", None,
                               then="a new worker answered this request")
        if self._proc is None:
            err = self._start(shown)
            if err:
                return {"ok": False, "error": err}
        req = {"argv": list(args), "hook": os.environ.get("ARENA_VIEWER_CHILD_HOOK", "")}
        try:
            self._proc.stdin.write(json.dumps(req).encode() + b"\n")
            self._proc.stdin.flush()
        except OSError:
            return {"ok": False, "error": self._death(shown, what, None)}
        self._served += 1
        out = self._read(timeout)
        if out is _TIMEOUT:
            return {"ok": False, "error": self._death(shown, what, timeout)}
        if out is _EOF:  # the worker died
            return {"ok": False, "error": self._death(shown, what, None)}
        if not out:
            self._kill()
            err = (f"{shown}: the LiteRT worker answered something that is not JSON while "
                   f"{what}; it was stopped; the next request starts a new worker")
            self.events.append(err)
            return {"ok": False, "error": err}
        self.requests += 1
        out = _answered(out, shown, what)
        if note:
            out.setdefault("notes", []).insert(0, note)
        return out


def _pump(stream, lines: queue.Queue) -> None:
    """Put each line of the worker's stdout on ``lines``, then None at EOF; close the pipe."""
    try:
        for raw in stream:
            lines.put(raw)
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
        lines.put(None)


def _drain(stream, tail: collections.deque) -> None:
    """Keep the last lines of the worker's stderr (for the one line after a crash)."""
    try:
        for raw in stream:
            s = raw.decode("utf-8", "replace").strip()
            if s and not s.startswith("INFO:"):
                tail.append(s)
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


def _last(tail: collections.deque) -> str:
    s = tail[-1] if tail else ""
    return s if len(s) <= 200 else s[:197] + "..."


# -- one worker per open model ------------------------------------------------------------------
_WORKERS: "collections.OrderedDict[str, RuntimeWorker]" = collections.OrderedDict()
_REGISTRY_LOCK = threading.Lock()


def worker_for(path: str | os.PathLike) -> RuntimeWorker:
    """The resident worker of the model at ``path`` (created, not yet started, when new).

    At most :data:`MAX_WORKERS` are kept; the least recently used one is closed.
    """
    key = os.path.realpath(os.path.abspath(str(path)))
    with _REGISTRY_LOCK:
        w = _WORKERS.get(key)
        if w is None:
            w = _WORKERS[key] = RuntimeWorker(key)
        _WORKERS.move_to_end(key)
        old = [_WORKERS.popitem(last=False)[1] for _ in range(max(len(_WORKERS) - MAX_WORKERS, 0))]
    for o in old:
        o.close()
    return w


def close_workers() -> None:
    """Stop every resident worker (called at exit; the window may call it when closing)."""
    with _REGISTRY_LOCK:
        ws = list(_WORKERS.values())
        _WORKERS.clear()
    for w in ws:
        w.close()


atexit.register(close_workers)


def probe_resident(path: str | os.PathLike, *args, **kwargs):
    """:func:`viewer.runtime.probe.probe_model`, answered by the model's resident worker.

    Takes exactly :func:`probe_model`'s arguments and returns the same
    :class:`~viewer.runtime.probe.RuntimeProbe` (built from the same child answer; only
    ``arena_address``, an address in another process, differs). A path that is not UTF-8
    (which LiteRT reaches through a temporary link) runs one-shot.

    Raises
    ------
    viewer.errors.RuntimeProbeError
        Only with ``check=True``, as :func:`probe_model`.
    """
    full = os.path.abspath(str(path))
    if model_file_error(full) is None and "runner" not in kwargs:
        try:
            os.path.realpath(full).encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            worker = worker_for(full)
            key = _probe_key(worker, args, kwargs)
            kept = _kept_probe(worker, key, args, kwargs)
            if kept is not None:
                return kept
            probe = probe_model(path, *args, runner=worker.run, **kwargs)
            if key is not None and probe.ok and not probe.notes:
                with worker._cache_lock:
                    worker._probes[key] = probe
                    while len(worker._probes) > ANSWERS_KEPT:
                        worker._probes.popitem(last=False)
            return probe
    return probe_model(path, *args, **kwargs)


def _kept_probe(worker: RuntimeWorker, key, args: tuple, kwargs: dict):
    """The parsed probe kept for ``key`` (or for the same question asked with the overhead
    measured: its answer plus that figure), or None."""
    if key is None:
        return None
    with worker._cache_lock:
        kept = worker._probes.get(key)
        if kept is None and not kwargs.get("overhead"):
            kept = worker._probes.get(_probe_key(worker, args, {**kwargs, "overhead": True}))
    return kept


# -- asking ahead ------------------------------------------------------
_INFLIGHT_LOCK = threading.Lock()
#: Totals asked ahead (prefetch_totals), by file identity and shapes: ProbeTotals or an Event.
_TOTALS: "collections.OrderedDict" = collections.OrderedDict()


def _totals_key(path: str, input_shapes):
    try:
        st = os.stat(path)
        norm = tuple(sorted((str(k), tuple(int(d) for d in v)) for k, v in (input_shapes or {}).items()))
    except (OSError, TypeError, ValueError, AttributeError):
        return None
    return (os.path.realpath(os.path.abspath(path)), st.st_mtime_ns, st.st_size, norm)


def prefetch_totals(path: str | os.PathLike, input_shapes=None, timeout: float = 60.0) -> threading.Thread:
    """:func:`viewer.runtime.probe.probe_totals` in a one-shot process of its own, now, beside
    the resident worker (which may be allocating the batch-1 probe): ``check``'s batch-2
    footprint then costs no wall time of its own on a second core. :func:`totals_resident` with
    the same arguments takes this answer (waiting for it while it runs)."""
    from viewer.runtime.probe import probe_totals

    key = _totals_key(str(path), input_shapes)
    done = threading.Event()
    with _INFLIGHT_LOCK:
        if key is not None:
            _TOTALS[key] = done
            while len(_TOTALS) > ANSWERS_KEPT:
                _TOTALS.popitem(last=False)

    def run():
        try:
            got = probe_totals(path, input_shapes, timeout)
        except Exception:
            got = None
        with _INFLIGHT_LOCK:
            if key is not None and _TOTALS.get(key) is done:
                if got is not None:  # the same question on the same file: the same answer
                    _TOTALS[key] = got
                else:
                    del _TOTALS[key]
        done.set()

    t = threading.Thread(target=run, name="arena-viewer-prefetch-totals", daemon=True)
    t.start()
    return t


def totals_resident(path: str | os.PathLike, input_shapes=None, timeout: float = 60.0):
    """:func:`viewer.runtime.probe.probe_totals`, answered by the model's resident worker (a
    path that is not UTF-8 runs one-shot)."""
    from viewer.runtime.probe import probe_totals

    key = _totals_key(str(path), input_shapes)
    with _INFLIGHT_LOCK:
        ahead = _TOTALS.get(key) if key is not None else None
    if isinstance(ahead, threading.Event):
        ahead.wait(float(timeout) + START_TIMEOUT)
        with _INFLIGHT_LOCK:
            ahead = _TOTALS.get(key)
    if ahead is not None and not isinstance(ahead, threading.Event):
        return ahead
    full = os.path.abspath(str(path))
    if model_file_error(full) is None:
        try:
            os.path.realpath(full).encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return probe_totals(path, input_shapes, timeout, runner=worker_for(full).run)
    return probe_totals(path, input_shapes, timeout)


def _probe_key(worker: RuntimeWorker, args: tuple, kwargs: dict):
    """The cache key of a parsed probe: the file's identity plus every argument, or None.

    A :class:`RuntimeProbe` is immutable and built only from the child's answer, which the
    worker already keeps per request (:meth:`RuntimeWorker._cache_key`); keeping the parsed
    record too saves parsing the same 100k-tensor answer twice (``check`` asks for the batch-2
    shapes, then for the batch-2 footprint: ~1 s at 100k operators).
    """
    base = worker._cache_key([])
    if base is None:
        return None
    try:
        shapes = kwargs.get("input_shapes", args[1] if len(args) > 1 else None)
        norm = tuple(sorted((str(k), tuple(int(d) for d in v)) for k, v in (shapes or {}).items()))
        rest = tuple(sorted((k, repr(v)) for k, v in kwargs.items() if k not in ("input_shapes", "timeout")))
        return (base, repr(args[:1]), repr(args[2:]), norm, rest)
    except (TypeError, ValueError, AttributeError):
        return None


__all__ = ["RuntimeWorker", "worker_for", "close_workers", "probe_resident", "totals_resident",
           "prefetch_totals", "display_path"]
