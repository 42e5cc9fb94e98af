"""The README's command examples are the tool's real output, and its commands run as written.

From the new-user walk-through: the plan example listed `litert` second with "<- smallest" where
the tool lists greedy_by_size first, and `python -m viewer.resources.build_demo` fails with the
system python (the README's setup installs into .venv).
"""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, SHARED
from viewer.cli import main

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> str:
    i = README.index(marker)
    m = re.compile(r"```\n(.*?)```", re.S).search(README, i)
    return m.group(1)


def test_plan_example_is_the_tools_output(capsys, monkeypatch):
    if SHARED.resolve() != (ROOT.parent / "shared").resolve() or not (SHARED / "models" / "unet_256.tflite").exists():
        pytest.skip("../shared/models/unet_256.tflite not beside this checkout")
    monkeypatch.chdir(ROOT)
    rc = main(["plan", "../shared/models/unet_256.tflite"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert _block_after("Example (`arena-viewer plan ../shared/models/unet_256.tflite`") == out


def test_python_commands_name_the_venv_interpreter():
    # Every `python ...` the README asks to run is the venv's (the system python lacks the deps).
    bare = re.findall(r"(?<![/\w.])python (?:-m |\S+\.py)", README)
    assert not bare, bare
    assert "`.venv/bin/python -m viewer.resources.build_demo`" in README
