"""One call from a model file to the tiling answer the CLI prints (``tile --json``) and the window shows.

Chooses the plan (a given grid and split, or the search), writes the deployable models when
asked, and has LiteRT measure every written signature and the tail and check the stitching
(:mod:`viewer.runtime.tiled`). Sizes in bytes; operator indices in execution order.
"""

from __future__ import annotations

import re
from typing import Any

from viewer.errors import UsageError, ViewerError
from viewer.model.constants import small_int_constants
from viewer.model.reader import load_model
from viewer.ops import NotLocal
from viewer.whatif.tiling.plan import RESIDENT, STREAMED, SearchResult, TilePlan, Tiler, search

#: Float stitching tolerance: relative to the tensor's largest magnitude (issue 10).
FLOAT_TOLERANCE = 1e-5


def parse_grid(text: str, *, request: str | None = None) -> tuple[int, int]:
    """``"4x4"`` -> (4, 4); raises UsageError naming ``request`` (default ``--grid TEXT``)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text or "")
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        if request:
            raise UsageError(f"{request}: expected ROWSxCOLUMNS[@K], e.g. 4x4 or 4x4@12")
        raise UsageError(f"--grid {text}: expected ROWSxCOLUMNS, e.g. 4x4, or auto")
    return int(m.group(1)), int(m.group(2))


def parse_tile(text: str) -> tuple[tuple[int, int], int | None]:
    """``"4x4@12"`` -> ((4, 4), 12); ``"4x4"`` -> ((4, 4), None) (the best split)."""
    grid, _, k = (text or "").partition("@")
    g = parse_grid(grid, request=f"--tile {text}")
    if k and not k.strip().isdigit():
        raise UsageError(f"--tile {text}: the split after '@' must be an operator index, e.g. 4x4@12")
    return g, (int(k) if k else None)


def make_tiler(model_path: str, subgraph: int = 0) -> Tiler:
    model = load_model(model_path)
    sg = model.subgraph(subgraph)
    tiler = Tiler(sg, small_int_constants(model_path, subgraph))
    tiler.path = str(model_path)
    return tiler


def choose(tiler: Tiler, grid: tuple[int, int] | None, split: int | None,
           input_mode: str = RESIDENT, *, request: str | None = None,
           progress=None) -> tuple[TilePlan | None, SearchResult]:
    """The plan for ``grid``/``split`` (None = search), and the search behind it.

    ``progress(done, total)`` is passed to :func:`viewer.whatif.tiling.plan.search`.

    The search tries square grids 1x1..8x8 when ``grid`` is None, every valid split when
    ``split`` is None. Raises UsageError for a split outside the model or the patchable prefix
    or a grid the cut tensors are too small for; the message starts with ``request``, the flag
    as the user typed it (e.g. ``"--tile 4x4@999"``), default ``--grid RxC --split-after K``.
    """
    def named(with_grid: bool) -> str:
        if request:
            return request
        g = f"--grid {grid[0]}x{grid[1]} " if with_grid and grid is not None else ""
        return f"{g}--split-after {split}"

    if split is not None and not 0 <= split <= tiler.prefix.last_op:
        n_ops = len(tiler.sg.operators)
        if split >= n_ops:
            raise UsageError(f"{named(False)}: split after operator {split}, but the model has {n_ops} "
                             f"operators (0..{n_ops - 1}); the patchable prefix is 0..{tiler.prefix.last_op}")
        why = f" ({tiler.prefix.reason})" if tiler.prefix.reason else ""
        raise UsageError(f"{named(False)}: split after operator {split}, outside the patchable prefix "
                         f"0..{tiler.prefix.last_op}{why}")
    grids = [grid] if grid is not None else None
    res = search(tiler, grids=grids, splits=[split] if split is not None else None, input_mode=input_mode,
                 progress=progress)
    if grid is not None and split is not None and not res.best:
        (k, why), = res.skipped[grid] or [(split, "no plan")]
        raise UsageError(f"{named(True)}: {why}")
    return res.overall, res


def plan_json(plan: TilePlan) -> dict[str, Any]:
    return {
        "grid": list(plan.grid),
        "split_operator": plan.split,
        "cut_tensors": plan.cut_names,
        "input_mode": plan.input_mode,
        "untiled_peak_bytes": plan.untiled_peak_bytes,
        "peak_bytes": plan.peak_bytes,
        "reduction": round(plan.reduction, 4),
        "overhead_pct": round(plan.overhead_pct, 2),
        "patch_stage": {
            "patch_input_shape": list(plan.patch_input_shape),
            "arena_bytes": plan.patch_arena_bytes,
            "cut_bytes": plan.cut_bytes,
            "input_bytes": plan.input_bytes if plan.input_mode == RESIDENT else 0,
            "total_bytes": plan.patch_stage_bytes,
        },
        "tail_stage": {"arena_bytes": plan.tail_arena_bytes},
        # LiteRT keeps one arena per allocated subgraph: the written deployment (one patch
        # interpreter with every signature allocated + the tail's) holds them all at once.
        "deployed_bytes": deployed_planned_bytes(plan),
        "signatures": [
            {"key": c.key, "patches": [list(p) for p in c.patches], "input_shape": list(c.input_shape),
             "arena_bytes": c.arena_bytes, "kernel_temporaries_bytes": c.temporaries_bytes}
            for c in plan.classes
        ],
        "macs": {"untiled_prefix": plan.untiled_macs, "tiled_prefix": plan.tiled_macs},
    }


def deployed_planned_bytes(plan: TilePlan) -> int:
    """Bytes the written deployment holds under LiteRT, planned: every signature's arena + the
    tail's arena + the cut buffers + the input when resident (each allocated subgraph keeps
    its own arena; :func:`viewer.runtime.tiled.resident_arenas` measures it)."""
    resident = plan.input_bytes if plan.input_mode == RESIDENT else 0
    return (sum(c.arena_bytes for c in plan.classes) + plan.tail_arena_bytes
            + plan.cut_bytes + resident)


def search_json(res: SearchResult) -> dict[str, Any]:
    cands = [{"grid": list(g), "split_operator": p.split, "peak_bytes": p.peak_bytes,
              "overhead_pct": round(p.overhead_pct, 2)} for g, p in res.best.items()]
    return {
        "candidates": cands,
        "curve": {f"{g[0]}x{g[1]}": [[k, peak, round(o, 2)] for k, peak, o in pts] for g, pts in res.curve.items()},
        "prefix": {"last_operator": res.prefix.last_op, "ends_because": res.prefix.reason},
        "widest_operator": res.widest_op[0],
        "helps": res.helps,
    }


def versus_untiled(peak_bytes: int, untiled_bytes: int) -> str:
    """The tiled peak against the untiled one, worded the right way round.

    Parameters
    ----------
    peak_bytes, untiled_bytes : int
        The tiled and the untiled peak (bytes).

    Returns
    -------
    str
        ``"2.34x below untiled"`` when tiling lowers the peak, ``"1.06x above untiled"`` when it
        raises it (never a ratio under 1 called "below"), ``"equal to untiled"`` otherwise; the
        caller appends the untiled figure.
    """
    if peak_bytes <= 0 or untiled_bytes <= 0 or peak_bytes == untiled_bytes:
        return "equal to untiled"
    if peak_bytes < untiled_bytes:
        return f"{untiled_bytes / peak_bytes:.2f}x below untiled"
    return f"{peak_bytes / untiled_bytes:.2f}x above untiled"


def verdict(res: SearchResult) -> str:
    """One sentence: the best plan, or that no split lowers the peak, with the numbers."""
    best = res.overall
    if best is None:
        return (f"no split can be planned: the patchable prefix is operators 0..{res.prefix.last_op}"
                + (f" ({res.prefix.reason})" if res.prefix.reason else ""))
    if not res.helps:
        w, wname = res.widest_op
        where = ("after" if w > res.prefix.last_op else "inside") + f" the patchable prefix 0..{res.prefix.last_op}"
        return (f"no split lowers the peak: untiled {res.untiled_peak_bytes:,d} B; the best tiled plan "
                f"({best.grid[0]}x{best.grid[1]} split after #{best.split}) peaks at {best.peak_bytes:,d} B "
                f"(patch stage {best.patch_stage_bytes:,d} B, tail {best.tail_arena_bytes:,d} B); the widest "
                f"operator #{w} {wname} lies {where}"
                + (f", which ends at {res.prefix.reason}" if res.prefix.reason else ""))
    return (f"{best.grid[0]}x{best.grid[1]} split after #{best.split}: peak {best.peak_bytes:,d} B, "
            f"{versus_untiled(best.peak_bytes, best.untiled_peak_bytes)} {best.untiled_peak_bytes:,d} B, "
            f"+{best.overhead_pct:.1f}% MACs")


def verify(model_path: str, plan: TilePlan, out_dir: str) -> dict[str, Any]:
    """LiteRT on the written models: every signature's and the tail's arena, and the stitching."""
    from viewer.runtime.tiled import check_stitching, resident_arenas, signature_arena
    from viewer.whatif.tiling.write import PATCH_FILE, TAIL_FILE

    sigs = []
    for c in plan.classes:
        m = signature_arena(f"{out_dir}/{PATCH_FILE}", c.key).arena_bytes
        sigs.append({"key": c.key, "predicted_bytes": c.arena_bytes, "measured_bytes": m,
                     "equal": m == c.arena_bytes})
    tail = signature_arena(f"{out_dir}/{TAIL_FILE}", "tail").arena_bytes
    st = check_stitching(model_path, out_dir)
    from viewer.runtime.probe import probe_model

    untiled = probe_model(model_path, check=True).arena_bytes

    def ok(c: dict) -> bool:
        if c.get("max_magnitude") is None:  # integer: exact
            return bool(c.get("exact"))
        return c["max_abs_diff"] is not None and c["max_abs_diff"] <= FLOAT_TOLERANCE * c["max_magnitude"]

    measured_patch = max(s["measured_bytes"] for s in sigs)
    resident = plan.input_bytes if plan.input_mode == RESIDENT else 0
    measured_peak = max(measured_patch + plan.cut_bytes + resident, tail)
    res = resident_arenas(out_dir)
    deployed = int(res["resident_bytes"]) + plan.cut_bytes + resident
    return {
        "deployed_bytes": deployed,
        "deployed_note": (f"LiteRT as written (patch.tflite with its {len(sigs)} signatures + "
                          "tail.tflite, all allocated at once): "
                          f"{int(res['resident_bytes']):,d} B of arenas"
                          + ("" if res["disjoint"] else " (some overlap)")
                          + f" + cut {plan.cut_bytes:,d} B + input {resident:,d} B"),
        "resident_arenas": res["arenas"],
        "arenas_disjoint": bool(res["disjoint"]),
        "signatures": sigs,
        "tail": {"predicted_bytes": plan.tail_arena_bytes, "measured_bytes": tail,
                 "equal": tail == plan.tail_arena_bytes},
        "arenas_equal": all(s["equal"] for s in sigs) and tail == plan.tail_arena_bytes,
        "measured_peak_bytes": measured_peak,
        "untiled_measured_bytes": untiled,
        "untiled_equal": untiled == plan.untiled_peak_bytes,
        "measured_reduction": round(untiled / measured_peak, 4) if measured_peak else None,
        "stitching": st,
        "cut_equal": all(ok(c) for c in st["cut"].values()) and st["every_element_once"],
        "outputs_equal": all(ok(c) for c in st["outputs"].values()) and not st["missing_outputs"],
    }


def tile_report(model_path: str, *, grid=None, split=None, input_mode: str = RESIDENT,
                out_dir: str | None = None, measure: bool = True, subgraph: int = 0,
                request: str | None = None, progress=None, stage=None) -> dict[str, Any]:
    """Everything ``tile --json`` prints.

    ``request`` is the flag as the user typed it, named by the errors (see :func:`choose`).
    ``progress(done, total)`` follows the search over (grid, split) pairs; ``stage(text)`` is
    called before each later stage that takes time (writing the models, measuring them).

    Raises
    ------
    viewer.errors.ViewerError
        Bad model, bad grid/split, or the runtime failed on the written models.
    """
    if input_mode not in (RESIDENT, STREAMED):
        raise UsageError(f"--input {input_mode}: expected resident or streamed")
    tiler = make_tiler(model_path, subgraph)
    plan, res = choose(tiler, grid, split, input_mode, request=request, progress=progress)
    out: dict[str, Any] = {"model": str(model_path), "subgraph": subgraph}
    if plan is None:
        out.update({"grid": None, "split_operator": None, "cut_tensors": [], "peak_bytes": None,
                    "untiled_peak_bytes": res.untiled_peak_bytes, "reduction": None, "overhead_pct": None,
                    "patch_stage": None, "tail_stage": None})
    else:
        out.update(plan_json(plan))
    out.update(search_json(res))
    out["verdict"] = verdict(res)
    other = STREAMED if input_mode == RESIDENT else RESIDENT
    if plan is not None:
        alt = tiler.evaluate(plan.grid, plan.split, other)
        out[f"{other}_peak_bytes"] = alt.peak_bytes
        out[f"{other}_reduction"] = round(alt.reduction, 4)
    out["measured"] = False
    out["notes"] = [
        "kernel temporaries are included (estimated per operator from shapes; equal to LiteRT's "
        "measurement on the shared models)",
        "patch stage = largest patch graph's arena + full cut buffers"
        + (" + the graph input kept resident" if input_mode == RESIDENT else " (graph input streamed per patch)"),
    ]
    if out_dir is not None and plan is not None:
        from viewer.whatif.tiling.write import write_tiling

        if stage is not None:
            stage(f"writing the {plan.grid[0]}x{plan.grid[1]} patch and tail models to {out_dir}")
        out["written"] = write_tiling(model_path, plan, tiler, out_dir)
        out["output_dir"] = str(out_dir)
        if measure:
            if stage is not None:
                stage("measuring the written models with LiteRT")
            try:
                out["verification"] = verify(model_path, plan, out_dir)
            except ViewerError as e:
                out["notes"].append(f"not measured: {e}")
            else:
                out["measured"] = True
    return out


__all__ = ["tile_report", "parse_grid", "parse_tile", "choose", "make_tiler", "verdict", "NotLocal"]
