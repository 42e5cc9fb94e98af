"""Exit codes a CI step relies on, run as a user runs the command (a separate process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "viewer" / "resources" / "demo_unet.tflite"


def _run_into_closed_pipe(*argv: str) -> tuple[int, str]:
    """Run ``arena-viewer ARGV`` with its stdout a pipe nobody reads (``| head -0``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE, as after `head -1` exited
    try:
        proc = subprocess.run([sys.executable, "-m", "viewer.cli", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


def test_a_closed_stdout_never_turns_a_verdict_into_success():
    """`check M --budget 1KiB | head -1` exited 0 when the pipe closed first (newuser3 #3)."""
    code, err = _run_into_closed_pipe("check", str(DEMO), "--budget", "1KiB", "--no-measure")
    assert code == 141, (code, err)
    assert err.count("\n") == 1 and "standard output was closed" in err, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_closed_stdout_is_not_success_for_plan_either():
    code, err = _run_into_closed_pipe("plan", str(DEMO), "--json")
    assert code == 141 and err.count("\n") == 1, (code, err)


def test_json_error_object_on_stdout_for_bad_input(tmp_path, capsys):
    """newuser3 #10: a CI step parsing `check --json` got nothing on stdout for a bad model."""
    import json

    from viewer.cli import main

    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model at all")
    assert main(["check", str(bad), "--budget", "1MiB", "--json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["verdict"] == "error" and doc["fits"] is False and doc["exit_code"] == 2
    assert str(bad) in doc["error"] and err.count("\n") == 1 and str(bad) in err
    assert main(["plan", str(tmp_path / "missing.tflite"), "--json"]) == 2
    out, _ = capsys.readouterr()
    assert "missing.tflite" in json.loads(out)["error"]


def test_repeated_or_conflicting_flags_are_refused(capsys):
    """newuser3 #15 and #16: `--timeout 1e9` was an internal error; a second --budget silently
    won; --batch silently replaced the batch an --input-shape gave."""
    from viewer.cli import main

    for argv, words in [
        (["--budget", "4MiB", "--budget", "8MiB"], "--budget given twice"),
        (["--budget", "8MiB", "--batch", "3", "--input-shape", "2x128x128x3"], "disagree on dimension 0"),
        (["--budget", "8MiB", "--timeout", "1e9"], "at most 1,000,000"),
        (["--budget", "8MiB", "--time-limit", "inf"], "at most 1,000,000"),
    ]:
        assert main(["check", str(DEMO), "--no-measure", *argv]) == 2, argv
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and words in err, (argv, err)
