"""The footprint's records: its terms (each with its source), the other subgraphs' arenas,
and :class:`Footprint` itself, as :func:`viewer.whatif.footprint.footprint` returns them."""

from __future__ import annotations

from dataclasses import dataclass, field

from viewer.analysis.types import Analysis
from viewer.planning.types import Plan


@dataclass(frozen=True)
class SubgraphArena:
    """The arena of one subgraph reached through control flow.

    Attributes
    ----------
    index : int
    name : str
    arena_bytes : int
        The runtime's arena of that subgraph when measured, else planned with the same
        planner (tensors only).
    lower_bound_bytes : int
    reached_by : str
        E.g. ``"#3 WHILE of subgraph 0"``.
    source : str
        ``"measured"`` (the runtime's arena of that subgraph as its caller prepared it) or
        ``"planned"`` (its tensors only).
    """

    index: int
    name: str
    arena_bytes: int
    lower_bound_bytes: int
    reached_by: str
    source: str = "planned"


#: Where a term's bytes come from.
SOURCE_MEASURED = "measured"  # read back from the runtime (or the model file, for weights)
SOURCE_ESTIMATED = "estimated"  # computed from a measurement by a stated rule
SOURCE_PLANNED = "planned"  # one of our planners over known tensors
SOURCE_GIVEN = "given"  # given by the user (runtime overhead)
SOURCE_UNKNOWN = "unknown"  # not measured: 0 B counted, and an unknown says so
SOURCES = (SOURCE_MEASURED, SOURCE_ESTIMATED, SOURCE_PLANNED, SOURCE_GIVEN, SOURCE_UNKNOWN)


@dataclass(frozen=True)
class Term:
    """One term of the footprint sum.

    Attributes
    ----------
    name : str
        E.g. ``"tensor arena"``, ``"persistent"``, ``"subgraph 2 arena"``.
    bytes : int
    source : str
        One of :data:`SOURCES`.
    method : str
        One phrase: how it was measured, estimated or planned.
    counted : bool
        False for a term shown but not added (weights mapped from the file).
    margin : int
        The measurement's stated margin, bytes: the true figure is within ``bytes ± margin``
        (0: exact, or no stated margin). The measured runtime overhead has one page.
    """

    name: str
    bytes: int
    source: str
    method: str = ""
    counted: bool = True
    margin: int = 0

    def as_dict(self) -> dict:
        return {"name": self.name, "bytes": int(self.bytes), "source": self.source,
                "method": self.method, "counted": self.counted, "margin_bytes": int(self.margin)}


@dataclass(frozen=True)
class Footprint:
    """Bytes a model needs beyond its file-backed weights, for one entry subgraph.

    Attributes
    ----------
    planner : str
        The planner whose arena counts.
    analysis : Analysis
        Of the entry subgraph; includes the runtime's kernel temporaries when measured (or
        their estimates under a storage what-if).
    plan : Plan
        The planner's plan of ``analysis``.
    tensor_lower_bound_bytes : int or None
        Widest operator's breadth over the model's own tensors (no temporaries); None when
        that analysis was not needed (measured: the runtime's tensors are analysed instead).
    planned_tensor_arena_bytes : int or None
        The planner's arena over the model's own tensors only (None when the runtime
        answered: not planned).
    arena_bytes : int
        The arena that counts (the ``tensor arena`` term): the runtime's own arena when
        measured with the ``litert`` planner, else the planner's arena (kernel temporaries
        included when measured or estimated).
    measured : bool
        Kernel temporaries come from the runtime (possibly rescaled: see ``arena_source``).
    measured_arena_bytes : int or None
        The runtime's own arena span (LiteRT's planner), when measured at these dtypes.
    temporaries_count, temporaries_bytes : int
        Kernel temporaries in the entry subgraph's arena (0 when not measured).
    largest_temporary : tuple (tensor id, operator index, op name, bytes) or None
    persistent_bytes : int
        Anonymous memory outside the arena: prepare-time folded outputs, variables, resource
        handles (the runtime's figures when measured, else our analysis').
    other_subgraphs : tuple of SubgraphArena
        Arenas of the subgraphs reached through control flow.
    weights_bytes : int
        File-backed constant buffers.
    notes : tuple of str
    terms : tuple of Term
        The arena, persistent and other subgraphs' terms, each with its source.
    unknowns : tuple of str
        What could not be counted, one phrase each (e.g. a custom op the runtime cannot load,
        an unresolved dynamic dimension, kernel temporaries not measured). When non-empty the
        sum is a lower bound: a verdict can only be "does not fit" or "cannot tell".
    probe : RuntimeProbe or None
        The runtime's answer the terms come from.
    """

    planner: str
    analysis: Analysis
    plan: Plan
    tensor_lower_bound_bytes: int | None
    planned_tensor_arena_bytes: int | None
    arena_bytes: int
    measured: bool
    measured_arena_bytes: int | None
    temporaries_count: int
    temporaries_bytes: int
    largest_temporary: tuple[int, int, str, int] | None
    persistent_bytes: int
    other_subgraphs: tuple[SubgraphArena, ...] = ()
    weights_bytes: int = 0
    notes: tuple[str, ...] = field(default=())
    terms: tuple[Term, ...] = ()
    unknowns: tuple[str, ...] = ()
    probe: object = field(default=None, compare=False, repr=False)
    #: :class:`viewer.whatif.invoke_sizing.InvokeSizing` when LiteRT sized tensors during Invoke
    #: (the arena is then the one of one synthetic invoke), else None.
    invoke_sizing: object = None

    @property
    def other_subgraphs_bytes(self) -> int:
        return sum(s.arena_bytes for s in self.other_subgraphs)

    @property
    def anonymous_bytes(self) -> int:
        """Arena + other subgraphs' arenas + persistent: memory that cannot be reclaimed."""
        return self.arena_bytes + self.other_subgraphs_bytes + self.persistent_bytes

    @property
    def arena_term(self) -> Term:
        return self.terms[0]

    @property
    def temporaries_included(self) -> bool:
        """The arena term holds the kernel temporaries (measured or estimated)."""
        return self.arena_term.source in (SOURCE_MEASURED, SOURCE_ESTIMATED) or self.measured

    @property
    def complete(self) -> bool:
        """Nothing unknown: the sum is the footprint, not a lower bound."""
        return not self.unknowns
