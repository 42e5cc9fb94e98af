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
