"""What a :class:`~viewer.document.state.Document` tells its renderer: the named callbacks
(:data:`EVENTS`), the plain-callable registry that carries them (:class:`Callbacks`) and the
status bar's verb for each kind of work (:data:`VERBS`). No Qt (napari's ``EventEmitter`` idea,
without its machinery)."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

#: The callbacks a :class:`Document` calls, and their arguments.
EVENTS = {
    "work_requested": "(request, fn, kind): run fn(request, progress, cancelled), then receive()",
    "model_changed": "(response): another model or subgraph is shown (edit controls reset)",
    "shown": "(): the shown response, planner or temporaries view changed: redraw",
    "planner_changed": "(name): another plan of the same response is shown",
    "selection_changed": "(tensor or None)",
    "edits_restored": "(edits or None): the edit controls go back to these, without re-planning",
    "status": "(text): one line for the status bar",
    "failed": "(kind, message): work failed (message is one line)",
    "cancelled": "(kind): the work was cancelled; the view is unchanged",
    "other_changed": "(response or None): the second model the compare view shows opened or closed",
    "runtime_changed": "(runtime): the runtime target went back to the shown view's (a switch failed)",
}

#: What the status bar says while work of each kind runs ("Opening x.tflite…").
VERBS = {"open": "Opening", "subgraph": "Analysing subgraph of",
         "what-if": "Confirming what-if with the runtime for",
         "what-if-estimate": "Estimating what-if for", "optimize": "Optimizing the arena of",
         "reorder": "Reordering operators of", "other-model": "Opening for comparison"}


class Callbacks:
    """Named lists of plain callables (the document's way to say what changed)."""

    def __init__(self, names):
        self._names = frozenset(names)
        self._callbacks: dict[str, list[Callable]] = defaultdict(list)

    def connect(self, name: str, callback: Callable) -> None:
        """Call ``callback(*args)`` on every :meth:`emit` of ``name``.

        Raises
        ------
        KeyError
            For a name the document does not emit.
        """
        if name not in self._names:
            raise KeyError(f"no such document event {name!r}; one of {sorted(self._names)}")
        self._callbacks[name].append(callback)

    def disconnect(self, name: str, callback: Callable) -> None:
        self._callbacks[name].remove(callback)

    def emit(self, name: str, *args) -> None:
        for cb in list(self._callbacks[name]):
            cb(*args)

