"""`check`/`plan --signatures all [--context-length N]`: a deployment of several signatures in
one LiteRT interpreter, KV caches counted once, against LiteRT's own figures."""

from __future__ import annotations

import json

import pytest

from tests.decoder_builder import cache_bytes, decoder
from viewer.cli import main

pytest.importorskip("ai_edge_litert")


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def resource(tmp_path_factory):
    p = tmp_path_factory.mktemp("dec") / "dec_resource.tflite"
    p.write_bytes(decoder("resource"))
    return p


def test_check_json_counts_every_signature_and_the_caches_once(resource, capsys):
    rc, out, err = run_cli(capsys, "check", resource, "--budget", "4MiB", "--signatures", "all", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["verdict"] == "fits" and d["arenas_resident_together"] is True
    names = [t["name"] for t in d["terms"]]
    assert names[:2] == ["arena of signature 'prefill' (subgraph 0)", "arena of signature 'decode' (subgraph 1)"]
    kv = [t for t in d["terms"] if t["name"].startswith("KV cache")]
    assert len(kv) == 1 and kv[0]["bytes"] == cache_bytes() and kv[0]["source"] == "estimated"
    assert d["used_bytes"] == sum(t["bytes"] for t in d["terms"] if t["counted"])
    assert {c["name"] for c in d["kv_caches"]} == {"k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}


def test_check_over_budget_and_the_single_signature_hint(resource, capsys):
    rc, out, _ = run_cli(capsys, "check", resource, "--budget", "20KiB", "--signatures", "all",
                         "--runtime-overhead", "0")
    assert rc == 1 and "DOES NOT FIT" in out and "+ runtime overhead: 0 B  [given" in out
    rc, _, err = run_cli(capsys, "check", resource, "--budget", "4MiB", "--runtime-overhead", "0")
    assert rc == 3 and "--signatures all" in err


def test_context_length_whatif_in_check_and_plan(resource, capsys):
    rc, out, err = run_cli(capsys, "check", resource, "--budget", "4MiB", "--context-length", "256", "--json")
    assert rc == 0, err
    w = json.loads(out)["context_length_whatif"]
    assert w["context_length"]["stored"] == 64 and w["context_length"]["whatif"] == 256
    assert w["kv_cache_bytes"] == {"stored": cache_bytes(), "whatif": cache_bytes(context=256),
                                   "source": "estimated", "method": "bytes of every cache's shape"}
    assert all(a["whatif_source"] == "measured" and a["whatif_bytes"] > a["stored_bytes"] for a in w["arenas"])
    rc, out, _ = run_cli(capsys, "plan", resource, "--context-length", "32")
    assert rc == 0 and "what-if: context length 64 -> 32" in out and "[planned]" in out


@pytest.mark.parametrize("argv, message", [
    (["--signatures", "nosuch"], "no signature 'nosuch'"),
    (["--context-length", "0"], "need 1..16,777,216 positions"),
    (["--signatures", "all", "--batch", "2"], "--batch cannot be combined"),
    (["--signatures", "all", "--signature", "prefill"], "--signature KEY cannot be combined"),
])
def test_bad_input_is_one_line_exit_2(resource, capsys, argv, message):
    rc, out, err = run_cli(capsys, "check", resource, "--budget", "4MiB", *argv)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_context_length_on_a_model_without_caches(tmp_path, capsys):
    from tests.tflite_builder import add_chain, write

    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "check", p, "--budget", "4MiB", "--context-length", "10")
    assert rc == 2 and ("the model has no signatures" in err or "keeps no KV cache" in err)


@pytest.mark.parametrize("hook, words", [("segv", "crashed (SIGSEGV)"), ("raise", "simulated runtime failure")])
def test_runtime_failure_is_cannot_tell_in_one_line(resource, capsys, monkeypatch, hook, words):
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", hook)
    rc, out, err = run_cli(capsys, "check", resource, "--budget", "4MiB", "--signatures", "all")
    assert rc == 3 and words in err and len(err.strip().splitlines()) == 1
    assert "planned: planner litert" in out  # the arenas fall back to our plan, said on each term


def test_model_without_signatures(tmp_path, capsys):
    from tests.tflite_builder import add_chain, write

    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "check", p, "--budget", "4MiB", "--signatures", "all")
    assert rc == 2 and "has no signatures" in err and len(err.strip().splitlines()) == 1
