"""``arena-viewer overlay MODEL --format model-explorer|netron -o FILE.json``: memory on the graph.

Model Explorer: ``model-explorer MODEL --node_data_paths=FILE.json`` (one measure per file,
every subgraph). Netron: open MODEL, then drop FILE.json on the window (every measure, one
subgraph).
"""

from __future__ import annotations

import argparse
import sys

from viewer.cli._common import add_edit_args, add_model_args, add_runtime_args, edits_from_args
from viewer.cli._tflm import add_runtime_arg, is_tflm
from viewer.errors import UsageError
from viewer.units import format_bytes

FORMATS = ("model-explorer", "netron")


def add_parser(sub) -> None:
    from viewer.export.overlay import MEASURES

    p = sub.add_parser(
        "overlay",
        help="write per-operator memory as a Model Explorer node-data or Netron attachment file",
        description="Plan MODEL's tensor arena and write, per operator, its live bytes, breadth, "
        "kernel temporaries and the arena's top address, for Google's Model Explorer "
        "(--node_data_paths) or Netron (drop the file on the open model). Model Explorer files "
        "carry one measure (--value) for every subgraph; Netron files carry every measure of one "
        "subgraph (--subgraph).",
    )
    add_model_args(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="which viewer the file is for")
    p.add_argument("-o", "--output", required=True, metavar="FILE.json", help="the file to write")
    p.add_argument("--value", default="live_bytes", choices=tuple(MEASURES),
                   help="Model Explorer: the measure to colour nodes by (default live_bytes: "
                        "every tensor live at the operator, kernel temporaries included)")
    p.add_argument("--planner", default="litert", metavar="NAME",
                   help="plan whose offsets give arena_top_bytes (default litert; tflm_greedy "
                        "under --runtime tflm)")
    add_runtime_args(p, no_measure_help="do not run the runtime: kernel temporaries (TFLM: "
                                        "scratch) are then missing (said in the file)",
                     timeout_help="seconds before the runtime process (LiteRT, or TFLM under "
                                  "--runtime tflm) is killed")
    add_runtime_arg(p)
    p.add_argument("--force", action="store_true", help="replace FILE.json if it exists")
    add_edit_args(p)
    p.set_defaults(run=run)


def _overlays(model, entry: int, edits, planner: str, measure: bool, indices, timeout: float):
    from viewer.export.overlay import subgraph_overlay
    from viewer.whatif.footprint import footprint

    out, notes = [], []
    for i in indices:
        fp = footprint(model, i, edits if i == entry else None, planner=planner,
                       measure=measure and i == entry, timeout=timeout)
        notes.extend(fp.notes if i == entry else ())
        out.append(subgraph_overlay(model, i, fp.analysis, fp.plan, fp.measured))
    return out, notes


def _tflm_overlays(args):
    """TFLM plans every subgraph in one arena from subgraph 0: one overlay, of subgraph 0, with
    called subgraphs' tensors at their caller's operator; the head is ``check --runtime
    tflm``'s (measured scratch included unless ``--no-measure``)."""
    from viewer.cli._tflm import tflm_view
    from viewer.export.overlay import subgraph_overlay

    fp, notes = tflm_view(args, args.planner)
    return [subgraph_overlay(fp.model, 0, fp.analysis, fp.plans[fp.planner], fp.measured)], notes


def run(args: argparse.Namespace) -> int:
    from viewer.errors import SubgraphError
    from viewer.export.chart_data import edits_label
    from viewer.export.overlay import dumps, model_explorer_node_data, netron_attachment
    from viewer.export.paths import check_output_path
    from viewer.model.reader import load_model

    out = str(args.output)
    if not out.lower().endswith(".json"):
        raise UsageError(f"{out}: the overlay is a JSON file; name it *.json")
    check_output_path(out, args.model, what="overlay", force=args.force)
    edits = edits_from_args(args)
    model = load_model(args.model)
    if not 0 <= args.subgraph < len(model.subgraphs):
        raise SubgraphError(f"{args.model}: no subgraph {args.subgraph} "
                            f"(the model has {len(model.subgraphs)})")
    label = edits_label(edits) if edits is not None and not edits.is_empty() else ""
    if args.format == "model-explorer":
        indices = range(len(model.subgraphs))
    else:
        indices = [args.subgraph]
    if is_tflm(args):
        subs, notes = _tflm_overlays(args)
    else:
        subs, notes = _overlays(model, args.subgraph, edits, args.planner, args.measure, indices,
                                args.timeout)
    if args.format == "model-explorer":
        doc = model_explorer_node_data(subs, args.value, label)
        for s in subs:
            if not s.measured:
                doc[s.graph_id]["name"] += (" - kernel scratch not included (TFLM not run)" if is_tflm(args)
                                            else " - kernel temporaries not included")
    else:
        doc = netron_attachment(subs[0], label)
    from viewer.export.paths import write_atomic

    write_atomic(out, dumps(doc), args.model, what="overlay", force=args.force)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    entry = next(s for s in subs if s.index == args.subgraph)
    w = entry.widest_op
    widest = (f"widest operator #{w} {entry.op_names[w]} "
              f"{format_bytes(int(entry.values['live_bytes'][w]))}" if w >= 0 else "no operators")
    what = "" if entry.measured else " (kernel temporaries not included)"
    if is_tflm(args):
        what = (f"; TFLite Micro head {entry.arena_bytes:,d} B ({entry.planner})"
                + ("" if entry.measured else ", kernel scratch not included"))
    print(f"{out}: {args.format} overlay of {len(subs)} subgraph(s), "
          f"{sum(len(s.op_names) for s in subs)} operators; {widest}{what}")
    return 0
