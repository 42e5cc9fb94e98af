"""A small, seeded fuzz campaign for CI: structured mutants of small models through ``plan``
(and every fifth through ``check --no-measure``), each in a forked child with a memory and a
time limit (tests/fuzz/harness.py). Every outcome must be a result or one ViewerError line,
within the limits. The long campaign is tools/fuzz_campaign.py."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import MODELS
from tests.tflite_builder import add_chain

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the harness forks (POSIX only)")

ROOT = Path(__file__).resolve().parents[2]
SEED = 15
MUTANTS = 60
#: Small shared models added when ../shared is present (the demo model is always used).
SHARED_SMALL = ("tfmicro_hello_world_int8.tflite", "litert_testdata_lstm.tflite",
                "litert_testdata_multi_subgraphs_while.tflite", "coral_split_concat.tflite")


def _seeds() -> list[bytes]:
    seeds = [(ROOT / "viewer" / "resources" / "demo_unet.tflite").read_bytes(), add_chain(5)]
    seeds += [(MODELS / n).read_bytes() for n in SHARED_SMALL if (MODELS / n).is_file()]
    return seeds


def test_seeded_campaign_gives_results_or_one_line(tmp_path):
    from tests.fuzz.harness import RSS_LIMIT, Runner, mutate

    rng = random.Random(SEED)
    seeds = _seeds()
    counts: Counter[str] = Counter()
    bad = []
    with Runner() as runner:
        for k in range(MUTANTS):
            path = tmp_path / f"m{k % 4}.tflite"
            path.write_bytes(mutate(rng.choice(seeds), rng))
            argv = ["plan", path] if k % 5 else ["check", path, "--budget", "1MiB", "--no-measure"]
            o = runner.run(argv)
            counts[o.kind] += 1
            if o.kind == "other" or o.over_time or o.max_rss > RSS_LIMIT:
                bad.append(f"mutant {k} ({argv[0]}): rc {o.rc} signal {o.signal} "
                           f"timed out {o.timed_out} rss {o.max_rss:,d}: {o.stderr[-600:]}")
    assert not bad, "\n".join(bad)
    assert counts["result"] and counts["error"], counts  # the mutants reach past the header
