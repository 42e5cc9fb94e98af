"""Write a planning problem as MiniMalloc-style CSV, atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from viewer.export.paths import write_atomic
from viewer.planning.csv_io import problem_csv_text
from viewer.planning.types import Plan, PlanningProblem


def write_problem_csv(
    problem: PlanningProblem,
    path: str | Path,
    plan: Plan | None = None,
    names: Sequence[str] | None = None,
    *inputs: str | os.PathLike,
    force: bool = False,
) -> int:
    """Write ``problem`` (and optionally a plan's offsets) as CSV to ``path``
    (:func:`viewer.planning.csv_io.problem_csv_text`, :func:`viewer.export.paths.write_atomic`).

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    viewer.errors.PlanningError
        ``names`` of the wrong length, or ``plan`` lacks an offset.
    viewer.errors.UsageError, viewer.errors.ViewerError
        ``path`` cannot be written, exists without ``force``, or is one of ``inputs``.
    """
    text = problem_csv_text(problem, plan, names, label=path)
    return write_atomic(path, text, *inputs, what="CSV problem", force=force)
