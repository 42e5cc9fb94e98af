"""Issue 12, the command line as a new user met it: one test per item."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import shared_model
from viewer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_unknown_command_is_named(capsys):
    code, out, err = run_cli(capsys, "frobnicate", "model.tflite")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown command 'frobnicate'" in err and "plan" in err, err
    # A model path still opens the window (here: one line saying the file is missing).
    code, _, err = run_cli(capsys, "no_such_model.tflite")
    assert code == 2 and "unknown command" not in err and "no_such_model.tflite" in err


def test_budget_zero_is_rejected(capsys):
    model = shared_model("tfmicro_hello_world_int8.tflite")
    for zero in ("0", "0B", "0MiB"):
        code, out, err = run_cli(capsys, "check", model, "--budget", zero, "--no-measure")
        assert code == 2 and err.count("\n") == 1, (zero, err)
        assert "--budget" in err and "more than 0 bytes" in err


def test_gap_is_against_the_aligned_bound_planners_reach(capsys):
    """A tiny WHILE graph sits exactly at the 64-byte-aligned bound: +0 %, not +1125 %."""
    model = shared_model("litert_testdata_multi_subgraphs_while.tflite")
    code, out, _ = run_cli(capsys, "plan", model, "--json")
    r = json.loads(out)
    assert code == 0 and r["aligned_lower_bound_bytes"] > r["lower_bound_bytes"]
    at_bound = [n for n, p in r["plans"].items() if p["arena_bytes"] == r["aligned_lower_bound_bytes"]]
    assert at_bound and all(r["plans"][n]["gap_pct"] == 0.0 for n in at_bound)
    code, out, _ = run_cli(capsys, "plan", model)
    assert "gap to aligned bound" in out
    litert = next(line for line in out.splitlines() if line.strip().startswith("litert "))
    assert re.search(r"\+0\.0%", litert), litert


def test_readme_and_help_say_what_planner_all_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    assert "`plan --planner all`" in readme and "leaves out the exact `optimal`" in readme
    code, out, _ = run_cli(capsys, "plan", "--help")
    assert code == 0 and "'optimal' only when named" in " ".join(out.split())


def test_fixed_size_error_suggests_rescale_fixed_sizes(capsys):
    model = shared_model("coral_mobilenet_v1_0.25_128_quant.tflite")
    code, _, err = run_cli(capsys, "plan", model, "--input-shape", "1x256x256x3")
    assert code == 2 and err.count("\n") == 1
    assert "cannot take the new input shape" in err and "add --rescale-fixed-sizes" in err, err
    code, out, _ = run_cli(capsys, "plan", model, "--input-shape", "1x256x256x3", "--rescale-fixed-sizes")
    assert code == 0 and "fixed global pooling window [4, 4] rescaled to [8, 8]" in out


def test_negative_budget_and_the_same_model_twice_are_one_clear_line(tmp_path, capsys):
    # From the new-user walk-through: argparse said "expected one argument" for --budget -4MB,
    # and `compare A A` printed "A < A".
    from tests.tflite_builder import add_chain, write
    from viewer.cli import main

    m = str(write(tmp_path, "chain.tflite", add_chain(2)))
    assert main(["check", m, "--budget", "-4MB"]) == 2
    err = capsys.readouterr().err
    assert "'-4MB' is negative" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", m, m, "--no-measure"]) == 2
    err = capsys.readouterr().err
    assert "given twice" in err and len(err.strip().splitlines()) == 1


def test_rescale_hint_only_where_it_helps(capsys):
    """From the new-user walk-through: a batch LiteRT refuses (im2col past the 32-bit limit) and
    fixed_flatten's Flatten -> FULLY_CONNECTED (which --rescale-fixed-sizes cannot rescale
    either) both ended with "add --rescale-fixed-sizes": a dead-end hint."""
    unet = shared_model("unet_256.tflite")
    code, _, err = run_cli(capsys, "check", unet, "--budget", "1GiB", "--batch", "100000000")
    assert code == 2 and err.count("\n") == 1
    assert "exceed the 32-bit integer limit" in err and "rescale" not in err, err
    flat = shared_model("fixed_flatten.tflite")
    code, _, err = run_cli(capsys, "plan", flat, "--input-shape", "1x64x64x3")
    assert code == 2 and err.count("\n") == 1
    assert "operator 1 (RESHAPE)" in err and "rescale" not in err, err
    code, _, err = run_cli(capsys, "plan", flat, "--input-shape", "1x64x64x3", "--rescale-fixed-sizes")
    assert code == 2 and "rescale" not in err, err
    # unet at 300x300: rescaling fails too (37 x 18 fixed reshape), so no hint; at 512 it works.
    code, _, err = run_cli(capsys, "plan", unet, "--input-shape", "1x300x300x3")
    assert code == 2 and "rescale" not in err, err
    code, _, err = run_cli(capsys, "plan", unet, "--input-shape", "1x512x512x3")
    assert code == 2 and "add --rescale-fixed-sizes" in err, err
