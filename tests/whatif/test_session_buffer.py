"""The session model: LiteRT's never-shrinking arena buffer rule and the step shapes' checks."""

from __future__ import annotations

import pytest

from tests.session_models import dynamic_chain, static_chain
from viewer.errors import WhatIfError
from viewer.model.reader import load_model
from viewer.whatif.session import aligned_request, buffer_steps
from viewer.whatif.session_plan import session_steps


def test_aligned_request_is_held_plus_63_rounded_to_64():
    # AlignedAlloc (simple_memory_arena.cc, aligned_alloc path): size + alignment - 1, rounded up.
    assert aligned_request(0) == 0
    assert aligned_request(1) == 64
    assert aligned_request(64) == 128
    assert aligned_request(6144) == 6208


def test_buffer_never_shrinks_and_both_blocks_count_while_it_grows():
    got = buffer_steps([100, 500, 200, 800, 800])
    assert [b.held for b in got] == [100, 500, 500, 800, 800]
    assert [b.grew for b in got] == [True, True, False, True, False]
    # the first block has nothing to copy; later growth holds old + new during the copy
    assert [b.during_growth for b in got] == [100, 600, 500, 1300, 800]


def test_buffer_steps_start_from_a_held_buffer():
    got = buffer_steps([10, 30], start_held=20)
    assert [(b.held, b.grew, b.during_growth) for b in got] == [(20, False, 20), (30, True, 50)]


def test_session_steps_resolve_star_names_and_positions(tmp_path):
    m = load_model(dynamic_chain(tmp_path))
    assert session_steps(m, 0, [{"*": (2, 8, 8, 3)}, {"t0": (3, 8, 8, 3)}, {0: (1, 8, 8, 3)}]) == [
        {0: (2, 8, 8, 3)}, {0: (3, 8, 8, 3)}, {0: (1, 8, 8, 3)}]


@pytest.mark.parametrize("step, words", [
    ({"*": (2, 8, 8)}, "has rank 3, the input has rank 4"),
    ({"*": (-2, 8, 8, 3)}, "dimension 0 is -2; dimensions must be at least 1"),
    ({"*": (0, 8, 8, 3)}, "dimension 0 is 0"),
    ({"*": (2, 9, 8, 3)}, "dimension 1 is fixed at 8 by the file, not 9"),
    ({"nope": (2, 8, 8, 3)}, "no input named 'nope'"),
    ({5: (2, 8, 8, 3)}, "no input 5"),
])
def test_session_steps_refuse_bad_shapes_naming_the_file(tmp_path, step, words):
    path = dynamic_chain(tmp_path)
    with pytest.raises(WhatIfError) as e:
        session_steps(load_model(path), 0, [{"*": (1, 8, 8, 3)}, step])
    assert str(path) in str(e.value) and words in str(e.value)
    assert "\n" not in str(e.value)


def test_session_steps_refuse_a_model_without_dynamic_input(tmp_path):
    path = static_chain(tmp_path)
    with pytest.raises(WhatIfError, match="no input with a dynamic dimension"):
        session_steps(load_model(path), 0, [{"*": (1, 8, 8, 3)}])
