"""Which plan a runtime itself lays out, and how another planner's layout is labelled. No Qt.

The window shows the runtime's own plan by default (``litert`` under LiteRT, ``tflm_greedy``
under TFLite Micro, which keeps the model's offline plan when it has one); any other planner is
a what-if the board does not get, said on the chart title and the Summary's Arena line in the
words ``check`` uses (viewer/cli/check.py ``_whatif_lines``, whatif/tflm_footprint.py).
"""

from __future__ import annotations

#: The planner that re-states each runtime's own arena plan (its measured plan is also its own).
RUNTIME_PLANNERS = {"litert": "litert", "tflm": "tflm_greedy"}
#: Plans read back from a runtime: the runtime's own layout.
MEASURED_PLANS = {"litert": "litert_measured", "tflm": "tflm_measured"}
_RUNTIME_NAMES = {"litert": "LiteRT", "tflm": "TFLM"}


def runtime_plan_name(runtime: str, plans, best: str | None = None) -> str | None:
    """Name of the plan ``runtime`` itself uses among ``plans`` (a mapping of names).

    Falls back to ``best``, then to the first plan, when the runtime's planner is absent
    (e.g. an explicit planner list); None when ``plans`` is empty.
    """
    own = RUNTIME_PLANNERS.get(runtime)
    if own in plans:
        return own
    if best in plans:
        return best
    return next(iter(plans), None)


def is_runtime_plan(runtime: str, planner: str) -> bool:
    """True when ``planner`` is the layout ``runtime`` itself plans (or the measured one)."""
    return planner in (RUNTIME_PLANNERS.get(runtime), MEASURED_PLANS.get(runtime))


def whatif_note(runtime: str, planner: str) -> str:
    """'' for the runtime's own plan, else one line saying ``planner``'s layout is a what-if.

    Examples: ``"what-if: greedy_by_size's layout; LiteRT does not use it (it plans its own
    arena, re-stated as litert)"``; under TFLM ``"…; TFLM does not use it unless it is written
    into the model (arena-viewer offline-plan)"``.
    """
    if not planner or is_runtime_plan(runtime, planner):
        return ""
    who = _RUNTIME_NAMES.get(runtime, runtime)
    if runtime == "tflm":
        return (f"what-if: {planner}'s layout; TFLM does not use it unless it is written into "
                "the model (arena-viewer offline-plan)")
    return (f"what-if: {planner}'s layout; {who} does not use it (it plans its own arena, "
            f"re-stated as {RUNTIME_PLANNERS.get(runtime, runtime)})")
