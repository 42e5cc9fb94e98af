"""`arena-viewer measure`: JSON keys, the high-water mark against the runtime's arena, and a
runtime that fails, crashes or hangs in the child -> one line on stderr, exit 2, parent alive."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main

PROCESS_KEYS = {
    "vmhwm_bytes", "rss_bytes", "pss_anon_bytes", "pss_file_bytes",
    "minor_faults_first_run", "minor_faults_later_runs",
    "major_faults_first_run", "major_faults_later_runs",
}


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(err: str, path) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("arena-viewer: error: ") and str(path) in lines[0]
    assert "Traceback" not in err


def test_measure_json_keys_and_high_water_mark(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3, shape=(1, 64, 64, 8)))
    rc, out, err = run_cli(capsys, "measure", str(p), "--json", "--runs", "2")
    assert rc == 0, err
    r = json.loads(out)
    for key in ("arena_bytes", "temporaries", "offsets", "replay", "process", "xnnpack",
                "cgroup", "notes"):
        assert key in r, key
    assert set(r["replay"]) >= {"arena_bytes", "mismatched_tensors"}
    assert set(r["cgroup"]) >= {"memory_max", "memory_high", "memory_min"}
    assert set(r["process"]) >= PROCESS_KEYS and set(r["xnnpack"]) >= PROCESS_KEYS
    # The runtime's arena of this chain: 4 tensors of 1*64*64*8*4 = 131072 B, three live at once.
    assert r["arena_bytes"] == 3 * 131072
    assert r["replay"]["arena_bytes"] == r["arena_bytes"]
    assert r["replay"]["mismatched_tensors"] == []
    assert all(int(k) >= 0 and v % 64 == 0 for k, v in r["offsets"].items())
    if sys.platform.startswith("linux"):
        for sec in ("process", "xnnpack"):
            proc = r[sec]
            assert proc["error"] is None, proc["error"]
            # The process's high-water mark holds at least the arena it allocated.
            assert proc["vmhwm_bytes"] >= r["arena_bytes"]
            # VmHWM comes from the kernel's RSS counters (/proc/self/status), Rss from a page-table
            # walk (smaps_rollup): the counters are batched per thread, so they may trail by a
            # few pages (one flaky run here).
            assert proc["vmhwm_bytes"] >= proc["rss_bytes"] - (256 << 10) and proc["rss_bytes"] > 0
            assert proc["minor_faults_later_runs"] is not None
        assert r["split"]["xnnpack_added_by_model_bytes"] >= 0
        c = r["cgroup"]
        peak = max(r["process"]["vmhwm_bytes"], r["xnnpack"]["vmhwm_bytes"])
        assert peak < c["memory_high"] < c["memory_max"]
        assert c["memory_min"] >= p.stat().st_size


def test_measure_table(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, out, err = run_cli(capsys, "measure", str(p), "--runs", "1", "--no-xnnpack")
    assert rc == 0, err
    for text in ("tensor arena", "VmHWM", "Pss_Anon", "Pss_File", "memory.max", "memory.high",
                 "memory.min", "litert planner replay"):
        assert text in out, text


@pytest.mark.parametrize("hook, text", [("segv", "SIGSEGV"), ("kill", "SIGKILL"),
                                        ("raise", "simulated runtime failure")])
def test_child_crash_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, hook, text):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", hook)
    rc, out, err = run_cli(capsys, "measure", str(p), "--runs", "1")
    assert rc == 2 and out == ""
    _one_line_error(err, p)
    assert text in err


def test_hanging_child_times_out(tmp_path, capsys, monkeypatch):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "hang")
    rc, _, err = run_cli(capsys, "measure", str(p), "--timeout", "2")
    assert rc == 2
    _one_line_error(err, p)
    assert "did not finish" in err


def test_crash_only_in_the_measured_run_is_reported_not_fatal(tmp_path, capsys, monkeypatch):
    # Stage "measured" fires only in the measuring children (after allocate_tensors), not in
    # the probe: the arena is still reported, each process section carries its one-line error.
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "segv@measured")
    rc, out, err = run_cli(capsys, "measure", str(p), "--json", "--runs", "1")
    assert rc == 0, err
    r = json.loads(out)
    assert r["arena_bytes"] > 0
    for sec in ("process", "xnnpack"):
        assert r[sec]["vmhwm_bytes"] is None
        assert "SIGSEGV" in r[sec]["error"] and str(p) in r[sec]["error"]
    assert any("SIGSEGV" in n for n in r["notes"])


@pytest.mark.parametrize("value", ["0", "-3"])
def test_bad_runs_is_exit_2(tmp_path, capsys, value):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    rc, _, err = run_cli(capsys, "measure", str(p), "--runs", value)
    assert rc == 2 and "--runs" in err


@pytest.mark.parametrize("extra", [[], ["--cgroup"], ["--runtime", "tflm"]])
def test_runs_has_an_upper_bound_one_line_exit_2(tmp_path, capsys, extra):
    """--runs 1000000 ran until the tester's timeout; now refused before any process starts."""
    p = write(tmp_path, "chain.tflite", add_chain(1))
    rc, out, err = run_cli(capsys, "measure", str(p), "--runs", "1000000", *extra)
    assert rc == 2 and out == ""
    assert err == ("arena-viewer: error: --runs 1000000: at most 1,000 invocations per process "
                   "(page faults and VmHWM settle after the first few; the default is 3)\n")


