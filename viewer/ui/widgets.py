"""Small widgets the panels share: a combo box the wheel does not change unless it has focus,
and a one-line label that elides a long text and keeps all of it in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QLabel, QSizePolicy


class FocusWheelComboBox(QComboBox):
    """A :class:`QComboBox` that takes the mouse wheel only when it has keyboard focus.

    Scrolling a panel over an unfocused combo box scrolls the panel (the event goes to the
    parent) instead of silently switching the planner or the colour mode.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # no focus from the wheel itself

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if self.hasFocus():
            super().wheelEvent(event)
        else:
            event.ignore()


class ElidedLabel(QLabel):
    """One line of plain text, elided at the right to the width it has.

    :meth:`text` returns the whole text; the tooltip shows it too (with any long error message
    readable), and the text is selectable.
    """

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        self._full = str(text)
        self.setToolTip(self._full if self._elide() != self._full else "")
        super().setText(self._elide())

    def text(self) -> str:  # noqa: D102
        return self._full

    def shown_text(self) -> str:
        """The text as drawn (elided with "…" when it does not fit)."""
        return super().text()

    def _elide(self) -> str:
        width = self.width() - 4
        if width <= 0:
            return self._full
        return QFontMetrics(self.font()).elidedText(self._full, Qt.TextElideMode.ElideRight, width)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        elided = self._elide()
        self.setToolTip(self._full if elided != self._full else "")
        super().setText(elided)
