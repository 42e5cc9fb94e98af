"""Options decoded from the stored layouts equal LiteRT's object API, on every shared model."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as S

from tests.conftest import MODELS, shared_model, shared_model_names
from viewer.model._options import _generate, all_table_names, derive_layout, layout
from viewer.model._options_table import LAYOUTS
from viewer.model.reader import load_model


def test_stored_layouts_are_the_installed_schema():
    """viewer/model/_options_table.py is what `python -m viewer.model._options` writes today."""
    from pathlib import Path

    import viewer.model._options_table as table

    assert Path(table.__file__).read_text() == _generate()
    assert set(LAYOUTS) == set(all_table_names())
    assert all(layout(n) == derive_layout(n) for n in ("Conv2DOptions", "ReshapeOptions", "StableHLOCompositeOptions"))


def _snake(name):
    import re

    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _plain(v):
    if isinstance(v, np.ndarray):
        return tuple(v.tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if hasattr(v, "__dict__") and not isinstance(v, type):
        return {_snake(k): _plain(x) for k, x in vars(v).items()}
    return v


def _object_api_options(data: bytes, sg_index: int) -> list[dict]:
    """Every operator's options through the schema's object API (what the reader used to do)."""
    sg = S.Model.GetRootAs(data, 0).Subgraphs(sg_index)
    out = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        d = {}
        if op.BuiltinOptionsType() and op.BuiltinOptions() is not None:
            obj = S.BuiltinOptionsCreator(op.BuiltinOptionsType(), op.BuiltinOptions())
            d = _plain(obj) if obj is not None else {}
        elif op.BuiltinOptions2Type() and op.BuiltinOptions2() is not None:
            obj = S.BuiltinOptions2Creator(op.BuiltinOptions2Type(), op.BuiltinOptions2())
            d = _plain(obj) if obj is not None else {}
        out.append(d)
    return out


@pytest.mark.parametrize("name", shared_model_names())
def test_options_equal_the_object_api(name):
    path = shared_model(name)
    model = load_model(path, graph_rules=False)
    data = path.read_bytes()
    for sg in model.subgraphs:
        assert [dict(op.options) for op in sg.operators] == _object_api_options(data, sg.index), sg.index


def test_shared_present():
    if not MODELS.exists():
        pytest.skip(f"{MODELS} not present (../shared is not beside this checkout)")
