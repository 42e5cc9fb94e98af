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
        (["--activation-dtype", "int4"], "--activation-dtype 'int4'"),
        (["--tensor-dtype", "3:int8"], "--tensor-dtype '3:int8'"),
        (["--tensor-dtype", "3=float7"], "--tensor-dtype '3=float7'"),
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


def test_bad_flag_value_is_exit_2(chain, capsys):
    rc = main(["plan", str(chain), "--input-shape", "nope=1x2x3x4"])
    _, err = capsys.readouterr()
    assert rc == 2 and "no input named 'nope'" in err and err.count("\n") == 1
