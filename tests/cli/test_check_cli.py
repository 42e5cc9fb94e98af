"""`arena-viewer check MODEL --budget SIZE`: exit 0 fits, 1 does not, 2 bad input."""

from __future__ import annotations

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def chain(tmp_path):
    # 4 float32 tensors of 1x8x8x3 = 768 B; no weights. Breadth: 3 x 768 = 2304 B at operator 1.
    return write(tmp_path, "chain.tflite", add_chain(3))


def arena_of(out: str) -> int:
    line = next(x for x in out.splitlines() if "tensor arena (batch" in x)
    return int(line.split(":")[1].split("B")[0].replace(",", ""))


def test_fits_exit_0_prints_headroom(chain, capsys):
    rc, out, err = run_cli(capsys, "check", str(chain), "--budget", "1MiB")
    assert rc == 0, err
    assert "fits in 1,048,576 B" in out
    arena = arena_of(out)
    assert arena >= 2304
    assert f"headroom: {1048576 - arena:,d} B" in out


def test_over_budget_exit_1_prints_arena_budget_and_binding_operator(chain, capsys):
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "2KB")
    assert rc == 1
    assert "DOES NOT FIT in 2,000 B" in out
    assert "tensor arena (batch 1)" in out and "binding (widest) operator: 1 ADD" in out
    assert f"over budget by {arena_of(out) - 2000:,d} B" in out


def test_runtime_overhead_counts(chain, capsys):
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "1MiB", "--planner", "naive")
    assert rc == 0 and arena_of(out) == 4 * 768  # naive sum
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "4000", "--planner", "naive",
                         "--runtime-overhead", "1000")
    assert rc == 1 and "used: 4,072 B" in out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--budget", "lots"], "cannot read size 'lots'"),
        (["--budget", "1MiB", "--planner", "bogus"], "unknown planner 'bogus'"),
        (["--budget", "1MiB", "--batch", "0"], "--batch 0"),
        (["--budget", "1MiB", "--subgraph", "7"], "no subgraph 7"),
        (["--budget", "1MiB", "--input-shape", "t0=1x8x8"], "has rank 4"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(chain, capsys, argv, msg):
    rc, out, err = run_cli(capsys, "check", str(chain), *argv)
    assert rc == 2
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_model_is_exit_2(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "check", str(tmp_path / "none.tflite"), "--budget", "1MiB")
    assert rc == 2 and "none.tflite" in err


def test_edits_change_the_verdict(chain, capsys):
    # batch 4 quadruples every tensor; int8 quarters it back.
    rc, out1, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", "--planner", "naive")
    rc4, out4, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", "--planner", "naive", "--batch", "4")
    rc8, out8, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", "--planner", "naive", "--batch", "4",
                           "--activation-dtype", "int8")
    assert (rc, rc4, rc8) == (0, 1, 0)
    assert arena_of(out4) == 4 * arena_of(out1) == 4 * 3072
    assert arena_of(out8) == arena_of(out1)
    assert "tensor arena (batch 4)" in out4 and "largest batch: 1" in out4


@pytest.mark.shared
def test_mobilenet_budget_and_resolution_search(capsys):
    p = shared_model("mobilenet_v2_224.tflite")
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "4MiB", "--weights", "mapped", "--find-resolution",
                         "--planner", "greedy_by_size")
    assert rc == 1
    assert "binding (widest) operator:" in out and "not counted" in out
    assert "largest square input that fits:" in out
