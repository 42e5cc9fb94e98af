"""One file, one TFLM head and tail in every command, and it is the recording allocator's.

tfmicro_keyword_scrambled asks for 14 kernel scratch buffers, so a command that forgot to
measure them would give 288 B instead of TFLM's 672 B head.
"""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main
from viewer.model.reader import load_model
from viewer.runtime.tflm_probe import measure_tflm, tflm_available

pytestmark = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")
MODEL = "tfmicro_keyword_scrambled.tflite"


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def oracle():
    m = measure_tflm(load_model(shared_model(MODEL)))
    assert m.ok and len(m.scratch) == 14, m.error
    return m


def test_check_plan_export_overlay_offline_plan_give_tflms_head(oracle, capsys, tmp_path):
    m = shared_model(MODEL)
    head, tail = oracle.head_bytes, oracle.tail_bytes
    rc, out, _ = run_cli(capsys, "check", m, "--runtime", "tflm", "--budget", "1MiB", "--json")
    r = json.loads(out)
    assert (r["head_bytes"], r["tail_bytes"]) == (head, tail) == (672, oracle.tail_bytes)
    rc, out, _ = run_cli(capsys, "plan", m, "--runtime", "tflm", "--measure", "--json")
    r = json.loads(out)
    assert (r["tflm"]["head_bytes"], r["tflm"]["tail_bytes"]) == (head, tail)
    assert r["lower_bound_bytes"] <= head
    rc, out, _ = run_cli(capsys, "export", m, "--runtime", "tflm", "-o", tmp_path / "k.png")
    assert rc == 0 and f"({head:,d} B)" in out
    rc, out, _ = run_cli(capsys, "overlay", m, "--runtime", "tflm", "--format", "netron",
                         "-o", tmp_path / "k.json")
    assert rc == 0 and f"TFLite Micro head {head:,d} B (tflm_greedy)" in out
    doc = json.loads((tmp_path / "k.json").read_text())
    tops = [x["value"] for x in doc["metrics"] if x["name"] == "arena_top_bytes"]
    assert max(tops) == head  # the overlay's plan is TFLM's, scratch included
    rc, out, _ = run_cli(capsys, "offline-plan", m, "-o", tmp_path / "k_off.tflite", "--time-limit", "2")
    assert rc == 0 and f"{head:,d} B   measured {head:,d} B" in out  # before: the file as given


def test_no_measure_says_scratch_is_missing(capsys, tmp_path):
    m = shared_model(MODEL)
    rc, out, err = run_cli(capsys, "overlay", m, "--runtime", "tflm", "--format", "model-explorer",
                           "-o", tmp_path / "k.json", "--no-measure")
    assert rc == 0 and "kernel scratch not included" in out
    doc = json.loads((tmp_path / "k.json").read_text())
    assert list(doc) == ["main"] and "kernel scratch not included" in doc["main"]["name"]
    rc, _, err = run_cli(capsys, "overlay", m, "--runtime", "tflm", "--format", "netron",
                         "-o", tmp_path / "k2.json", "--subgraph", "1")
    assert rc == 2 and "subgraph" in err and len(err.strip().splitlines()) == 1
