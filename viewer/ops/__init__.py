"""Operator knowledge in one place: one registry entry per operator (see :mod:`viewer.ops.registry`).

Shape inference (:mod:`viewer.whatif.shapes`), the usage-interval rules
(:mod:`viewer.analysis.intervals`) and tiling read it. No Qt; depends only on ``viewer.model``.
"""

from viewer.ops.registry import (
    REGISTRY,
    SHAPE_OPS,
    estimate_temporaries,
    get,
    macs,
    receptive_field,
    scale_temporary,
    subgraph_temporaries,
)
from viewer.ops.types import (
    InPlace,
    NotLocal,
    OpSpec,
    PersistentRoRule,
    Region,
    Shape,
    ShapeContext,
    ShapeError,
    TemporaryEstimate,
    broadcast,
)

__all__ = [
    "REGISTRY", "SHAPE_OPS", "get", "macs", "receptive_field", "estimate_temporaries",
    "subgraph_temporaries", "scale_temporary", "InPlace", "NotLocal", "OpSpec", "PersistentRoRule",
    "Region", "Shape", "ShapeContext", "ShapeError", "TemporaryEstimate", "broadcast",
]
