"""What the side panel's sections say, as text (no widgets): the lower bound, the measured
arena, the smallest plan, the reordered operators, the selected tensor, and the budget.

:class:`viewer.ui.side_panel.SidePanel` lays these out. All figures are bytes, formatted with
:func:`viewer.units.format_bytes`; operator indices are 0-based execution order.
"""

from __future__ import annotations

from viewer.export.report import gap_bound, gap_pct, temporaries_raise_text
from viewer.ui.workers import AnalysisResponse, plan_label
from viewer.units import format_bytes


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _b(n: int) -> str:
    """"8.3 MiB (8,727,840 B)"; below 1 KiB the figure once ("68 B", never "68 B (68 B)")."""
    return f"{format_bytes(n)} ({n:,} B)" if abs(n) >= 1024 else format_bytes(n)


#: Moved operators listed in the reorder section before "... N more".
MAX_MOVED_LISTED = 20


def _widest(a) -> str:
    return f"widest operator #{a.widest_op} {a.op_name(a.widest_op)}" if a.widest_op >= 0 else ""


def temporaries_sum_text(count: int, total: int, largest: int, op: int, op_name: str) -> str:
    """"kernel temporaries: 17 tensors, 361.1 MiB in all, largest 108.0 MiB at #43 CONV_2D"
    (bytes in): the sum ``plan --measure`` prints, worded the same in the window."""
    return (f"kernel temporaries: {count} tensor{'s' if count != 1 else ''}, "
            f"{format_bytes(total)} in all, largest {format_bytes(largest)} at #{op} {op_name}")


def lower_bound_text(resp: AnalysisResponse) -> str:
    """The lower-bound summary: tensors only, and with kernel temporaries when measured.

    With both: "lower bound (tensors only)", "lower bound with kernel temporaries", the
    temporaries' sum as the CLI's ``plan --measure`` counts it ("kernel temporaries: N tensors,
    S in all, largest Y at #op OP") and how much they raise the lower bound (less than the sum,
    and possibly less than the largest: they reuse bytes the tensors free).
    """
    a = resp.analysis
    if not resp.has_temporaries or resp.tensor_view is None:
        w = _widest(a)
        return _b(a.lower_bound_bytes) + (f"\n{w}" if w else "")
    at, aw = resp.tensor_view[0], resp.temporaries_view[0]
    temps = [u for u in aw.usages if u.tensor in aw.temporaries_ops]
    largest = max(temps, key=lambda u: (u.nbytes, -u.tensor))
    add = aw.lower_bound_bytes - at.lower_bound_bytes
    mark = ("", " (shown)") if resp.temporaries_shown else (" (shown)", "")
    lines = [
        f"lower bound (tensors only): {format_bytes(at.lower_bound_bytes)}{mark[0]}",
        f"   {at.lower_bound_bytes:,} B, {_widest(at)}",
        f"lower bound with kernel temporaries: {format_bytes(aw.lower_bound_bytes)}{mark[1]}",
        f"   {aw.lower_bound_bytes:,} B, {_widest(aw)}",
        temporaries_sum_text(len(temps), sum(u.nbytes for u in temps), largest.nbytes,
                             largest.first_op, aw.op_name(largest.first_op)),
        f"   {temporaries_raise_text(add)}",
    ]
    probe = resp.probe
    if probe is not None and getattr(probe, "ok", False) and probe.arena_bytes:
        lines.append(f"the runtime's measured arena: {_b(int(probe.arena_bytes))}")
    return "\n".join(lines)



