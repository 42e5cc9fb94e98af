"""The regression corpus ../shared/fuzz: one test per file, through plan, check and export.

Each file broke a promise when it was found (../shared/fuzz/README.md says how, and what a
correct tool does). Every command runs in a forked child (tests/fuzz/harness.py) with a 4 GiB
address-space limit; it must end as a result or as one ViewerError line (exit 2), within 10 s
(of CPU time: the wall clock of this shared machine measures its load; a child is killed at
60 s of wall time) and 1 GiB peak RSS, and give the README's expected outcome. The
commands of one file run in order and the test stops at the first broken promise.

Files whose fix belongs to another helper are strict xfails naming it until the fix lands.
"""

from __future__ import annotations

import os
import sys

import pytest

from conftest import SHARED

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the harness forks (POSIX only)")

FUZZ = SHARED / "fuzz"

# file stem -> (expected: "error" | "agree" | "bounded", helper whose fix it waits for or None)
#   error:   one line, exit 2, from every command
#   agree:   plan, check and export all succeed or all say why (one line)
#   bounded: a result or one line, in bounded time and memory
EXPECTED = {
    "B1_overflow_huge_dims_shape": ("error", None),
    "B1c_overflow_reshape_absurd": ("error", None),
    "B2_int64_sum_overflow_two_2pow62": ("bounded", None),
    "B2b_int64_sum_overflow_four_2pow61": ("bounded", None),
    "B3_buffererror_options_second_vector": ("error", None),
    "B4_chart_inplace_root_never_written": ("agree", None),
    "B5_buffer_data_vector_past_eof_accepted": ("error", None),
    "B6_amp_2k_tensors_share_1MiB_name": ("bounded", None),
    "B6c_amp_2k_opcodes_share_1MiB_custom_code": ("bounded", None),
    "B7_amp_20k_ops_share_20k_newshape": ("bounded", None),
    "B8_quadratic_planners_wide_16k": ("bounded", None),
    "B9b_check_measure_chain_20k": ("bounded", None),
}


def _cases():
    files = sorted(FUZZ.glob("*.tflite")) if FUZZ.is_dir() else []
    if not files:
        return [pytest.param(None, None, id="corpus-absent")]
    out = []
    for f in files:
        expect, helper = EXPECTED.get(f.stem, ("bounded", None))
        if helper:
            marks = [pytest.mark.xfail(strict=True, reason=f"fixed by {helper}")]
        else:
            marks = []
        out.append(pytest.param(f, expect, id=f.stem, marks=marks))
    return out


@pytest.fixture(scope="module")
def runner():
    from tests.fuzz.harness import Runner

    with Runner() as r:
        yield r


def _commands(path, out_png):
    return [
        ("plan", ["plan", path]),
        ("check", ["check", path, "--budget", "1GiB"]),  # with measurement when LiteRT loads it
        ("export", ["export", path, "-o", out_png, "--force"]),
    ]


@pytest.mark.parametrize("path,expect", _cases())
def test_corpus_file(runner, tmp_path, path, expect):
    from tests.fuzz.harness import RSS_LIMIT, TIME_LIMIT

    if path is None:
        pytest.skip(f"{FUZZ} not present (../shared is not beside this checkout)")
    kinds = {}
    for name, argv in _commands(str(path), str(tmp_path / "chart.png")):
        o = runner.run(argv)
        what = f"{path.name}: {name}"
        assert not o.over_time, f"{what}: over {TIME_LIMIT:g} s ({o.cpu_seconds:.1f} s CPU, {o.seconds:.1f} s wall)"
        assert o.max_rss <= RSS_LIMIT, f"{what}: peak RSS {o.max_rss:,d} B over 1 GiB"
        assert o.kind in ("result", "error"), f"{what}: rc {o.rc}, signal {o.signal}: {o.stderr[-2000:]}"
        if expect == "error":
            assert o.kind == "error", f"{what}: expected one line and exit 2, got rc {o.rc}"
            assert os.path.basename(str(path)) in o.stderr, f"{what}: the line names no file: {o.stderr}"
        kinds[name] = o.kind
    if expect == "agree":
        assert len(set(kinds.values())) == 1, f"{path.name}: plan, check and export disagree: {kinds}"
