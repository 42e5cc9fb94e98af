"""Runtime children start from a source tree and from a frozen bundle (no ``python -m`` there)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tflite_builder import add_chain, write
from viewer.runtime import spawn


def test_source_tree_uses_python_dash_m(monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert spawn.child_command("viewer.runtime._child", "probe", "m.tflite") == [
        sys.executable, "-m", "viewer.runtime._child", "probe", "m.tflite"]


def test_frozen_bundle_runs_itself_with_the_hidden_flag(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert spawn.child_command("viewer.runtime._child", "probe") == [
        sys.executable, spawn.CHILD_FLAG, "viewer.runtime._child", "probe"]
    with pytest.raises(ValueError):
        spawn.child_command("os", "x")


def test_the_entry_point_runs_the_child_it_is_asked_for(tmp_path):
    # What a frozen bundle's executable does with the hidden flag, through the real entry point.
    model = write(tmp_path, "chain.tflite", add_chain(3))
    code = "import sys; from viewer.cli import entry_point; entry_point()"
    proc = subprocess.run([sys.executable, "-c", code, spawn.CHILD_FLAG, "viewer.runtime._child",
                           "probe", str(model)], capture_output=True, timeout=120)
    out = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert out["ok"], out
    assert proc.returncode == 0


def test_other_first_arguments_are_not_a_child():
    assert not spawn.run_child_if_asked(["plan", "m.tflite"])
    assert not spawn.run_child_if_asked([spawn.CHILD_FLAG, "os"])
