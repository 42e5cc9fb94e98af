"""The runtime probe: LiteRT in a subprocess, read back exactly; failures never reach the caller."""

from __future__ import annotations

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.errors import RuntimeProbeError
from viewer.planning.types import DEFAULT_ALIGNMENT
from viewer.planning.verify import verify_plan
from viewer.runtime.probe import (
    MEASURED_PLANNER,
    REGION_ARENA,
    REGION_DYNAMIC,
    REGION_MODEL_FILE,
    REGION_NONE,
    REGION_PERSISTENT,
    REGION_PERSISTENT_ARENA,
    measured_plan,
    probe_from_json,
    probe_model,
)

MNV2 = "mobilenet_v2_224.tflite"


def _in_process_pointers(path) -> dict[int, int]:
    """Data pointers of the model's arena tensors, from LiteRT run in this process."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    ip = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    ip.allocate_tensors()
    out = {}
    for d in ip.get_tensor_details():
        a = ip.tensor(d["index"])()
        if a.nbytes and d["index"] not in out:
            out[d["index"]] = a.ctypes.data
    return out


# --- hand-made model: no ../shared needed ---------------------------------------------------------


def test_probe_of_a_tiny_chain_matches_litert_in_this_process(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    probe = probe_model(p, check=True)
    assert probe.ok and probe.error == ""
    assert probe.num_model_tensors == 4 and len(probe.tensors) >= 4
    # Every arena tensor: aligned, inside the span; the span is the high-water mark.
    offs = probe.offsets
    assert set(offs) == {0, 1, 2, 3}
    assert all(o % DEFAULT_ALIGNMENT == 0 for o in offs.values())
    assert probe.arena_bytes == max(o + probe.tensor(t).nbytes for t, o in offs.items())
    assert min(offs.values()) == 0
    # The oracle: pointer differences in an independent in-process interpreter.
    ptr = _in_process_pointers(p)
    ref = min(offs, key=offs.get)
    for t, o in offs.items():
        assert ptr[t] - ptr[ref] == o, t
    assert probe.tensor(0).shape == (1, 8, 8, 3) and probe.tensor(0).dtype == "float32"
    assert probe.tensor(0).nbytes == 768


def test_measured_plan_is_a_valid_plan_named_litert_measured(tmp_path):
    from viewer.model.reader import load_model
    from viewer.runtime.probe import probe_analysis

    p = write(tmp_path, "chain.tflite", add_chain(3))
    probe = probe_model(p, check=True)
    plan = measured_plan(probe)
    assert plan.planner == MEASURED_PLANNER
    assert plan.arena_bytes == probe.arena_bytes
    verify_plan(probe_analysis(load_model(p), probe).problem(), plan)


def test_missing_file_is_one_line_not_an_exception(tmp_path):
    probe = probe_model(tmp_path / "nope.tflite")
    assert not probe.ok and "nope.tflite" in probe.error and "\n" not in probe.error
    with pytest.raises(RuntimeProbeError, match="nope.tflite"):
        probe_model(tmp_path / "nope.tflite", check=True)


def test_garbage_file_is_reported_by_the_runtime(tmp_path):
    p = tmp_path / "junk.tflite"
    p.write_bytes(b"\x00" * 64)
    probe = probe_model(p, timeout=30)
    assert not probe.ok and str(p) in probe.error and "\n" not in probe.error


@pytest.mark.parametrize(
    "hook, expected",
    [
        ("segv", "crashed (SIGSEGV)"),
        ("kill", "crashed (SIGKILL)"),
        ("raise", "simulated runtime failure"),
        ("garbage", "without an answer"),
        ("segv@allocated", "crashed (SIGSEGV)"),
    ],
)
def test_child_crash_or_failure_becomes_one_line(tmp_path, monkeypatch, hook, expected):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", hook)
    probe = probe_model(p, timeout=30)
    assert not probe.ok
    assert expected in probe.error and str(p) in probe.error
    assert "\n" not in probe.error
    with pytest.raises(RuntimeProbeError):
        probe.check()


def test_hanging_child_is_killed_at_the_timeout(tmp_path, monkeypatch):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "hang")
    probe = probe_model(p, timeout=2)
    assert not probe.ok and "did not finish" in probe.error and str(p) in probe.error


# --- synthetic child answers: region classification, offsets --------------------------------------


def _t(i, alloc, addr, nbytes, **kw):
    d = {"id": i, "name": f"t{i}", "dtype": "float32", "shape": [nbytes // 4], "bytes": nbytes,
         "allocation": alloc, "address": addr, "is_variable": False}
    d.update(kw)
    return d


def test_regions_and_offsets_from_pointer_ranges():
    base = 0x10000
    raw = {
        "ok": True, "subgraph": 0, "num_model_tensors": 6,
        "model_file_mappings": [[0x900000, 0x910000]],
        "inputs": [0], "outputs": [2],
        "tensors": [
            _t(0, "arena-rw", base + 128, 64),
            _t(1, "mmap-ro", 0x900040, 64),
            _t(2, "arena-rw", base, 100),
            _t(3, "arena-rw-persistent", 0x50000, 64),
            _t(4, "persistent-ro", 0x60000, 64),
            _t(5, "dynamic", 0x70000, 64),
            _t(6, "arena-rw", base + 192, 32, name="", shape=[8]),  # a kernel temporary
            _t(7, "none", None, 0, name="", shape=None),
        ],
        "nodes": [{"index": 0, "builtin_code": 0, "inputs": [0, 1], "outputs": [2],
                   "temporaries": [6, 7], "inplace_operator": 0}],
        "execution_plan": [0],
    }
    probe = probe_from_json("m.tflite", raw)
    regions = [t.region for t in probe.tensors]
    assert regions == [REGION_ARENA, REGION_MODEL_FILE, REGION_ARENA, REGION_PERSISTENT_ARENA,
                       REGION_PERSISTENT, REGION_DYNAMIC, REGION_ARENA, REGION_NONE]
    assert probe.offsets == {0: 128, 2: 0, 6: 192}
    assert probe.arena_bytes == 224
    assert [(tp.id, tp.op, tp.nbytes) for tp in probe.temporaries] == [(6, 0, 32)]
    assert probe.node_temporaries == {0: (6, 7)}
    assert set(probe.outside) == {1, 3, 4, 5}


def test_read_only_tensor_outside_the_file_mapping_is_told_apart():
    raw = {"ok": True, "num_model_tensors": 1, "model_file_mappings": [[0x900000, 0x910000]],
           "tensors": [_t(0, "mmap-ro", 0x123400, 64)], "nodes": [], "execution_plan": []}
    probe = probe_from_json("m.tflite", raw)
    assert probe.tensor(0).region != REGION_MODEL_FILE
    assert probe.arena_bytes == 0


# --- real models -------------------------------------------------------------------------------


@pytest.mark.shared
def test_mobilenet_v2_temporaries_are_attributed_to_their_operators():
    path = shared_model(MNV2)
    probe = probe_model(path, check=True)
    n = probe.num_model_tensors
    assert n is not None and len(probe.tensors) > n
    temps = {tp.id: tp for tp in probe.temporaries}
    assert temps and all(t >= n for t in temps)
    # CONV_2D 0 (3x3, stride 2, 3 -> 32 channels, 224 -> 112): im2col of 112*112*(3*3*3) floats.
    im2col = [tp for tp in temps.values() if tp.op == 0]
    assert [tp.nbytes for tp in im2col] == [112 * 112 * 27 * 4]
    # Every temporary belongs to the node that lists it; the rest of the added tensors are empty.
    for op, ids in probe.node_temporaries.items():
        for t in ids:
            assert probe.tensor(t).op == op
    for t in probe.tensors[n:]:
        assert t.op is not None or t.nbytes == 0
    # Constant weights are read-only and lie in the model file's mapping.
    from viewer.model.reader import load_model

    sg = load_model(path).subgraph(0)
    consts = [t.index for t in sg.tensors if t.is_constant]
    assert consts and all(probe.tensor(t).region == REGION_MODEL_FILE for t in consts)


@pytest.mark.shared
def test_probe_offsets_match_in_process_pointers_on_mobilenet_v2():
    path = shared_model(MNV2)
    probe = probe_model(path, check=True)
    ptr = _in_process_pointers(path)
    offs = {t: o for t, o in probe.offsets.items() if t in ptr}
    ref = min(offs, key=offs.get)
    bad = [t for t, o in offs.items() if ptr[t] - ptr[ref] != o - offs[ref]]
    assert not bad
    # The span covers every in-process arena pointer of the model's own tensors.
    lo = ptr[ref] - offs[ref]
    assert max(ptr[t] - lo + probe.tensor(t).nbytes for t in offs) <= probe.arena_bytes


@pytest.mark.shared
def test_input_shapes_resize_the_runtime_tensors():
    path = shared_model("mlperftiny_kws_dscnn_float.tflite")
    probe1 = probe_model(path, check=True)
    probe4 = probe_model(path, input_shapes={0: (4, 49, 10, 1)}, check=True)
    inp = probe4.resized_inputs[0][0]
    assert probe4.tensor(inp).shape == (4, 49, 10, 1)
    assert probe4.tensor(inp).nbytes == 4 * 49 * 10 * 4
    assert probe4.arena_bytes > probe1.arena_bytes
    bad = probe_model(path, input_shapes={"no_such_input": (1, 2)})
    assert not bad.ok and "no_such_input" in bad.error


@pytest.mark.shared
@pytest.mark.parametrize("name", ["litert_testdata_add_shared_tensors.tflite",
                                  "coral_bodypix_mnv1_512_decoder.tflite"])
def test_models_the_runtime_rejects_become_one_line(name):
    path = shared_model(name)
    probe = probe_model(path)
    assert not probe.ok and str(path) in probe.error and "\n" not in probe.error
    assert "LiteRT failed" in probe.error


@pytest.mark.shared
def test_other_subgraphs_are_read_through_the_runtime():
    from viewer.model.reader import load_model
    from viewer.runtime.replay import replay

    path = shared_model("litert_testdata_multi_subgraphs_while.tflite")
    probe = probe_model(path, subgraph=1, check=True)  # WHILE's cond subgraph
    assert probe.subgraph == 1 and probe.num_model_tensors == len(
        load_model(path).subgraph(1).tensors)
    assert probe.arena_bytes > 0
    assert replay(load_model(path), probe).exact
    bad = probe_model(path, subgraph=5)
    assert not bad.ok and "no subgraph 5" in bad.error and str(path) in bad.error


def _node(i, ins, outs, temps=(), inplace=0, code=0):
    return {"index": i, "builtin_code": code, "inputs": list(ins), "outputs": list(outs),
            "temporaries": list(temps), "inplace_operator": inplace}


def test_in_place_aliases_follow_litert_rule_and_are_checked_against_pointers():
    # in(0) -> CONV(1) -> t2 -> ADD(t2, t3) -> t4 (in-place on input 0) -> out t5.
    base = 0x20000
    tensors = [
        _t(0, "arena-rw", base, 256), _t(1, "mmap-ro", None, 0), _t(2, "arena-rw", base + 256, 256),
        _t(3, "arena-rw", base + 512, 256), _t(4, "arena-rw", base + 256, 256),
        _t(5, "arena-rw", base + 768, 256),
    ]
    nodes = [_node(0, [0, 1], [2]), _node(1, [0], [3]),
             _node(2, [2, 3], [4], inplace=4 | 8), _node(3, [4], [5])]
    raw = {"ok": True, "num_model_tensors": 6, "model_file_mappings": [], "inputs": [0],
           "outputs": [5], "tensors": tensors, "nodes": nodes, "execution_plan": [0, 1, 2, 3]}
    probe = probe_from_json("m.tflite", raw)
    assert dict(probe.inplace_aliases) == {4: 2}
    assert probe.node_ranges == ((0, 3),) and probe.deferred == ()
    # Pointers that disagree with the rule: the alias is dropped and a note says so.
    tensors[4] = _t(4, "arena-rw", base + 1024, 256)
    probe = probe_from_json("m.tflite", raw)
    assert dict(probe.inplace_aliases) == {} and any("in-place" in n for n in probe.notes)


def test_node_ranges_split_after_dynamic_outputs_and_deferred_tensors():
    tensors = [_t(0, "arena-rw", 0x1000, 64), _t(1, "dynamic", 0x9000, 8),
               _t(2, "arena-rw", None, 64), _t(3, "arena-rw", None, 64)]
    nodes = [_node(0, [0], [1]), _node(1, [1], [2]), _node(2, [2], [-1])]
    raw = {"ok": True, "num_model_tensors": 4, "model_file_mappings": [], "inputs": [0],
           "outputs": [], "tensors": tensors, "nodes": nodes, "execution_plan": [0, 1, 2]}
    probe = probe_from_json("m.tflite", raw)
    assert probe.node_ranges == ((0, 0), (1, 2))
    # Tensor 2 is used by a node but not placed yet; tensor 3 is used by none (never placed).
    assert probe.deferred == (2,)


def test_relative_path_is_resolved_against_the_callers_directory(tmp_path, monkeypatch):
    write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    monkeypatch.chdir(tmp_path)
    probe = probe_model("chain.tflite")
    assert probe.ok, probe.error
    assert probe.arena_bytes and probe.arena_bytes > 0
    assert probe.path == "chain.tflite"  # the user's path is kept for messages


def test_directory_is_reported_as_such(tmp_path):
    probe = probe_model(tmp_path)
    assert not probe.ok and "is a directory" in probe.error and "\n" not in probe.error
