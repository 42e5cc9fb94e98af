"""Hand-made subgraphs for what-if tests (our own types, no file)."""

from __future__ import annotations

from viewer.model import dtypes
from viewer.model.types import Model, Operator, Subgraph, Tensor


def t(index, shape, dtype="float32", *, const=False, name=None):
    shape = tuple(shape)
    return Tensor(index, name or f"t{index}", shape, shape, dtype, dtypes.nbytes(dtype, shape),
                  buffer=index + 1 if const else 0, is_constant=const)


def op(index, name, inputs, outputs, **options):
    return Operator(index, name, 1, None, 1, tuple(inputs), tuple(outputs), (), dict(options), "")


def subgraph(tensors, ops, inputs, outputs):
    return Subgraph(0, "main", tuple(tensors), tuple(ops), tuple(inputs), tuple(outputs))


def model(sg, path="hand-made.tflite", weights=0):
    return Model(path, 0, 3, "", (sg,), weights)