def budget_report(settings, resp: AnalysisResponse, name: str, tiled: tuple[int, str] | None = None):
    """``settings.report(...)`` for plan ``name`` of ``resp``: the one budget figure the
    Summary and the what-if panel's verdict both show (None without a limit).

    The batch is the edited batch, else the first input's leading dimension. ``tiled``
    (bytes, label), while the tiled execution is shown, is the arena counted instead, as
    ``check --tile`` counts it (:meth:`viewer.ui.tiling_panel.TilingController.counted_arena`).
    """
    a, edits = resp.analysis, resp.request.edits
    fp = getattr(resp, "footprint", None)
    batch = 1
    if edits is not None and edits.batch:
        batch = edits.batch
    elif fp is None and a.subgraph.inputs and a.subgraph.tensors[a.subgraph.inputs[0]].shape:
        batch = max(1, a.subgraph.tensors[a.subgraph.inputs[0]].shape[0])
    if fp is not None and settings.limit_bytes is not None and hasattr(fp, "tensor_arena_size_bytes"):
        return _tflm_budget_report(settings, resp, fp, batch)
    if fp is not None and settings.limit_bytes is not None:
        # The footprint check counts (viewer.whatif.footprint): the runtime's arena with its
        # kernel temporaries (estimated under a storage what-if), whatever plan is drawn.
        import dataclasses

        from viewer.whatif.budget import budget_report as report

        from viewer.document.budget_check import window_overhead

        arena, label = tiled or (fp.arena_bytes, f"tensor arena ({fp.arena_term.source}: {fp.arena_term.method})")
        binding = a.widest_op if tiled is None else -1  # tiled: check --tile names none
        overhead, _ = window_overhead(resp, settings)  # check's term (measured, given or unknown)
        rep = report(settings.limit_bytes, arena_bytes=arena,
                     weights_bytes=resp.model.weights_bytes, runtime_bytes=overhead.bytes,
                     batch=batch, weights_mode=settings.weights_mode, binding_op=binding,
                     binding_op_name=a.op_name(binding) if binding >= 0 else "",
                     persistent_bytes=fp.persistent_bytes,
                     other_subgraphs_bytes=fp.other_subgraphs_bytes,
                     arena_label=label)
        rep = dataclasses.replace(rep, runtime_label=(
            f"{overhead.source}" + (f" ±{overhead.margin:,d} B" if overhead.margin else "")
            + f": {overhead.method}"))
        if fp.unknowns and rep.fits:
            rep = dataclasses.replace(rep, fits=False, message="cannot tell: " + fp.unknowns[0])
        return _check_largest_batch(rep, getattr(resp, "batch_growth", None), batch)
    binding = a.widest_op if tiled is None else -1
    return settings.report(
        arena_bytes=tiled[0] if tiled else resp.plans[name].arena_bytes, weights_bytes=resp.model.weights_bytes,
        batch=batch, binding_op=binding, binding_op_name=a.op_name(binding) if binding >= 0 else "")


def budget_verdict(settings, resp: AnalysisResponse, name: str, tiled: tuple[int, str] | None = None,
                   tile_grid: str | None = None) -> tuple[str, bool | None, dict | None]:
    """The budget's one-line verdict the What-if panel and the Summary both show, its colour
    (True green, False red, None: nothing to show), and ``check --json``'s budget keys it was
    read from (:func:`viewer.document.budget_check.window_check`; None under TFLite Micro or
    without a footprint, where :func:`budget_report` alone answers).

    ``fits`` carries check's qualifiers ("fits (estimated: …)", "fits at batch 1 (dynamic
    batch)"); "cannot tell: " names check's first unknown; "over budget by" names the binding
    (widest) operator, except in the tiled execution, where check names none (every stage's
    arena is resident: no one operator binds) and gives the untiled lower bound instead.
    """
    from viewer.document.budget_check import window_check
    from viewer.whatif.verdict import VERDICT_CANNOT_TELL, VERDICT_FITS

    rep = budget_report(settings, resp, name, tiled)
    if rep is None:
        return "", None, None
    chk = window_check(resp, settings, tiled, tile_grid)
    binding = (f" (binding operator #{rep.binding_op} {rep.binding_op_name})"
               if rep.binding_op >= 0 and tiled is None else "")
    if chk is None:  # TFLM, or no footprint: the report's own words
        if rep.fits and not settings.runtime_bytes and getattr(resp.request, "runtime", "litert") != "tflm":
            from viewer.document.budget_check import NOT_MEASURED  # 0 B is not check's term

            return "cannot tell: " + NOT_MEASURED, False, None
        if rep.fits:
            return f"fits, headroom {format_bytes(rep.headroom_bytes)}", True, None
        if rep.message.startswith("cannot tell"):
            return rep.message, False, None
        return f"over budget by {format_bytes(-rep.headroom_bytes)}{binding}", False, None
    head = chk["headroom_bytes"]
    if chk["verdict"] == VERDICT_FITS:
        return f"{chk['verdict_text']}, headroom {format_bytes(head)}", True, chk
    if chk["verdict"] == VERDICT_CANNOT_TELL:
        return "cannot tell: " + chk["unknowns"][0], False, chk
    est = " (estimated)" if chk["estimated"] else ""
    return f"over budget by {format_bytes(-head)}{est}{binding}", False, chk


