"""The runtime's own anonymous memory, measured in a fresh LiteRT process.

:func:`measure_overhead` runs the child's ``overhead`` mode (:mod:`viewer.runtime._child_overhead`):
``Pss_Anon`` of ``/proc/self/smaps_rollup`` after ``allocate_tensors()`` and one ``invoke()`` on
the probe's synthetic inputs, minus the same figure just before the interpreter was built
(numpy, LiteRT imported; inputs already built). ``check`` subtracts the terms it already counts
(arena, persistent, other subgraphs' arenas) from that growth to get the runtime overhead term.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.runtime.probe import _run_child, display_path, model_file_error, runtime_path

#: Resolvers: LiteRT's builtin kernels only (the probe's configuration), or the stock
#: interpreter's default (XNNPACK delegate applied).
RESOLVERS = ("builtin", "default")

#: The configuration each resolver measures, as the verdict names it.
CONFIGURATIONS = {
    "builtin": "LiteRT without default delegates (XNNPACK off)",
    "default": "LiteRT with its default delegates (XNNPACK on)",
}


@dataclass(frozen=True)
class OverheadMeasurement:
    """One measured interpreter.

    Attributes
    ----------
    resolver : str
        One of :data:`RESOLVERS`.
    grown_bytes : int or None
        Pss_Anon after allocate_tensors() and one Invoke minus before the interpreter was built,
        bytes; None when not measured (``error`` says why).
    error : str
    """

    resolver: str
    grown_bytes: int | None
    error: str = ""


def measure_overhead(path, resolver: str = "builtin", timeout: float = 120.0) -> OverheadMeasurement:
    """Anonymous memory one interpreter of ``path`` adds (see the module docstring).

    Never raises for a runtime failure: ``grown_bytes`` is then None and ``error`` one line.
    """
    path = str(path)
    bad = model_file_error(path)
    if bad is not None:
        return OverheadMeasurement(resolver, None, display_path(bad))
    with runtime_path(path) as child_path:
        raw = _run_child(["overhead", child_path, "--resolver", resolver], display_path(path),
                         timeout, "measuring the runtime's anonymous memory")
    if not raw.get("ok"):
        return OverheadMeasurement(resolver, None, str(raw.get("error")))
    grown = raw.get("grown_bytes")
    if grown is None:
        return OverheadMeasurement(resolver, None, "/proc/self/smaps_rollup is not readable here")
    return OverheadMeasurement(resolver, int(grown))
