"""``check --json`` has one schema under both runtimes (newuser finding 7): a CI script written
against LiteRT's keys reads TFLM's report too (TFLM's extra keys are fine)."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main

TERM_KEYS = {"name", "bytes", "source", "method", "counted"}


def _report(capsys, *argv):
    rc = main(["check", *argv, "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 3), err
    return json.loads(out)


@pytest.mark.shared
@pytest.mark.parametrize("extra", [(), ("--no-measure",)])
def test_tflm_report_has_every_litert_key(capsys, extra):
    p = str(shared_model("mlperftiny_vww_mobilenet_int8.tflite"))
    lite = _report(capsys, p, "--budget", "100KiB", *extra)
    tflm = _report(capsys, p, "--budget", "100KiB", "--runtime", "tflm", *extra)
    assert lite["runtime"] == "litert" and tflm["runtime"] == "tflm"
    missing = set(lite) - set(tflm)
    assert not missing, f"keys LiteRT's report has and TFLM's lacks: {sorted(missing)}"
    for r in (lite, tflm):
        assert isinstance(r["unknowns"], list)
        for t in r["terms"]:
            assert TERM_KEYS <= set(t), t
        names = [t["name"] for t in r["terms"]]
        assert names[0] == "tensor arena" and "runtime overhead" in names and "weights" in names
    if extra:  # TFLM's tail not measured: said as an unknown, as LiteRT says what it cannot tell
        assert tflm["unknowns"] and tflm["verdict"] == "cannot_tell"
