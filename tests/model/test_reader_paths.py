"""The reader's two table paths (numpy gathers, struct calls for a few tables) agree exactly."""

from __future__ import annotations

import random

import pytest

import viewer.model._flatbuf as fb
from tests.conftest import shared_model, shared_model_names
from tests.tflite_builder import add_chain, write
from viewer.errors import ModelFormatError
from viewer.model.reader import load_model


def _both(monkeypatch, fn):
    """fn() with every table vector read by numpy, then by struct calls."""
    out = []
    for small in (0, 10**9):
        monkeypatch.setattr(fb, "SMALL_TABLES", small)
        try:
            out.append(("ok", repr(fn())))
        except ModelFormatError as e:
            out.append(("error", str(e)))
    return out


@pytest.mark.parametrize("name", shared_model_names())
def test_both_paths_read_every_shared_model_alike(monkeypatch, name):
    path = shared_model(name)
    a, b = _both(monkeypatch, lambda: [(sg, [dict(op.options) for op in sg.operators])
                                       for sg in load_model(path, graph_rules=False).subgraphs])
    assert a == b


def test_both_paths_give_the_same_verdict_on_corrupted_files(monkeypatch, tmp_path):
    base = add_chain(40)  # 41 tensors, 40 operators: past SMALL_TABLES
    rng = random.Random(99)
    for k in range(150):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(8, len(data))] = rng.randrange(256)
        p = write(tmp_path, f"c{k}.tflite", bytes(data))
        a, b = _both(monkeypatch, lambda: load_model(p, graph_rules=False))
        # Same verdict, same model; the first error found may differ when two tables are bad.
        assert a[0] == b[0] and (a[0] == "error" or a == b), (k, a, b)
