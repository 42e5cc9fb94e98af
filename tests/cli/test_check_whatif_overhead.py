"""A what-if's runtime overhead is the file's own, carried over (newuser3 #8/#22).

The growth is measured at the file's shapes and types; it used to be reduced by the *what-if's*
arena, so `--batch 2` "fit" with a total byte-identical to batch 1 and enlarging what-ifs got
0 B. The oracle: LiteRT at the file's shapes (``measure_overhead``'s Pss_Anon growth, in a
process of its own) less LiteRT's own arena and persistent bytes there (``probe_totals``).
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


def _overhead(r) -> dict:
    return {x["name"]: x for x in r["terms"]}["runtime overhead"]


@pytest.mark.shared
def test_batch_2_counts_the_files_overhead_not_growth_less_the_batch_2_arena(capsys):
    from viewer.runtime.overhead import measure_overhead
    from viewer.runtime.probe import probe_totals

    p = shared_model("mobilenet_v2_224_int8.tflite")
    rc, r = _check(capsys, str(p), "--budget", "4400000B", "--weights", "mapped", "--batch", "2")
    over = _overhead(r)
    assert over["source"] == "estimated" and "carried to the what-if unchanged" in over["method"]
    stored = probe_totals(p)  # the oracle at the file's shapes: arena and persistent
    grown = measure_overhead(p).grown_bytes
    files_overhead = grown - int(stored.arena_bytes) - int(stored.persistent_bytes or 0)
    assert abs(over["bytes"] - files_overhead) <= over["margin_bytes"], (over["bytes"], files_overhead)
    # batch 2's arena is ~2x batch 1's: the total grows by that, it is no longer batch 1's growth
    assert r["arena_bytes"] > 1.8 * int(stored.arena_bytes)
    assert r["used_bytes"] > grown + 0.8 * int(stored.arena_bytes) - over["margin_bytes"]
    assert rc == 1 and r["verdict"] == "does_not_fit"  # ≈5.6 MB > 4.4 MB (was "fits")


@pytest.mark.shared
def test_an_enlarging_resize_keeps_the_overhead_so_709_does_not_fit_as_find_resolution_says(capsys):
    """find-resolution (mobilenet_v2_224, 64 MiB, mapped) names 708x708 the largest; check
    --input-shape 709 said "fits" with a 0 B overhead (224's growth less 709's arena)."""
    p = shared_model("mobilenet_v2_224.tflite")
    rc, r = _check(capsys, str(p), "--budget", "64MiB", "--weights", "mapped",
                   "--input-shape", "1x712x712x3")
    over = _overhead(r)
    assert over["bytes"] > 256 << 10 and over["source"] == "estimated"
    assert r["verdict"] != "fits" and rc != 0
