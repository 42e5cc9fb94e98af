"""`arena-viewer` with no way to open a window: one line and exit 2, never a Qt abort."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland checks are Linux-only")


def _run(env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "viewer"], env=env, capture_output=True, text=True, timeout=120)


def test_no_display_is_one_line():
    r = _run({})
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no display" in r.stderr


def test_unreachable_x_display_is_one_line():
    r = _run({"DISPLAY": ":987"})
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and ":987" in r.stderr
