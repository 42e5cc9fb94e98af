"""The what-if flags shared by plan/check/export: every flag parsed, every bad value a UsageError."""

from __future__ import annotations

import argparse
import json

import pytest

from tests.tflite_builder import add_chain, write
from viewer.cli import main
from viewer.cli._edits import add_edit_args, edits_from_args, parse_shape
from viewer.errors import UsageError
from viewer.whatif.edits import WhatIfEdits


def parse(*argv) -> WhatIfEdits:
    p = argparse.ArgumentParser()
    add_edit_args(p)
    return edits_from_args(p.parse_args(list(argv)))


def test_no_flags_is_empty():
    assert parse().is_empty()


def test_input_shape_forms():
    e = parse("--input-shape", "1x512x512x3", "--input-shape", "serving_default:0=2,4",
              "--input-shape", "1=7x9")
    assert dict(e.input_shapes) == {"": (1, 512, 512, 3), "serving_default:0": (2, 4), 1: (7, 9)}


def test_batch_and_dtypes():
    e = parse("--batch", "8", "--activation-dtype", "BFloat16", "--tensor-dtype", "3=int8",
              "--tensor-dtype", "12=float16")
    assert e.batch == 8 and e.activation_dtype == "bfloat16"
    assert dict(e.tensor_dtypes) == {3: "int8", 12: "float16"}


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--input-shape", "1x512xx3"], "cannot read shape '1x512xx3'"),
        (["--input-shape", "1x0x2"], "every dimension must be >= 1"),
        (["--input-shape", "a=1x2", "--input-shape", "a=1x3"], "given twice"),
        (["--batch", "0"], "--batch 0"),
        (["--batch", "two"], "--batch 'two'"),
        (["--activation-dtype", "int3"], "--activation-dtype 'int3': use one of float32, float16, bfloat16, int8, int4"),
        (["--tensor-dtype", "3:int8"], "--tensor-dtype '3:int8'"),
        (["--tensor-dtype", "3=float7"], "--tensor-dtype '3=float7': unknown dtype 'float7'; use one of float32,"),
    ],
)
def test_bad_values_are_usage_errors(argv, msg):
    with pytest.raises(UsageError, match=msg.replace("(", r"\(")):
        parse(*argv)


def test_parse_shape():
    assert parse_shape(" 1, 2 ,3 ") == (1, 2, 3)
    with pytest.raises(UsageError):
        parse_shape("")


@pytest.fixture
def chain(tmp_path):
    return write(tmp_path, "chain.tflite", add_chain(2))  # 3 float32 tensors 1x8x8x3


