"""``arena-viewer reorder MODEL -o OUT.tflite``: reorder operators to lower the peak, write a copy."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from viewer.errors import UsageError
from viewer.model.reader import load_model
from viewer.export.model_copy import write_reordered
from viewer.export.paths import check_output_path
from viewer.units import format_bytes
from viewer.whatif.reorder import apply_order, reorder
from viewer.cli._common import positive_seconds

#: Moved operators listed one per line before "... N more".
MAX_LISTED = 25


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reorder",
        help="reorder operators to lower the lower bound; write a copy of the model",
        description="Search topological operator orders of one subgraph for the smallest lower "
        "bound (the widest operator's breadth, LiteRT's interval rules), then write a copy of "
        "MODEL with that order and everything else unchanged. Operators with side effects keep "
        "their relative order. Prints the lower bound before and after, the saving and the "
        "operators that moved.",
    )
    p.add_argument("model", metavar="MODEL", help="a .tflite model file")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the reordered .tflite (never the input file)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT when it exists (without it, an existing file is refused)")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph index (default 0)")
    p.add_argument("--time-limit", type=positive_seconds, default=10.0, metavar="S",
                   help="seconds for the search, > 0 (default 10); loading MODEL, analysing its "
                        "order, checking the order found and writing OUT come on top (each "
                        "printed). The best order found by then is used")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    src, dst = Path(args.model), Path(args.output)
    if args.time_limit is None or not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UsageError(f"--time-limit {args.time_limit:g}: need a positive, finite number of seconds "
                         "(e.g. 10, the default; 0.1 for a quick look)")
    # Before the search: never the input, no FIFO/device, no existing file without --force.
    check_output_path(dst, src, what="reordered model", force=args.force)
    t0 = time.perf_counter()
    model = load_model(src)
    sg = model.subgraph(args.subgraph)
    t1 = time.perf_counter()
    res = reorder(sg, time_limit=args.time_limit)
    t2 = time.perf_counter()
    apply_order(sg, res.order)  # checks the order once more before anything is written
    written = write_reordered(src, dst, args.subgraph, res.order, force=args.force)
    t3 = time.perf_counter()

    out = sys.stdout.write
    out(f"{src}  subgraph {sg.index}  ({len(sg.operators)} operators)\n")
    before, after = res.lower_bound_before, res.lower_bound_after
    pct = 100.0 * res.saving_bytes / before if before else 0.0
    out(f"  {'lower bound before':<20}{before:>14,d} B  {format_bytes(before):>10}\n")
    out(f"  {'lower bound after':<20}{after:>14,d} B  {format_bytes(after):>10}\n")
    out(f"  {'saving':<20}{res.saving_bytes:>14,d} B  {format_bytes(res.saving_bytes):>10}  ({pct:.1f}%)\n")
    method = res.stats.get("method", "")
    proof = "proven smallest" if res.exact else "not proven smallest"
    st = res.stats
    out(f"  search: {method}, {proof}, {st.get('search_seconds', t2 - t1):.1f} s of the "
        f"{args.time_limit:g} s limit, {st.get('states', 0):,d} operator sets kept, "
        f"{st.get('steps', 0):,d} steps tried (not counted: loading {t1 - t0:.1f} s, analysing "
        f"{st.get('prepare_seconds', 0.0):.1f} s, checking + writing "
        f"{st.get('check_seconds', 0.0) + t3 - t2:.1f} s)\n")
    if res.changed:
        pos = {o: k for k, o in enumerate(res.order)}
        out(f"  moved {len(res.moved_ops)} operator{'' if len(res.moved_ops) == 1 else 's'} (original index -> new position):\n")
        for o in res.moved_ops[:MAX_LISTED]:
            out(f"    #{o:<5} {sg.operators[o].op_name:<24} -> {pos[o]}\n")
        if len(res.moved_ops) > MAX_LISTED:
            out(f"    ... {len(res.moved_ops) - MAX_LISTED} more\n")
        out(f"wrote {dst} ({written:,d} bytes)\n")
    elif res.exact:
        out("  no operator order lowers the lower bound (search complete); the original order is kept\n")
        out(f"wrote {dst} (an unchanged copy, {written:,d} bytes)\n")
    else:
        out("  no better order found within the time limit (search incomplete; try a larger "
            "--time-limit); the original order is kept\n")
        out(f"wrote {dst} (an unchanged copy, {written:,d} bytes)\n")
    return 0
