"""A session's steps: read from text, checked against the model, predicted without the runtime.

:func:`parse_steps` reads ``1x128x4,NAME=64x128x4+OTHER=64x128x4`` (the CLI's ``--steps``, the
window's field); :func:`session_steps` checks them against the model's inputs (what LiteRT's
``ResizeInputTensorStrict`` would refuse, said first, in one line naming the file);
:func:`plan_session` predicts every step's arena with our shape inference, the op registry's
kernel-temporary estimates and the ``litert`` planner, and applies LiteRT's buffer rule
(:func:`viewer.whatif.session.buffer_steps`) across them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from viewer.errors import UsageError, WhatIfError
from viewer.whatif.session import BufferStep, buffer_steps

_DIMS = re.compile(r"-?\d+(?:x-?\d+)*")


def parse_steps(text: str, flag: str = "--steps") -> list[dict]:
    """``--steps`` text -> ``[{input key or "*": shape}]`` (shapes as written; checked later).

    Raises
    ------
    viewer.errors.UsageError
        A step that is not SHAPE or NAME=SHAPE(+NAME=SHAPE...).
    """
    steps = []
    for k, item in enumerate(s.strip() for s in str(text).split(",")):
        if not item:
            raise UsageError(f"{flag} {text!r}: step {k + 1} is empty; separate steps with commas, "
                             "e.g. 1x128x4,64x128x4")
        step: dict = {}
        for part in item.split("+"):
            key, sep, shape = part.rpartition("=")
            key = key.strip() if sep else "*"
            if not _DIMS.fullmatch(shape.strip()) or (sep and not key):
                raise UsageError(f"{flag}: cannot read step {k + 1} {item!r}: use SHAPE with "
                                 "dimensions separated by x (e.g. 1x128x4), or NAME=SHAPE+NAME=SHAPE")
            step[key] = tuple(int(d) for d in shape.strip().split("x"))
        steps.append(step)
    return steps


def session_steps(model, subgraph: int, steps: Sequence[Mapping[str | int, Sequence[int]]],
                  ) -> list[dict[int, tuple[int, ...]]]:
    """Check a session's input shapes against the model; ``{input position: shape}`` per step.

    Parameters
    ----------
    model : viewer.model.types.Model
    subgraph : int
    steps : sequence of mapping
        Per step ``{input name or position: shape}``; the key ``"*"`` means every input with a
        dynamic dimension.

    Raises
    ------
    viewer.errors.WhatIfError
        One line naming the file: no step, a subgraph without a dynamic input, an unknown
        input, a shape of the wrong rank, a dimension below 1, or a change to a dimension the
        file fixes (LiteRT's ``ResizeInputTensorStrict`` refuses it).
    """
    sg = model.subgraph(subgraph)
    where = f"{model.path}: subgraph {subgraph}"
    inputs = [i for i in sg.inputs if i >= 0]
    dynamic = [p for p, t in enumerate(inputs) if -1 in tuple(sg.tensors[t].shape_signature or ())]
    if not dynamic:
        raise WhatIfError(f"{where} has no input with a dynamic dimension (-1 in its "
                          "shape_signature): every step would be the same; a session needs one")
    if not steps:
        raise WhatIfError(f"{model.path}: a session needs at least one step")
    by_name = {sg.tensors[t].name: p for p, t in enumerate(inputs)}
    out = []
    for k, step in enumerate(steps):
        resolved: dict[int, tuple[int, ...]] = {}
        for key, shape in step.items():
            for pos in (dynamic if key == "*" else [_input_position(where, key, by_name, len(inputs))]):
                resolved[pos] = _checked_shape(where, k, sg.tensors[inputs[pos]], tuple(shape))
        out.append(resolved)
    return out


def _input_position(where: str, key, by_name: dict, n: int) -> int:
    if isinstance(key, int) or str(key).isdigit():
        pos = int(key)
        if not 0 <= pos < n:
            raise WhatIfError(f"{where} has no input {pos} (it has {n}: 0..{n - 1})")
        return pos
    if key not in by_name:
        raise WhatIfError(f"{where} has no input named {key!r}; inputs: {', '.join(by_name)}")
    return by_name[key]


def _checked_shape(where: str, k: int, tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    sig = tuple(tensor.shape_signature or tensor.shape or ())
    label = f"{where}, step {k + 1}, input {tensor.name!r} (shape_signature {list(sig)})"
    if len(shape) != len(sig):
        raise WhatIfError(f"{label}: shape {'x'.join(map(str, shape)) or '()'} has rank "
                          f"{len(shape)}, the input has rank {len(sig)}")
    for d, (s, want) in enumerate(zip(shape, sig)):
        if s < 1:
            raise WhatIfError(f"{label}: dimension {d} is {s}; dimensions must be at least 1")
        if want != -1 and s != want:
            raise WhatIfError(f"{label}: dimension {d} is fixed at {want} by the file, not {s} "
                              "(only -1 dimensions can change)")
    return tuple(int(s) for s in shape)



@dataclass(frozen=True)
class PlannedStep:
    """One step of a session from our side alone: our shape inference and ``litert`` planner.

    Attributes
    ----------
    index : int
    shapes : tuple of (str, tuple of int)
    buffer : BufferStep
        The step's planned arena and LiteRT's buffer rule applied to it, bytes.
    estimated : bool
        Shapes from our own inference (always, here: the runtime is not run).
    """

    index: int
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    buffer: BufferStep
    estimated: bool = True

    def as_dict(self) -> dict:
        b = self.buffer
        return {"step": self.index + 1, "shapes": {n: list(s) for n, s in self.shapes},
                "arena_needed_bytes": b.needed, "arena_held_bytes": b.held, "grew": b.grew,
                "during_growth_bytes": b.during_growth, "request_bytes": b.request}


#: What a planned-only session leaves out, said on its numbers.
PLANNED_ONLY_CAVEAT = ("estimated: our inferred shapes and kernel-temporary estimates, planned as "
                       "one range by our litert planner; dynamic tensors, tensors sized by input "
                       "values and LiteRT's planning in ranges during Invoke are left out")


def plan_session(model, subgraph: int, steps: Sequence[Mapping[int, Sequence[int]]],
                 planner: str = "litert") -> list[PlannedStep]:
    """A session without the runtime: each step's arena planned at our inferred shapes.

    Parameters
    ----------
    model : viewer.model.types.Model
    subgraph : int
    steps : sequence of mapping
        ``{input position: shape}`` per step (from :func:`session_steps`).
    planner : str
        Registry name; ``litert`` re-states LiteRT's ArenaPlanner.

    Returns
    -------
    list of PlannedStep
        Lower bounds of what LiteRT plans (:data:`PLANNED_ONLY_CAVEAT`), with
        :func:`buffer_steps` applied across them.

    Raises
    ------
    viewer.errors.WhatIfError
        A step our shape inference cannot take (the operator named).
    """
    from viewer.planning.registry import get_planner
    from viewer.planning.types import DEFAULT_ALIGNMENT
    from viewer.whatif.edits import WhatIfEdits, apply_edits
    from viewer.whatif.tiling.plan import analyze_with_temporaries

    sg = model.subgraph(subgraph)
    inputs = [i for i in sg.inputs if i >= 0]
    plan = get_planner(planner).func
    needed, named = [], []
    for step in steps:
        edits = WhatIfEdits(input_shapes={int(p): tuple(int(d) for d in s) for p, s in step.items()})
        try:
            edited = apply_edits(model, subgraph, edits, shape_source="inferred")
        except WhatIfError as e:
            raise WhatIfError(f"step {len(needed) + 1}: {e}") from None
        analysis, _ = analyze_with_temporaries(edited.subgraph)
        needed.append(int(plan(analysis.problem(), DEFAULT_ALIGNMENT).arena_bytes))
        named.append(tuple((sg.tensors[inputs[int(p)]].name, tuple(int(d) for d in s))
                           for p, s in step.items()))
    return [PlannedStep(k, named[k], b) for k, b in enumerate(buffer_steps(needed))]
