"""``reorder --time-limit S`` on the widest fuzz graph: wall, CPU and peak RSS against the limit.

    .venv/bin/python benchmarks/bench_reorder_limit.py [--limits 0.5,2,5] [MODEL]

MODEL defaults to ``../shared/fuzz/B8_quadratic_planners_wide_16k.tflite`` (16,000 ADDs all
ready at once: every level of the beam offers 16 x 16,000 steps). Each run is ``arena-viewer
reorder MODEL -o TMP --time-limit S --force`` in a forked child (tests/fuzz/harness.py) with a
4 GiB address-space limit. The anchor, in the same run, is ``arena-viewer plan MODEL --planner
naive`` (load + analysis + one trivial plan): wall minus the anchor is about the search, which
should stay within the limit plus the final check and the write (printed by the command). Before
the fix, --time-limit 2 took 10.6-11.9 s and 1.15 GB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import Runner  # noqa: E402

B8 = ROOT.parent / "shared" / "fuzz" / "B8_quadratic_planners_wide_16k.tflite"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=str(B8))
    ap.add_argument("--limits", default="0.5,2,5")
    args = ap.parse_args(argv)
    limits = [float(x) for x in args.limits.split(",")]
    print(f"{args.model}  (load average {os.getloadavg()[0]:.1f})")
    print(f"{'command':<34}{'wall s':>8}{'cpu s':>8}{'peak RSS MB':>13}  rc")
    with tempfile.TemporaryDirectory() as d, Runner() as r:
        out = Path(d) / "o.tflite"
        runs = [("anchor: plan --planner naive", ["plan", args.model, "--planner", "naive"], 60.0)]
        runs += [(f"reorder --time-limit {s:g}",
                  ["reorder", args.model, "-o", str(out), "--force", "--time-limit", str(s)], s + 60)
                 for s in limits]
        for label, cmd, timeout in runs:
            o = r.run(cmd, timeout=timeout, cpu_limit=timeout)
            print(f"{label:<34}{o.seconds:>8.2f}{o.cpu_seconds:>8.2f}{o.max_rss / 2**20:>13.1f}  {o.rc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
