"""`arena-viewer compare`: one table, two rankings, and a line when they disagree."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.shared
def test_mobilenet_and_deeplab_print_both_rankings(capsys):
    a = shared_model("mobilenet_v2_224.tflite")
    b = shared_model("coral_deeplabv3_mnv2_pascal_quant.tflite")
    rc, out, err = _run(capsys, "compare", str(a), str(b))
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["model", "naive", "sum", "lower"]
    assert any(line.startswith("mobilenet_v2_224.tflite") for line in lines)
    assert any(line.startswith("coral_deeplabv3_mnv2_pascal_quant.tflite") for line in lines)
    assert any(line.startswith("ranked by naive sum:") for line in lines)
    assert any(line.startswith("ranked by arena:") for line in lines)
    assert "measured" in out


@pytest.mark.shared
def test_disagreement_line_when_naive_sum_and_arena_rank_differently(capsys):
    # The audio preprocessor's naive sum (12,128 B) is larger than micro_speech's (7,928 B),
    # but packed it needs less than half the arena (3,140 B against 7,976 B).
    a = shared_model("tfmicro_audio_preprocessor_int8.tflite")
    b = shared_model("tfmicro_micro_speech_int8.tflite")
    rc, out, err = _run(capsys, "compare", str(a), str(b), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    rows = {r["path"]: r for r in doc["models"]}
    assert rows[str(a)]["naive_bytes"] > rows[str(b)]["naive_bytes"]
    assert rows[str(a)]["arena_bytes"] < rows[str(b)]["arena_bytes"]
    assert doc["ranking"]["disagree"] is True
    assert doc["ranking"]["naive_sum"] == [str(b), str(a)]
    assert doc["ranking"]["arena"] == [str(a), str(b)]
    rc, out, err = _run(capsys, "compare", str(a), str(b))
    assert "ranks these models differently" in out


def test_agreeing_models_have_no_disagreement_line(tmp_path, capsys):
    small = write(tmp_path, "small.tflite", add_chain(2))
    big = write(tmp_path, "big.tflite", add_chain(6))
    rc, out, err = _run(capsys, "compare", str(small), str(big), "--no-measure")
    assert rc == 0, err
    assert "ranks these models differently" not in out
    assert "kernel temporaries not included" in out  # planned only, said on the figure


def test_bad_input_is_one_line(tmp_path, capsys):
    good = write(tmp_path, "good.tflite", add_chain(2))
    rc, _, err = _run(capsys, "compare", str(good))
    assert rc == 2 and "at least two" in err
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    rc, _, err = _run(capsys, "compare", str(good), str(bad), "--no-measure")
    assert rc == 2 and str(bad) in err
    assert len([l for l in err.splitlines() if "error" in l]) == 1


@pytest.mark.shared
def test_widest_operator_is_the_arenas_and_labelled(capsys):
    """From the new-user walk-through: the widest-operator column was the tensors-only one
    (#42 CONCATENATION on unet_256) beside an arena with the kernel temporaries (whose widest is
    #43 CONV_2D, the 108 MiB im2col). Now the column is the arena's, labelled, and the
    tensors-only one is named beside it when it differs."""
    unet = shared_model("unet_256.tflite")
    other = shared_model("mobilenet_v2_224.tflite")
    rc, out, err = _run(capsys, "compare", str(unet), str(other))
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].endswith("widest operator of the arena")
    row = next(line for line in lines if line.startswith("unet_256.tflite"))
    assert row.endswith("124.8 MiB       5.2 MiB  #43 CONV_2D (124.8 MiB); tensors only: #42 CONCATENATION")
    assert ("naive sum, lower bound, best plan: the model's own tensors; arena and its widest "
            "operator: LiteRT's planner with the runtime's kernel temporaries (measured)") in lines
    rc, out, err = _run(capsys, "compare", str(unet), str(other), "--json")
    u = json.loads(out)["models"][0]
    assert (u["widest_op"], u["widest_op_name"], u["widest_op_bytes"]) == (43, "CONV_2D", u["arena_bytes"])
    assert (u["tensors_widest_op"], u["tensors_widest_op_name"]) == (42, "CONCATENATION")


@pytest.mark.parametrize("which", ["missing", "directory"])
def test_a_missing_model_is_one_line_before_any_is_measured(tmp_path, capsys, which):
    """The others were measured first ("[1/2] ..." on stderr), then the error."""
    a = write(tmp_path, "a.tflite", add_chain(2))
    b = tmp_path / "nope.tflite" if which == "missing" else tmp_path
    rc, out, err = _run(capsys, "compare", str(a), str(b))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and str(b) in err and "[1/" not in err, err


@pytest.mark.shared
def test_persistent_tensors_are_counted_and_rank_the_models(capsys):
    """newuser3 #5: a float16 model's DEQUANTIZE outputs (13.9 MB, computed once at prepare and
    held outside the arena) were left out, so it looked as cheap as the float32 model."""
    a = shared_model("mobilenet_v2_224.tflite")
    b = shared_model("mobilenet_v2_224_fp16.tflite")
    rc, out, err = _run(capsys, "compare", str(b), str(a), "--json")
    assert rc == 0, err
    rows = {r["path"]: r for r in json.loads(out)["models"]}
    rc, chk, err = _run(capsys, "check", str(b), "--budget", "1GiB", "--json")
    terms = {t["name"]: t["bytes"] for t in json.loads(chk)["terms"]}
    assert rows[str(b)]["persistent_bytes"] == terms["persistent (outside the arena)"] > 13_000_000
    assert rows[str(a)]["persistent_bytes"] == 0
    for r in rows.values():
        assert r["held_bytes"] == r["arena_bytes"] + r["other_subgraphs_bytes"] + r["persistent_bytes"]
    assert json.loads(out)["ranking"]["held"] == [str(a), str(b)]
    rc, out, err = _run(capsys, "compare", str(b), str(a))
    assert "persistent" in out.splitlines()[0] and "held" in out.splitlines()[0]
    assert "ranked by held:      mobilenet_v2_224.tflite < mobilenet_v2_224_fp16.tflite" in out
