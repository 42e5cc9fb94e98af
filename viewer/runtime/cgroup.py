"""Check a memory verdict on this machine: run the model inside a fresh memory cgroup.

:func:`smallest_surviving_limit` runs the measuring child (N invocations of the model, LiteRT
without delegates) in a new memory cgroup created beneath the caller's own, bisects the
smallest ``memory.max`` (v2) / ``memory.limit_in_bytes`` (v1) at which the process survives,
and reads what the kernel recorded:

- cgroup v2: ``memory.max``, ``memory.peak``, ``memory.events.local`` (``max``, ``oom``,
  ``oom_kill``) and ``memory.pressure`` (PSI);
- cgroup v1: ``memory.limit_in_bytes``, ``memory.max_usage_in_bytes``, ``memory.failcnt`` and
  ``memory.oom_control`` (``oom_kill``).

The child cgroup is nested in the caller's (so every limit above it still holds), the process
joins it before it runs anything (written to ``cgroup.procs`` between fork and exec), swap is
capped at 0 where the files allow it, and the cgroup is removed afterwards. "Survives" means the
child exited normally with an answer within the timeout; a process killed by the OOM killer, or
one so starved that it thrashes past the timeout, does not survive.

:func:`process_baseline` runs the same child with no model (Python, numpy and LiteRT
imported): what any such process needs before the model adds a byte.

When no cgroup can be created, :class:`CgroupUnavailable` says why in one line. Linux only.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import Mapping

from viewer.errors import ViewerError
from viewer.runtime.probe import _CHILD, _ROOT, _child_env, display_path, model_file_error
from viewer.runtime.spawn import child_command

#: Environment variable naming a cgroup directory to create the child cgroups in (a delegated
#: subtree, e.g. from ``systemd-run --user --scope -p Delegate=yes``), instead of the caller's own.
ROOT_ENV = "ARENA_VIEWER_CGROUP_ROOT"
MIB = 1 << 20
#: Bisection stops when the surviving and the failing limit are this close (bytes).
RESOLUTION = MIB

_COUNTER = itertools.count()


class CgroupUnavailable(ViewerError):
    """No memory cgroup can be created here; ``str()`` is one line saying why."""


@dataclass(frozen=True)
class CgroupSupport:
    """Where child memory cgroups can be made.

    Attributes
    ----------
    version : str
        ``"v2"`` or ``"v1"``.
    parent : str
        Directory the child cgroups are created in.
    """

    version: str
    parent: str

    @property
    def limit_file(self) -> str:
        return "memory.max" if self.version == "v2" else "memory.limit_in_bytes"


@dataclass(frozen=True)
class CgroupRun:
    """One run of the child inside a fresh memory cgroup.

    Attributes
    ----------
    limit_bytes : int or None
        The limit written (None: no limit).
    survived : bool
        Exited normally with an answer within the timeout.
    how : str
        "" when it survived, else one phrase ("killed by the OOM killer (SIGKILL)", ...).
    peak_bytes : int or None
        ``memory.peak`` (v2) / ``memory.max_usage_in_bytes`` (v1): the most the cgroup was
        charged (anonymous memory and the page cache it faulted in).
    events : Mapping[str, int]
        v2 ``memory.events.local``; v1 ``failcnt`` and the ``memory.oom_control`` counters.
    pressure : str or None
        v2 ``memory.pressure`` ("some avg10=... total=..." lines joined), None on v1.
    seconds : float
    answer : Mapping
        The child's JSON (VmHWM etc.), {} when it did not answer.
    """

    limit_bytes: int | None
    survived: bool
    how: str
    peak_bytes: int | None
    events: Mapping[str, int] = field(default_factory=dict)
    pressure: str | None = None
    seconds: float = 0.0
    answer: Mapping = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class LimitSearch:
    """The answer of :func:`smallest_surviving_limit`.

    Attributes
    ----------
    version : str
    smallest_surviving_bytes : int
        The smallest limit tried at which the process survived, bytes.
    largest_failing_bytes : int or None
        The largest limit tried at which it did not (None: none failed).
    unlimited : CgroupRun
        The first run, without a limit.
    runs : tuple of CgroupRun
        Every run, in order.
    """

    version: str
    smallest_surviving_bytes: int
    largest_failing_bytes: int | None
    unlimited: CgroupRun
    runs: tuple[CgroupRun, ...]


# -- finding where to create cgroups ------------------------------------------------------------
def detect(root: str | None = None) -> CgroupSupport:
    """Where this process may create a child memory cgroup.

    Parameters
    ----------
    root : str, optional
        A cgroup directory to use instead of our own (default: ``$ARENA_VIEWER_CGROUP_ROOT``,
        else the cgroup ``/proc/self/cgroup`` names, v2 first when it has the memory
        controller, then the v1 memory hierarchy).

    Raises
    ------
    CgroupUnavailable
        One line: no cgroup file system, no memory controller, not allowed to create one...
    """
    root = root or os.environ.get(ROOT_ENV) or None
    if root is not None:
        return _check_parent(_version_of(root), root)
    if not os.path.exists("/proc/self/cgroup"):
        raise CgroupUnavailable("memory cgroups need Linux (/proc/self/cgroup is missing)")
    mounts = _cgroup_mounts()
    mine = _own_cgroups()
    reasons = []
    v2 = mounts.get("v2")
    if v2 is not None and "" in mine:
        parent = os.path.join(v2, mine[""].lstrip("/"))
        try:
            return _check_parent("v2", parent)
        except CgroupUnavailable as e:
            reasons.append(str(e))
    v1 = mounts.get("v1-memory")
    if v1 is not None and "memory" in mine:
        parent = os.path.join(v1, mine["memory"].lstrip("/"))
        try:
            return _check_parent("v1", parent)
        except CgroupUnavailable as e:
            reasons.append(str(e))
    if not reasons:
        reasons.append("no cgroup v2 file system with the memory controller and no cgroup v1 "
                       "memory hierarchy is mounted (see /proc/self/mountinfo)")
    raise CgroupUnavailable("; ".join(reasons))


def _cgroup_mounts() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                head, _, tail = line.partition(" - ")
                fields, rest = head.split(), tail.split()
                if len(fields) < 5 or len(rest) < 3:
                    continue
                point, fstype, opts = fields[4], rest[0], rest[2].split(",")
                if fstype == "cgroup2":
                    out.setdefault("v2", point)
                elif fstype == "cgroup" and "memory" in opts:
                    out.setdefault("v1-memory", point)
    except OSError:
        pass
    return out


def _own_cgroups() -> dict[str, str]:
    """Controller ("" for v2) -> our cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    for c in parts[1].split(",") if parts[1] else [""]:
                        out[c] = parts[2]
    except OSError:
        pass
    return out


