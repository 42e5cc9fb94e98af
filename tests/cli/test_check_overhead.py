"""``check`` counts the runtime's anonymous memory beyond the arena (newuser finding 1).

The oracle is a fresh LiteRT process: its Pss_Anon growth after allocate_tensors() and one
Invoke (viewer.runtime.overhead). check's arena + persistent + other subgraphs + overhead must
add up to at least that growth, and the overhead must not count the arena a second time.
"""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main


def _check(capsys, *argv):
    rc = main(["check", *argv, "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 3), err
    return rc, json.loads(out)


@pytest.mark.shared
def test_mobilenet_int8_at_2mib_mapped_does_not_fit_once_the_overhead_counts(capsys):
    """newuser 1: was "fits" with "runtime overhead: 0 B [given]"; the runtime adds ~1.5 MiB
    anonymous memory beyond the 1.6 MiB arena, so 2 MiB does not hold it."""
    from viewer.runtime.overhead import measure_overhead

    p = shared_model("mobilenet_v2_224_int8.tflite")
    rc, r = _check(capsys, str(p), "--budget", "2MiB", "--weights", "mapped")
    t = {x["name"]: x for x in r["terms"]}
    over = t["runtime overhead"]
    assert rc == 1 and r["verdict"] == "does_not_fit"
    assert over["source"] == "measured" and over["counted"] and over["bytes"] > 0
    assert "Pss_Anon" in over["method"] and "XNNPACK off" in r["configuration"]
    grown = measure_overhead(p).grown_bytes  # the oracle, in its own fresh process
    counted = r["used_bytes"]  # weights mapped: not in Pss_Anon, not counted
    # the same figure within the margin the term states (two processes of different history)
    assert abs(counted - grown) <= over["margin_bytes"], (counted, grown)
    assert over["margin_bytes"] >= 32 << 10 and "±" in _lines(capsys, str(p))
    assert over["bytes"] == r["used_bytes"] - r["arena_bytes"] - r["persistent_bytes"] \
        - r["other_subgraphs_bytes"]  # the arena is not counted twice


def _lines(capsys, *argv) -> str:
    main(["check", *argv, "--budget", "2MiB", "--weights", "mapped"])
    return next(ln for ln in capsys.readouterr()[0].splitlines() if "runtime overhead" in ln)


@pytest.mark.shared
def test_given_overhead_replaces_the_measured_one_and_no_measure_cannot_tell(capsys):
    p = shared_model("mlperftiny_kws_dscnn_int8.tflite")
    rc, r = _check(capsys, str(p), "--budget", "64MiB", "--runtime-overhead", "1KiB")
    over = {x["name"]: x for x in r["terms"]}["runtime overhead"]
    assert rc == 0 and over["source"] == "given" and over["bytes"] == 1024
    rc, r = _check(capsys, str(p), "--budget", "64MiB", "--no-measure")
    over = {x["name"]: x for x in r["terms"]}["runtime overhead"]
    assert rc == 3 and over["source"] == "unknown"
    assert any(u.startswith("runtime overhead") for u in r["unknowns"])
    assert "planned only" in r["configuration"]
