"""chart_data: one row per planned tensor, drawn where the plan (and the runtime) put it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import shared_model
from viewer.analysis.intervals import analyze
from viewer.analysis.types import KIND_ALIAS, Temporary, TensorUsage
from viewer.errors import PlanningError, UsageError
from viewer.export.chart_data import KIND_COLORS, KINDS, NO_PRODUCER_COLOR, build_chart_data, op_color
from viewer.model.types import Operator, Subgraph, Tensor
from viewer.planning.registry import get_planner
from viewer.planning.types import Plan


def synthetic_subgraph() -> Subgraph:
    """in(1024) -CONV-> a(2048) -DW-> b(2048); ADD(a, b) -> c(2048); FC(c) -> out(40).

    ``a`` is a skip connection held over operators 0..2; weights are constants; LiteRT runs the
    ADD in place, so ``c`` shares the bytes of ``b``.
    """
    sizes = {0: 1024, 1: 2048, 2: 2048, 3: 2048, 4: 40, 5: 64, 6: 64}
    names = ["in", "a", "b", "c", "out", "w_conv", "w_fc"]
    shapes = [(1, 8, 8, 4), (1, 8, 8, 8), (1, 8, 8, 8), (1, 8, 8, 8), (1, 10), (16,), (16,)]
    tensors = tuple(
        Tensor(i, names[i], shapes[i], shapes[i], "float32", sizes[i],
               buffer=i if i >= 5 else 0, is_constant=i >= 5)
        for i in range(7)
    )
    ops = (
        Operator(0, "CONV_2D", 3, None, 1, (0, 5), (1,)),
        Operator(1, "DEPTHWISE_CONV_2D", 4, None, 1, (1,), (2,)),
        Operator(2, "ADD", 0, None, 1, (1, 2), (3,)),
        Operator(3, "FULLY_CONNECTED", 9, None, 1, (3, 6), (4,)),
    )
    return Subgraph(0, "main", tensors, ops, (0,), (4,))


def synthetic_analysis():
    """The synthetic subgraph with a 512-byte kernel temporary (id 7) at the CONV_2D."""
    return analyze(synthetic_subgraph(), temporaries=(Temporary(7, 0, 512, "im2col"),))


def plan_of(analysis, name="naive"):
    return get_planner(name).func(analysis.problem())


def test_one_row_per_planned_tensor_spanning_its_inclusive_interval():
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    d = build_chart_data(a, plan, model_name="synthetic.tflite")
    assert len(d) == len(a.usages) == 6  # in, a, b, c (in-place), out, temporary
    for u in a.usages:
        row = d.row_of(u.tensor)
        assert row is not None
        assert (d.x0[row], d.x1[row]) == (u.first_op, u.last_op + 1)
        assert d.y0[row] == plan.offsets[u.alias_of if u.alias_of is not None else u.tensor]
        assert d.y1[row] - d.y0[row] == u.nbytes
        assert KINDS[d.kind[row]] == u.kind
    # The skip connection "a" spans operators 0..2 inclusive: x from 0 to 3.
    row = d.row_of(1)
    assert (d.x0[row], d.x1[row]) == (0, 3)
    assert d.held_ops[row] == 3


def test_kernel_temporary_has_its_own_kind_colour_and_producer():
    a = synthetic_analysis()
    d = build_chart_data(a, plan_of(a))
    row = d.row_of(7)
    assert KINDS[d.kind[row]] == "temporary"
    assert d.palette[d.color[row]] == KIND_COLORS["temporary"]
    assert d.producer_op[row] == "CONV_2D"
    assert ("kernel temporary", KINDS.index("temporary")) in d.legend


def test_figures_and_title():
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    d = build_chart_data(a, plan, model_name="synthetic.tflite", subgraph=0)
    # Breadth: op0 in+a+tmp, op1 in+a+b, op2 in+a+b(=c), op3 in+b(=c)+out.
    assert d.breadth.tolist() == [1024 + 2048 + 512, 1024 + 4096, 1024 + 4096, 1024 + 2048 + 40]
    assert d.lower_bound == 5120 and d.widest_op == 1 and d.widest_op_name == "DEPTHWISE_CONV_2D"
    assert d.arena_bytes == plan.arena_bytes
    assert d.title == (
        f"synthetic.tflite — subgraph 0 — greedy_by_size: arena "
        f"{plan.arena_bytes / 1024:.1f} KiB, lower bound 5.0 KiB"
    )


def test_in_place_alias_is_drawn_at_its_roots_offset_on_top():
    a = synthetic_analysis()
    # A hand-made second alias: tensor 8 shares the bytes of "a" (1) at operator 2.
    alias = TensorUsage(8, 2, 2, 2048, KIND_ALIAS, producer=2, consumers=(), alias_of=1)
    a = dataclasses.replace(a, usages=a.usages + (alias,))
    plan = plan_of(a, "greedy_by_size")
    assert 3 not in plan.offsets and 8 not in plan.offsets
    d = build_chart_data(a, plan)
    assert [int(t) for t in d.tensor[-2:]] == [3, 8]  # aliases last: drawn on top
    assert d.y0[d.row_of(3)] == plan.offsets[2]
    assert d.y0[d.row_of(8)] == plan.offsets[1]
    assert KINDS[d.kind[d.row_of(8)]] == KIND_ALIAS


def test_colour_by_op_is_stable_across_analyses():
    a = synthetic_analysis()
    d = build_chart_data(a, plan_of(a), color_by="op")
    conv = d.palette[d.color[d.row_of(1)]]
    assert conv == op_color("CONV_2D")
    assert d.palette[d.color[d.row_of(0)]] == NO_PRODUCER_COLOR  # graph input: no producer
    labels = [label for label, _ in d.legend]
    assert labels[:1] == ["CONV_2D"] or "CONV_2D" in labels
    assert "ADD" in labels and "FULLY_CONNECTED" in labels
    # Another graph: the same op type keeps its colour.
    sg = synthetic_subgraph()
    ops = (sg.operators[2].__class__(0, "CONV_2D", 3, None, 1, (0, 5), (1,)),) + sg.operators[1:]
    b = analyze(dataclasses.replace(sg, operators=ops))
    d2 = build_chart_data(b, plan_of(b), color_by="op")
    assert d2.palette[d2.color[d2.row_of(1)]] == conv


def test_bad_colour_mode_and_foreign_plan():
    a = synthetic_analysis()
    with pytest.raises(UsageError, match="colour mode"):
        build_chart_data(a, plan_of(a), color_by="rainbow")
    with pytest.raises(PlanningError, match="no offset for tensors"):
        build_chart_data(a, Plan("other", {0: 0}, 1024))


def test_empty_subgraph():
    sg = Subgraph(0, "empty", (), (), (), ())
    a = analyze(sg)
    d = build_chart_data(a, Plan("naive", {}, 0))
    assert len(d) == 0 and d.widest_op == -1 and d.lower_bound == 0


@pytest.mark.shared
def test_litert_plan_is_drawn_where_the_runtime_put_each_tensor():
    """Oracle: LiteRT's own allocation, read from the runtime (viewer.runtime.probe). Every
    rectangle of mobilenet_v2_224 (kernel temporaries and in-place aliases included) is drawn
    at the offset where the runtime put that tensor."""
    from viewer.model.reader import load_model
    from viewer.runtime.probe import probe_analysis, probe_model

    path = shared_model("mobilenet_v2_224.tflite")
    probe = probe_model(path, check=True)
    a = probe_analysis(load_model(path), probe)
    d = build_chart_data(a, get_planner("litert").func(a.problem()))
    drawn = d.offsets()
    assert set(drawn) == set(probe.offsets)
    assert drawn == dict(probe.offsets)
    assert any(KINDS[k] == "temporary" for k in d.kind) and any(KINDS[k] == KIND_ALIAS for k in d.kind)
    assert np.array_equal(np.sort(d.tensor), np.sort([u.tensor for u in a.usages]))


def test_colour_by_op_gives_clashing_op_types_different_colours():
    from viewer.export.chart_data import op_slot

    names = [f"CUSTOM_{i}" for i in range(100)]
    x = names[0]
    y = next(n for n in names[1:] if op_slot(n) == op_slot(x))  # same preferred colour
    sg = synthetic_subgraph()
    ops = (dataclasses.replace(sg.operators[0], op_name=x),
           dataclasses.replace(sg.operators[1], op_name=y)) + sg.operators[2:]
    a = analyze(dataclasses.replace(sg, operators=ops))
    d = build_chart_data(a, plan_of(a), color_by="op")
    colours = {label: d.palette[i] for label, i in d.legend}
    assert colours[x] != colours[y]
    assert len(set(colours.values())) == len(colours)
    assert colours[min(x, y)] == op_color(min(x, y))  # the first by name keeps its own


def _covered(edges, values, n):
    """Per operator column [j, j + 1): the lowest and highest curve height drawn in it."""
    lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
    for a, b, v in zip(edges[:-1], edges[1:], values):
        if b <= a:
            continue
        j0, j1 = int(np.floor(a)), int(np.ceil(b))
        lo[j0:j1] = np.minimum(lo[j0:j1], v)
        hi[j0:j1] = np.maximum(hi[j0:j1], v)
    return lo, hi


def test_breadth_steps_are_every_operator_up_to_the_limit():
    from viewer.export.chart_data import breadth_steps

    b = np.array([5, 1, 9, 9, 0], dtype=np.int64)
    edges, values = breadth_steps(b, 5)
    assert edges.tolist() == [0, 1, 2, 3, 4, 5] and values.tolist() == [5, 1, 9, 9, 0]
    assert breadth_steps(b, None)[1].tolist() == [5, 1, 9, 9, 0]


def test_breadth_steps_of_a_long_curve_keep_every_runs_peak_and_trough_in_order():
    from viewer.export.chart_data import breadth_steps

    rng = np.random.default_rng(7)
    b = rng.integers(0, 10**9, size=100_003)
    b[41_234] = 5 * 10**9  # one spike must survive
    edges, values = breadth_steps(b, 6400)
    assert len(values) <= 6400 and len(edges) == len(values) + 1
    assert edges[0] == 0 and edges[-1] == len(b) and np.all(np.diff(edges) >= 0)
    assert values.max() == b.max() and values.min() == b.min()
    k = -(-len(b) // 3200)
    for r in range(0, len(b), k):  # each run: its extremes, the first one first
        run = b[r:r + k]
        two = values[2 * (r // k):2 * (r // k) + 2]
        first, second = (run.max(), run.min()) if run.argmax() <= run.argmin() else (run.min(), run.max())
        assert two.tolist() == [first, second]
    # Never drawn above or below what the operators in the same run reach.
    lo, hi = _covered(edges, values, len(b))
    run_hi = np.maximum.reduceat(b, np.arange(0, len(b), k))
    assert np.all(hi <= np.repeat(run_hi, k)[:len(b)])
