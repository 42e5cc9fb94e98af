"""The probe's packed answer (numpy columns in its JSON line) builds the records the listed
answer (one JSON object per tensor and node) builds, field by field, on real models: both read
from the same LiteRT allocation in one child process."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.runtime import _probe_packed
from viewer.runtime.probe import _ROOT, _child_env, probe_from_json
from viewer.runtime.spawn import child_command

MODELS = ["mobilenet_v2_224_int8.tflite", "mobilenet_v2_224_fp16.tflite", "se_dynbatch.tflite",
          "litert_testdata_multi_subgraphs_while.tflite", "mlperftiny_kws_dscnn_int8.tflite"]


def _both(path, *extra) -> tuple[dict, dict]:
    """The child's listed answer and the same answer packed (one allocation, packed here)."""
    out = subprocess.run(child_command("viewer.runtime._child", "probe", str(path), *extra),
                         capture_output=True, env=_child_env(), cwd=_ROOT, timeout=120, check=True)
    listed = json.loads(out.stdout.decode().strip().splitlines()[-1])
    packed = dict(listed)
    packed[_probe_packed.KEY] = _probe_packed.pack(packed.pop("tensors"), packed.pop("nodes"))
    return listed, json.loads(json.dumps(packed))


def _fields(p) -> dict:
    d = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    d["node_temporaries"], d["inplace_aliases"] = dict(d["node_temporaries"]), dict(d["inplace_aliases"])
    return d


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_packed_and_listed_answers_build_the_same_probe(name):
    p = shared_model(name)
    listed, packed = _both(p)
    assert listed["ok"], listed.get("error")
    a, b = probe_from_json(str(p), listed), probe_from_json(str(p), packed)
    assert _fields(a) == _fields(b)
    assert len(a.tensors) > 0 and len(a.nodes) > 0


def test_packed_answer_of_a_tiny_chain_and_of_names_and_shapes_with_edge_values(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    listed, packed = _both(p)
    assert _fields(probe_from_json(str(p), listed)) == _fields(probe_from_json(str(p), packed))
    tensors = [{"id": 0, "name": "", "dtype": "float32", "shape": None, "bytes": 0,
                "allocation": "none", "address": None, "is_variable": False},
               {"id": 1, "name": "ünï/:0", "dtype": "int8", "shape": [], "bytes": 2 ** 40,
                "allocation": "arena-rw", "address": 2 ** 63 + 8, "is_variable": True}]
    nodes = [{"index": 7, "builtin_code": 32, "custom_name": "MyOp", "inplace_operator": 5,
              "inputs": [-1, 1], "outputs": [], "temporaries": [0]}]
    got = _probe_packed.unpack_tensors(json.loads(json.dumps(_probe_packed.pack(tensors, nodes))))
    assert got["names"] == ["", "ünï/:0"] and got["shape"] == [None, ()]
    assert got["address"].tolist() == [0, 2 ** 63 + 8] and got["bytes"].tolist() == [0, 2 ** 40]
    back = _probe_packed.unpack_nodes(_probe_packed.pack(tensors, nodes))
    assert back == [dict(nodes[0], inputs=(-1, 1), outputs=(), temporaries=(0,))]
