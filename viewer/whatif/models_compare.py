"""Two or more models side by side: why the naive sum ranks models by the wrong number.

The naive sum (every tensor its own bytes) is the figure usually quoted; the arena a runtime
really allocates depends on usage intervals, packing and kernel temporaries. Two models can
rank one way by the first and the other way by the second (MobileNet v2 against DeepLab v3:
1.85x apart in naive sum, nearly the same arena). :func:`summarize` gives one row per model;
:func:`rankings` orders them by each measure and says whether the orders disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.model.reader import load_model
from viewer.planning.run import best_plan_name, default_planner_names, run_planners
from viewer.whatif.edits import WhatIfEdits
from viewer.whatif.footprint import footprint


@dataclass(frozen=True)
class ModelSummary:
    """One model's row of the comparison.

    Attributes
    ----------
    path : str
    naive_bytes : int
        Naive sum of the model's own tensors (each its own bytes, no reuse).
    lower_bound_bytes : int
        The widest operator's breadth over the model's own tensors.
    best_planner : str
    best_plan_bytes : int
        The smallest non-exact plan of the model's own tensors.
    arena_bytes : int
        The arena that counts: LiteRT's planner with the runtime's kernel temporaries when
        measured, else ``best_plan_bytes``.
    measured : bool
        ``arena_bytes`` includes the runtime's kernel temporaries.
    measured_arena_bytes : int or None
        The runtime's own arena span, when measured.
    weights_bytes : int
        File-backed constant buffers.
    widest_op : int
        Operator index of the widest operator of the arena that counts (``arena_bytes``): with
        the runtime's kernel temporaries when measured, like the arena (-1 when the subgraph
        has none).
    widest_op_name : str
    widest_op_bytes : int
        That operator's breadth, in the same terms (temporaries included when measured).
    tensors_widest_op : int
        The widest operator over the model's own tensors (``lower_bound_bytes`` is its breadth).
    tensors_widest_op_name : str
    persistent_bytes : int
        Tensors held outside the arena for the model's life (outputs computed once at prepare,
        e.g. a float16 model's DEQUANTIZE of its weights; variables), in bytes: measured when
        ``measured``, else estimated from the operators (:func:`viewer.whatif.footprint.footprint`).
    other_subgraphs_bytes : int
        Arenas of the other subgraphs the runtime allocates (control-flow bodies), in bytes.
    notes : tuple of str
    """

    path: str
    naive_bytes: int
    lower_bound_bytes: int
    best_planner: str
    best_plan_bytes: int
    arena_bytes: int
    measured: bool
    measured_arena_bytes: int | None
    weights_bytes: int
    widest_op: int
    widest_op_name: str
    widest_op_bytes: int = 0
    tensors_widest_op: int = -1
    tensors_widest_op_name: str = ""
    persistent_bytes: int = 0
    other_subgraphs_bytes: int = 0
    notes: tuple[str, ...] = ()

    @property
    def held_bytes(self) -> int:
        """Arena + other subgraphs' arenas + persistent tensors, in bytes: the anonymous memory
        the model's tensors hold (weights apart), what ranks models for a board."""
        return self.arena_bytes + self.other_subgraphs_bytes + self.persistent_bytes


def summarize(path: str, subgraph: int = 0, edits: WhatIfEdits | None = None, *,
              measure: bool = True, timeout: float = 60.0) -> ModelSummary:
    """Plan (and, with ``measure``, run in LiteRT) one model for the comparison table.

    Raises
    ------
    viewer.errors.ModelFormatError, SubgraphError, WhatIfError, PlanningError
    """
    model = load_model(path)
    fp = footprint(model, subgraph, edits, planner="litert", measure=measure, timeout=timeout)
    tensors_only = fp.analysis
    if fp.measured:
        tensors_only = footprint(model, subgraph, edits, planner="litert", measure=False).analysis
    plans = run_planners(tensors_only.problem(), default_planner_names())
    best = best_plan_name(plans)
    w = int(tensors_only.widest_op)
    counted = fp.analysis if fp.measured else tensors_only  # the analysis behind arena_bytes
    cw = int(counted.widest_op)
    return ModelSummary(
        path=str(path), naive_bytes=int(tensors_only.naive_bytes),
        lower_bound_bytes=int(tensors_only.lower_bound_bytes), best_planner=best,
        best_plan_bytes=int(plans[best].arena_bytes),
        arena_bytes=int(fp.arena_bytes if fp.measured else plans[best].arena_bytes),
        measured=fp.measured, measured_arena_bytes=fp.measured_arena_bytes,
        weights_bytes=int(fp.weights_bytes), widest_op=cw,
        widest_op_name=counted.op_name(cw) if cw >= 0 else "",
        widest_op_bytes=int(counted.lower_bound_bytes), tensors_widest_op=w,
        tensors_widest_op_name=tensors_only.op_name(w) if w >= 0 else "",
        persistent_bytes=int(fp.persistent_bytes), other_subgraphs_bytes=int(fp.other_subgraphs_bytes),
        notes=tuple(fp.notes))


def rankings(rows: list[ModelSummary]) -> dict[str, list[int]]:
    """Row indices ordered smallest first by ``naive_bytes``, by ``arena_bytes`` and by
    ``held_bytes`` (arena + other subgraphs + persistent).

    Returns
    -------
    dict
        ``{"naive_sum": [...], "arena": [...], "held": [...], "disagree": bool}``; ties keep
        input order; ``disagree`` when the naive sum ranks them otherwise than ``held``.
    """
    naive = sorted(range(len(rows)), key=lambda i: rows[i].naive_bytes)
    arena = sorted(range(len(rows)), key=lambda i: rows[i].arena_bytes)
    held = sorted(range(len(rows)), key=lambda i: rows[i].held_bytes)
    return {"naive_sum": naive, "arena": arena, "held": held, "disagree": naive != held}
