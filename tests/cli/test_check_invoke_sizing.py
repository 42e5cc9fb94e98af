"""``check`` on arenas LiteRT sizes during Invoke (newuser finding 6): cannot tell (exit 3) when
the sizes follow the input values, a qualified "fits" (exit 0) when only the input shapes size
them; the JSON says which (``sized_at_invoke``)."""

from __future__ import annotations

import json

import pytest

from conftest import shared_model
from viewer.cli import main

pytestmark = pytest.mark.shared


def _check(capsys, name, *extra):
    rc = main(["check", str(shared_model(name)), "--budget", "64MiB", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("name, op", [
    ("litert_testdata_while_op_with_forwarding_input.tflite", "#1 WHILE"),  # iteration count
    ("litert_testdata_dynamic_shapes.tflite", "#6 STRIDED_SLICE"),  # bounds from CAST/GATHER of an input
])
def test_sizes_that_follow_input_values_cannot_tell(capsys, name, op):
    rc, out, err = _check(capsys, name)
    head = out.splitlines()[0]
    assert rc == 3 and "CANNOT TELL" in head and "fits at the sizes of one synthetic invoke" in head, out
    assert "sized by input values" in head and op in head
    rc, out, _ = _check(capsys, name, "--json")
    r = json.loads(out)
    s = r["sized_at_invoke"]
    assert rc == 3 and r["verdict"] == "cannot_tell" and s["by_input_values"] and op in s["value_operators"]
    assert s["tensors"] > 0 and any("sized by input values" in u for u in r["unknowns"])


def test_sizes_from_shapes_only_fit_with_the_qualifier(capsys):
    """se_dynbatch: RESHAPE's target comes from SHAPE of the input: the same at these shapes."""
    rc, out, _ = _check(capsys, "se_dynbatch.tflite")
    head = out.splitlines()[0]  # "fits at batch 1 (dynamic batch) at the sizes of one synthetic invoke (…)"
    assert rc == 0 and ": fits" in head and "at the sizes of one synthetic invoke" in head, out
    rc, out, _ = _check(capsys, "se_dynbatch.tflite", "--json")
    s = json.loads(out)["sized_at_invoke"]
    assert rc == 0 and s["by_input_values"] is False and s["shape_operators"] == ["#5 RESHAPE"]


def test_a_static_model_has_no_invoke_sizing(capsys):
    rc, out, _ = _check(capsys, "mlperftiny_kws_dscnn_int8.tflite", "--json")
    assert rc == 0 and json.loads(out)["sized_at_invoke"] is None
