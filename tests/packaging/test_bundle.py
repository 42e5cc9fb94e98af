"""The PyInstaller bundle runs every command, with the same numbers as the installed package.

Slow (a build takes about 1.5 min on a quiet 2-core machine, 3 min under load); it stays in the
suite because the frozen build is where ``python -m`` children would silently break.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    pytest.importorskip("PyInstaller", reason="the 'package' extra (PyInstaller) is not installed")
    dist = tmp_path_factory.mktemp("dist")
    work = tmp_path_factory.mktemp("work")
    proc = subprocess.run([sys.executable, str(ROOT / "packaging" / "build.py"), "--dist", str(dist),
                           "--work", str(work)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    exe = dist / "arena-viewer" / ("arena-viewer.exe" if os.name == "nt" else "arena-viewer")
    assert exe.exists()
    return exe


def _both(bundle: Path, *argv: str) -> tuple[dict, dict]:
    """(bundle's JSON, installed package's JSON) for the same command."""
    env = dict(os.environ, PYTHONPATH="")  # the bundle must not borrow our source tree
    frozen = subprocess.run([str(bundle), *argv], capture_output=True, text=True, timeout=300,
                            env=env, cwd=bundle.parent)
    assert frozen.returncode == 0, frozen.stderr[-2000:]
    plain = subprocess.run([sys.executable, "-m", "viewer", *argv], capture_output=True, text=True,
                           timeout=300, cwd=ROOT)
    assert plain.returncode == 0, plain.stderr[-2000:]
    return json.loads(frozen.stdout), json.loads(plain.stdout)


def _without_timings(obj):
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if "seconds" not in k}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


def test_bundle_plans_and_measures_like_the_installed_package(bundle, tmp_path):
    model = str(write(tmp_path, "chain.tflite", add_chain(4)))
    frozen, plain = _both(bundle, "plan", model, "--json", "--measure")
    assert _without_timings(frozen) == _without_timings(plain)
    assert frozen["plans"]["litert_measured"]["arena_bytes"] > 0  # the runtime child ran
    frozen, plain = _both(bundle, "measure", model, "--runs", "1", "--json")
    assert frozen["arena_bytes"] == plain["arena_bytes"]


@pytest.mark.shared
def test_bundle_measures_a_real_model(bundle):
    model = str(shared_model("mobilenet_v2_224.tflite"))
    frozen, plain = _both(bundle, "plan", model, "--json", "--measure", "--planner", "litert")
    assert _without_timings(frozen) == _without_timings(plain)
    assert frozen["plans"]["litert_measured"]["arena_bytes"] == 6_623_232


def test_bundle_reports_bad_input_in_one_line(bundle, tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"nope")
    proc = subprocess.run([str(bundle), "plan", str(bad)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and str(bad) in proc.stderr
