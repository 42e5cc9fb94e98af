"""Budget arithmetic: the worked example from the brief, exactly, and the largest batch."""

from __future__ import annotations

import pytest

from viewer.whatif.budget import budget_report, fixed_bytes, largest_batch


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


def test_lines_give_each_term_once_and_explain_batch_zero():
    r = budget_report(58, arena_bytes=16, weights_bytes=40, runtime_bytes=12, persistent_bytes=5,
                      other_subgraphs_bytes=3)  # fixed 60 B > 58 B
    text = "\n".join(r.lines())
    assert r.used_bytes == 76 and text.count("over budget by") == 1
    assert "+ persistent" in text and "+ other subgraphs' arenas" in text
    assert "largest batch: 0 (the fixed costs alone" in text
    r = budget_report(100, arena_bytes=16, batch_scales=False)
    assert "largest batch: 0 (not estimated: the model's inputs have no batch dimension)" in r.lines()


def test_cannot_tell_with_room_left_never_says_over_budget_by_a_negative_amount():
    """A report that is not "fits" (e.g. cannot tell) but has room left shows the headroom,
    never "over budget by -2.6 MiB" (the window's Summary showed that)."""
    from viewer.whatif.budget import BudgetReport
    rep = BudgetReport(limit_bytes=10 << 20, weights_bytes=0, weights_counted=False, runtime_bytes=0,
                       arena_bytes=(10 << 20) - 2_726_298, batch=1, used_bytes=(10 << 20) - 2_726_298,
                       headroom_bytes=2_726_298, fits=False, arena_per_example_bytes=1,
                       largest_batch=None, message="cannot tell: kernel temporaries not measured")
    lines = rep.lines()
    assert not any("over budget by" in x for x in lines), lines
    assert "headroom: 2,726,298 B (2.6 MiB)" in lines