def untiled_bound_line(resp: AnalysisResponse) -> str:
    """``check --tile``'s last line: the untiled model's lower bound (its widest operator's
    breadth), which no longer binds the tiled execution."""
    fp = getattr(resp, "footprint", None)
    a = fp.analysis if fp is not None else resp.analysis
    inc = fp.temporaries_included if fp is not None else bool(a.temporaries_ops)
    what = "kernel temporaries included" if inc else "model tensors only"
    return (f"untiled lower bound (widest operator's breadth, {what}): "
            f"{a.lower_bound_bytes:,d} B ({format_bytes(a.lower_bound_bytes)})")


def _check_largest_batch(rep, growth, batch: int):
    """``rep`` with ``check``'s largest batch (the runtime's answer at the next batch, never a
    linear guess over a batch the model refuses) instead of the arena-per-example estimate."""
    import dataclasses

    from viewer.whatif.verdict import largest_batch_answer

    if growth is None:
        return dataclasses.replace(rep, largest_batch=None,
                                   largest_batch_note="not evaluated (no footprint at the next batch)")
    best, growth = largest_batch_answer(rep.limit_bytes, rep.used_bytes, batch, growth)
    return dataclasses.replace(rep, largest_batch=best, largest_batch_note=growth.reason)


def _tflm_budget_report(settings, resp: AnalysisResponse, fp, batch: int):
    """The budget under TFLite Micro: the ``tensor_arena_size`` ``check --runtime tflm`` prints
    (head + tail + margins, measured by TFLM's recording allocator), never the head alone; without
    a measured tail, "cannot tell" (never fits)."""
    import dataclasses

    from viewer.whatif.budget import budget_report as report

    a = resp.analysis
    size = fp.tensor_arena_size_bytes
    arena = size if size is not None else fp.head_bytes
    label = ("tensor_arena_size (TFLM head + tail + margins, measured)" if size is not None
             else "TFLM head only (scratch and persistent tail not measured)")
    rep = report(settings.limit_bytes, arena_bytes=arena, weights_bytes=resp.model.weights_bytes,
                 runtime_bytes=settings.runtime_bytes, batch=batch, weights_mode=settings.weights_mode,
                 binding_op=a.widest_op, binding_op_name=a.op_name(a.widest_op) if a.widest_op >= 0 else "",
                 arena_label=label)
    if size is None and rep.fits:
        rep = dataclasses.replace(rep, fits=False, message="cannot tell: TFLM's scratch and "
                                  "persistent tail are not measured (the head alone is shown)")
    return rep


def _alignment(resp: AnalysisResponse) -> int:
    """Offset alignment of the measured plan (the runtime's), else 64 bytes."""
    from viewer.planning.types import DEFAULT_ALIGNMENT
    from viewer.ui.workers import MEASURED

    p = resp.plans.get(MEASURED)
    return int(p.alignment) if p is not None and p.alignment else DEFAULT_ALIGNMENT


def best_text(resp: AnalysisResponse, bounds: dict | None = None) -> str:
    """"Smallest: <b>PLANNER</b>, X (+g % over the [N-byte-aligned] lower bound)" (HTML)."""
    best = resp.plans[resp.best]
    lb = resp.analysis.lower_bound_bytes
    bound = gap_bound(resp.analysis, best.alignment, bounds)
    over = f"{best.alignment}-byte-aligned bound {format_bytes(bound)}" if bound > lb else "lower bound"
    return (f"Smallest: <b>{plan_label(resp.best)}</b>, {format_bytes(best.arena_bytes)} "
            f"({gap_pct(best.arena_bytes, bound):+.1f} % over the {over})")


