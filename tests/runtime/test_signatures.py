"""Every signature in one interpreter (viewer.runtime.signatures) against LiteRT's own Python API.

The oracle is LiteRT itself in this process: ``get_signature_runner`` calls, then the data
pointers of the tensors the Python wrapper can view (``_interpreter.tensor(interp, i, sg)``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.decoder_builder import cache_bytes, decoder
from viewer.runtime.signatures import measure_signatures

pytest.importorskip("ai_edge_litert")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("decoders")
    out = {}
    for style in ("resource", "external", "variable"):
        p = d / f"dec_{style}.tflite"
        p.write_bytes(decoder(style))
        out[style] = str(p)
    return out


def _feeds(runner, style, step):
    feeds = {}
    for name, d in runner.get_input_details().items():
        a = np.zeros(d["shape"], d["dtype"])
        if name == "x":
            a += 1.0 + 0.01 * step
        feeds[name] = a
    return feeds


def _file_tensors(path: str, sg: int) -> int:
    from ai_edge_litert import schema_py_generated as S

    with open(path, "rb") as f:
        return S.Model.GetRootAs(f.read(), 0).Subgraphs(sg).TensorsLength()


def litert_addresses(path: str, style: str) -> dict:
    """{key: {tensor name: (address, bytes)}} of the tensors the wrapper can view after both
    signatures ran once (prefill, then decode), in one interpreter."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_path=path,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    runners = {k: interp.get_signature_runner(k) for k in ("prefill", "decode")}
    for k, r in runners.items():
        r(**_feeds(r, style, 0))
    w = interp._interpreter
    out = {}
    for k in runners:
        sg = int(w.GetSubgraphIndexFromSignature(k))
        seen = {}
        for i in range(_file_tensors(path, sg)):  # model tensors only
            d = interp._get_tensor_details(i, sg)
            if not len(d["shape"]) or np.dtype(d["dtype"]).kind not in "fiub":
                continue  # (the wrapper cannot view 0-d and resource tensors)
            try:
                a = w.tensor(interp, i, sg)
            except ValueError:
                continue
            if a is not None and a.size:
                seen[w.TensorName(i, sg)] = (a.ctypes.data, a.nbytes)
        out[k] = seen
    return out


@pytest.mark.parametrize("style", ["resource", "external", "variable"])
def test_arenas_of_both_signatures_are_resident_and_disjoint(models, style):
    got = measure_signatures(models[style], rounds=1)
    assert got.ok, got.error
    assert got.keys == ("prefill", "decode") and got.arena_overlaps == ()
    truth = litert_addresses(models[style], style)
    for key in got.keys:
        s = got.subgraph(got.signature_subgraphs[key])
        assert s.arena_bytes > 0
        # every activation LiteRT shows lies inside the arena the child measured for it
        acts = [(a, n) for name, (a, n) in truth[key].items()
                if "/w" not in name and "handle" not in name and not (style == "variable" and "cache" in name)]
        assert acts
        # (addresses differ between processes; the layout, relative to the lowest, does not)
        lo = min(a for a, _ in acts)
        assert max(a + n for a, n in acts) - lo <= s.arena_bytes


def test_variable_tensors_are_one_set_per_subgraph(models):
    """LiteRT's interpreter runs a DYNAMIC_UPDATE_SLICE that writes its variable input (its
    verifier, verifier.cc "is a variable", and our reader refuse such a file): each subgraph
    keeps its own set of variables in its persistent arena."""
    got = measure_signatures(models["variable"], rounds=1)
    per = [got.subgraph(got.signature_subgraphs[k]) for k in got.keys]
    for s in per:
        assert sorted(n for n, _, _ in s.variables) == ["k_cache_0", "k_cache_1", "v_cache_0", "v_cache_1"]
        assert sum(b for _, b, _ in s.variables) == cache_bytes() == s.persistent_bytes
    a, b = ({addr for _, _, addr in s.variables} for s in per)
    assert not a & b  # not shared: each subgraph holds its own copy
    truth = litert_addresses(models["variable"], "variable")
    assert truth["prefill"]["k_cache_0"][1] == 4096


def test_resource_caches_are_allocated_once_at_the_first_invoke(models):
    got = measure_signatures(models["resource"], rounds=2)
    before = got.heap_at("allocate decode")
    first = got.heap_at("invoke prefill #1") - before
    later = got.heap_final - got.heap_at("invoke prefill #1")
    assert first >= cache_bytes()  # the storage (malloc-ed by ASSIGN_VARIABLE) appears here
    assert later < cache_bytes() // 4  # decode's first invoke and round 2 allocate no second copy
    assert all(s.variables == () for s in got.subgraphs)  # in no arena


def test_resource_caches_are_shared_between_signatures(models):
    """LiteRT's own answer: decode after prefill sees prefill's cache (resource style), while
    the external style's decode, given zero caches, does not."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    def decode_after(prefill: bool, style: str):
        interp = Interpreter(model_path=models[style],
                             experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        if prefill:
            r = interp.get_signature_runner("prefill")
            r(**_feeds(r, style, 0))
        d = interp.get_signature_runner("decode")
        feeds = _feeds(d, style, 1)
        feeds["input_pos"] = np.array([0, 8, 0], np.int32)
        return d(**feeds)["y"]

    assert not np.allclose(decode_after(True, "resource"), decode_after(False, "resource"))
    assert np.allclose(decode_after(True, "variable"), decode_after(False, "variable"))


def test_unknown_signature_is_one_line(models):
    got = measure_signatures(models["resource"], ["nosuch"])
    assert not got.ok and "no signature 'nosuch'" in got.error and "\n" not in got.error


def test_one_signature_arena_equals_the_probe_on_a_real_model():
    """The signatures child (allocate + two invokes, one interpreter) and the probe child
    (allocate_tensors) read the same LiteRT arena on a shared model with one signature (all 20
    single-signature shared models agree, e.g. unet_256 130,809,856 B; checked by hand)."""
    from conftest import shared_model
    from viewer.runtime.probe import probe_model

    path = str(shared_model("mobilenet_v2_224_int8.tflite"))
    got = measure_signatures(path, rounds=1)
    assert got.ok, got.error
    (key,) = got.keys
    assert got.subgraph(got.signature_subgraphs[key]).arena_bytes == probe_model(path).arena_bytes == 1655808
