"""One exception hierarchy for everything a user can cause.

The CLI turns a :class:`ViewerError` into one line on stderr and a non-zero exit;
the GUI turns it into a dialog. Nothing else should reach a user.
"""

from __future__ import annotations

from pathlib import Path


class ViewerError(Exception):
    """Base class of every error Arena Viewer reports to a user.

    ``str(err)`` is the one line shown to the user; it names the file when there is one.
    """


class ModelFormatError(ViewerError):
    """The file is not a readable .tflite model.

    Parameters
    ----------
    path : str or Path
        The model file.
    step : str
        The parse step that failed, e.g. ``"file identifier"``, ``"subgraph 0 tensor 12"``.
    reason : str
        What is wrong, in plain words.
    """

    def __init__(self, path: str | Path, step: str, reason: str):
        self.path = str(path)
        self.step = step
        self.reason = reason
        super().__init__(f"{self.path}: {step}: {reason}")


class SubgraphError(ViewerError):
    """A subgraph index that the model does not have."""


class PlanningError(ViewerError):
    """A planner could not produce a plan (bad problem, unknown planner, cancelled)."""


class PlanCancelled(PlanningError):
    """A long-running planner was cancelled through its ``cancelled`` callback."""


class RuntimeProbeError(ViewerError):
    """The LiteRT runtime, run in a subprocess, failed, crashed or timed out."""


class WhatIfError(ViewerError):
    """A what-if edit the model cannot take (e.g. a resize through a fixed RESHAPE).

    ``fixed_size`` is True when a resize failed at an operator whose sizes the model fixes for
    its stored resolution, so rescaling them (``--rescale-fixed-sizes``, the window's "Rescale
    fixed sizes (estimated)") may let it through; each front end adds its own :data:`FIXED_SIZE_HINTS`.
    """

    def __init__(self, message: str = "", *, fixed_size: bool = False):
        super().__init__(message)
        self.fixed_size = bool(fixed_size)


#: What each front end suggests after a :class:`WhatIfError` with ``fixed_size``.
FIXED_SIZE_HINTS = {
    "cli": "; if the model fixes this size for its stored resolution, add --rescale-fixed-sizes "
           "to rescale its fixed sizes as a re-export would (estimated)",
    "window": "; if the model fixes this size for its stored resolution, tick \"Rescale fixed "
              "sizes (estimated)\" in the What if panel",
}


class SizeLimitError(ViewerError):
    """A tensor or an arena beyond what any device can hold (over 2^53 B; sums over 2^62 B)."""


class UsageError(ViewerError):
    """A bad command-line value (e.g. an unparseable size or shape)."""
