"""Measure a real inference process: high-water mark, Rss/Pss split, page faults, cgroup advice.

:func:`measure_process` runs ``python -m viewer.runtime._child measure MODEL`` in a fresh
subprocess (one per configuration, so nothing is shared with the caller or the other run): it
loads the model with LiteRT, allocates tensors, runs ``runs`` invocations on random inputs and
reads ``/proc/self/status`` (VmHWM), ``/proc/self/smaps_rollup`` (Rss, Pss_Anon, Pss_File,
Anonymous), ``/proc/self/smaps`` (Rss of the model file's mapping) and ``getrusage`` (minor and
major page faults) around each phase. :func:`measure_report` adds the runtime probe (arena,
kernel temporaries, offsets), the replay of the ``litert`` planner, and cgroup v2 limits.

Everything here is Linux-specific where it reads ``/proc``; elsewhere those fields are None and a
note says why. Nothing here raises for a runtime crash except through ``check``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from viewer.errors import RuntimeProbeError
from viewer.runtime.probe import _run_child, display_path, model_file_error, probe_model, runtime_path

#: Resolver names: LiteRT's reference kernels only, or the default (XNNPACK delegate applied).
RESOLVER_BUILTIN = "builtin"
RESOLVER_XNNPACK = "default"

PROCESS_KEYS = (
    "vmhwm_bytes", "rss_bytes", "pss_anon_bytes", "pss_file_bytes", "anonymous_bytes",
    "model_mapping_rss_bytes",
    "minor_faults_first_run", "minor_faults_later_runs",
    "major_faults_first_run", "major_faults_later_runs",
    "minor_faults_load", "major_faults_load",
)

MIB = 1 << 20


@dataclass(frozen=True)
class ProcessMeasurement:
    """One measured inference process.

    Attributes
    ----------
    resolver : str
        ``"builtin"`` (BUILTIN_WITHOUT_DEFAULT_DELEGATES) or ``"default"`` (XNNPACK applied).
    ok : bool
    error : str
        One line naming the file and what happened ("" when ``ok``).
    values : Mapping[str, Any]
        Every key of :data:`PROCESS_KEYS` (bytes or fault counts; None when not measurable),
        plus ``baseline`` (the same sizes after importing LiteRT, before loading the model) and
        ``seconds_*`` timings (information only).
    """

    resolver: str
    ok: bool
    error: str = ""
    values: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def get(self, key: str) -> Any:
        return self.values.get(key)


def measure_process(path, runs: int = 3, resolver: str = RESOLVER_BUILTIN,
                    timeout: float = 120.0) -> ProcessMeasurement:
    """Run ``runs`` invocations of ``path`` in a fresh process and measure its memory.

    Parameters
    ----------
    path : str or PathLike
    runs : int
        Invocations, >= 1; the first is reported apart (first-touch page faults).
    resolver : str
        ``"builtin"`` or ``"default"`` (the default resolver applies XNNPACK).
    timeout : float
        Seconds before the process is killed.

    Returns
    -------
    ProcessMeasurement
        ``ok=False`` with a one-line ``error`` on a runtime failure, crash or timeout.
    """
    path = str(path)
    bad = model_file_error(path)
    if bad is not None:
        return ProcessMeasurement(resolver, False, display_path(bad))
    what = "measuring " + ("with XNNPACK" if resolver == RESOLVER_XNNPACK else "without delegates")
    with runtime_path(path) as child_path:
        raw = _run_child(["measure", child_path, "--runs", str(max(int(runs), 1)), "--resolver", resolver],
                         display_path(path), timeout, what)
    if not raw.get("ok"):
        return ProcessMeasurement(resolver, False, str(raw.get("error")))
    return ProcessMeasurement(resolver, True, "", raw)


def _round_up(n: int, unit: int = MIB) -> int:
    return int(math.ceil(n / unit) * unit)


def cgroup_limits(peak_bytes: int | None, weights_bytes: int | None) -> dict[str, Any]:
    """cgroup v2 limits for a process whose measured peak is ``peak_bytes``.

    Parameters
    ----------
    peak_bytes : int or None
        Measured high-water mark (VmHWM), bytes.
    weights_bytes : int or None
        Bytes of the model file mapped (file-backed weights).

    Returns
    -------
    dict
        ``memory_max``, ``memory_high``, ``memory_min`` (bytes, rounded up to MiB; None when
        unknown) and ``why`` (one sentence each).
    """
    out: dict[str, Any] = {"memory_max": None, "memory_high": None, "memory_min": None}
    if peak_bytes:
        margin = max(peak_bytes // 10, 4 * MIB)
        out["memory_max"] = _round_up(peak_bytes + margin)
        out["memory_high"] = max(_round_up(peak_bytes + margin // 2), _round_up(peak_bytes))
        if out["memory_high"] >= out["memory_max"]:
            out["memory_high"] = out["memory_max"] - MIB
    if weights_bytes:
        out["memory_min"] = _round_up(weights_bytes)
    out["why"] = {
        "memory_max": "memory.max = measured peak (VmHWM) + a 10% margin (at least 4 MiB): the "
                      "hard boundary; past it the kernel OOM-kills the process instead of letting "
                      "it take the board down.",
        "memory_high": "memory.high a little below memory.max is a tripwire, not a control: "
                       "crossing it triggers reclaim, and on a swapless board reclaim can only "
                       "evict the file-backed (mapped) weights, never shrink the anonymous "
                       "tensor arena, so treat a memory.high event as an alarm.",
        "memory_min": "memory.min = size of the mapped weights, so reclaim cannot evict the "
                      "model's pages and make every inference fault them back in from storage.",
    }
    return out


def measure_report(path, runs: int = 3, timeout: float = 120.0, *,
                   xnnpack: bool = True) -> dict[str, Any]:
    """Probe, replay and measure ``path``; the object ``arena-viewer measure --json`` prints.

    Returns
    -------
    dict
        Keys: ``model``, ``runs``, ``arena_bytes``, ``temporaries`` [{id, op, op_name, bytes,
        in_arena}], ``offsets`` {id: offset}, ``outside`` {id: region}, ``persistent_bytes``,
        ``replay`` {planner, arena_bytes, mismatched_tensors, exact}, ``process`` and
        ``xnnpack`` (each :data:`PROCESS_KEYS` plus ``baseline``, ``before_interpreter``,
        ``error``), ``split`` (:func:`_split`, plus ``xnnpack_added_by_model_bytes``: the same
        growth in the XNNPACK process, the delegate's packed weights and workspace included),
        ``cgroup`` {memory_max, memory_high, memory_min, why}, ``notes``. Sizes in bytes.

    Raises
    ------
    viewer.errors.RuntimeProbeError
        When the runtime cannot allocate the model (or crashes or hangs doing so).
    """
    path = str(path)
    notes: list[str] = []
    probe = probe_model(path, timeout=timeout)  # invokes once when tensors were deferred
    if probe.ok and probe.invoked:
        notes.append(
            f"LiteRT deferred tensors to Invoke ({probe.invoke_reason}); the arena reported is "
            f"the one after one invocation on synthetic inputs (node ranges "
            f"{list(probe.node_ranges)}); LiteRT's arena never shrinks afterwards")
    if probe.ok and probe.invoke_error:
        notes.append(f"the invocation that places deferred tensors failed ({probe.invoke_error}): "
                     "the arena reported is partial, a lower bound")
    if not probe.ok:
        raise RuntimeProbeError(probe.error)
    notes.extend(probe.notes)
    op_names = {n.index: n.op_name for n in probe.nodes}
    report: dict[str, Any] = {
        "model": path,
        "runs": int(runs),
        "arena_bytes": probe.arena_bytes,
        "temporaries": [
            {"id": tp.id, "op": tp.op, "op_name": op_names.get(tp.op, ""), "bytes": tp.nbytes,
             "in_arena": probe.tensor(tp.id).in_arena}
            for tp in probe.temporaries
        ],
        "offsets": {str(t): o for t, o in sorted(probe.offsets.items())},
        "outside": {str(t): r for t, r in sorted(probe.outside.items())},
        "persistent_bytes": sum(
            t.nbytes for t in probe.tensors
            if t.allocation in ("arena-rw-persistent", "persistent-ro", "dynamic") and t.region
            != "arena"
        ),
    }
    report["replay"] = _replay_section(probe, notes)
    proc = measure_process(path, runs, RESOLVER_BUILTIN, timeout)
    report["process"] = _process_section(proc, notes)
    if xnnpack:
        xnn = measure_process(path, runs, RESOLVER_XNNPACK, timeout)
        report["xnnpack"] = _process_section(xnn, notes)
    else:
        xnn = None
        report["xnnpack"] = _process_section(None, notes)
    report["split"] = _split(report["process"], probe.arena_bytes)
    xs = report["xnnpack"]
    xa, xb = xs.get("pss_anon_bytes"), (xs.get("before_interpreter") or {}).get("pss_anon_bytes")
    report["split"]["xnnpack_added_by_model_bytes"] = xa - xb if None not in (xa, xb) else None
    if report["process"].get("heap_trimmed") is False:
        notes.append("no glibc malloc_trim here: the interpreter may have reused heap pages the "
                     "process had already touched, so 'anonymous added by model' can be low")
    if report["split"]["beyond_arena_unresolved"]:
        notes.append(report["split"]["beyond_arena_unresolved"])
    if report["split"]["late_inputs"]:
        notes.append(f"inputs {report['split']['late_inputs']} had other shapes after allocation "
                     "than in the file: their values were made after the interpreter was built, "
                     "so their bytes are in 'anonymous added by model'")
    peaks = [m.get("vmhwm_bytes") for m in (proc, xnn) if m is not None and m.ok]
    peaks = [p for p in peaks if p]
    weights = report["process"].get("model_mapping_rss_bytes") or None
    report["cgroup"] = cgroup_limits(max(peaks) if peaks else None, weights or os.path.getsize(path))
    if peaks:
        which = ("the larger of the two measured peaks (with and without XNNPACK)"
                 if len(peaks) == 2 else "the one measured peak")
        notes.append(f"cgroup limits follow {which}; VmHWM includes the Python interpreter "
                     "(see process.baseline), so a C++ deployment needs less")
    else:
        notes.append("no process was measured: memory.max and memory.high are null")
    notes.append("Pss_File counts shared libraries (LiteRT, Python, numpy) besides the model "
                 "file, shared with other processes; model_mapping_rss_bytes is the model "
                 "file's own resident pages")
    if runs < 2:
        notes.append("one run only: later-run page faults are not measured")
    if not sys.platform.startswith("linux"):
        notes.append("VmHWM, smaps_rollup and the model mapping come from Linux /proc; "
                     "they are null on this platform")
    report["notes"] = notes
    return report


def _replay_section(probe, notes: list[str]) -> dict[str, Any]:
    from viewer.errors import ViewerError
    from viewer.model.reader import load_model
    from viewer.runtime.replay import replay

    try:
        r = replay(load_model(probe.path), probe)
    except ViewerError as e:
        notes.append(f"replay not run: {e}")
        return {"planner": "litert", "arena_bytes": None, "mismatched_tensors": None, "exact": None}
    if probe.deferred:
        notes.append(f"LiteRT left {len(probe.deferred)} arena tensors to be allocated during "
                     "Invoke (dynamic tensors): the measured arena is partial")
    if not r.exact:
        outside = [m.id for m in r.mismatched if m.measured is None]
        if outside:
            notes.append(f"replay: the analysis places tensors {outside[:10]} in the arena; the "
                         "runtime keeps them outside (decided by kernels at prepare time)")
    return {"planner": r.planner, "arena_bytes": r.arena_bytes,
            "mismatched_tensors": r.mismatched_tensors, "exact": r.exact}


def _process_section(m: ProcessMeasurement | None, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in PROCESS_KEYS}
    out["baseline"] = None
    out["before_interpreter"] = None
    out["late_inputs"] = None
    out["heap_trimmed"] = None
    out["error"] = None
    if m is None:
        return out
    if not m.ok:
        out["error"] = m.error
        notes.append(m.error)
        return out
    for k in PROCESS_KEYS:
        out[k] = m.get(k)
    out["baseline"] = m.get("baseline")
    out["before_interpreter"] = m.get("before_interpreter")
    out["late_inputs"] = m.get("late_inputs")
    out["heap_trimmed"] = m.get("heap_trimmed")
    out["litert_version"] = m.get("litert_version")
    missing = [k for k in ("vmhwm_bytes", "pss_anon_bytes") if out[k] is None]
    if missing and sys.platform.startswith("linux"):
        notes.append(f"{m.resolver}: {', '.join(missing)} not readable from /proc")
    return out


#: How the split's "added by the model" figure is measured, as the table and JSON say it.
SPLIT_MEASURED_FROM = (
    "Pss_Anon growth from just before the interpreter was built to after the last run, in the "
    "same process, the heap's free pages given back first (malloc_trim) so the interpreter "
    "cannot hide allocations in them; the harness's own allocations (its random inputs, made "
    "before that point) are measured apart and not in it")


def _split(process: Mapping[str, Any], arena_bytes: int | None) -> dict[str, Any]:
    """File-backed weights vs the anonymous arena, from the run without delegates.

    ``anonymous_added_by_model_bytes`` is Pss_Anon at the end minus Pss_Anon just before the
    interpreter was built (:mod:`viewer.runtime._child_measure`), so the harness's inputs and
    imports are not in it; ``harness_bytes`` is what they took (before the interpreter minus the
    baseline after the imports). ``anonymous_beyond_arena_bytes`` = added - arena (interpreter
    and kernel state, persistent tensors), None with ``beyond_arena_unresolved`` saying why when
    the process grew by less than the arena (a small arena placed in pages already touched).
    Bytes; None when not measured.
    """
    anon = process.get("pss_anon_bytes")
    base = (process.get("baseline") or {}).get("pss_anon_bytes")
    pre = (process.get("before_interpreter") or {}).get("pss_anon_bytes")
    grown = anon - pre if anon is not None and pre is not None else None
    beyond, unresolved = None, None
    if grown is not None and arena_bytes is not None:
        if grown >= arena_bytes:
            beyond = grown - arena_bytes
        else:
            unresolved = (f"the process grew by {grown:,d} B, less than the {arena_bytes:,d} B arena "
                          "(the allocator placed it in pages the process had already touched): "
                          "what the interpreter keeps beyond the arena is below what Pss_Anon "
                          "resolves here, not measured")
    return {
        "weights_file_backed_bytes": process.get("model_mapping_rss_bytes"),
        "anonymous_bytes": anon,
        "anonymous_added_by_model_bytes": grown,
        "harness_bytes": pre - base if pre is not None and base is not None else None,
        "harness_excluded": True,
        "measured_from": SPLIT_MEASURED_FROM,
        "late_inputs": list(process.get("late_inputs") or ()),
        "arena_bytes": arena_bytes,
        "anonymous_beyond_arena_bytes": beyond,
        "beyond_arena_unresolved": unresolved,
    }
