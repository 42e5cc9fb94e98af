"""``check --tile RxC[@K]``: the budget verdict for the tiled execution (see ``arena-viewer tile``).

The counted arena is what the written deployment holds under LiteRT (``--tile-stages
resident``, the default): ``patch.tflite`` with every signature allocated and ``tail.tflite``,
all at once (LiteRT keeps one arena per allocated subgraph), + the cut buffers + the input.
``--tile-stages in-turn`` counts max(patch stage, tail stage) instead, the patch stage being the
largest patch graph's arena + the full cut buffers + the graph input kept resident: it assumes
one arena reused in turn (each interpreter built and freed before the next), said on the verdict. With
measuring on (the default) the patch and tail models are written to a temporary folder and
LiteRT measures them; with ``--no-measure`` the planned figures count (kernel temporaries
estimated from shapes).
"""

from __future__ import annotations

import argparse
import tempfile

from viewer.errors import UsageError


def add_tile_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tile", metavar="RxC[@K]", default=None,
                   help="count the tiled execution: a grid of RxC patches through operators 0..K "
                        "(default K: the split with the lowest peak); see 'arena-viewer tile'")
    p.add_argument("--tile-stages", choices=["resident", "in-turn"], default="resident",
                   help="with --tile: 'resident' (default) counts the deployment as written, every "
                        "patch signature's and the tail's arena allocated at once (LiteRT keeps one "
                        "arena per subgraph); 'in-turn' counts max(patch stage, tail) and assumes "
                        "the stages share one arena in turn (interpreters built and freed in turn)")


def apply_tile(args, arena: int, label: str, counted: str):
    """(arena, label, counted, tile JSON or None) with ``--tile`` applied."""
    if not getattr(args, "tile", None):
        return arena, label, counted, None
    from viewer.whatif.tiling.report import parse_tile, tile_report

    edits = getattr(args, "_edits", None)
    if edits is not None and not edits.is_empty():
        raise UsageError("--tile with what-if edits: tiling plans the model as stored; drop the edits")
    grid, split = parse_tile(args.tile)
    with tempfile.TemporaryDirectory(prefix="arena-tile-") as tmp:
        rep = tile_report(args.model, grid=grid, split=split, subgraph=args.subgraph,
                          out_dir=tmp if args.measure else None, measure=args.measure,
                          request=f"--tile {args.tile}")
    if rep["grid"] is None:
        raise UsageError(f"--tile {args.tile}: {rep['verdict']}")
    v = rep.get("verification")
    g = f"{rep['grid'][0]}x{rep['grid'][1]} patches through operator #{rep['split_operator']}"
    in_turn = getattr(args, "tile_stages", "resident") == "in-turn"
    if v is not None:
        peak = int(v["measured_peak_bytes"] if in_turn else v["deployed_bytes"])
        how = "measured by LiteRT on the written patch and tail models, kernel temporaries included"
    else:
        peak = int(rep["peak_bytes"] if in_turn else rep["deployed_bytes"])
        how = "planned, kernel temporaries estimated from shapes (not measured)"
    if in_turn:
        what = ("max(patch stage, tail): ASSUMES the stages share one arena in turn (each "
                "interpreter built and freed before the next; --tile-stages in-turn)")
    else:
        what = ("every patch signature's arena + the tail's, all resident as LiteRT holds the "
                "written deployment, + cut + input")
    info = {k: rep[k] for k in ("grid", "split_operator", "cut_tensors", "untiled_peak_bytes", "peak_bytes",
                                "reduction", "overhead_pct", "patch_stage", "tail_stage", "measured")}
    info["stages"] = "in-turn" if in_turn else "resident"
    info["assumption"] = ("the patch and tail stages share one arena in turn" if in_turn else
                          "none: every stage's arena resident at once, as LiteRT allocates the written models")
    info["deployed_bytes"] = int(rep["deployed_bytes"])
    if v is not None:
        info["measured_peak_bytes"] = int(v["measured_peak_bytes"])
        info["measured_deployed_bytes"] = int(v["deployed_bytes"])
        info["arenas_equal"] = v["arenas_equal"]
    label = f"tensor arena, tiled ({g}; {'stages in turn, assumed' if in_turn else 'all stages resident'}; {how})"
    return (peak, label, f"the tiled execution ({g}, input resident): {what}; {how}", info)
