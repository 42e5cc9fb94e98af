"""``arena-viewer export MODEL -o chart.png|chart.svg``: the packing chart as an image, headless."""

from __future__ import annotations

import argparse
import os
import sys

from viewer.cli._tflm import add_runtime_arg, is_tflm
from viewer.cli._common import (add_edit_args, add_model_args, add_runtime_args, edits_from_args,
                                known_planners_help, positive_seconds)
from viewer.errors import UsageError
from viewer.units import format_bytes


def add_parser(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write the packing chart of a plan as a PNG or SVG (no display needed)",
        description="Read MODEL, plan its tensor arena and write the packing chart (usage intervals "
        "x arena offsets, widest operator, lower bound, breadth curve) to a PNG or SVG file, "
        "chosen by the output's suffix. The file is written atomically; an existing file is "
        "replaced only with --force.",
    )
    add_model_args(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output image: *.png or *.svg")
    p.add_argument("--force", action="store_true",
                   help="replace the output file when it exists (without it, an existing file is refused)")
    p.add_argument("--planner", default=None, metavar="NAME",
                   help="plan to draw (default: the smallest of every non-exact planner). "
                        f"Known: {known_planners_help()}")
    p.add_argument("--width", type=int, default=1600, metavar="PX",
                   help="image width, 200..16384 (default 1600); a PNG has at most 8192x8192 pixels "
                        "in all (64 Mi px: 256 MiB to draw, the most Qt and ImageMagick open by "
                        "default), larger charts go to .svg")
    p.add_argument("--height", type=int, default=1000, metavar="PX",
                   help="image height, 200..16384 (default 1000); see --width for the PNG limit")
    p.add_argument("--color-by", choices=("kind", "op"), default="kind",
                   help="colour tensors by kind (default) or by producer op type")
    p.add_argument("--time-limit", type=positive_seconds, default=None, metavar="S",
                   help="time limit in seconds for an exact planner")
    p.add_argument("--compare", action="store_true",
                   help="draw the baseline (the model as stored) and the what-if edits side by "
                        "side on one y scale, with the delta; needs at least one edit flag")
    add_runtime_args(
        p, measure_help="draw what check counts (the default): LiteRT's own arena with its kernel "
                        "temporaries (estimated under a storage what-if)",
        no_measure_help="plan the model's own tensors only, without running LiteRT (kernel "
                        "temporaries missing; the title says so)")
    add_edit_args(p)
    add_runtime_arg(p)
    p.set_defaults(run=run)


def _footprint_chart(args, edits):
    """(analysis, plan, notes, title suffix): the footprint ``check`` counts, or planned only."""
    from viewer.export.chart_data import TENSORS_ONLY, temporaries_title
    from viewer.planning.run import best_plan_name, run_planners
    from viewer.whatif.footprint import SOURCE_ESTIMATED, footprint
    from viewer.whatif.pipeline import prepare

    if args.measure:
        fp = footprint(args.model, args.subgraph, edits, planner=args.planner or "litert",
                       measure=True, timeout=args.timeout, time_limit=args.time_limit)
        suffix = temporaries_title(fp.temporaries_included, measured=False,
                                   estimated=fp.arena_term.source == SOURCE_ESTIMATED)
        notes = list(fp.notes) + [f"cannot tell: {u}" for u in fp.unknowns]
        return fp.analysis, fp.plan, notes, suffix
    from viewer.cli.plan import stored_shape_check, stored_shape_note

    prep = prepare(args.model, args.subgraph, edits)
    names = None if args.planner is None else [args.planner]
    plans = run_planners(prep.analysis.problem(), names, time_limit=args.time_limit)
    plan = plans[args.planner if args.planner is not None else best_plan_name(plans)]
    notes = list(prep.notes) + ["planned only (--no-measure): kernel temporaries are not included"]
    suffix = TENSORS_ONLY
    check = stored_shape_check(prep, edits)
    if check is not None and not check.ok:  # the file's shapes are not the runtime's: say so on the title
        notes.append(stored_shape_note(check, prep.analysis.subgraph))
        suffix += ", at the file's stored shapes (LiteRT computes others)"
    return prep.analysis, plan, notes, suffix


def run(args: argparse.Namespace) -> int:
    from viewer.export.image import MAX_SIZE, MIN_SIZE, check_output, export_chart

    out = str(args.output)
    for name in ("width", "height"):
        v = getattr(args, name)
        if not MIN_SIZE <= v <= MAX_SIZE:
            raise UsageError(f"--{name} {v}: use {MIN_SIZE}..{MAX_SIZE} pixels")
    check_output(out, args.width, args.height)  # before the model is read and planned
    from viewer.export.paths import check_output_path

    check_output_path(out, args.model, what="chart", force=args.force)  # never the model; FIFO refused at once
    edits = edits_from_args(args)
    if args.compare:
        if is_tflm(args):
            raise UsageError(f"{out}: --compare draws LiteRT plans only; drop --runtime tflm or --compare")
        return _run_compare(args, out, edits)
    if is_tflm(args):
        from viewer.cli._tflm import export_plan

        analysis, plan, notes, name_suffix = export_plan(args)
    else:
        analysis, plan, notes, name_suffix = _footprint_chart(args, edits)
    from viewer.export.chart_data import titled_model_name

    name = titled_model_name(os.path.basename(args.model), edits) + name_suffix  # same title as the window
    export_chart(analysis, plan, out, width=args.width, height=args.height,
                 model_name=name, subgraph=args.subgraph, color_by=args.color_by, force=args.force)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{out}: {plan.planner} plan, arena {format_bytes(plan.arena_bytes)} "
          f"({plan.arena_bytes:,d} B), lower bound {format_bytes(analysis.lower_bound_bytes)}, "
          f"{args.width}x{args.height}")
    return 0


