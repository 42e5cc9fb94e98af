"""Budget arithmetic: the worked example from the brief, exactly, and the searches."""

from __future__ import annotations

import pytest

from conftest import shared_model
from viewer.whatif.budget import budget_report, fixed_bytes, largest_batch, largest_square_resolution


def test_worked_example_batch_2():
    # 10 float32 parameters (40 B), 8 B of activations per example, 12 B runtime, 100 B limit.
    r = budget_report(100, arena_bytes=2 * 8, weights_bytes=10 * 4, runtime_bytes=12, batch=2)
    assert r.used_bytes == 68
    assert r.headroom_bytes == 32
    assert r.fits
    assert r.arena_per_example_bytes == 8
    assert r.largest_batch == 6  # floor((100 - 40 - 12) / 8)


def test_largest_batch_formula_and_boundaries():
    assert largest_batch(100, 40, 12, 8) == 6
    assert largest_batch(100, 40, 12, 8, weights_mode="mapped") == 11  # floor(88 / 8)
    assert largest_batch(52, 40, 12, 8) == 0  # nothing left for activations
    assert largest_batch(100, 40, 12, 0) == 0


def test_fixed_costs_over_the_limit():
    r = budget_report(50, arena_bytes=8, weights_bytes=40, runtime_bytes=12)
    assert r.largest_batch == 0
    assert not r.fits and r.headroom_bytes == 50 - 60
    assert "fixed costs alone" in r.message and "no batch fits" in r.message


def test_mapped_weights_are_shown_not_counted():
    r = budget_report(100, arena_bytes=16, weights_bytes=40, runtime_bytes=12, batch=2, weights_mode="mapped")
    assert r.used_bytes == 28 and r.headroom_bytes == 72 and not r.weights_counted
    assert any("mapped" in line and "40 B" in line for line in r.lines())
    with pytest.raises(ValueError):
        fixed_bytes(1, 1, "borrowed")


def test_over_budget_lines_say_by_how_much():
    r = budget_report(60, arena_bytes=16, weights_bytes=40, runtime_bytes=12, batch=2,
                      binding_op=3, binding_op_name="CONV_2D")
    assert not r.fits
    lines = "\n".join(r.lines())
    assert "over budget by 8 B" in lines and "binding (widest) operator: 3 CONV_2D" in lines


def test_square_resolution_search_hand_worked():
    # arena = side^2 bytes; 1000 bytes available -> 31 (961) among all sides.
    assert largest_square_resolution(lambda s: s * s, 1000, range(1, 100)) == (31, 961)
    # The model takes only multiples of 4: 28 (784).
    took = largest_square_resolution(lambda s: s * s if s % 4 == 0 else None, 1000, range(1, 100))
    assert took == (28, 784)
    assert largest_square_resolution(lambda s: s * s, 0, range(1, 10)) == (0, None)


@pytest.mark.shared
def test_square_search_on_mobilenet_is_tight():
    """The side found fits and the next multiple of 8 does not (arenas from the planner)."""
    from viewer.model.reader import load_model
    from viewer.whatif.budget import find_largest_square_side, plan_arena
    from viewer.whatif.edits import WhatIfEdits

    m = load_model(shared_model("mobilenet_v2_224.tflite"))
    avail = 4 << 20
    side, arena = find_largest_square_side(m, 0, None, avail, "greedy_by_size", shape_source="inferred",
                                           sides=range(32, 1025, 8))
    assert 32 < side < 224 and arena <= avail
    nxt = plan_arena(m, 0, WhatIfEdits(input_shapes={"": (side + 8, side + 8)}), "greedy_by_size",
                     shape_source="inferred")[1]
    assert nxt.arena_bytes > avail


def test_search_every_side_not_multiples_of_8():
    from viewer.whatif.budget import search_largest_square

    r = search_largest_square(lambda s: s * s, 1000)
    assert (r.side, r.total_bytes) == (31, 961) and r.monotone
    assert r.checked_above == tuple(range(32, 40))
    assert search_largest_square(lambda s: s * s if s % 4 == 0 else None, 1000).side == 28
    assert search_largest_square(lambda s: s * s, 0).side == 0


def test_search_resumes_above_a_side_that_fits_after_a_dip():
    from viewer.whatif.budget import search_largest_square

    # Bisection lands on 31; side 35 (one by one above it) also fits: the answer is 35 and the
    # search says the bytes were not monotone.
    r = search_largest_square(lambda s: 10 if s == 35 else s * s, 1000, max_side=100)
    assert r.side == 35 and not r.monotone and "WARNING" in r.note


def test_lines_give_each_term_once_and_explain_batch_zero():
    r = budget_report(58, arena_bytes=16, weights_bytes=40, runtime_bytes=12, persistent_bytes=5,
                      other_subgraphs_bytes=3)  # fixed 60 B > 58 B
    text = "\n".join(r.lines())
    assert r.used_bytes == 76 and text.count("over budget by") == 1
    assert "+ persistent" in text and "+ other subgraphs' arenas" in text
    assert "largest batch: 0 (the fixed costs alone" in text
    r = budget_report(100, arena_bytes=16, batch_scales=False)
    assert "largest batch: 0 (not estimated: the model's inputs have no batch dimension)" in r.lines()
