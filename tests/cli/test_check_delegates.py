"""``check`` under a delegate: each delegate buffer its own measured term (--delegates default
is XNNPACK; --delegate-library loads a GPU/NPU delegate the same way), a library that cannot
load one line and exit 2.

The oracle for the CPU arena is LiteRT's own: the arena without the delegate is the no-delegate
check's measured arena, and the delegated one is smaller by the partitions' tensors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import shared_model
from viewer.cli import main

MODEL = "mobilenet_v2_224_int8.tflite"


def _run(capsys, *argv):
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.shared
def test_xnnpack_check_names_every_delegate_term(capsys):
    p = str(shared_model(MODEL))
    rc, out, err = _run(capsys, p, "--budget", "12MiB", "--delegates", "default", "--json")
    assert rc == 0, err
    r = json.loads(out)
    plain = json.loads(_run(capsys, p, "--budget", "12MiB", "--json")[1])
    missing = set(plain) - set(r)
    assert not missing, f"keys the no-delegate report has and the delegate's lacks: {sorted(missing)}"
    t = {x["name"]: x for x in r["terms"]}
    assert "XNNPACK" in r["configuration"] and r["verdict"] == "fits"
    assert r["dynamic_batch"] == plain["dynamic_batch"] is True  # "fits at batch 1 (dynamic batch)"
    assert "at batch 1 (dynamic batch)" in r["verdict_text"]
    assert r["delegate"]["kind"] == "xnnpack" and r["delegate"]["delegated_operators"] > 0
    for name in ("tensor arena", "delegate: XNNPACK setup", "runtime overhead"):
        assert t[name]["source"] == "measured" and t[name]["counted"], t[name]
    assert "Pss_Anon" in t["delegate: XNNPACK setup"]["method"]
    assert "span" in t["tensor arena"]["method"]
    without = t["tensor arena without the delegate"]
    assert not without["counted"] and without["bytes"] == plain["measured_arena_bytes"]
    assert r["arena_bytes"] < without["bytes"]
    assert r["used_bytes"] == sum(x["bytes"] for x in r["terms"] if x["counted"])
    assert t["delegate: XNNPACK setup"]["margin_bytes"] > 0 and t["tensor arena"]["margin_bytes"] == 0
    # a "fits" inside the Pss measurements' stated margin is "cannot tell", as without a delegate
    rc, out, _ = _run(capsys, p, "--budget", str(r["used_bytes"] + 4096), "--delegates", "default", "--json")
    near = json.loads(out)
    assert rc == 3 and any("margin" in u for u in near["unknowns"]), near["unknowns"]


@pytest.mark.shared
def test_xnnpack_check_lines(capsys):
    rc, out, err = _run(capsys, str(shared_model(MODEL)), "--budget", "1MiB", "--delegates", "default")
    assert rc == 1, err
    assert "DOES NOT FIT in 1,048,576 B (1.0 MiB) under XNNPACK" in out
    assert "tensor arena (CPU, beside XNNPACK):" in out and "+ delegate: XNNPACK setup:" in out
    assert "delegated: XNNPACK took" in out


@pytest.mark.shared
def test_missing_library_is_one_line_exit_2(capsys, tmp_path):
    lib = tmp_path / "libgpu_delegate.so"
    rc, out, err = _run(capsys, str(shared_model(MODEL)), "--budget", "8MiB",
                        "--delegate-library", str(lib))
    assert rc == 2 and not out
    assert err.strip().count("\n") == 0 and f"{lib}: no such delegate library" in err


@pytest.mark.shared
def test_a_library_that_is_no_delegate_is_one_line_exit_2(capsys):
    import ai_edge_litert

    lib = Path(ai_edge_litert.__file__).parent / "_pywrap_string_util.so"
    if not lib.exists():
        pytest.skip(f"{lib} not in this wheel")
    rc, out, err = _run(capsys, str(shared_model(MODEL)), "--budget", "8MiB",
                        "--delegate-library", str(lib), "--delegate-option", "backend=gpu")
    assert rc == 2 and not out
    assert err.strip().count("\n") == 0 and "not a LiteRT delegate library" in err


def test_delegate_flags_that_conflict_are_refused(capsys, tmp_path):
    rc, _, err = _run(capsys, "m.tflite", "--budget", "8MiB", "--delegate-option", "a=b")
    assert rc == 2 and "--delegate-option needs --delegate-library" in err
    rc, _, err = _run(capsys, "m.tflite", "--budget", "8MiB", "--delegates", "default",
                      "--delegate-library", str(tmp_path))
    assert rc == 2 and "give one delegate" in err
    for extra, said in ((["--runtime", "tflm"], "no delegates"),
                        (["--signatures", "all"], "--signatures"),
                        (["--no-measure"], "--no-measure"),
                        (["--activation-dtype", "float16"], "storage")):
        rc, _, err = _run(capsys, "m.tflite", "--budget", "8MiB", "--delegates", "default", *extra)
        assert rc == 2 and said in err and err.count("\n") == 1, err


from delegate_library import hold_delegate  # noqa: E402,F401  (the fixture)


@pytest.mark.shared
def test_a_library_delegate_is_measured_the_same_way_and_never_a_bare_fits(capsys, hold_delegate):
    rc, out, err = _run(capsys, str(shared_model(MODEL)), "--budget", "64MiB", "--json",
                        "--delegate-library", str(hold_delegate),
                        "--delegate-option", f"hold_bytes={8 << 20}")
    r = json.loads(out)
    assert rc == 3 and r["verdict"] == "cannot_tell", err
    assert any("device memory" in u for u in r["unknowns"])
    assert err.count("\n") == 1 and "cannot tell" in err
    t = {x["name"]: x for x in r["terms"]}
    setup = t["delegate: libhold_delegate.so setup"]
    assert setup["source"] == "measured" and setup["bytes"] >= (8 << 20) - (64 << 10)
    assert r["delegate"]["library"] == str(hold_delegate)
    assert r["delegate"]["options"] == {"hold_bytes": str(8 << 20)}


@pytest.mark.shared
def test_a_library_whose_create_fails_is_one_line_exit_2(capsys, hold_delegate):
    rc, out, err = _run(capsys, str(shared_model(MODEL)), "--budget", "64MiB",
                        "--delegate-library", str(hold_delegate), "--delegate-option", "fail=1")
    assert rc == 2 and not out and err.count("\n") == 1 and "asked to fail" in err


@pytest.mark.shared
def test_xnnpack_largest_batch_is_what_the_runtime_then_measures(capsys):
    """The largest batch under XNNPACK is searched with delegated processes at each batch it
    answers with; the oracle is check measured at that batch (fits; the next was measured over).
    At 160x160 the growth from batch 1 to 2 is a tenth of later steps: a straight line through
    them promised batch 58 where 9 fits."""
    p = str(shared_model(MODEL))
    args = ["--delegates", "default", "--weights", "mapped", "--input-shape", "1x160x160x3", "--json"]
    r = json.loads(_run(capsys, p, "--budget", "10MiB", *args)[1])
    t = {x["name"]: x for x in r["terms"]}
    grows = t["delegate: XNNPACK setup: grows with the batch (workspace)"]
    fixed = t["delegate: XNNPACK setup: fixed (packed weights, runtime)"]
    assert not grows["counted"] and not fixed["counted"] and grows["source"] == "estimated"
    assert grows["bytes"] + fixed["bytes"] == t["delegate: XNNPACK setup"]["bytes"]
    n = r["largest_batch"]
    assert n and n > 1 and "measured over it" in r["largest_batch_note"], r["largest_batch_note"]
    rc, out, _ = _run(capsys, p, "--budget", "10MiB", "--batch", str(n), *args)
    assert (rc, json.loads(out)["verdict"]) == (0, "fits")  # batch n + 1: measured over, above


@pytest.mark.shared
def test_a_model_litert_cannot_load_under_xnnpack_cannot_tell(capsys):
    rc, out, err = _run(capsys, str(shared_model("coral_bodypix_mnv1_512_decoder.tflite")),
                        "--budget", "64MiB", "--delegates", "default", "--json")
    r = json.loads(out)
    assert rc == 3 and r["verdict"] == "cannot_tell" and not r["measured"]
    assert any("under XNNPACK" in u and "PosenetDecoderOp" in u for u in r["unknowns"])
    assert {t["name"]: t for t in r["terms"]}["delegate: XNNPACK setup"]["source"] == "unknown"


@pytest.mark.shared
def test_other_signatures_under_a_delegate_cannot_tell(capsys):
    """As without a delegate: each signature's runner has its own arena, one checked is not all."""
    rc, out, err = _run(capsys, str(shared_model("litert_testdata_multi_signatures.tflite")),
                        "--budget", "64MiB", "--delegates", "default", "--json")
    assert rc == 3 and any("other signatures" in u for u in json.loads(out)["unknowns"]), err
