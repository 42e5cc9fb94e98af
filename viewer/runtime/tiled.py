"""LiteRT on the models a tiling writes: each signature's arena, and exact stitching.

Both run in a fresh subprocess (:mod:`viewer.runtime._tiling_child`), as every runtime call
does: a crash or hang of the runtime is an error value, never ours.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from viewer.errors import RuntimeProbeError
from viewer.runtime.probe import RuntimeProbe, probe_from_json
from viewer.runtime.spawn import child_command

_ROOT = str(Path(__file__).resolve().parents[2])


def _run(args: list[str], what: str, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        proc = subprocess.run(child_command("viewer.runtime._tiling_child", *args), capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=timeout, env=env, cwd=_ROOT)
    except subprocess.TimeoutExpired:
        raise RuntimeProbeError(f"LiteRT did not finish {what} within {timeout:g} s; killed") from None
    lines = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise RuntimeProbeError(f"LiteRT failed {what} (exit {proc.returncode}): {tail[0]}")
    out = json.loads(lines[-1])
    if not out.get("ok"):
        raise RuntimeProbeError(f"LiteRT failed {what}: {out.get('error')}")
    return out


def signature_arena(path: str | os.PathLike, key: str, timeout: float = 120.0) -> RuntimeProbe:
    """Allocate signature ``key`` of ``path`` in LiteRT and read its arena back.

    Returns
    -------
    RuntimeProbe
        ``arena_bytes`` is the runtime's arena span for that signature's subgraph, kernel
        temporaries included (read from ``TfLiteNode.temporaries`` as :func:`probe_model` does).

    Raises
    ------
    viewer.errors.RuntimeProbeError
    """
    raw = _run(["arena", str(path), "--signature", key], f"allocating signature {key!r} of {path}", timeout)
    return probe_from_json(str(path), raw, int(raw["subgraph"]))


def resident_arenas(folder: str | os.PathLike, timeout: float = 300.0) -> dict:
    """LiteRT's arenas with the deployment written in ``folder`` built at once, as ``tile -o``
    writes it and :func:`check_stitching` runs it: one interpreter for ``patch.tflite`` with
    every signature allocated, one for ``tail.tflite``.

    Returns
    -------
    dict
        ``arenas`` [{file, signature, subgraph, span [lo, hi), bytes}], ``disjoint`` (no two
        spans overlap: each subgraph keeps its own arena, as LiteRT's per-subgraph ArenaPlanner
        does) and ``resident_bytes`` (their sum, bytes).

    Raises
    ------
    viewer.errors.RuntimeProbeError
    """
    return _run(["resident", str(folder)], f"allocating the deployment in {folder}", timeout)


def check_stitching(original: str | os.PathLike, folder: str | os.PathLike, seed: int = 0,
                    timeout: float = 600.0) -> dict:
    """Run the tiled execution written in ``folder`` against the original model in LiteRT.

    Returns
    -------
    dict
        ``cut`` {name: {exact, max_abs_diff, max_magnitude, relative, shape}} comparing the
        stitched patch outputs with the original's cut tensors (read with
        ``experimental_preserve_all_tensors=True``); ``outputs`` the same for the tail's outputs
        against the original's; ``every_element_once`` (the patches tile each cut tensor).

    Raises
    ------
    viewer.errors.RuntimeProbeError
    """
    return _run(["stitch", str(original), str(folder), "--seed", str(seed)],
                f"running the tiled execution of {original}", timeout)


def input_influence(path: str | os.PathLike, seed: int = 0, timeout: float = 120.0) -> dict:
    """Which output elements change in LiteRT when the centre input pixel changes.

    The measured extent of the output's receptive field (a lower bound: an influence that
    happens to cancel is not seen). Returns ``input_hw``, ``pixel`` and per output ``box``
    (y0, y1, x0, x1 of changed elements, half-open, in the output's H and W) and ``changed``.

    Raises
    ------
    viewer.errors.RuntimeProbeError
    """
    return _run(["influence", str(path), "--seed", str(seed)], f"running {path} twice", timeout)