def _version_of(path: str) -> str:
    return "v2" if os.path.exists(os.path.join(path, "cgroup.controllers")) else "v1"


def _check_parent(version: str, parent: str) -> CgroupSupport:
    """Make sure a child with a memory limit can be created under ``parent``."""
    if not os.path.isdir(parent):
        raise CgroupUnavailable(f"cgroup {version}: {parent} is not a directory")
    if version == "v2":
        available = (_read(parent, "cgroup.controllers") or "").split()
        if "memory" not in available:
            raise CgroupUnavailable(f"cgroup v2: the memory controller is not available in "
                                    f"{parent} (cgroup.controllers: {' '.join(available) or 'none'})")
        ctl = os.path.join(parent, "cgroup.subtree_control")
        enabled = (_read(parent, "cgroup.subtree_control") or "").split()
        if "memory" not in enabled and os.path.ismount(parent):
            raise CgroupUnavailable(f"cgroup v2: the memory controller is not enabled for the "
                                    f"children of the hierarchy's root {parent}; not changing "
                                    f"it (set {ROOT_ENV} to a delegated cgroup)")
        if "memory" not in enabled:
            try:
                with open(ctl, "w") as f:
                    f.write("+memory")
            except OSError as e:
                raise CgroupUnavailable(
                    f"cgroup v2: the memory controller is not enabled for children of {parent} "
                    f"and cannot be enabled ({e.strerror or e}); run under a delegated cgroup "
                    f"(e.g. systemd-run --user --scope -p Delegate=yes) or set {ROOT_ENV}"
                ) from None
    probe = CgroupSupport(version, parent)
    path = _make(probe)
    try:
        if not os.path.exists(os.path.join(path, probe.limit_file)):
            raise CgroupUnavailable(
                f"cgroup {version}: {parent} is not a memory cgroup (a child has no "
                f"{probe.limit_file})")
    finally:
        _remove(path)
    return probe


