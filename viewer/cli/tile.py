"""``arena-viewer tile MODEL``: run the high-resolution prefix in patches (or tile the whole input).

Plans a patch-based execution (MCUNetV2-style: a grid of patches through operators 0..K, the
cut tensors assembled in full, then the rest of the graph), searches grids and splits, and with
``-o DIR`` writes patch.tflite / tail.tflite / tiling.json and has LiteRT measure and check them.
"""

from __future__ import annotations

import argparse
import json
import sys

from viewer.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tile",
        help="patch-based execution of the high-resolution prefix: peak vs grid and split, "
             "deployable patch/tail models verified by LiteRT",
        description="Plan MODEL's high-resolution stage in patches: a grid RxC of patches runs "
        "operators 0..K with the halos their receptive fields need, the tensors crossing the cut "
        "are assembled in full, and the rest of the graph runs normally. Reports the peak (patch "
        "stage vs tail), the reduction against the untiled arena and the recompute overhead in "
        "MACs; searches square grids 1x1..8x8 and every split when asked (auto). With -o DIR, "
        "writes patch.tflite (one signature per border class), tail.tflite and tiling.json, and "
        "LiteRT measures each signature's arena and checks that the stitched result equals the "
        "original model's. Sizes in bytes.",
    )
    p.add_argument("model", metavar="MODEL", help="a .tflite model")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph index (default 0)")
    p.add_argument("--grid", default="auto", metavar="RxC|auto", help="patch grid, e.g. 4x4 (default auto)")
    p.add_argument("--split-after", default="auto", metavar="K|auto",
                   help="last operator of the patch stage (default auto: the lowest peak)")
    p.add_argument("--input", dest="input_mode", choices=["resident", "streamed"], default="resident",
                   help="the graph input stays in memory (default, as LiteRT keeps it) or streams per patch")
    p.add_argument("--whole-input", metavar="TxT", default=None,
                   help="whole-input tiling instead: tile size (e.g. 256x256)")
    p.add_argument("--overlap", type=int, default=0, metavar="O", help="whole-input tiling: overlap in pixels")
    p.add_argument("--full", metavar="HxW", default=None, help="whole-input tiling: the full resolution")
    p.add_argument("-o", "--output", metavar="DIR", default=None,
                   help="write patch.tflite, tail.tflite and tiling.json into DIR and verify them with LiteRT")
    p.add_argument("--no-measure", dest="measure", action="store_false",
                   help="with -o: write only, do not run LiteRT on the written models")
    p.add_argument("--force", action="store_true",
                   help="with -o: replace patch.tflite, tail.tflite and tiling.json if DIR has them")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def _check_output_dir(args: argparse.Namespace) -> None:
    """Refuse, before any work, to replace files in ``-o DIR`` without ``--force`` (as every
    other writer does), to write into a non-folder, or over the input model."""
    import os

    from viewer.export.paths import FORCE_HINT, check_output_path
    from viewer.whatif.tiling.write import PATCH_FILE, SPEC_FILE, TAIL_FILE

    if args.output is None:
        return
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"{args.output}: -o takes a folder (it gets {PATCH_FILE}, {TAIL_FILE}, {SPEC_FILE})")
    for name in (PATCH_FILE, TAIL_FILE, SPEC_FILE):
        target = os.path.join(args.output, name)
        if os.path.isdir(args.output):
            check_output_path(target, args.model, what="tiled model", force=True)
        if os.path.lexists(target) and not args.force:
            raise UsageError(f"{target}: already exists; {FORCE_HINT}")


