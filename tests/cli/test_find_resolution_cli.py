"""`check --find-resolution`: a fixed size is named, and the runtime is asked at most 20 times."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main
from viewer.runtime import probe as probe_mod
from viewer.runtime import worker as worker_mod


@pytest.fixture
def runtime_probes(monkeypatch):
    """Every LiteRT probe made (one-shot or by the resident worker, kept answers included)."""
    calls = []
    real = probe_mod.probe_model

    def counted(*args, **kwargs):
        calls.append(kwargs.get("input_shapes", args[2] if len(args) > 2 else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(probe_mod, "probe_model", counted)
    monkeypatch.setattr(worker_mod, "probe_model", counted)
    yield calls
    worker_mod.close_workers()


def _check(capsys, path, *argv):
    rc = main(["check", str(path), *argv, "--find-resolution", "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)["find_resolution"]


@pytest.mark.shared
@pytest.mark.parametrize("name, op", [("fixed_flatten.tflite", "operator 1 (RESHAPE)"),
                                      ("mp_ssd_mobilenetv2_oidv4_fp16.tflite", "operator 235 (RESHAPE)")])
def test_a_fixed_size_names_the_operator(capsys, runtime_probes, name, op):
    p = shared_model(name)
    rc, r = _check(capsys, p, "--budget", "1GiB")
    assert rc == 0 and op in r["fixed_by"] and "LiteRT runtime failed to prepare it" in r["fixed_by"]
    stored = {"fixed_flatten.tflite": 32, "mp_ssd_mobilenetv2_oidv4_fp16.tflite": 300}[name]
    assert r["side"] == stored and r["confirmed"]
    # check itself measures the stored size (2 asks: shapes and arena), the search a failing side.
    assert len(runtime_probes) <= 20 and r["runtime_probes"] <= 20


@pytest.mark.shared
def test_the_answer_and_its_neighbour_are_the_runtimes(capsys, runtime_probes):
    """mobilenet_v2_224, 20 MiB copied weights: the side found fits in the runtime's arena and
    the next does not; every probe counted (<= 20)."""
    p = shared_model("mobilenet_v2_224.tflite")
    # the measured runtime overhead is a fixed term (tests/cli/test_check_overhead.py); here
    # the search is compared with the runtime's arena alone
    rc, r = _check(capsys, p, "--budget", "20MiB", "--runtime-overhead", "0")
    side, nb = r["side"], r["neighbour"]
    assert r["confirmed"] and nb == side + 1 and r["fixed_by"] is None
    assert len(runtime_probes) <= 20 and r["runtime_probes"] <= 20
    from viewer.model.reader import load_model

    weights = load_model(p).weights_bytes
    at = probe_mod.probe_model(p, input_shapes={0: (1, side, side, 3)}, check=True)
    above = probe_mod.probe_model(p, input_shapes={0: (1, nb, nb, 3)}, check=True)
    limit = 20 << 20
    # persistent bytes: none for float MobileNet v2 (no prepare-time outputs)
    assert at.arena_bytes + weights <= limit < above.arena_bytes + weights
    assert r["total_bytes"] == at.arena_bytes and r["neighbour_bytes"] == above.arena_bytes


@pytest.mark.shared
@pytest.mark.parametrize("name, text", [
    ("tfmicro_person_detect_vela.tflite", "cannot tell"),  # custom op: no runtime, no shape rule
    ("tfmicro_pytorch_mobilenet_v2_int8_nchw.tflite", "looks NCHW"),
])
def test_no_false_answer_where_the_search_cannot_work(capsys, name, text):
    rc = main(["check", str(shared_model(name)), "--budget", "30MiB", "--find-resolution"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "largest square input" in x)
    assert text in line and "fixed by" not in out
    worker_mod.close_workers()
