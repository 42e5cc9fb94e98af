"""`arena-viewer overlay`: Model Explorer node data and Netron attachments.

The oracles are the viewers' own code: Model Explorer's node-data classes parse our file, and
its TFLite adapter (``ConvertFlatbufferDirectlyToJson``) gives the graph ids and operator node
ids our file must use. Values equal what ``plan --json`` prints for the same subgraph.
"""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main

#: A plain CNN, two WHILE models (nested, multi-subgraph), and two microcontroller models.
MODELS = ("mobilenet_v2_224.tflite", "litert_testdata_multi_subgraphs_while.tflite",
          "litert_testdata_nested_while.tflite", "tfmicro_micro_speech_int8.tflite",
          "mlperftiny_ic_resnet8_int8.tflite")
NOT_OPERATORS = ("GraphInputs", "GraphOutputs", "pseudo_const")


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _adapter_graphs(path) -> dict[str, set[str]]:
    """Graph id -> operator node ids, from Model Explorer's own TFLite adapter."""
    adapter = pytest.importorskip("ai_edge_model_explorer_adapter")
    resp = json.loads(adapter.ConvertFlatbufferDirectlyToJson(adapter.VisualizeConfig(), str(path)))
    graphs = {}
    for collection in resp:
        for g in collection["subgraphs"]:
            graphs[g["id"]] = {n["id"] for n in g["nodes"] if n["label"] not in NOT_OPERATORS}
    return graphs


def _plan_breadth(capsys, path, subgraph: int) -> list[int]:
    rc, out, err = _run(capsys, "plan", str(path), "--json", "--subgraph", str(subgraph),
                        "--planner", "litert")
    assert rc == 0, err
    return [op["breadth_bytes"] for op in json.loads(out)["operators"]]


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_model_explorer_file_matches_the_adapter_and_the_cli(name, tmp_path, capsys):
    ndb = pytest.importorskip("model_explorer.node_data_builder")
    path = shared_model(name)
    out = tmp_path / "arena.json"
    rc, _, err = _run(capsys, "overlay", str(path), "--format", "model-explorer", "-o", str(out),
                      "--value", "breadth_bytes", "--no-measure")
    assert rc == 0, err
    data = json.loads(out.read_text())
    # Model Explorer's own classes take it, and write back the same JSON.
    parsed = ndb.ModelNodeData(graphsData={
        gid: ndb.GraphNodeData(
            name=g["name"],
            results={k: ndb.NodeDataResult(value=v["value"]) for k, v in g["results"].items()},
            gradient=[ndb.GradientItem(**s) for s in g["gradient"]])
        for gid, g in data.items()})
    back = json.loads(parsed.to_json_string())
    assert set(back) == set(data)
    for gid, g in data.items():
        assert {k: back[gid][k] for k in g} == g  # theirs adds defaults of optional fields
    # Graph ids and operator node ids are exactly the adapter's.
    graphs = _adapter_graphs(path)
    assert set(data) == set(graphs)
    from viewer.model.reader import load_model

    model = load_model(path)
    for index, sg in enumerate(model.subgraphs):
        gid = sg.name or ("main" if index == 0 else f"subgraph_{index}")
        assert set(data[gid]["results"]) == graphs[gid]  # every operator exactly once
        breadth = _plan_breadth(capsys, path, index)
        assert [data[gid]["results"][str(i)]["value"] for i in range(len(breadth))] == breadth
        assert "kernel temporaries not included" in data[gid]["name"]


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_netron_attachment_has_every_operator_and_tensor(name, tmp_path, capsys):
    path = shared_model(name)
    out = tmp_path / "arena.json"
    rc, _, err = _run(capsys, "overlay", str(path), "--format", "netron", "-o", str(out),
                      "--no-measure")
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert doc["signature"] == "netron:attachment"
    breadth = _plan_breadth(capsys, path, 0)
    nodes = {}
    for m in doc["metrics"]:
        assert set(m) == {"kind", "identifier", "name", "value"}
        if m["kind"] == "node":
            nodes.setdefault(m["identifier"], {})[m["name"]] = m["value"]
    assert set(nodes) == {str(i) for i in range(len(breadth))}
    assert [nodes[str(i)]["breadth_bytes"] for i in range(len(breadth))] == breadth
    assert sum(v["widest_operator"] for v in nodes.values()) == (1 if breadth else 0)
    assert "kernel temporaries not included" in doc["metadata"][0]["value"]


@pytest.mark.shared
def test_measured_overlay_counts_the_runtime_kernel_temporaries(tmp_path, capsys):
    path = shared_model("mobilenet_v2_224.tflite")
    out = tmp_path / "arena.json"
    rc, _, err = _run(capsys, "overlay", str(path), "--format", "netron", "-o", str(out))
    assert rc == 0, err
    doc = json.loads(out.read_text())
    temps = {m["identifier"]: m["value"] for m in doc["metrics"]
             if m["kind"] == "node" and m["name"] == "temporaries_bytes"}
    rc, out2, err = _run(capsys, "plan", str(path), "--measure", "--json")
    assert rc == 0, err
    report = json.loads(out2)
    runtime = {}
    for t in report["tensors"]:
        if t.get("kind") == "temporary":
            runtime[str(t["first_op"])] = runtime.get(str(t["first_op"]), 0) + t["bytes"]
    assert runtime and {k: v for k, v in temps.items() if v} == runtime
    assert "kernel temporaries not included" not in doc["metadata"][0]["value"]


def test_overlay_refuses_to_replace_a_file_and_bad_names(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    existing = tmp_path / "mine.json"
    existing.write_text("keep me")
    rc, _, err = _run(capsys, "overlay", str(p), "--format", "netron", "-o", str(existing),
                      "--no-measure")
    assert rc == 2 and "exists" in err and len(err.strip().splitlines()) == 1
    assert existing.read_text() == "keep me"
    rc, _, err = _run(capsys, "overlay", str(p), "--format", "netron", "-o", str(existing),
                      "--no-measure", "--force")
    assert rc == 0, err and json.loads(existing.read_text())["signature"] == "netron:attachment"
    rc, _, err = _run(capsys, "overlay", str(p), "--format", "netron", "-o", str(tmp_path / "x.png"))
    assert rc == 2 and "*.json" in err
    rc, _, err = _run(capsys, "overlay", str(p), "--format", "netron", "-o", str(p))
    assert rc == 2


def test_overlay_of_a_chain_is_the_breadth_per_operator(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / "me.json"
    rc, stdout, err = _run(capsys, "overlay", str(p), "--format", "model-explorer", "-o", str(out),
                           "--no-measure", "--value", "breadth_bytes")
    assert rc == 0, err
    data = json.loads(out.read_text())
    # 4 tensors of 768 B; input never freed: 2, 3, 3 tensors live at operators 0, 1, 2.
    assert {k: v["value"] for k, v in data["main"]["results"].items()} == {
        "0": 2 * 768, "1": 3 * 768, "2": 3 * 768}
    assert "widest operator #1" in stdout and "kernel temporaries not included" in stdout
