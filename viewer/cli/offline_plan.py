"""``arena-viewer offline-plan MODEL -o OUT.tflite``: write the best plan into the model for TFLM.

TFLite Micro's greedy planner honours an ``OfflineMemoryAllocation`` metadata entry (one int32
offset per tensor across all subgraphs, -1 = plan online; tflite-micro
docs/memory_management.md, ``GetOfflinePlannedOffsets`` in micro_allocation_info.cc). This
writes one with the chosen planner's offsets under TFLM's rules, leaving room for the kernel
scratch buffers TFLM measured (they stay online). Everything else in the model is unchanged;
the input is never overwritten.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from viewer.cli._common import positive_seconds
from viewer.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "offline-plan",
        help="write a TFLite Micro offline memory plan (OfflineMemoryAllocation) into a copy of the model",
        description="Plan MODEL under TFLite Micro's rules with --planner (default optimal), with "
        "room for the kernel scratch buffers TFLM measures, and write a copy with an "
        "OfflineMemoryAllocation metadata entry holding every tensor's offset. Prints TFLM's head "
        "before and after (predicted by tflm_greedy; --verify measures the written model).",
    )
    p.add_argument("model", metavar="MODEL", help="a .tflite model file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the copy to write (never MODEL)")
    p.add_argument("--planner", default="optimal", metavar="NAME", help="planner whose offsets are written (default optimal)")
    p.add_argument("--time-limit", type=positive_seconds, default=10.0, metavar="S", help="seconds for the exact planner (default 10)")
    p.add_argument("--no-measure", dest="measure", action="store_false",
                   help="do not run TFLM for the scratch buffers (then no room is left for them)")
    p.add_argument("--verify", action="store_true",
                   help="measure the written model with TFLM: head and outputs on random inputs")
    p.add_argument("--timeout", type=positive_seconds, default=120.0, metavar="S",
                   help="seconds for each TFLM run (default 120)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists (never MODEL)")
    p.add_argument("--replace-offline-plan", action="store_true",
                   help="write the new plan even when MODEL already carries an offline plan that "
                        "gives TFLM a head as small or smaller (without it the command refuses)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from viewer.export.paths import check_output_path
    from viewer.export.model_copy import write_offline_planned
    from viewer.model.reader import load_model
    from viewer.runtime.tflm_probe import NOT_MEASURED_NOTE, measure_tflm
    from viewer.whatif.offline_plan import offline_plan

    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UsageError(f"--time-limit {args.time_limit:g}: need a positive number of seconds")
    src, dst = Path(args.model), Path(args.output)
    check_output_path(dst, src, what="offline-planned model", force=args.force)
    model = load_model(src)
    notes = []
    scratch = ()
    before = None
    if args.measure:
        m = measure_tflm(model, timeout=args.timeout)
        if m.ok:
            scratch, before = m.scratch, m.head_bytes
            if not m.hooks:
                notes.append("scratch buffers not measured (TFLM build without the expected symbols)")
        else:
            notes.append(f"{m.error}: {NOT_MEASURED_NOTE}; no room left for scratch buffers")
    else:
        notes.append(f"--no-measure: {NOT_MEASURED_NOTE}; no room left for scratch buffers")
    op = offline_plan(model, scratch, planner=args.planner, time_limit=args.time_limit)
    # Compared with what TFLM does with the file as given (its own offline plan kept).
    given = before if before is not None else op.given_head_bytes
    if op.has_offline_plan and op.predicted_head_bytes >= given and not args.replace_offline_plan:
        raise UsageError(
            f"{src}: already carries an offline plan giving TFLM a head of {given:,d} B; the "
            f"{op.planner} plan would need {op.predicted_head_bytes:,d} B, so nothing was written "
            "(--replace-offline-plan writes it anyway)")
    written = write_offline_planned(src, dst, op.offsets, op.num_subgraphs, force=args.force)
    w = print
    w(f"{src}: offline plan by {op.planner}"
      + (" (proven optimal)" if op.proven_optimal else "") + f", {sum(o >= 0 for o in op.offsets)} tensors fixed, "
      f"{op.scratch_count} scratch buffer{'s' if op.scratch_count != 1 else ''} left online")
    for n in notes:
        w(f"note: {n}")
    label = "the file as given: its offline plan" if op.has_offline_plan else "its greedy planner"
    width = 55 if op.has_offline_plan else 39
    w(f"  {'TFLM head before (' + label + ')':<{width}}{op.given_head_bytes:>12,d} B"
      + (f"   measured {before:,d} B" if before is not None else ""))
    saving = given - op.predicted_head_bytes
    w(f"  {'TFLM head after (predicted)':<{width}}{op.predicted_head_bytes:>12,d} B   "
      + (f"saving {saving:,d} B" if saving >= 0 else f"COSTS {-saving:,d} B more (--replace-offline-plan)"))
    if args.verify:
        m0 = measure_tflm(model, timeout=args.timeout, invoke_seed=0)
        m1 = measure_tflm(load_model(dst), timeout=args.timeout, invoke_seed=0)
        if not (m0.ok and m1.ok):
            w(f"  verify: TFLM could not run it, so the written plan is NOT verified: "
              f"{(m1 if m0.ok else m0).error}")
            w(f"wrote {dst} ({written:,d} bytes)")
            return 3
        else:
            same = [o["hex"] for o in m0.outputs] == [o["hex"] for o in m1.outputs]
            w(f"  {'TFLM head after (measured)':<{width}}{m1.head_bytes:>12,d} B   "
              f"{'= predicted' if m1.head_bytes == op.predicted_head_bytes else 'DIFFERS from predicted'}")
            w(f"  outputs on random inputs (seed 0): {'identical' if same else 'DIFFERENT'}")
            if not same or m1.head_bytes != op.predicted_head_bytes:
                w(f"wrote {dst} ({written:,d} bytes)")
                return 1
    w(f"wrote {dst} ({written:,d} bytes)")
    return 0
