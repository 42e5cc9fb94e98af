"""The reader's part of the ../shared/fuzz regression corpus, each file through `plan`.

Each file runs `arena-viewer plan` in a subprocess with a 1 GiB address-space limit; the
expected outcome is the corpus README's line. Peak RSS is read back from the child's rusage.
(The whole corpus over plan/check/export is tests/fuzz/.)
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tests.conftest import SHARED

FUZZ = SHARED / "fuzz"
GIB = 1 << 30


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


def _plan(name: str) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in bytes) of `plan FILE --json` under 1 GiB."""
    path = FUZZ / name
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not beside this checkout)")
    proc = subprocess.Popen([sys.executable, "-m", "viewer", "plan", str(path), "--json",
                             "--planner", "greedy_by_size"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limit,
                            env={**os.environ, "ARENA_VIEWER_DEBUG": ""})
    try:
        out, err = proc.communicate(timeout=120)  # a hang guard, not a timing assertion
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{name}: plan did not finish in 120 s")
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc.returncode, out.decode(), err.decode(), ru.ru_maxrss * 1024


def _one_line_error(name: str, *words: str) -> str:
    rc, out, err, _ = _plan(name)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err[-2000:])
    assert name in lines[0] and "Traceback" not in err and "Warning" not in err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("name, tensor", [
    ("B1_overflow_huge_dims_shape.tflite", "tensor 1"),
    ("B1c_overflow_reshape_absurd.tflite", "tensor 2"),
    ("B2_int64_sum_overflow_two_2pow62.tflite", "tensor 1"),
    ("B2b_int64_sum_overflow_four_2pow61.tflite", "tensor 1"),
])
def test_huge_byte_sizes_are_one_line_naming_the_tensor(name, tensor):
    _one_line_error(name, tensor, "beyond what any device can hold")


def test_B3_options_vector_out_of_range_names_operator_and_field():
    _one_line_error("B3_buffererror_options_second_vector.tflite", "operator 0 options",
                    "embedding_dim_per_channel", "outside")


def test_B5_buffer_data_running_past_the_end_is_refused():
    _one_line_error("B5_buffer_data_vector_past_eof_accepted.tflite", "buffers[1].data", "past the end")


@pytest.mark.parametrize("name, step", [
    ("B6_amp_2k_tensors_share_1MiB_name.tflite", "tensor names"),
    ("B6c_amp_2k_opcodes_share_1MiB_custom_code.tflite", "custom_code"),
])
def test_B6_shared_strings_are_charged_to_the_budget(name, step):
    _one_line_error(name, step, "more vector elements than the file can hold")


def test_B7_shared_options_are_read_once_and_the_graph_is_refused():
    """20k operators share one ReshapeOptions (decoded once) and all write tensor 1."""
    from viewer.model.reader import load_model

    path = FUZZ / "B7_amp_20k_ops_share_20k_newshape.tflite"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not beside this checkout)")
    ops = load_model(path, graph_rules=False).subgraph(0).operators
    assert len(ops) == 20_000 and len({id(op.options) for op in ops}) == 1
    assert len(ops[0].options["new_shape"]) == 20_000
    _one_line_error(path.name, "tensor 1", "written by operators #0 and #1")