def run(args: argparse.Namespace) -> int:
    from viewer.whatif.tiling.report import parse_grid, tile_report

    if args.whole_input is not None:
        return _whole(args)
    _check_output_dir(args)
    grid = None if args.grid == "auto" else parse_grid(args.grid)
    split = None
    if args.split_after != "auto":
        if not args.split_after.strip().isdigit():
            raise UsageError(f"--split-after {args.split_after}: expected an operator index or auto")
        split = int(args.split_after)
    tell = _Progress()
    rep = tile_report(args.model, grid=grid, split=split, input_mode=args.input_mode,
                      out_dir=args.output, measure=args.measure, subgraph=args.subgraph,
                      progress=tell.step, stage=tell.stage)
    if args.json:
        json.dump(rep, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print(rep)
    v = rep.get("verification")
    if v is not None and not (v["arenas_equal"] and v["cut_equal"] and v["outputs_equal"]):
        return 1
    return 0


class _Progress:
    """Progress on stderr while the search runs (a search over every grid and split took 88 s
    in silence): a line when the search starts, then at each eighth of the (grid, split) pairs
    and at most every 2 s, then one per later stage. Stdout keeps only the report."""

    def __init__(self):
        import time

        self._clock = time.monotonic
        self._last = self._clock()
        self._shown = 0

    def step(self, done: int, total: int) -> None:
        if total <= 1:
            return
        if self._shown == 0:
            print(f"tile: trying {total} (grid, split after) pairs ...", file=sys.stderr, flush=True)
        now, eighth = self._clock(), done * 8 // total
        if done == total or (eighth > self._shown and now - self._last >= 2.0):
            print(f"tile: {done}/{total} pairs tried", file=sys.stderr, flush=True)
            self._last = now
        self._shown = max(self._shown, eighth, 1)

    def stage(self, text: str) -> None:
        print(f"tile: {text} ...", file=sys.stderr, flush=True)


def _b(n) -> str:
    from viewer.units import format_bytes

    return "n/a" if n is None else f"{n:,d} B ({format_bytes(n)})"


def _print(rep: dict) -> None:
    out = print
    out(f"{rep['model']}: {rep['verdict']}")
    out(f"  untiled peak (runtime arena, kernel temporaries included): {_b(rep['untiled_peak_bytes'])}")
    if rep["grid"] is not None:
        ps = rep["patch_stage"]
        out(f"  grid {rep['grid'][0]}x{rep['grid'][1]}, split after operator #{rep['split_operator']}, "
            f"input {rep['input_mode']}")
        out(f"  cut: {len(rep['cut_tensors'])} tensor(s), {_b(ps['cut_bytes'])}: " + ", ".join(rep["cut_tensors"]))
        out(f"  patch stage: {_b(ps['total_bytes'])} = largest patch arena {_b(ps['arena_bytes'])} "
            f"(input crop {ps['patch_input_shape']}) + cut {_b(ps['cut_bytes'])} + input {_b(ps['input_bytes'])}")
        out(f"  tail stage:  {_b(rep['tail_stage']['arena_bytes'])}")
        ratio = (f"reduction {rep['reduction']:.2f}x" if rep["reduction"] >= 1 else
                 f"{1 / rep['reduction']:.2f}x larger than untiled (tiling does not help here)")
        out(f"  peak:        {_b(rep['peak_bytes'])}  {ratio}, "
            f"recompute +{rep['overhead_pct']:.1f}% MACs; assumes the stages run in turn in one "
            "arena (each interpreter built and freed before the next)")
        out(f"  deployed with LiteRT as written (-o: patch.tflite, every signature allocated, + "
            f"tail.tflite, all resident): {_b(rep['deployed_bytes'])} planned = every signature's "
            "arena + tail + cut + input")
        for k in ("streamed_peak_bytes", "resident_peak_bytes"):
            if k in rep:
                out(f"  with the input {k.split('_')[0]}: peak {_b(rep[k])}")
    if len(rep["candidates"]) > 1:
        out("  best per grid:  grid  split  peak                 overhead")
        for c in rep["candidates"]:
            out(f"                 {c['grid'][0]}x{c['grid'][1]}   #{c['split_operator']:<4d} "
                f"{c['peak_bytes']:>13,d} B  +{c['overhead_pct']:.1f}%")
    v = rep.get("verification")
    if v is not None:
        out(f"  LiteRT on {rep['output_dir']}: arenas {'equal' if v['arenas_equal'] else 'DIFFER'} "
            f"({len(v['signatures'])} signatures + tail); measured peak {_b(v['measured_peak_bytes'])}; "
            f"stitched cut {'equal' if v['cut_equal'] else 'DIFFERS'}; outputs {'equal' if v['outputs_equal'] else 'DIFFER'}")
        out(f"  LiteRT deployed as written: {_b(v['deployed_bytes'])} measured ({v['deployed_note']})")
    for n in rep.get("notes", ()):
        out(f"note: {n}")


def _whole(args) -> int:
    from viewer.whatif.tiling.whole import whole_input_report

    rep = whole_input_report(args.model, args.whole_input, args.overlap, args.full, subgraph=args.subgraph)
    if args.json:
        json.dump(rep, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for line in rep["lines"]:
            print(line)
    return 0
