"""Compare export: baseline and edit side by side on one y scale, with a one-line delta."""

from __future__ import annotations

import dataclasses

import pytest

from tests.export.test_chart_data import plan_of, synthetic_analysis, synthetic_subgraph
from tests.export.test_image import png_size
from viewer.analysis.intervals import analyze
from viewer.analysis.types import Temporary
from viewer.errors import UsageError
from viewer.export.chart_data import build_chart_data, compare_text
from viewer.export.image import build_compare_widget, export_compare


def doubled_analysis():
    """The synthetic subgraph with the activation "a" (tensor 1) stored at twice the bytes."""
    sg = synthetic_subgraph()
    tensors = list(sg.tensors)
    tensors[1] = dataclasses.replace(tensors[1], nbytes=tensors[1].nbytes * 2)
    return analyze(dataclasses.replace(sg, tensors=tuple(tensors)),
                   temporaries=(Temporary(7, 0, 512, "im2col"),))


def test_compare_text_gives_arena_and_bound_deltas_and_the_widest_operator():
    a, b = synthetic_analysis(), doubled_analysis()
    left = build_chart_data(a, plan_of(a, "greedy_by_size"), model_name="base")
    right = build_chart_data(b, plan_of(b, "greedy_by_size"), model_name="edit")
    text = compare_text(left, right)
    # "a" is live at the widest operator, so the lower bound grows by exactly its 2048 extra bytes.
    assert b.lower_bound_bytes - a.lower_bound_bytes == 2048
    assert f"lower bound {left.lower_bound / 1024:.1f} KiB → {right.lower_bound / 1024:.1f} KiB (+2.0 KiB" in text
    assert text.startswith(f"arena {left.arena_bytes / 1024:.1f} KiB → {right.arena_bytes / 1024:.1f} KiB")
    assert f"widest operator #{a.widest_op} {a.op_name(a.widest_op)} in both" in text
    assert "in both" in compare_text(left, left) and "(±0 B)" in compare_text(left, left)
    moved = dataclasses.replace(right, widest_op=3, widest_op_name="FULLY_CONNECTED")
    assert f"widest operator moved: #{a.widest_op} " in compare_text(left, moved)


def test_compare_pair_shares_one_y_scale_and_titles_each_side(qapp, tmp_path):
    a, b = synthetic_analysis(), doubled_analysis()
    left = build_chart_data(a, plan_of(a, "greedy_by_size"), model_name="baseline: s.tflite")
    right = build_chart_data(b, plan_of(b, "greedy_by_size"), model_name="what-if: a x2")
    assert right.arena_bytes > left.arena_bytes
    widget, (lp, rp), delta = build_compare_widget(left, right, 1400, 700)
    try:
        tops = [p.packing.getViewBox().viewRange()[1][1] * p.y_scale for p in (lp, rp)]
        assert tops[0] == pytest.approx(tops[1]) and tops[0] >= right.arena_bytes
        btops = [p.breadth.getViewBox().viewRange()[1][1] * p.breadth_scale for p in (lp, rp)]
        assert btops[0] == pytest.approx(btops[1])
        assert lp.title.text().startswith("baseline: s.tflite — subgraph 0 — greedy_by_size: arena")
        assert rp.title.text().startswith("what-if: a x2")
        assert "lower bound" in lp.title.text() and delta == compare_text(left, right)
    finally:
        widget.close()
    out = export_compare((a, plan_of(a, "greedy_by_size"), "baseline"),
                         (b, plan_of(b, "greedy_by_size"), "what-if"), tmp_path / "pair.png",
                         width=1300, height=650)
    assert png_size(out) == (1300, 650)
    svg = export_compare(left, right, tmp_path / "pair.svg", width=1300, height=650)
    text = svg.read_text()
    assert "baseline: s.tflite" in text and "what-if: a x2" in text and "→" in text


def test_compare_bad_side_or_path_is_a_usage_error(tmp_path):
    a = synthetic_analysis()
    with pytest.raises(UsageError, match="unknown image type"):
        export_compare((a, plan_of(a), "l"), (a, plan_of(a), "r"), tmp_path / "x.gif")
    with pytest.raises(UsageError, match="compare side"):
        export_compare((a, plan_of(a)), (a, plan_of(a), "r"), tmp_path / "x.png")


@pytest.mark.shared
def test_cli_export_compare_draws_baseline_and_whatif(tmp_path, capsys, qapp):
    from tests.conftest import shared_model
    from viewer.cli import main
    from viewer.planning.run import run_planners
    from viewer.whatif.edits import WhatIfEdits
    from viewer.whatif.pipeline import prepare

    model = shared_model("mobilenet_v2_224.tflite")
    out = tmp_path / "cmp.png"
    rc = main(["export", str(model), "-o", str(out), "--compare", "--activation-dtype", "float16",
               "--planner", "greedy_by_size", "--width", "1500", "--height", "700"])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert png_size(out) == (1500, 700)
    base = prepare(str(model), 0)
    edit = prepare(base.model, 0, WhatIfEdits(activation_dtype="float16"))
    b = run_planners(base.analysis.problem(), ["greedy_by_size"])["greedy_by_size"].arena_bytes
    e = run_planners(edit.analysis.problem(), ["greedy_by_size"])["greedy_by_size"].arena_bytes
    assert e < b
    assert f"arena {b / 2**20:.1f} MiB -> {e / 2**20:.1f} MiB" in stdout
    # Without an edit there is nothing to compare: one line, exit 2.
    rc = main(["export", str(model), "-o", str(tmp_path / "x.png"), "--compare"])
    stdout, err = capsys.readouterr()
    assert rc == 2 and "--compare needs what-if edits" in err and len(err.strip().splitlines()) == 1
