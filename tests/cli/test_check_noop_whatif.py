"""A what-if that changes nothing keeps the measurement (newuser3 #20): `--activation-dtype
int8` on an int8 model ("0 float tensors changed") turned a measured verdict into "fits
(estimated: …)" under LiteRT and "cannot tell" under TFLM. `--delegates` under TFLM: one line."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main
from viewer.model.reader import load_model
from viewer.whatif.edits import WhatIfEdits, without_noop_storage


def _json(capsys, *argv):
    rc = main(["check", *argv, "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 3), err
    return rc, json.loads(out)


@pytest.mark.shared
def test_noop_storage_edits_are_dropped_and_real_ones_kept():
    m = load_model(shared_model("mobilenet_v2_224_int8.tflite"))
    left, note = without_noop_storage(m, 0, WhatIfEdits(activation_dtype="int8"))
    assert left is None and "changes no tensor" in note
    left, note = without_noop_storage(m, 0, WhatIfEdits(activation_dtype="int8", batch=2))
    assert left == WhatIfEdits(batch=2) and note
    f = load_model(shared_model("mobilenet_v2_224.tflite"))
    e = WhatIfEdits(activation_dtype="float16")
    assert without_noop_storage(f, 0, e) == (e, "")


@pytest.mark.shared
def test_litert_noop_dtype_keeps_the_measured_verdict(capsys):
    p = str(shared_model("mobilenet_v2_224_int8.tflite"))
    rc, r = _json(capsys, p, "--budget", "64MiB", "--weights", "mapped", "--activation-dtype", "int8")
    assert rc == 0 and r["verdict"] == "fits" and r["estimated"] is False
    assert r["arena_source"] == "measured"
    assert any("changes no tensor" in n for n in r["notes"])


@pytest.mark.shared
def test_tflm_noop_dtype_keeps_the_measured_verdict_and_delegates_are_refused(capsys):
    pytest.importorskip("tflite_micro")
    p = str(shared_model("tfmicro_micro_speech_int8.tflite"))
    plain, _ = _json(capsys, p, "--runtime", "tflm", "--budget", "10KiB")
    rc, r = _json(capsys, p, "--runtime", "tflm", "--budget", "10KiB", "--activation-dtype", "int4")
    assert rc == plain == 0 and r["verdict"] == "fits"
    rc = main(["check", str(shared_model("tfmicro_hello_world_int8.tflite")), "--runtime", "tflm",
               "--budget", "1KiB", "--delegates", "default"])
    err = capsys.readouterr().err
    assert rc == 2 and "--runtime tflm has no delegates" in err and len(err.strip().splitlines()) == 1
