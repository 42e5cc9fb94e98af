"""check says which delegates it measured, where CI reads it (newuser3 #19): the default is
LiteRT with BUILTIN_WITHOUT_DEFAULT_DELEGATES (XNNPACK off), which a stock interpreter is not."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main


@pytest.mark.shared
def test_the_default_check_says_xnnpack_off_in_the_headline_and_json(capsys):
    p = str(shared_model("coral_split_concat.tflite"))
    rc = main(["check", p, "--budget", "64MiB", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["delegates"] == "none"
    main(["check", p, "--budget", "64MiB"])
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("(XNNPACK off; a stock interpreter: --delegates default)"), head


@pytest.mark.shared
def test_tflm_json_says_no_delegates(capsys):
    p = str(shared_model("tfmicro_hello_world_int8.tflite"))
    main(["check", p, "--budget", "64KiB", "--runtime", "tflm", "--json"])
    assert json.loads(capsys.readouterr().out)["delegates"] == "none"
