"""Tiny dynamic-batch models built in code, for the session tests."""

from __future__ import annotations

from tests.tflite_builder import build, tensor, write


def dynamic_chain(tmp_path, n_adds: int = 3, shape=(1, 8, 8, 3), name: str = "dyn_chain.tflite"):
    """input [-1, 8, 8, 3] -> ADD(x, x) -> ... : ``n_adds`` operators, float32, batch dynamic."""
    sig = (-1,) + tuple(shape[1:])
    ts = [tensor(f"t{i}", shape, signature=sig) for i in range(n_adds + 1)]
    ops = [(0, [i, i], [i + 1]) for i in range(n_adds)]
    return write(tmp_path, name, build(ts, ops, [0], [n_adds]))


def static_chain(tmp_path, name: str = "static_chain.tflite"):
    """The same chain with every dimension fixed (no dynamic input)."""
    ts = [tensor(f"t{i}", (1, 8, 8, 3)) for i in range(3)]
    return write(tmp_path, name, build(ts, [(0, [0, 0], [1]), (0, [1, 1], [2])], [0], [2]))
