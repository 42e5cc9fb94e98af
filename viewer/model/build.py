"""A new subgraph described in terms of an existing model's tensors and operators.

What :func:`viewer.model.writer.write_graphs` serialises: tensors that copy an original
tensor's type and quantization (and, for a constant, share its weight buffer), new small
constants, and operators that copy an original operator (opcode, options) or are new builtins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class TensorSpec:
    """A tensor of a written graph: ``src`` (an original tensor index) gives dtype, quantization
    and, for a constant, its buffer; a new constant carries ``data`` instead."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    src: int | None = None
    constant: bool = False
    data: np.ndarray | None = None


@dataclass
class OpSpec:
    """An operator of a written graph: ``src`` (an original operator index) gives the opcode and
    options (``options`` overrides some); a new operator names its builtin in ``op_name``."""

    op_name: str
    inputs: list[int]
    outputs: list[int]
    src: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphSpec:
    """One subgraph to write and plan. ``outputs`` maps a signature output key to a tensor."""

    key: str
    tensors: list[TensorSpec] = field(default_factory=list)
    ops: list[OpSpec] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)

    def add(self, spec: TensorSpec) -> int:
        self.tensors.append(spec)
        return len(self.tensors) - 1
