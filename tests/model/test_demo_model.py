"""The built-in demo model: built deterministically, loaded and run by LiteRT itself."""

from __future__ import annotations

import numpy as np
import pytest

from viewer.resources import DEMO_MODEL, resource_path
from viewer.resources.build_demo import build_bytes


def _interpreter(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(
        model_path=str(path),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    it.allocate_tensors()
    return it


def test_resource_path_finds_the_committed_demo():
    p = resource_path(DEMO_MODEL)
    assert p.is_file()
    assert p.read_bytes()[4:8] == b"TFL3"


def test_resource_path_missing_resource_names_it():
    with pytest.raises(FileNotFoundError, match="no_such.tflite"):
        resource_path("no_such.tflite")


def test_rebuild_gives_identical_bytes():
    committed = resource_path(DEMO_MODEL).read_bytes()
    assert build_bytes() == committed
    assert build_bytes() == build_bytes()


def test_build_main_writes_file(tmp_path):
    from viewer.resources.build_demo import main

    out = tmp_path / "demo.tflite"
    assert main([str(out)]) == 0
    assert out.read_bytes() == resource_path(DEMO_MODEL).read_bytes()


def test_litert_loads_and_runs_demo():
    it = _interpreter(resource_path(DEMO_MODEL))
    (inp,) = it.get_input_details()
    (out,) = it.get_output_details()
    assert list(inp["shape"]) == [1, 64, 64, 3] and inp["dtype"] == np.float32
    assert list(out["shape"]) == [1, 64, 64, 1]
    x = np.random.default_rng(0).random((1, 64, 64, 3), dtype=np.float32)
    it.set_tensor(inp["index"], x)
    it.invoke()
    y = it.get_tensor(out["index"])
    # LOGISTIC output: strictly inside (0, 1), and not constant (the convolutions did work).
    assert np.all((y > 0) & (y < 1)) and float(y.std()) > 1e-4


def test_demo_is_unet_like_for_litert():
    """The runtime sees the encoder/decoder ops and the two skip connections."""
    it = _interpreter(resource_path(DEMO_MODEL))
    ops = [d["op_name"] for d in it._get_ops_details()]
    assert ops.count("CONCATENATION") == 2
    assert ops.count("RESIZE_NEAREST_NEIGHBOR") == 2
    assert ops.count("MAX_POOL_2D") == 2
    assert ops.count("CONV_2D") == 6
    # Each concatenation reads an encoder output produced several operators earlier.
    details = it._get_ops_details()
    producer = {t: i for i, d in enumerate(details) for t in d["outputs"]}
    for i, d in enumerate(details):
        if d["op_name"] == "CONCATENATION":
            skip = d["inputs"][1]
            assert i - producer[skip] >= 4
    # Kernel temporaries (im2col of the 3x3 convolutions) follow the model's 29 tensors.
    assert it._interpreter.NumTensors(0) > 29
