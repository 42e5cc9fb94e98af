"""Replay: the ``litert`` planner, fed the runtime's own tensors, reproduces LiteRT's arena exactly.

For every shared model LiteRT 2.3 loads, the probe (a subprocess running LiteRT) gives the runtime
shapes, the kernel temporaries with the operator that owns each, and every arena offset. Our
analysis (with those temporaries) and the ``litert`` planner must give the same arena size and the
same offset for every arena tensor, byte for byte.
"""

from __future__ import annotations

import functools

import pytest

from conftest import shared_model, shared_model_names
from tests.tflite_builder import add_chain, write
from viewer.model.reader import load_model
from viewer.runtime.probe import probe_analysis, probe_model
from viewer.runtime.replay import replay

MODELS = shared_model_names(loads_in_litert=True)


@functools.lru_cache(maxsize=None)
def _probe(name):
    """The runtime's arena: after ``allocate_tensors()``, or after one ``Invoke`` when LiteRT
    deferred part of it (the probe's default; graphs with dynamic tensors, or a RESHAPE whose
    shape is computed, are planned in node ranges)."""
    return probe_model(shared_model(name), timeout=120)


@pytest.mark.shared
def test_a_deferred_arena_is_read_after_one_invoke_to_the_byte():
    """se_dynbatch: RESHAPE #5 takes a computed shape, so LiteRT plans nodes 0..5 at
    allocate_tensors() and 6..10 during the first Invoke; the probe reads the arena after it,
    and it equals the runtime's own (in this process, one invoke) to the byte."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from viewer.runtime._child import _random_inputs

    path = shared_model("se_dynbatch.tflite")
    probe = _probe("se_dynbatch.tflite")
    assert probe.ok and probe.invoked and not probe.deferred and "Invoke" in probe.invoke_reason
    assert probe.node_ranges == ((0, 5), (6, 10))
    ip = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    ip.allocate_tensors()
    _random_inputs(ip)
    ip.invoke()
    spans = []
    for i in range(len(load_model(path).subgraph(0).tensors)):
        if probe.tensor(i).in_arena:
            a = ip.tensor(i)()
            spans.append((a.ctypes.data, a.ctypes.data + a.nbytes))
            del a
    base = min(lo for lo, _ in spans)
    assert {i: probe.tensor(i).offset for i in probe.offsets if i < 23} == {
        i: ip.tensor(i)().ctypes.data - base for i in probe.offsets if i < 23}
    assert probe.arena_bytes == 11_583_488


def test_replay_of_a_tiny_chain_is_exact(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(4))
    probe = probe_model(p, check=True)
    r = replay(load_model(p), probe)
    assert r.exact, r.mismatched
    assert r.arena_bytes == probe.arena_bytes


def test_shared_present(models_dir):
    assert MODELS, f"no loadable model listed in {models_dir / 'SOURCES.tsv'}"


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_litert_planner_reproduces_the_runtime_arena(name):
    path = shared_model(name)
    probe = _probe(name)
    assert probe.ok, probe.error
    assert not probe.deferred
    model = load_model(path)
    # The planner alone: the runtime's placement decisions (what is in the arena) applied.
    planner_only = replay(model, probe, runtime_placement=True)
    assert planner_only.arena_bytes == probe.arena_bytes, planner_only.mismatched[:5]
    assert not planner_only.mismatched, planner_only.mismatched[:5]
    # Analysis and planner together, from the model file and the runtime's temporaries only.
    # (Prepare-time folding and WHILE's forwarded outputs are now in the analysis: every
    # shared model's placement decisions match the runtime, so no tolerance is left here.)
    r = replay(model, probe)
    misplaced = [m for m in r.mismatched if m.measured is None]
    assert not misplaced, "the analysis places tensors the runtime keeps outside its arena: " + "; ".join(
        f"{m.id}: {probe.tensor(m.id).region}" for m in misplaced[:8])
    assert r.arena_bytes == probe.arena_bytes, r.mismatched[:5]
    assert not r.mismatched, r.mismatched[:5]


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_analysis_in_place_sharing_agrees_with_the_runtime_kernels(name):
    """Our in-place rule against LiteRT's: the runtime's kernel flags, checked by its pointers."""
    path = shared_model(name)
    probe = _probe(name)
    assert probe.ok, probe.error
    a = probe_analysis(load_model(path), probe)
    ours = {u.tensor: u.alias_of for u in a.usages if u.alias_of is not None}
    runtime = dict(probe.inplace_aliases)
    # Compare where the runtime placed the root: a root the runtime made dynamic or persistent
    # at prepare time cannot be shared (CalculateAllocations drops the alias), and the analysis
    # cannot know that from the file; an empty tensor has no place to share.
    ours = {t: r for t, r in ours.items() if probe.tensor(r).in_arena}
    runtime = {t: r for t, r in runtime.items() if probe.tensor(r).in_arena}
    assert ours == runtime
    for alias, root in runtime.items():
        assert probe.tensor(alias).offset == probe.tensor(root).offset


@pytest.mark.shared
@pytest.mark.parametrize("name, shapes", [
    ("mobilenet_v2_224.tflite", {0: (2, 160, 160, 3)}),
    ("mlperftiny_kws_dscnn_float.tflite", {0: (4, 49, 10, 1)}),
])
def test_replay_after_resizing_inputs_is_exact(name, shapes):
    path = shared_model(name)
    probe = probe_model(path, input_shapes=shapes, check=True)
    assert probe.tensor(probe.resized_inputs[0][0]).shape == shapes[0]
    r = replay(load_model(path), probe)
    assert r.exact, r.mismatched[:5]


@pytest.mark.shared
def test_a_resize_the_runtime_rejects_is_one_line():
    path = shared_model("unet_256.tflite")  # a fixed RESHAPE cannot take 128x128
    probe = probe_model(path, input_shapes={0: (1, 128, 128, 3)})
    assert not probe.ok and str(path) in probe.error and "RESHAPE" in probe.error
    assert "\n" not in probe.error
