"""Deployment of several signatures (viewer.whatif.deployment) and the context-length what-if
(viewer.whatif.context_length), against what LiteRT's own Python API reports."""

from __future__ import annotations

import numpy as np
import pytest

from tests.decoder_builder import cache_bytes, decoder
from viewer.analysis.kv_cache import STYLE_EXTERNAL, STYLE_RESOURCE, find_kv_caches
from viewer.errors import WhatIfError
from viewer.model.reader import load_model
from viewer.whatif.context_length import context_axis, context_length_whatif, write_context_length
from viewer.whatif.deployment import deployment

pytest.importorskip("ai_edge_litert")


def _write(tmp_path, style, **kw):
    p = tmp_path / f"dec_{style}_{'_'.join(f'{k}{v}' for k, v in kw.items())}.tflite"
    p.write_bytes(decoder(style, **kw))
    return load_model(p)


def _interp(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    return Interpreter(model_path=str(path),
                       experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def _litert_cache_bytes(path, style) -> dict:
    """{cache name: bytes} as LiteRT sizes them: READ_VARIABLE's output (resource style) or the
    signature input (external style), per LiteRT's tensor details."""
    interp = _interp(path)
    out = {}
    for key in ("prefill", "decode"):
        r = interp.get_signature_runner(key)
        sg = interp._interpreter.GetSubgraphIndexFromSignature(key)
        if style == "external":
            for name, d in r.get_input_details().items():
                if "cache" in name:
                    out[name] = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        else:
            for i in range(64):
                try:
                    d = interp._get_tensor_details(i, sg)
                except ValueError:
                    break
                if d["name"].endswith("/read"):
                    out[d["name"].split("/")[0]] = int(np.prod(d["shape"])) * 4
    return out


@pytest.mark.parametrize("style", ["resource", "external"])
def test_caches_found_with_litert_sizes(tmp_path, style):
    m = _write(tmp_path, style)
    caches = find_kv_caches(m)
    assert {c.name: c.nbytes for c in caches} == _litert_cache_bytes(m.path, style)
    assert {c.style for c in caches} == {STYLE_RESOURCE if style == "resource" else STYLE_EXTERNAL}
    assert all(set(c.subgraphs) >= {0, 1} for c in caches)


def test_resource_deployment_counts_the_caches_once(tmp_path):
    m = _write(tmp_path, "resource")
    d = deployment(m)
    assert d.measured and d.resident_together and not d.unknowns
    names = [t.name for t in d.terms]
    kv = [t for t in d.terms if t.name.startswith("KV cache")]
    assert len(kv) == 1 and kv[0].bytes == cache_bytes() == sum(_litert_cache_bytes(m.path, "resource").values())
    assert "arena of signature 'prefill' (subgraph 0)" in names and "arena of signature 'decode' (subgraph 1)" in names
    # the heap LiteRT grew over the first invoke holds the caches (measured)
    grown = d.probe.heap_at("invoke prefill #1") - d.probe.heap_at("allocate decode")
    assert grown >= kv[0].bytes and f"grew by {grown:,d} B" in kv[0].method
    # the init subgraph's arena is not resident afterwards (measured), held in the first invoke
    assert d.probe.subgraph(2).arena_bytes == 0
    init = next(t for t in d.terms if "CALL_ONCE" in t.name and "first invoke only" in t.name)
    assert init.source == "planned" and init.bytes >= cache_bytes() // 4  # FILL's zeros [1, 64, 16]


def test_external_caches_are_inside_each_signature_arena(tmp_path):
    m = _write(tmp_path, "external")
    d = deployment(m)
    kv = [t for t in d.terms if t.name.startswith("KV cache")]
    assert [t.name for t in kv] == ["KV cache (held by the application)"] and kv[0].bytes == cache_bytes()
    # LiteRT holds each signature's cache inputs in that signature's arena: bigger than them
    for k in ("prefill", "decode"):
        assert d.arenas[k] >= cache_bytes()


def test_planned_deployment_says_what_it_leaves_out(tmp_path):
    d = deployment(_write(tmp_path, "resource"), measure=False)
    assert not d.measured and d.resident_together is None
    assert any("not measured" in u for u in d.unknowns)


def test_context_axis_and_refusals(tmp_path):
    m = _write(tmp_path, "resource", context=48)
    ax = context_axis(m)
    assert (ax.length, ax.axis) == (48, 1)
    with pytest.raises(WhatIfError, match="1..16,777,216"):
        write_context_length(m, 0, tmp_path / "x.tflite")
    # a weight with the context length's size makes the rule ambiguous: refused, named
    amb = _write(tmp_path, "external", context=16, hidden=16)
    with pytest.raises(WhatIfError, match="cannot tell which dimensions"):
        write_context_length(amb, 32, tmp_path / "y.tflite")


@pytest.mark.parametrize("style", ["resource", "external"])
def test_context_length_copy_is_what_litert_runs(tmp_path, style):
    m = _write(tmp_path, style)
    dst = tmp_path / "ctx.tflite"
    edit = write_context_length(m, 160, dst)
    assert (edit.old, edit.new) == (64, 160)
    got = _litert_cache_bytes(dst, style)
    assert got and all(v == 160 * 16 * 4 for v in got.values())
    # LiteRT runs both signatures of the copy and gives shapes that follow: scores [1, T, 160]
    interp = _interp(dst)
    for key, t in (("prefill", 8), ("decode", 1)):
        r = interp.get_signature_runner(key)
        feeds = {n: np.zeros(d["shape"], d["dtype"]) for n, d in r.get_input_details().items()}
        r(**feeds)
        sg = interp._interpreter.GetSubgraphIndexFromSignature(key)
        scores = next(i for i in range(80) if interp._get_tensor_details(i, sg)["name"] == "l0/scores")
        assert list(interp._get_tensor_details(scores, sg)["shape"]) == [1, t, 160]


def test_context_length_whatif_measured_grows_with_the_caches(tmp_path):
    m = _write(tmp_path, "resource")
    w = context_length_whatif(m, 256)
    assert (w.kv_bytes_before, w.kv_bytes_after) == (cache_bytes(), cache_bytes(context=256))
    assert w.edited.measured and w.baseline.measured
    for k in ("prefill", "decode"):
        # measured by LiteRT on the copy; our planner alone (no kernel temporaries) is below it,
        # and with the stored length's temporaries scaled by N / C it is within 5% of LiteRT's
        assert w.edited.arenas[k] > w.baseline.arenas[k]
        assert w.planned_arenas[k] < w.edited.arenas[k]
        assert abs(w.estimated_arenas[k] - w.edited.arenas[k]) <= 0.05 * w.edited.arenas[k]
    kv = next(t for t in w.edited.terms if t.name.startswith("KV cache"))
    grown = w.edited.probe.heap_at("invoke prefill #1") - w.edited.probe.heap_at("allocate decode")
    assert kv.bytes == cache_bytes(context=256) <= grown


@pytest.mark.parametrize("style, copies", [("resource", 2 * 4096), ("external", 2 * cache_bytes())])
def test_cache_tensors_in_each_arena_are_litert_addresses(tmp_path, style, copies):
    """Where the cache bytes live inside each signature's arena, against LiteRT's own data
    pointers: resource style, one layer's k and v copies at a time (READ_VARIABLE outputs, the
    in-place DYNAMIC_UPDATE_SLICE on them; the next layer reuses the bytes); external style,
    every cache's input and output (never freed)."""
    from tests.runtime.test_signatures import litert_addresses

    m = _write(tmp_path, style)
    d = deployment(m).as_dict()
    truth = litert_addresses(m.path, style)
    for sig in d["signatures"]:
        seen = {a: n for name, (a, n) in truth[sig["key"]].items() if "cache" in name and "handle" not in name}
        assert sig["kv_cache_tensors_in_arena_bytes"] == sum(seen.values()) == copies


def test_single_signature_check_counts_the_resource_caches(tmp_path, capsys):
    """``check --signature decode``: the caches' storage is in no arena (measured: the heap
    grows by their bytes over the first invoke), so the one-signature verdict counts it too."""
    from viewer.cli import main

    m = _write(tmp_path, "resource")
    rc = main(["check", m.path, "--budget", "4MiB", "--signature", "decode", "--json", "--runtime-overhead", "0"])
    import json

    d = json.loads(capsys.readouterr().out)
    kv = [t for t in d["terms"] if t["name"].startswith("KV cache")]
    assert len(kv) == 1 and kv[0]["bytes"] == cache_bytes() and kv[0]["source"] == "estimated"
    assert d["used_bytes"] == sum(t["bytes"] for t in d["terms"] if t["counted"]) and rc in (0, 3)


def test_context_axis_is_the_updated_one_when_the_head_dimension_is_larger(tmp_path):
    # hidden 96 > context 48: the largest-dimension rule would pick the hidden axis; the caches'
    # DYNAMIC_UPDATE_SLICE writes [1, T, 96] slices into [1, 48, 96]: axis 1 is the positions.
    m = _write(tmp_path, "external", context=48, hidden=96)
    ax = context_axis(m)
    assert (ax.length, ax.axis, ax.rule) == (48, 1, "update")
    assert "DYNAMIC_UPDATE_SLICE" in ax.describe()


def test_planned_arena_of_the_resource_decoder_is_litert_s(tmp_path, capsys):
    """READ_VARIABLE's ranked outputs are arena tensors (read_variable.cc): with LiteRT's kernel
    temporaries, our litert plan of prefill is the runtime's own arena, byte for byte (it was
    4.5 KiB short while they were taken for dynamic)."""
    import json

    from viewer.cli import main

    m = _write(tmp_path, "resource")
    assert main(["plan", m.path, "--planner", "litert", "--measure", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert plans["litert"]["arena_bytes"] == plans["litert_measured"]["arena_bytes"] == 18496
