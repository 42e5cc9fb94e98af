"""Every command's output (stdout and stderr) ends with a newline, whatever its last line is.

From the new-user walk-through: `plan` looked as if it ended without one after "... 15991 more"
(B8) and after "N tensor(s) flagged" (dyn_hw). Each command here runs through ``main`` and both
streams are checked: a prompt must never land on the last line of output.
"""

from __future__ import annotations

import pytest

from conftest import MODELS
from tests.tflite_builder import add_chain, write
from viewer.cli import main


@pytest.fixture
def chain(tmp_path):
    return write(tmp_path, "chain.tflite", add_chain(3))


def _commands(chain, tmp):
    dyn = MODELS / "dyn_hw.tflite"
    csv = tmp / "p.csv"
    cmds = [
        ["plan", chain, "--top", "1"],  # ends "... 3 more"
        ["plan", chain, "--json"],
        ["plan", chain, "--export-csv", csv],
        ["plan-csv", csv],
        ["check", chain, "--budget", "1MiB"],
        ["check", chain, "--budget", "1MiB", "--json"],
        ["check", chain, "--budget", "1MiB", "--no-measure"],  # cannot tell: a stderr line too
        ["compare", chain, write(tmp, "other.tflite", add_chain(2)), "--no-measure"],
        ["overlay", chain, "--format", "netron", "-o", tmp / "o.json", "--no-measure"],
        ["reorder", chain, "-o", tmp / "r.tflite"],
        ["measure", chain, "--runs", "1", "--no-xnnpack"],
        ["export", chain, "-o", tmp / "c.png", "--no-measure"],
        ["--version"],
        ["plan", "--help"],
        ["frobnicate"],
        ["plan", tmp / "missing.tflite"],
    ]
    if dyn.exists():
        cmds.append(["plan", dyn])  # ends "N tensor(s) flagged (sizes not static): ..."
    return cmds


def test_every_command_ends_its_output_with_a_newline(chain, tmp_path, capsys):
    ran = 0
    for argv in _commands(chain, tmp_path):
        argv = [str(a) for a in argv]
        try:
            main(argv)
        except SystemExit:  # --version, --help exit through argparse
            pass
        out, err = capsys.readouterr()
        assert out or err, argv
        assert not out or out.endswith("\n"), (argv, out[-80:])
        assert not err or err.endswith("\n"), (argv, err[-80:])
        ran += 1
    assert ran >= 16
