"""`check --find-resolution` wall time, against `check` alone on the same model in the same run.

Each command runs as a user would run it (a fresh `arena-viewer` process: Python start, model
load, LiteRT probes through the resident worker). Issue 9's target: under 10 s each on
fixed_flatten and mp_ssd_mobilenetv2_oidv4_fp16 (it was 9 min 42 s and 9-14 min, 4,065 probes).

    .venv/bin/python benchmarks/bench_find_resolution.py [MODEL ...] [--budget 30MiB]

Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
DEFAULT = ("fixed_flatten.tflite", "mp_ssd_mobilenetv2_oidv4_fp16.tflite", "mobilenet_v2_224.tflite",
           "unet_256.tflite", "mp_face_detection_short_range.tflite")


def run(argv: list[str]) -> tuple[float, dict | None]:
    cli = [sys.executable, "-c", "import sys; from viewer.cli import main; sys.exit(main(sys.argv[1:]))"]
    t0 = time.perf_counter()
    p = subprocess.run(cli + argv, capture_output=True, text=True, cwd=ROOT)
    dt = time.perf_counter() - t0
    try:
        return dt, json.loads(p.stdout)
    except ValueError:
        print(p.stderr.strip().splitlines()[-1:] if p.stderr else p.stdout[-200:])
        return dt, None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=list(DEFAULT))
    ap.add_argument("--budget", default="30MiB")
    args = ap.parse_args()
    print(f"budget {args.budget}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"  {'model':<40} {'check':>8} {'+ --find-resolution':>20}  answer")
    for name in args.models:
        path = str(Path(name) if os.sep in name else MODELS / name)
        base = ["check", path, "--budget", args.budget, "--json"]
        t_check, _ = run(base)
        t_find, r = run(base + ["--find-resolution"])
        fr = (r or {}).get("find_resolution") or {}
        side = fr.get("side")
        what = (f"{side}x{side}" if side else "none") + (
            f", fixed by {fr['fixed_by'].split(': ', 1)[1][:40]}..." if fr.get("fixed_by") else
            f", next {fr.get('neighbour')}") + f", {fr.get('runtime_probes')} runtime probes, " \
            f"{fr.get('estimates')} estimates, confirmed: {fr.get('confirmed')}"
        print(f"  {Path(name).name:<40} {t_check:7.2f}s {t_find:19.2f}s  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