def measured_text(resp: AnalysisResponse) -> str:
    """The Measured box: the runtime's arena, its gap to the bound every view measures against
    (:func:`viewer.export.report.gap_text`), and whether the chart includes its kernel
    temporaries; or why it was not measured."""
    from viewer.export.report import gap_text

    probe = resp.probe
    if probe is None or not getattr(probe, "ok", False):
        return resp.measure_note or "not measured"
    arena = int(getattr(probe, "arena_bytes", 0) or 0)
    n_tmp = len(getattr(probe, "arena_temporaries", ()) or ())
    a = resp.analysis
    align = _alignment(resp)
    which = "with kernel temporaries" if resp.temporaries_shown else "tensors only"
    shown = "included in" if resp.temporaries_shown else "left out of"
    gap = gap_text(arena, a.lower_bound_bytes, gap_bound(a, align), align)
    text = (f"measured arena {_b(arena)}, {gap} ({which}); {n_tmp} kernel "
            f"{'temporary' if n_tmp == 1 else 'temporaries'} measured, {shown} the chart")
    if resp.measure_note:
        text += f"\n{resp.measure_note}"
    return text


def reorder_lines(resp: AnalysisResponse) -> list[str]:
    """The Reordered operators section (HTML lines): the lower bound before and after, and the
    operators that moved (original index -> new position); [] without a reorder."""
    res = resp.reorder
    if res is None:
        return []
    a = resp.analysis
    pct = 100.0 * res.saving_bytes / res.lower_bound_before if res.lower_bound_before else 0.0
    proof = "proven smallest" if res.exact else "best found in the time limit"
    lines = [f"lower bound {format_bytes(res.lower_bound_before)} -> "
             f"{format_bytes(res.lower_bound_after)}: saves {format_bytes(res.saving_bytes)} "
             f"({pct:.1f} %), {proof}"]
    if not res.changed:
        lines.append("no operator order lowers the lower bound; the original order is kept")
        return lines
    pos = {o: k for k, o in enumerate(res.order)}
    lines.append(f"{len(res.moved_ops)} operator(s) moved (original index -> new position):")
    for o in res.moved_ops[:MAX_MOVED_LISTED]:
        lines.append(f"#{o} {_html(a.op_name(pos[o]))} -> {pos[o]}")
    if len(res.moved_ops) > MAX_MOVED_LISTED:
        lines.append(f"... {len(res.moved_ops) - MAX_MOVED_LISTED} more")
    return lines


def tensor_details(resp: AnalysisResponse, tensor: int, planner: str | None) -> str:
    """The Selected tensor section (HTML): shape, dtype, bytes, usage interval (inclusive
    operator indices), producer, consumers and its offset in ``planner``'s plan."""
    a = resp.analysis
    u = a.usage(tensor)
    sg = a.subgraph
    lines = [f"<b>{_html(a.tensor_name(tensor))}</b> (tensor {tensor})"]
    if tensor < len(sg.tensors):
        t = sg.tensors[tensor]
        shape = "x".join(str(d) for d in t.shape) or "scalar"
        lines.append(f"{t.dtype} [{shape}]" + (f"; flags: {', '.join(sorted(t.flags))}" if t.flags else ""))
    if u is None:
        lines.append(f"not in the arena: {a.outside.get(tensor, 'not in the arena')}")
        return "<br>".join(lines)
    lines.append(f"{u.kind}, {_b(u.nbytes)}")
    lines.append(f"live at operators {u.first_op}..{u.last_op} inclusive ({u.held_ops} ops)")
    lines.append(f"producer: {'-' if u.producer is None else f'#{u.producer} {a.op_name(u.producer)}'}")
    if u.consumers:
        cons = ", ".join(f"#{c} {a.op_name(c)}" for c in u.consumers[:6])
        more = f" and {len(u.consumers) - 6} more" if len(u.consumers) > 6 else ""
        lines.append(f"consumers: {cons}{more}")
    if u.alias_of is not None:
        lines.append(f"in-place: shares the bytes of tensor {u.alias_of}")
    if tensor in a.temporaries_ops:
        lines.append(f"kernel temporary of {a.temporaries_ops[tensor]}")
    plan = resp.plans.get(planner) if planner else None
    if plan is not None:
        off = a.resolve_alias_offsets(plan.offsets).get(tensor)
        if off is not None:
            lines.append(f"offset in {plan_label(planner)}: {off:,} .. {off + u.nbytes:,}")
    return "<br>".join(lines)
