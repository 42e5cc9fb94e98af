"""``--runtime tflm`` on check, plan, measure and export (TFLM measured in a subprocess)."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main
from viewer.runtime.tflm_probe import tflm_available

needs_tflm = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@needs_tflm
def test_check_counts_head_tail_margin_and_prints_the_size_to_compile_in(capsys):
    m = shared_model("mlperftiny_vww_mobilenet_int8.tflite")
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "256KiB")
    assert rc == 0
    assert "73,728 B" in out and "29,952 B" in out and "alignment margin" in out
    assert "tensor_arena_size to compile in: 103696" in out
    assert "reference kernels" in out
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "64KiB", "--json")
    r = json.loads(out)
    assert rc == 1 and r["tensor_arena_size_bytes"] == 103696 and r["fits"] is False
    assert (r["head_bytes"], r["tail_bytes"]) == (73728, 29952)


@needs_tflm
def test_check_small_model_needs_more_than_head_plus_tail(capsys):
    """hello_world: TFLM's planning bookkeeping needs more than the 32 B head while it prepares."""
    m = shared_model("tfmicro_hello_world_int8.tflite")
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "4KiB", "--json")
    r = json.loads(out)
    assert rc == 0 and r["prepare_extra_bytes"] > 0
    assert r["tensor_arena_size_bytes"] >= r["head_bytes"] + r["tail_bytes"] + r["prepare_extra_bytes"]


def test_check_without_measurement_never_says_fits(tmp_path, capsys):
    m = write(tmp_path, "chain.tflite", add_chain(3))
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "1MiB", "--no-measure")
    assert rc == 3 and "CANNOT TELL" in out and "scratch and persistent not measured" in out  # cannot tell
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "100B", "--no-measure")
    assert rc == 1 and "DOES NOT FIT" in out


def test_vela_scratch_tensors_are_counted(capsys):
    m = shared_model("tfmicro_person_detect_vela.tflite")
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "256KiB", "--no-measure")
    assert "scratch 74,464 B" in out and "scratch_fast 74,464 B" in out
    assert rc == 3  # not measured: cannot tell, never a reassuring verdict


@needs_tflm
def test_plan_json_has_tflm_greedy_measured_and_both_runtimes(capsys):
    m = shared_model("mlperftiny_vww_mobilenet_int8.tflite")
    rc, out, _ = run_cli(capsys, "plan", str(m), "--runtime", "tflm", "--measure", "--json",
                         "--planner", "tflm_greedy,optimal")
    r = json.loads(out)
    assert rc == 0 and r["runtime"] == "tflm"
    assert r["plans"]["tflm_greedy"]["arena_bytes"] == r["plans"]["tflm_measured"]["arena_bytes"] == 73728
    assert r["plans"]["optimal"]["arena_bytes"] == 55296
    assert r["runtimes"]["litert_arena_bytes"] == 82944
    diffs = {d["what"]: d for d in r["runtimes"]["differences"]}
    assert diffs["graph input"]["bytes"] < 0 and diffs["planner"]["bytes"] == 73728 - 55296
    assert diffs["tail"]["bytes"] == 29952


@needs_tflm
def test_measure_json_keys(capsys):
    m = shared_model("tfmicro_dtln_noise_suppression.tflite")
    rc, out, _ = run_cli(capsys, "measure", str(m), "--runtime", "tflm", "--json")
    r = json.loads(out)
    assert rc == 0
    assert r["head_bytes"] + r["tail_bytes"] == r["total_bytes"]
    assert r["scratch"] and all({"operator", "bytes"} <= set(s) for s in r["scratch"])
    assert r["allocations"] and r["replay"]["every_offset_equal"]


@needs_tflm
def test_unloadable_model_is_one_line_exit_2(capsys):
    m = shared_model("coral_split_concat.tflite")
    rc, out, err = run_cli(capsys, "measure", str(m), "--runtime", "tflm")
    assert rc == 2 and "CONCATENATION" in err and len(err.strip().splitlines()) == 1


def test_subgraph_other_than_0_is_refused(tmp_path, capsys):
    m = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "plan", str(m), "--runtime", "tflm", "--subgraph", "1")
    assert rc == 2 and "subgraph 0" in err


def test_export_draws_the_tflm_plan(tmp_path, capsys):
    m = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / "c.svg"
    rc, o, _ = run_cli(capsys, "export", str(m), "--runtime", "tflm", "-o", str(out))
    assert rc == 0 and out.exists() and "tflm_greedy" in o


@needs_tflm
def test_check_with_another_planner_measures_the_offline_planned_copy(capsys):
    m = shared_model("mlperftiny_vww_mobilenet_int8.tflite")
    rc, out, _ = run_cli(capsys, "check", str(m), "--runtime", "tflm", "--budget", "100KiB",
                         "--planner", "optimal", "--json")
    r = json.loads(out)
    assert rc == 0 and r["head_bytes"] == 55296 and r["tensor_arena_size_bytes"] == 85264
    assert any("measured by TFLM on a copy" in n for n in r["notes"])
