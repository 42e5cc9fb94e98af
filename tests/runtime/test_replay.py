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
    return probe_model(shared_model(name), timeout=120)


def _deferred(probe) -> list[int]:
    """Arena tensors with bytes that the runtime had not placed after ``allocate_tensors()``.

    LiteRT stops planning at the first operator whose output is dynamic and allocates the rest
    lazily during ``Invoke`` (``Subgraph::PrepareOpsAndTensors`` node ranges); a one-shot
    replay of the whole graph cannot match a partial arena.
    """
    return [t.id for t in probe.tensors
            if t.allocation == "arena-rw" and t.nbytes > 0 and t.offset is None]


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
    r = replay(load_model(path), probe)
    deferred = _deferred(probe)
    if deferred and not r.exact:
        pytest.xfail(
            f"LiteRT defers tensors {deferred[:8]} to Invoke (dynamic tensors); "
            f"mismatched {r.mismatched_tensors[:8]}"
        )
    assert r.measured_arena_bytes == probe.arena_bytes
    assert r.arena_bytes == r.measured_arena_bytes, r.mismatched[:5]
    assert not r.mismatched, r.mismatched[:5]


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_analysis_in_place_sharing_agrees_with_the_runtime_kernels(name):
    """Our in-place rule against LiteRT's: the runtime's kernel flags, checked by its pointers."""
    path = shared_model(name)
    probe = _probe(name)
    assert probe.ok, probe.error
    if _deferred(probe):
        pytest.skip("partial arena after allocate_tensors (dynamic tensors)")
    a = probe_analysis(load_model(path), probe)
    ours = {u.tensor: u.alias_of for u in a.usages if u.alias_of is not None}
    assert ours == dict(probe.inplace_aliases)
    # And the pointers agree: each alias sits at its root's offset in the runtime's arena.
    for alias, root in probe.inplace_aliases.items():
        assert probe.tensor(alias).offset == probe.tensor(root).offset
