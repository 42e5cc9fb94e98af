"""Issue 11's acceptance campaign over ../shared/models (run on demand, prints a Markdown table).

For every model TFLM's interpreter loads: LiteRT's measured arena, TFLM's head/tail/total (the
recording allocator), whether ``tflm_greedy`` fed the measured scratch reproduces every offset
and the head, the best head under TFLM's rules (optimal, 5 s), and, where TFLM's greedy is above
it, the offline-planned copy's measured head and whether its outputs on random inputs are
byte-identical. Usage: ``python tools/tflm_acceptance.py [MODELS_DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from viewer.analysis.tflm import tflm_problem  # noqa: E402
from viewer.errors import ViewerError  # noqa: E402
from viewer.export.model_copy import write_offline_planned  # noqa: E402
from viewer.model.reader import load_model  # noqa: E402
from viewer.planning.run import run_planners  # noqa: E402
from viewer.planning.tflm import plan_tflm_greedy  # noqa: E402
from viewer.runtime.tflm_probe import measure_tflm  # noqa: E402
from viewer.whatif.offline_plan import offline_plan  # noqa: E402


def litert_arena(path: str):
    from viewer.runtime.probe import measured_plan, probe_model

    p = probe_model(path, 0, timeout=120)
    return measured_plan(p).arena_bytes if p.ok else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out_dir = Path(args.out or tempfile.mkdtemp(prefix="tflm-acceptance-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    print("| model | LiteRT arena | TFLM head | tail | total | replay (every offset) | optimal head, TFLM rules | offline-planned head (measured) | outputs |")
    print("|---|---|---|---|---|---|---|---|---|")
    refused = []
    for f in sorted(Path(args.models).glob("*.tflite")):
        try:
            m = load_model(f)
        except ViewerError as e:
            refused.append(f"- {f.name}: our reader refuses it: {e}")
            continue
        r = measure_tflm(m, timeout=120)
        if not r.ok:
            refused.append(f"- {f.name}: {r.error.split(': ', 1)[-1]}")
            continue
        p = tflm_problem(m, r.scratch)
        g = plan_tflm_greedy(p)
        exact = r.hooks and [g.offsets[b.id] for b in p.buffers] == list(r.planner_offsets)
        opt = run_planners(p, ["optimal"], 16, time_limit=5)["optimal"]
        off, outs = "-", "-"
        if opt.arena_bytes < r.head_bytes:
            op = offline_plan(m, r.scratch, planner="optimal", time_limit=5)
            dst = out_dir / f"{f.stem}_offline.tflite"
            write_offline_planned(f, dst, op.offsets, op.num_subgraphs, force=True)
            m0 = measure_tflm(m, invoke_seed=0)
            m1 = measure_tflm(load_model(dst), invoke_seed=0)
            off = (f"{m1.head_bytes:,} (predicted {op.predicted_head_bytes:,})" if m1.ok else m1.error)
            outs = ("identical" if m0.ok and m1.ok and [o["hex"] for o in m0.outputs] == [o["hex"] for o in m1.outputs]
                    else "DIFFERENT" if m0.ok and m1.ok else "not run")
        la = litert_arena(str(f))
        print(f"| {f.stem} | {la:,} | {r.head_bytes:,} | {r.tail_bytes:,} | {r.total_bytes:,} | "
              f"{'yes' if exact else 'head ' + ('=' if g.arena_bytes == r.head_bytes else '!=')} "
              f"({len(r.scratch)} scratch) | {opt.arena_bytes:,}{'' if opt.proven_optimal else ' (not proven)'} | {off} | {outs} |"
              if la is not None else
              f"| {f.stem} | not loaded | {r.head_bytes:,} | {r.tail_bytes:,} | {r.total_bytes:,} | "
              f"{'yes' if exact else 'no'} ({len(r.scratch)} scratch) | {opt.arena_bytes:,} | {off} | {outs} |", flush=True)
    print("\nTFLM refuses:")
    print("\n".join(refused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