def _make(support: CgroupSupport) -> str:
    path = os.path.join(support.parent, f"arena-viewer-{os.getpid()}-{next(_COUNTER)}")
    try:
        os.mkdir(path)
    except OSError as e:
        raise CgroupUnavailable(
            f"cgroup {support.version}: cannot create a cgroup in {support.parent} "
            f"({e.strerror or e}; needs write access to the cgroup, e.g. root or a delegated "
            f"subtree, or set {ROOT_ENV})") from None
    return path


def _remove(path: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # the last task is still leaving


def _write(path: str, name: str, value: str) -> bool:
    try:
        with open(os.path.join(path, name), "w") as f:
            f.write(value)
        return True
    except OSError:
        return False


def _read(path: str, name: str) -> str | None:
    try:
        with open(os.path.join(path, name)) as f:
            return f.read()
    except OSError:
        return None


# -- running in a cgroup ------------------------------------------------------------------------
def run_in_cgroup(support: CgroupSupport, args: list[str], limit_bytes: int | None,
                  timeout: float) -> CgroupRun:
    """Run the child (``_child`` with ``args``) in a fresh memory cgroup limited to ``limit_bytes``.

    Raises
    ------
    CgroupUnavailable
        The cgroup cannot be created or the process cannot join it.
    """
    path = _make(support)
    try:
        v2 = support.version == "v2"
        if limit_bytes is not None:
            if not _write(path, support.limit_file, str(int(limit_bytes))):
                raise CgroupUnavailable(f"cgroup {support.version}: cannot write "
                                        f"{support.limit_file} in {path}")
            # No swap: what does not fit in memory cannot hide on a disk the board lacks.
            _write(path, "memory.swap.max" if v2 else "memory.memsw.limit_in_bytes",
                   "0" if v2 else str(int(limit_bytes)))
        procs = os.path.join(path, "cgroup.procs")

        def join() -> None:  # in the child, between fork and exec
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        env = _child_env()
        env.pop("ARENA_VIEWER_CHILD_HOOK", None)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(child_command(_CHILD, *args), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=timeout, env=env, cwd=_ROOT,
                                  preexec_fn=join)
            code, out = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired:
            code, out = None, b""
        except subprocess.SubprocessError as e:  # preexec_fn failed: could not join
            raise CgroupUnavailable(f"cgroup {support.version}: the process cannot join "
                                    f"{path} ({e})") from None
        seconds = time.perf_counter() - t0
        answer = _answer(out)
        events, pressure, peak = _events(path, v2), None, None
        if v2:
            peak = _int(_read(path, "memory.peak"))
            pr = _read(path, "memory.pressure")
            pressure = "; ".join(ln.strip() for ln in pr.splitlines()) if pr else None
        else:
            peak = _int(_read(path, "memory.max_usage_in_bytes"))
        how = _how(code, answer, events, timeout)
        return CgroupRun(limit_bytes, not how, how, peak, events, pressure, seconds, answer)
    finally:
        _remove(path)


def _answer(out: bytes) -> dict:
    try:
        a = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
        return a if isinstance(a, dict) else {}
    except (ValueError, IndexError):
        return {}


def _int(s: str | None) -> int | None:
    try:
        return int(s.split()[0]) if s else None
    except ValueError:
        return None


def _events(path: str, v2: bool) -> dict[str, int]:
    out: dict[str, int] = {}
    texts = [_read(path, "memory.events.local")] if v2 else [_read(path, "memory.oom_control")]
    for text in texts:
        for line in (text or "").splitlines():
            k, _, v = line.partition(" ")
            if v.strip().lstrip("-").isdigit():
                out[k] = int(v)
    if not v2:
        fc = _int(_read(path, "memory.failcnt"))
        if fc is not None:
            out["failcnt"] = fc
    return out


def _how(code: int | None, answer: dict, events: Mapping[str, int], timeout: float) -> str:
    oom = events.get("oom_kill", 0) > 0
    if code is None:
        return f"did not finish within {timeout:g} s (thrashing at the limit?); killed"
    if code < 0:
        return "killed by the OOM killer (SIGKILL)" if oom or code == -9 else f"killed by signal {-code}"
    if code != 0 or not answer.get("ok"):
        why = answer.get("error") or f"exit status {code}"
        return f"failed ({' '.join(str(why).split())[:160]})"
    return ""


# -- the search ---------------------------------------------------------------------------------
def measure_args(path: str, runs: int) -> list[str]:
    """The measuring child's arguments: ``runs`` invocations without delegates."""
    return ["measure", path, "--runs", str(int(runs)), "--resolver", "builtin"]


def smallest_surviving_limit(
    args: list[str], *, support: CgroupSupport | None = None, timeout: float = 120.0,
    resolution: int = RESOLUTION, progress=None,
) -> LimitSearch:
    """Bisect the smallest memory limit at which the child with ``args`` survives.

    The first run has no limit; if it does not survive, that is the answer (raised). Then the
    limit is bisected between 0 and that run's peak charge (which survived) to ``resolution``
    bytes. Each run may take ``max(timeout, 10 x the unlimited run)`` seconds.

    Raises
    ------
    CgroupUnavailable
        No cgroup can be created, or the process cannot join one.
    viewer.errors.RuntimeProbeError
        The child fails even without a limit.
    """
    from viewer.errors import RuntimeProbeError

    support = support or detect()
    first = run_in_cgroup(support, args, None, timeout)
    runs = [first]
    if progress:
        progress(first)
    if not first.survived:
        raise RuntimeProbeError(f"{display_path(args[1])}: the process did not survive even "
                                f"without a memory limit: {first.how}")
    hi = _round_up(first.peak_bytes or 0, resolution) or 4 << 30
    lo = 0  # fails (nothing runs in 0 bytes)
    limit_timeout = max(timeout, 10 * first.seconds)
    last_ok = None
    while hi - lo > resolution:
        mid = _round_up((lo + hi) // 2, resolution)
        if mid >= hi:
            break
        r = run_in_cgroup(support, args, mid, limit_timeout)
        runs.append(r)
        if progress:
            progress(r)
        if r.survived:
            hi, last_ok = mid, r
        else:
            lo = mid
    if last_ok is None:  # the peak itself was never run with a limit: confirm it survives
        r = run_in_cgroup(support, args, hi, limit_timeout)
        runs.append(r)
        if not r.survived:
            hi = _round_up(hi * 2, resolution)
    return LimitSearch(support.version, hi, lo or None, first, tuple(runs))


def _round_up(n: int, unit: int) -> int:
    return -(-int(n) // unit) * unit


def process_baseline(*, support: CgroupSupport | None = None, timeout: float = 120.0) -> CgroupRun:
    """The child with no model (Python, numpy, LiteRT imported), in a cgroup without a limit."""
    support = support or detect()
    return run_in_cgroup(support, ["baseline", "-"], None, timeout)


def check_model(path: str) -> str:
    """``path`` made absolute; :class:`~viewer.errors.UsageError` naming it when unusable."""
    from viewer.errors import UsageError

    bad = model_file_error(str(path))
    if bad is not None:
        raise UsageError(display_path(bad))
    return os.path.abspath(str(path))
