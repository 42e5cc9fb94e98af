"""Where a patch-based execution can stop, what crosses the cut, and each patch's regions.

The patchable prefix is the run of operators 0..K that are spatially local (their registry
entry gives a receptive field: :func:`viewer.ops.receptive_field`) on NHWC tensors fed by one
graph input. The *cut* after K is every tensor produced by operators 0..K and read after K (or a
graph output): in a chain one tensor, in a U-Net the skip connections too.

Regions are computed per axis (rows, then columns: every local operator's receptive field is
separable), as in MCUNetV2 (Lin et al., NeurIPS 2021, "patch-based inference"): each cut
tensor's H (W) is split into R (C) parts with boundaries ``k * H // R`` (uneven where it does not
divide), and the rows every prefix tensor must hold for a patch are found by walking the prefix
backwards, taking the union of what its consumers need (halos included) clipped to the tensor.
Intervals are half-open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from viewer import ops
from viewer.model.types import Subgraph

Interval = tuple[int, int]


@dataclass(frozen=True)
class Prefix:
    """The longest patchable prefix of a subgraph.

    Attributes
    ----------
    last_op : int
        Largest split K (operators 0..K inclusive are patchable); -1 when none is.
    input : int
        The graph input the prefix reads (-1 when none).
    reason : str
        Why operator ``last_op + 1`` ends it ("" when the whole graph is patchable).
    """

    last_op: int
    input: int
    reason: str


def _const(sg: Subgraph, t: int) -> bool:
    return sg.tensors[t].is_constant or t in derived_constants(sg)


_DERIVED: dict[int, tuple[Subgraph, frozenset[int], frozenset[int]]] = {}


def derived_constants(sg: Subgraph) -> frozenset[int]:
    """Tensors computed from constants only (DEQUANTIZE of fp16 weights, ...): weights, not
    activations. LiteRT computes them once at prepare time (persistent memory); a patch graph and
    the tail each carry the operators that make the ones they read (:func:`constant_ops`)."""
    return _derived(sg)[1]


def constant_ops(sg: Subgraph) -> frozenset[int]:
    """Operators whose inputs are all constant or derived constants."""
    return _derived(sg)[2]


def _derived(sg: Subgraph):
    hit = _DERIVED.get(id(sg))
    if hit is not None and hit[0] is sg:
        return hit
    const = {t.index for t in sg.tensors if t.is_constant}
    derived, opset = set(), set()
    for op in sg.operators:
        ins = [t for t in op.inputs if t >= 0]
        if ins and all(t in const or t in derived for t in ins) and op.outputs and not op.is_custom:
            derived.update(t for t in op.outputs if t >= 0)
            opset.add(op.index)
    if len(_DERIVED) > 16:
        _DERIVED.clear()
    _DERIVED[id(sg)] = hit = (sg, frozenset(derived), frozenset(opset))
    return hit


def patchable_prefix(sg: Subgraph, values: Mapping[int, np.ndarray] | None = None) -> Prefix:
    """Find the longest prefix of spatially local operators.

    An operator ends the prefix when it is not spatially local (registry ``NotLocal``: global
    pooling, MEAN, RESHAPE, FULLY_CONNECTED, RESIZE, TRANSPOSE_CONV, custom ops...), when it
    reads or writes a non-constant tensor that is not NHWC (rank 4), or when it reads a second
    graph input or a tensor not produced before it (variables).
    """
    shapes = {t.index: tuple(t.shape) for t in sg.tensors}
    produced: set[int] = set()
    the_input = -1
    skip = constant_ops(sg)
    for op in sg.operators:
        if op.index in skip:
            continue  # computes weights from constants (prepare time), not an activation
        why = _not_patchable(sg, op, shapes, values or {}, produced, the_input)
        if isinstance(why, str):
            return Prefix(op.index - 1, the_input, f"#{op.index} {op.op_name}: {why}")
        the_input = why
        produced.update(t for t in op.outputs if t >= 0)
    return Prefix(len(sg.operators) - 1, the_input, "")


def _not_patchable(sg, op, shapes, values, produced, the_input):
    """A reason string, or the graph input the prefix reads (may stay -1)."""
    graph_inputs = set(sg.inputs)
    for t in op.outputs:
        if t >= 0 and len(shapes[t]) != 4:
            return f"output {sg.tensors[t].name!r} has rank {len(shapes[t])}, not NHWC"
    if not op.outputs or op.outputs[0] < 0:
        return "no output"
    out = shapes[op.outputs[0]]
    try:
        regions = ops.receptive_field(op, shapes, (0, out[1], 0, out[2]), values)
    except ops.NotLocal as e:
        return str(e)
    except (ops.ShapeError, IndexError, KeyError, TypeError) as e:
        return f"receptive field unknown ({e})"
    for p, t in enumerate(op.inputs):
        if t < 0 or _const(sg, t):
            continue
        if p < len(regions) and regions[p] is None:
            return f"input {sg.tensors[t].name!r} is read whole"
        if len(shapes[t]) != 4:
            return f"input {sg.tensors[t].name!r} has rank {len(shapes[t])}, not NHWC"
        if t in graph_inputs and t not in produced:
            if the_input not in (-1, t):
                return "reads a second graph input"
            the_input = t
        elif t not in produced:
            return f"reads {sg.tensors[t].name!r}, which no earlier operator produces"
    return the_input


def cut_tensors(sg: Subgraph, k: int) -> list[int]:
    """Tensors produced by operators 0..k and read after k or graph outputs, in production order."""
    later = {t for op in sg.operators[k + 1:] for t in op.inputs if t >= 0} | set(sg.outputs)
    derived = derived_constants(sg)
    out: list[int] = []
    for op in sg.operators[: k + 1]:
        out.extend(t for t in op.outputs if t >= 0 and t in later and t not in out and t not in derived)
    return out


def split_bounds(size: int, parts: int) -> list[int]:
    """Boundaries ``[k * size // parts for k in 0..parts]`` (uneven where ``parts`` does not divide)."""
    return [k * size // parts for k in range(parts + 1)]


@dataclass
class AxisGeometry:
    """One patch index along one axis (rows: axis 1, or columns: axis 2).

    Attributes
    ----------
    axis : int
        1 (H) or 2 (W).
    index, parts : int
        This patch's position and the number of parts along the axis.
    share : dict
        Cut tensor -> the interval of it this patch produces.
    need : dict
        Tensor -> the interval the patch computes (holds), clipped to the tensor.
    request : dict
        (operator index, input position) -> the interval of that input the operator reads
        for its output interval, unclipped (the part outside the tensor is padding).
    """

    axis: int
    index: int
    parts: int
    share: dict[int, Interval] = field(default_factory=dict)
    need: dict[int, Interval] = field(default_factory=dict)
    request: dict[tuple[int, int], Interval] = field(default_factory=dict)

    sizes: dict[int, int] = field(default_factory=dict)

    def crop(self, key: tuple[int, int], source: int) -> tuple[int, int, int, int]:
        """(offset into the held interval of ``source``, rows read, padding before, padding after)."""
        r = self.request[key]
        size = self.sizes[source]
        c = clip(r, size)
        base = self.need[source][0] if source in self.need else 0
        return (c[0] - base, c[1] - c[0], c[0] - r[0], r[1] - c[1])

    def key(self, sg: Subgraph) -> tuple:
        """What makes two patches structurally alike along this axis: every held size, every
        crop offset, read length and padding, every share's length and offset."""
        if self._key is None:
            self._key = self._make_key(sg)
        return self._key

    _key: tuple | None = field(default=None, repr=False, compare=False)

    def _make_key(self, sg: Subgraph) -> tuple:
        sizes = tuple(sorted((t, n[1] - n[0]) for t, n in self.need.items()))
        reqs = tuple(sorted((k, self.crop(k, sg.operators[k[0]].inputs[k[1]])) for k in self.request))
        shares = tuple(sorted((t, s[1] - s[0], s[0] - self.need[t][0]) for t, s in self.share.items()))
        return sizes, reqs, shares


def axis_geometry(sg: Subgraph, k: int, cut: list[int], axis: int, index: int, parts: int,
                  values: Mapping[int, np.ndarray] | None = None) -> AxisGeometry:
    """The intervals of patch ``index`` of ``parts`` along ``axis`` for the split after operator ``k``.

    Raises
    ------
    ValueError
        When a cut tensor has fewer rows (columns) than ``parts``: the patch would be empty.
    """
    shapes = {t.index: tuple(t.shape) for t in sg.tensors}
    g = AxisGeometry(axis, index, parts)
    for t in cut:
        b = split_bounds(shapes[t][axis], parts)
        if b[index + 1] <= b[index]:
            raise ValueError(f"{sg.tensors[t].name!r} has {shapes[t][axis]} {'rows' if axis == 1 else 'columns'}, "
                             f"fewer than {parts} patches")
        g.share[t] = (b[index], b[index + 1])
        g.need[t] = g.share[t]
    skip = constant_ops(sg)
    for op in reversed(sg.operators[: k + 1]):
        if op.index in skip:
            continue
        outs = [t for t in op.outputs if t >= 0 and t in g.need]
        if not outs:
            continue
        lo = min(g.need[t][0] for t in outs)
        hi = max(g.need[t][1] for t in outs)
        for t in outs:  # every output of a local op covers the same rows
            g.need[t] = (lo, hi)
        region = (lo, hi, 0, 1) if axis == 1 else (0, 1, lo, hi)
        regions = ops.receptive_field(op, shapes, region, values)
        for p, t in enumerate(op.inputs):
            if t < 0 or p >= len(regions) or regions[p] is None:
                continue
            r = regions[p][0:2] if axis == 1 else regions[p][2:4]
            size = shapes[t][axis]
            g.sizes[t] = size
            g.request[(op.index, p)] = r
            if _const(sg, t):
                continue  # held whole; a consumer reading part of it gets a SLICE
            c = (max(r[0], 0), min(r[1], size))
            old = g.need.get(t)
            g.need[t] = c if old is None else (min(old[0], c[0]), max(old[1], c[1]))
    for t in g.need:
        g.sizes[t] = shapes[t][axis]
    return g


def clip(r: Interval, size: int) -> Interval:
    return (max(r[0], 0), min(r[1], size))
