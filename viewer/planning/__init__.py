"""Arena planners: one module per planner, one registry, one independent verifier.

Importing this package registers every planner in :data:`PLANNERS`.
"""

from viewer.planning.types import (  # noqa: F401
    DEFAULT_ALIGNMENT,
    Buffer,
    Plan,
    PlanningProblem,
    align_up,
)
from viewer.planning.registry import PLANNERS, get_planner, planner_names, register  # noqa: F401
from viewer.planning.verify import verify_plan  # noqa: F401

# Planner modules register themselves on import. Keep this list in display order.
import importlib as _importlib

for _mod in ("naive", "litert", "greedy", "strip_packing", "optimal", "tflm"):
    try:
        _importlib.import_module(f"viewer.planning.{_mod}")
    except ModuleNotFoundError as _e:  # a planner not written yet
        if _e.name != f"viewer.planning.{_mod}":
            raise