def plan_json(capsys, *argv):
    rc = main(["plan", *argv, "--json", "--planner", "naive"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_flags_reach_the_plan_command(chain, capsys):
    base = plan_json(capsys, str(chain))
    assert base["naive_bytes"] == 3 * 768
    r = plan_json(capsys, str(chain), "--input-shape", "16x8")
    assert r["naive_bytes"] == 2 * 3 * 768 and {tuple(t["shape"]) for t in r["tensors"]} == {(1, 16, 8, 3)}
    r = plan_json(capsys, str(chain), "--input-shape", "t0=1x8x8x3", "--batch", "3")
    assert r["naive_bytes"] == 3 * 3 * 768
    r = plan_json(capsys, str(chain), "--activation-dtype", "int8")
    assert r["naive_bytes"] * 4 == 3 * 768
    r = plan_json(capsys, str(chain), "--activation-dtype", "float16", "--tensor-dtype", "1=float32")
    assert r["naive_bytes"] == 768 // 2 + 768 + 768 // 2


def test_int4_activations_and_tensors_are_packed_and_rounded_up(tmp_path, capsys):
    """int4 is accepted by both flags: 15 elements take ceil(15 / 2) = 8 bytes, as LiteRT packs them."""
    odd = write(tmp_path, "odd.tflite", add_chain(2, shape=(1, 3, 5, 1)))  # 3 float32 tensors of 60 B
    r = plan_json(capsys, str(odd), "--activation-dtype", "int4")
    assert r["naive_bytes"] == 3 * 8
    r = plan_json(capsys, str(odd), "--tensor-dtype", "1=int4")
    assert r["naive_bytes"] == 60 + 8 + 60
    rc = main(["plan", str(odd), "--activation-dtype", "int4", "--planner", "naive"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert [ln for ln in out.splitlines() if ln.startswith("note: storage")] == [
        "note: storage what-if: activations re-sized as int4; bytes only, not an accuracy claim "
        "(weights untouched); 3 float tensors changed"]


def test_unknown_dtypes_are_one_line_exit_2(chain, capsys):
    for flag, value in (("--activation-dtype", "int3"), ("--tensor-dtype", "0=int3")):
        rc = main(["plan", str(chain), flag, value])
        _, err = capsys.readouterr()
        assert rc == 2 and err.count("\n") == 1 and "int4" in err, err


def test_help_lists_the_accepted_dtypes(capsys):
    assert main(["plan", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "one of float32, float16, bfloat16, int8, int4 (int4: two elements per byte" in out
    assert "DTYPE, one of float32, float16, bfloat16, float64," in out and "uint4, int2" in out


def test_bad_flag_value_is_exit_2(chain, capsys):
    rc = main(["plan", str(chain), "--input-shape", "nope=1x2x3x4"])
    _, err = capsys.readouterr()
    assert rc == 2 and "no input named 'nope'" in err and err.count("\n") == 1


def _model_args(path, *argv):
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--subgraph", type=int, default=0)
    add_edit_args(p)
    return p.parse_args([str(path), *argv])


@pytest.mark.parametrize("first, second", [
    ("0=1x8x8x3", "8x8"),          # position and "the image input"
    ("t0=1x8x8x3", "0=1x4x4x3"),   # name and position
])
def test_same_input_named_two_ways_is_one_line(tmp_path, first, second):
    m = write(tmp_path, "chain.tflite", add_chain(2))
    with pytest.raises(UsageError, match="given twice for input 't0'") as e:
        edits_from_args(_model_args(m, "--input-shape", first, "--input-shape", second))
    assert "\n" not in str(e.value)


def test_same_input_twice_through_the_cli(tmp_path, capsys):
    m = write(tmp_path, "chain.tflite", add_chain(2))
    rc = main(["check", str(m), "--budget", "1MiB", "--input-shape", "0=1x8x8x3", "--input-shape", "t0=1x4x4x3"])
    _, err = capsys.readouterr()
    assert rc == 2 and "given twice" in err and err.count("\n") == 1


def _scalar_model(tmp_path):
    from tests.tflite_builder import build, tensor

    return write(tmp_path, "scalar.tflite", build([tensor("a", ()), tensor("b", ())], [(0, [0, 0], [1])], [0], [1]))


def _dynamic_batch_model(tmp_path):
    from tests.tflite_builder import build, tensor

    ts = [tensor("x", (1, 8), signature=(-1, 8)), tensor("y", (1, 8), signature=(-1, 8))]
    return write(tmp_path, "dyn.tflite", build(ts, [(0, [0, 0], [1])], [0], [1]))


def test_batch_on_scalar_inputs_says_it_changed_nothing(tmp_path, capsys):
    from viewer.cli._edits import edit_notes
    from viewer.model.reader import load_model

    m = _scalar_model(tmp_path)
    notes = edit_notes(load_model(m), 0, WhatIfEdits(batch=4))
    assert notes == ["--batch 4 changed nothing: the model's inputs have no batch dimension (scalars)"]
    rc = main(["check", str(m), "--budget", "1MiB", "--batch", "4", "--no-measure"])
    out, _ = capsys.readouterr()
    assert rc == 3 and "--batch 4 changed nothing" in out  # 3: planned only (cannot tell)


def test_dynamic_batch_notes_batch_1_assumed(tmp_path, capsys):
    from viewer.cli._edits import edit_notes
    from viewer.model.reader import load_model

    m = _dynamic_batch_model(tmp_path)
    model = load_model(m)
    assert any("batch 1 assumed (use --batch N)" in n for n in edit_notes(model, 0, None))
    assert edit_notes(model, 0, WhatIfEdits(batch=2)) == []  # the user chose a batch
    rc = main(["check", str(m), "--budget", "1MiB", "--no-measure"])
    out, _ = capsys.readouterr()
    assert rc == 3 and "batch 1 assumed (use --batch N)" in out  # 3: planned only


def test_input_shape_probing_works_from_another_directory(tmp_path, capsys, monkeypatch):
    """The what-if resize is propagated by the runtime's child even for a relative model path."""
    write(tmp_path, "chain.tflite", add_chain(2))
    monkeypatch.chdir(tmp_path)
    rc = main(["check", "chain.tflite", "--budget", "1MiB", "--input-shape", "16x16"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "shapes propagated by the LiteRT runtime" in out
    # The arena is measured at the what-if's shapes (the runtime overhead term may say it was
    # measured at the file's shapes and carried over: "not measured at the what-if's").
    arena = [line for line in out.splitlines() if line.strip().startswith("tensor arena")]
    assert arena and all("[measured:" in line for line in arena), out
