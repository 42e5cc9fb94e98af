"""The open document, without Qt: :class:`Document` (state and callbacks) and its background
work (:mod:`viewer.document.work`). Sits between ``whatif`` and ``export`` in the layering."""

from viewer.document.state import EVENTS, RUNTIMES, Callbacks, Document

__all__ = ["Callbacks", "Document", "EVENTS", "RUNTIMES"]
