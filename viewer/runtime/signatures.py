"""Every signature of a model allocated in one LiteRT interpreter, measured as a deployment.

:func:`measure_signatures` runs ``python -m viewer.runtime._signatures_child MODEL`` (one fresh
process, a timeout; a crash or hang becomes ``DeploymentProbe(ok=False, error=...)``), which
builds one interpreter without default delegates, allocates each signature's runner, invokes
each in turn (``rounds`` times, synthetic inputs), then reads every subgraph's tensors from
LiteRT's ``TfLiteContext`` structs and the process heap (glibc ``mallinfo2``) after each stage.
See :mod:`viewer.runtime._signatures_child` for what LiteRT does there.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from viewer.runtime.spawn import child_command

_CHILD = "viewer.runtime._signatures_child"
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class SubgraphMemory:
    """What LiteRT holds for one subgraph after every signature ran (bytes).

    Attributes
    ----------
    subgraph : int
    signatures : tuple of str
        Signature keys that run it (empty for a control-flow or init subgraph).
    arena_bytes : int
        Extent of its arena tensors (``kTfLiteArenaRw``: lowest address to highest end), kernel
        temporaries included; 0 when none is resident (e.g. a ``CALL_ONCE`` init subgraph whose
        memory was released after it ran).
    arena_base : int or None
        Address of its lowest arena tensor (to tell whether arenas overlap).
    persistent_bytes : int
        Its ``kTfLiteArenaRwPersistent`` tensors: variables, resource handles, prepare-time outputs.
    persistent_ro_bytes, dynamic_bytes : int
        ``kTfLitePersistentRo`` and ``kTfLiteDynamic`` tensors holding data (heap).
    variables : tuple of (name, bytes, address)
        Its ``is_variable`` tensors.
    watched : tuple of (tensor id, allocation type, bytes, address)
        The tensors the caller asked about (``watch``), as LiteRT holds them.
    """

    subgraph: int
    signatures: tuple[str, ...]
    arena_bytes: int
    arena_base: int | None
    persistent_bytes: int
    persistent_ro_bytes: int
    dynamic_bytes: int
    variables: tuple[tuple[str, int, int | None], ...] = ()
    watched: tuple[tuple[int, str, int, int | None], ...] = ()


@dataclass(frozen=True)
class DeploymentProbe:
    """LiteRT's answer for one interpreter with ``keys`` allocated.

    Attributes
    ----------
    ok : bool
    error : str
        One line when not ok.
    keys : tuple of str
        Signatures allocated and invoked, in that order.
    signature_subgraphs : dict
        Key -> subgraph index.
    subgraphs : tuple of SubgraphMemory
        Every subgraph of the interpreter, in index order.
    stages : tuple of (stage, heap bytes)
        Heap in use (glibc ``mallinfo2`` ``uordblks + hblkhd``) after each stage, relative to
        before the interpreter was built; None entries when the heap cannot be read.
    arena_overlaps : tuple of (subgraph, subgraph)
        Pairs of subgraphs whose resident arenas overlap in memory (none: they are all
        resident at once, side by side).
    """

    ok: bool
    error: str = ""
    keys: tuple[str, ...] = ()
    signature_subgraphs: Mapping[str, int] = field(default_factory=dict)
    subgraphs: tuple[SubgraphMemory, ...] = ()
    stages: tuple[tuple[str, int | None], ...] = ()
    arena_overlaps: tuple[tuple[int, int], ...] = ()

    def heap_at(self, stage: str) -> int | None:
        """Heap growth (bytes) after ``stage`` (e.g. ``"invoke prefill #1"``), or None."""
        return next((h for s, h in self.stages if s == stage), None)

    @property
    def heap_final(self) -> int | None:
        return self.stages[-1][1] if self.stages else None

    def subgraph(self, index: int) -> SubgraphMemory | None:
        return next((s for s in self.subgraphs if s.subgraph == index), None)


def parse(raw: Mapping) -> DeploymentProbe:
    """The child's JSON as a :class:`DeploymentProbe`."""
    if not raw.get("ok"):
        return DeploymentProbe(False, str(raw.get("error", "failed")))
    subs = tuple(SubgraphMemory(
        int(s["subgraph"]), tuple(s["signatures"]), int(s["arena_bytes"]), s["arena_base"],
        int(s["persistent_bytes"]), int(s["persistent_ro_bytes"]), int(s["dynamic_bytes"]),
        tuple((v["name"], int(v["bytes"]), v["address"]) for v in s["variables"]),
        tuple((int(w["id"]), w["allocation"], int(w["bytes"]), w["address"]) for w in s.get("watched", ())))
        for s in raw["subgraphs"])
    return DeploymentProbe(
        True, "", tuple(raw["keys"]), {k: int(v) for k, v in raw["signature_subgraphs"].items()},
        subs, tuple((s["stage"], s["heap_bytes"]) for s in raw["stages"]),
        tuple(tuple(p) for p in raw["arena_overlaps"]))


def measure_signatures(path: str, keys: Sequence[str] | None = None, *,
                       input_shapes: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
                       rounds: int = 2, timeout: float = 120.0,
                       watch: Mapping[int, Sequence[int]] | None = None) -> DeploymentProbe:
    """Allocate and invoke every signature in ``keys`` (all by default) in one LiteRT
    interpreter, in a subprocess, and read what each subgraph holds.

    Parameters
    ----------
    path : str
        The .tflite model.
    keys : sequence of str, optional
        Signature keys, in the order the application allocates and calls them.
    input_shapes : mapping, optional
        ``{key: {input name: shape}}``: signature inputs resized before allocation.
    rounds : int
        Times each signature is invoked, in turn (the second round shows whether the first
        allocated everything).
    timeout : float
        Seconds before the process is killed.
    watch : mapping, optional
        ``{subgraph: tensor ids}`` to report one by one (``SubgraphMemory.watched``).

    Returns
    -------
    DeploymentProbe
        ``ok=False`` with one line naming the file when LiteRT fails, crashes or hangs.
    """
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = [str(path), "--rounds", str(int(rounds)), "--input-shapes", json.dumps(input_shapes or {})]
    if keys is not None:
        args += ["--keys", ",".join(keys)]
    if watch:
        args += ["--watch", json.dumps({str(k): [int(i) for i in v] for k, v in watch.items()})]
    try:
        proc = subprocess.run(child_command(_CHILD, *args), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, env=env, cwd=_ROOT)
    except subprocess.TimeoutExpired:
        return DeploymentProbe(False, f"{path}: LiteRT did not allocate and run every signature "
                                      f"within {timeout:g} s; the runtime process was killed")
    except OSError as e:
        return DeploymentProbe(False, f"{path}: could not start the LiteRT process: {e}")
    if proc.returncode < 0:
        import signal

        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        return DeploymentProbe(False, f"{path}: the LiteRT runtime crashed ({name}) while running "
                                      "every signature")
    try:
        raw = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return DeploymentProbe(False, f"{path}: the LiteRT process exited with status "
                                      f"{proc.returncode} without an answer")
    got = parse(raw)
    if not got.ok:
        return DeploymentProbe(False, f"{path}: LiteRT failed while running every signature: "
                                      + " ".join(got.error.split())[:300])
    return got
