"""``check --tile RxC[@K]``: the budget verdict for the tiled execution (see ``arena-viewer tile``).

The counted arena becomes the tiled peak: max(patch stage, tail stage), the patch stage being
the largest patch graph's arena + the full cut buffers + the graph input kept resident. With
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
    if v is not None:
        peak = int(v["measured_peak_bytes"])
        how = "measured by LiteRT on the written patch and tail models, kernel temporaries included"
    else:
        peak = int(rep["peak_bytes"])
        how = "planned, kernel temporaries estimated from shapes (not measured)"
    info = {k: rep[k] for k in ("grid", "split_operator", "cut_tensors", "untiled_peak_bytes", "peak_bytes",
                                "reduction", "overhead_pct", "patch_stage", "tail_stage", "measured")}
    if v is not None:
        info["measured_peak_bytes"] = peak
        info["arenas_equal"] = v["arenas_equal"]
    return (peak, f"tensor arena, tiled ({g}; {how})",
            f"the tiled execution's peak ({g}, input resident): max(patch stage, tail); {how}", info)
