"""viewer.model.types.replaced: the fast dataclasses.replace the what-ifs and the probe use."""

from __future__ import annotations

import dataclasses

import pytest

from viewer.model.types import Tensor, replaced


def test_replaced_equals_dataclasses_replace():
    t = Tensor(3, "x", (1, 8, 8, 3), (-1, 8, 8, 3), "float32", 768, flags=frozenset({"dynamic"}))
    for changes in ({}, {"shape": (2, 8, 8, 3), "nbytes": 1536}, {"flags": frozenset()}):
        a, b = replaced(t, **changes), dataclasses.replace(t, **changes)
        assert a == b and hash(a) == hash(b) and repr(a) == repr(b) and a is not t
    assert t.shape == (1, 8, 8, 3)  # the original is untouched
    with pytest.raises(TypeError):
        replaced(t, no_such_field=1)
