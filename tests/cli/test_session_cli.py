"""`arena-viewer session MODEL --steps|--batches LIST [--budget SIZE]`: exit 0 fits, 1 does not,
3 cannot tell, 2 on bad input (one line naming the file)."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from tests.session_models import dynamic_chain, static_chain
from viewer.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def chain(tmp_path):
    return dynamic_chain(tmp_path)


def test_json_steps_measured_beside_our_replay(chain, capsys):
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,16,4", "--json",
                           "--budget", "1GiB")
    assert rc == 0, err
    rep = json.loads(out)
    assert [s["shapes"] for s in rep["steps"]] == [{"t0": [b, 8, 8, 3]} for b in (1, 16, 4)]
    for s in rep["steps"]:
        need = s["arena_needed_bytes"]
        assert need["measured"] == need["planned"] and need["replay_exact"]
    held = [s["arena_held_bytes"]["measured"] for s in rep["steps"]]
    assert held[2] == held[1] > held[0]  # LiteRT's buffer kept batch 16's size at batch 4
    assert [s["grew"] for s in rep["steps"]] == [False, True, False]
    third = rep["steps"][2]
    assert third["arena_needed_bytes"]["measured"] * 4 == rep["steps"][1]["arena_needed_bytes"]["measured"]
    names = [t["name"] for t in rep["steps"][1]["terms"]]
    assert names[:2] == ["tensor arena", "arena growth"] and "runtime overhead" in names
    assert all(t["source"] and t["method"] for t in rep["steps"][1]["terms"])
    assert rep["verdict"] == "fits" and rep["high_water"]["step"] in (2, 3)


def test_text_report_and_exit_1_over_budget(chain, capsys):
    rc, out, err = run_cli(capsys, "session", str(chain), "--steps", "1x8x8x3,32x8x8x3",
                           "--budget", "1KiB")
    assert rc == 1, err
    assert "step 2: t0 32x8x8x3" in out and "grew" in out
    assert "verdict: DOES NOT FIT in 1,024 B (1.0 KiB)" in out
    assert "over budget by" in out


@pytest.mark.parametrize("argv, words", [
    (["--steps", "1x8x8"], "has rank 3, the input has rank 4"),
    (["--steps=-1x8x8x3"], "dimension 0 is -1; dimensions must be at least 1"),
    (["--steps", "2x9x8x3"], "dimension 1 is fixed at 8 by the file"),
    (["--batches", "1,0"], "dimension 0 is 0"),
    (["--steps", "1x8x8x3,,2x8x8x3"], "step 2 is empty"),
    (["--steps", "1y8"], "cannot read step 1"),
])
def test_bad_steps_one_line_exit_2(chain, capsys, argv, words):
    rc, out, err = run_cli(capsys, "session", str(chain), *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err, err


def test_model_without_dynamic_input_one_line_exit_2(tmp_path, capsys):
    path = static_chain(tmp_path)
    rc, out, err = run_cli(capsys, "session", str(path), "--steps", "1x8x8x3")
    assert rc == 2 and out == ""
    assert str(path) in err and "no input with a dynamic dimension" in err
    assert len(err.strip().splitlines()) == 1


def test_other_signatures_make_a_fitting_session_cannot_tell(capsys):
    path = shared_model("litert_testdata_multi_signatures.tflite")
    rc, out, err = run_cli(capsys, "session", str(path), "--steps", "1,100", "--budget", "1GiB")
    assert rc == 3, err
    assert "unknown: the model has other signatures (sub -> subgraph 1)" in out
    rc, out, err = run_cli(capsys, "session", str(path), "--signature", "sub", "--steps", "1,100",
                           "--budget", "1GiB")
    assert rc == 0, err
    assert "subgraph 1" in out and "sub_x:0 100" in out


def test_no_measure_predicts_and_never_says_fits(chain, capsys):
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,4", "--no-measure",
                           "--budget", "1GiB")
    assert rc == 3, err
    assert "predicted without the runtime" in out and "CANNOT TELL" in out
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,4", "--no-measure",
                           "--budget", "1KiB", "--json")
    assert rc == 1, err
    rep = json.loads(out)
    assert rep["verdict"] == "does_not_fit" and rep["steps"][1]["grew"]
    assert "predicted only" in rep["configuration"]


def test_measured_report_carries_the_prediction(chain, capsys):
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "2,1", "--json")
    assert rc == 0, err
    for s in json.loads(out)["steps"]:
        need = s["arena_needed_bytes"]
        assert need["predicted"] == need["measured"]


def test_runtime_failure_falls_back_to_the_prediction(chain, capsys, monkeypatch):
    monkeypatch.setenv("ARENA_VIEWER_SESSION_HOOK", "segv@1")  # LiteRT dies before any step
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,2", "--budget", "1GiB")
    assert rc == 3
    assert "predicted without the runtime" in out and "not measured:" in out
    assert err.strip().splitlines()[-1].startswith("arena-viewer: cannot tell:") and "SIGSEGV" in err
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,2", "--budget", "1KiB")
    assert rc == 1 and "DOES NOT FIT" in out


def test_a_step_over_the_memory_limit_ends_the_session_cannot_tell(chain, capsys):
    # 400,000 x 8x8x3 floats: 3 tensors of 307 MB cannot be mapped within 512 MiB.
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "2,400000,1",
                           "--memory-limit", "512MiB", "--budget", "64GiB")
    assert rc == 3
    assert "  step 1:" in out and "  step 2:" not in out
    assert "LiteRT refused step 2: AllocateTensors failed" in err
    assert "--memory-limit SIZE raises it" in err
    assert "unknown: step 2 and later were not run" in out


def test_default_delegates_report_litert_figures_only(chain, capsys):
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1,8", "--delegates", "default",
                           "--json", "--budget", "1GiB")
    assert rc == 0, err
    rep = json.loads(out)
    assert "XNNPACK on" in rep["configuration"]
    for s in rep["steps"]:
        assert s["arena_needed_bytes"]["planned"] is None and s["arena_needed_bytes"]["predicted"] is None
        assert s["arena_held_bytes"]["measured"] >= s["arena_needed_bytes"]["measured"]
    assert "delegate transient" in [t["name"] for t in rep["steps"][1]["terms"]]
    rc, out, err = run_cli(capsys, "session", str(chain), "--batches", "1", "--delegates", "default",
                           "--no-measure")
    assert rc == 2 and "needs the runtime" in err


@pytest.mark.shared
def test_a_step_litert_refuses_fails_the_session_without_a_headroom(capsys):
    """newuser3 #4: a step LiteRT refuses (Conv im2col beyond the 32-bit limit at batch 100000)
    was CANNOT TELL with "headroom: 1002.2 MiB"; `check --batch 100000` says exit 2."""
    from viewer.cli import main

    model = shared_model("mobilenet_v2_224.tflite")
    rc = main(["session", str(model), "--batches", "1,100000", "--budget", "1GiB"])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "verdict: FAILS: LiteRT refuses a step" in out and "headroom" not in out
    assert err.count("\n") == 1 and "refused step 2" in err and "32-bit integer limit" in err
