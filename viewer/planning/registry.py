"""One registry of planners; every planner has the :class:`~viewer.planning.types.Planner` signature."""

from __future__ import annotations

from dataclasses import dataclass

from viewer.errors import PlanningError
from viewer.planning.types import Planner


@dataclass(frozen=True)
class PlannerSpec:
    """A registered planner.

    Attributes
    ----------
    name : str
        Registry key, used on the command line (``--planner NAME``) and in JSON.
    label : str
        Human name for the GUI.
    func : Planner
    exact : bool
        It can prove optimality (slow; not run by ``all`` unless asked).
    source : str
        Paper or runtime file the algorithm follows.
    runtime : str or None
        A runtime's own planner (``"tflm"``): listed by default only for that runtime.
    """

    name: str
    label: str
    func: Planner
    exact: bool = False
    source: str = ""
    runtime: str | None = None


PLANNERS: dict[str, PlannerSpec] = {}


def register(name: str, label: str, *, exact: bool = False, source: str = "", runtime: str | None = None):
    """Decorator: add a planner function to :data:`PLANNERS` under ``name``."""

    def deco(func: Planner) -> Planner:
        PLANNERS[name] = PlannerSpec(name, label, func, exact, source, runtime)
        return func

    return deco


def get_planner(name: str) -> PlannerSpec:
    """Return the planner called ``name``.

    Raises
    ------
    viewer.errors.PlanningError
        When no planner has that name; the message lists the known ones.
    """
    _load_all()
    try:
        return PLANNERS[name]
    except KeyError:
        raise PlanningError(
            f"unknown planner {name!r}; known: {', '.join(planner_names())}"
        ) from None


def planner_names() -> list[str]:
    """Registered planner names, in registration order."""
    _load_all()
    return list(PLANNERS)


def _load_all() -> None:
    # Importing the package registers every planner module.
    import viewer.planning  # noqa: F401