def test_missing_model_is_exit_2(tmp_path, capsys):
    p = tmp_path / "missing.tflite"
    rc, _, err = run_cli(capsys, "measure", str(p))
    assert rc == 2
    _one_line_error(err, p)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["litert_testdata_add_shared_tensors.tflite",
                                  "coral_bodypix_mnv1_512_decoder.tflite"])
def test_models_the_runtime_rejects(capsys, name):
    path = shared_model(name)
    rc, out, err = run_cli(capsys, "measure", str(path), "--runs", "1")
    assert rc == 2 and out == ""
    _one_line_error(err, path)
    assert "LiteRT failed" in err


@pytest.mark.shared
@pytest.mark.slow
def test_mobilenet_v2_high_water_mark_covers_arena_and_weights(capsys):
    path = shared_model("mobilenet_v2_224.tflite")
    rc, out, err = run_cli(capsys, "measure", str(path), "--json", "--runs", "2")
    assert rc == 0, err
    r = json.loads(out)
    assert r["replay"]["mismatched_tensors"] == []
    assert any(t["op_name"] == "CONV_2D" and t["op"] == 0 for t in r["temporaries"])
    if sys.platform.startswith("linux"):
        proc = r["process"]
        grown = proc["vmhwm_bytes"] - proc["baseline"]["vmhwm_bytes"]
        # Loading and running adds at least the arena (anonymous) and the touched weights (file).
        assert grown >= r["arena_bytes"]
        assert proc["model_mapping_rss_bytes"] > 0.9 * path.stat().st_size
        assert r["split"]["anonymous_added_by_model_bytes"] >= r["arena_bytes"]


def test_relative_path_from_another_directory(tmp_path, capsys, monkeypatch):
    """The runtime's child runs in the project root: a path relative to the caller's cwd works."""
    write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, "measure", "chain.tflite", "--json", "--runs", "1", "--no-xnnpack")
    assert rc == 0, err
    assert json.loads(out)["arena_bytes"] > 0


def test_directory_is_one_line(tmp_path, capsys):
    rc, out, err = run_cli(capsys, "measure", str(tmp_path))
    assert rc == 2
    _one_line_error(err, tmp_path)
    assert "is a directory" in err


def test_non_utf8_file_name_is_measured_not_a_binding_signature(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    odd = tmp_path / "m\udcff.tflite"  # byte 0xff in the name: not UTF-8
    try:
        p.rename(odd)
    except (OSError, UnicodeEncodeError):
        pytest.skip("file system refuses a non-UTF-8 file name")
    rc, out, err = run_cli(capsys, "measure", str(odd), "--json", "--runs", "1", "--no-xnnpack")
    assert rc == 0, err
    assert "incompatible function arguments" not in err
    assert json.loads(out)["arena_bytes"] > 0


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0"])
def test_bad_timeout_is_one_line_usage_error(tmp_path, capsys, value):
    p = write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    rc, out, err = run_cli(capsys, "measure", str(p), f"--timeout={value}")
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "--timeout" in err and "internal error" not in err


def test_table_puts_temporaries_bytes_in_the_bytes_column(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    rc, out, err = run_cli(capsys, "measure", str(p), "--runs", "1", "--no-xnnpack")
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if "kernel temporaries" in ln)
    assert " B " in line and "tensor" in line


def test_a_file_that_is_no_flatbuffer_is_named_with_what_is_wrong(tmp_path, capsys):
    """It said LiteRT's "The model is not a valid Flatbuffer buffer"; now our reader's line, as
    plan and check say it."""
    p = tmp_path / "bad.tflite"
    p.write_bytes(b"garbage")
    rc, out, err = run_cli(capsys, "measure", str(p))
    assert rc == 2 and out == ""
    _one_line_error(err, p)
    assert "too short to be a .tflite flatbuffer" in err