def _run_compare(args: argparse.Namespace, out: str, edits) -> int:
    """``export --compare``: baseline and what-if side by side, each what ``export`` draws alone:
    the footprint check counts (kernel temporaries included, measured or estimated), or with
    ``--no-measure`` the model's tensors only, said on both titles and the output line."""
    from viewer.export.image import export_compare

    if edits is None or edits.is_empty():
        raise UsageError(f"{out}: --compare needs what-if edits to compare with the baseline "
                         "(--input-shape, --batch, --activation-dtype or --tensor-dtype)")
    if args.measure:
        ba, bp, bnotes, bsuffix = _footprint_chart(args, None)
        ea, ep, enotes, esuffix = _footprint_chart(args, edits)
    else:
        (ba, bp, bnotes), (ea, ep, enotes) = _planned_pair(args, edits)
        bsuffix = esuffix = " — tensors only, kernel temporaries NOT included"
    from viewer.export.chart_data import edits_label

    name = os.path.basename(args.model)
    export_compare((ba, bp, f"baseline: {name}{bsuffix}"),
                   (ea, ep, f"what-if: {edits_label(edits)}{esuffix}"), out,
                   width=args.width, height=args.height, color_by=args.color_by,
                   subgraph=args.subgraph, force=args.force)
    for note in dict.fromkeys([*bnotes, *enotes]):
        print(f"note: {note}", file=sys.stderr)
    left_out = " (kernel temporaries not included)" if "NOT included" in bsuffix + esuffix else ""
    print(f"{out}: {bp.planner} / {ep.planner} plans, arena {format_bytes(bp.arena_bytes)} -> "
          f"{format_bytes(ep.arena_bytes)}{left_out}, lower bound "
          f"{format_bytes(ba.lower_bound_bytes)} -> "
          f"{format_bytes(ea.lower_bound_bytes)}, {args.width}x{args.height}")
    return 0


def _planned_pair(args: argparse.Namespace, edits):
    """((analysis, plan, notes) of the baseline, of the what-if): planned only, the same
    planner on both sides (the baseline's best unless ``--planner``)."""
    from viewer.planning.run import best_plan_name, run_planners
    from viewer.whatif.pipeline import prepare

    base = prepare(args.model, args.subgraph, None)
    edited = prepare(base.model, args.subgraph, edits)
    names = None if args.planner is None else [args.planner]
    base_plans = run_planners(base.analysis.problem(), names, time_limit=args.time_limit)
    chosen = args.planner if args.planner is not None else best_plan_name(base_plans)
    edit_plans = run_planners(edited.analysis.problem(), [chosen], time_limit=args.time_limit)
    why = "planned only (--no-measure): kernel temporaries are not included"
    return ((base.analysis, base_plans[chosen], [why]),
            (edited.analysis, edit_plans[chosen], [*edited.notes, why]))
