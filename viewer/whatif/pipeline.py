"""One call from a model file (plus what-if edits) to an analysis ready to plan.

Used the same way by the CLI (synchronously) and by the GUI's workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from viewer.analysis.intervals import analyze
from viewer.analysis.types import Analysis, Temporary
from viewer.model.reader import load_model
from viewer.model.types import Model
from viewer.whatif.edits import WhatIfEdits, apply_edits


@dataclass(frozen=True)
class Prepared:
    """A model, the subgraph chosen, the edits applied, and its analysis.

    Attributes
    ----------
    model : Model
    subgraph_index : int
    edits : WhatIfEdits or None
    analysis : Analysis
        Of the edited subgraph.
    estimated : bool
        Shapes come from our own inference rather than the runtime's.
    notes : tuple of str
    input_shapes : Mapping[int, tuple of int]
        Graph input tensor index -> shape after the edits (empty when nothing was edited).
    """

    model: Model
    subgraph_index: int
    edits: WhatIfEdits | None
    analysis: Analysis
    estimated: bool = False
    notes: tuple[str, ...] = ()
    input_shapes: Mapping[int, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)


def prepare(
    model: Model | str,
    subgraph_index: int = 0,
    edits: WhatIfEdits | None = None,
    *,
    temporaries: tuple[Temporary, ...] = (),
    shape_source: str = "auto",
) -> Prepared:
    """Load (if given a path), apply ``edits`` and analyse subgraph ``subgraph_index``.

    ``shape_source``: ``"auto"`` takes resized shapes from the LiteRT runtime (a subprocess,
    ~0.4 s) and falls back to our own inference; ``"inferred"`` uses only our inference (ms).

    Raises
    ------
    viewer.errors.ModelFormatError, viewer.errors.SubgraphError, viewer.errors.WhatIfError
    """
    if not isinstance(model, Model):
        model = load_model(model)
    edited = (apply_edits(model, subgraph_index, edits) if edits is None or edits.is_empty()
              else apply_edits(model, subgraph_index, edits, shape_source=shape_source))
    analysis = analyze(edited.subgraph, temporaries=temporaries, model=model)
    return Prepared(model, subgraph_index, edits, analysis, edited.estimated, edited.notes,
                    dict(edited.input_shapes))
