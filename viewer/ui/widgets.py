"""Small widgets the panels share: a combo box the wheel does not change unless it has focus,
and a one-line label that elides a long text and keeps all of it in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QFrame, QLabel, QScrollArea, QSizePolicy, QSpinBox, QWidget


class _FocusWheel:
    """Takes the mouse wheel only with keyboard focus: scrolling a panel over an unfocused
    combo or spin box scrolls the panel (the event goes to the parent) instead of silently
    switching the planner or re-planning at another batch."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # no focus from the wheel itself

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if self.hasFocus():
            super().wheelEvent(event)
        else:
            event.ignore()


class FocusWheelComboBox(_FocusWheel, QComboBox):
    """A :class:`QComboBox` that takes the wheel only when focused."""


class FocusWheelSpinBox(_FocusWheel, QSpinBox):
    """A :class:`QSpinBox` that takes the wheel only when focused."""


class FocusWheelDoubleSpinBox(_FocusWheel, QDoubleSpinBox):
    """A :class:`QDoubleSpinBox` that takes the wheel only when focused."""


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


class WrapLabel(QLabel):
    """A word-wrapped label that is always as tall as its text needs at its width.

    Layouts (QFormLayout in a scroll area above all) size a wrapped :class:`QLabel` from its
    unwrapped size hint and cut the lines that do not fit; this one raises its minimum height
    to ``heightForWidth(width)`` whenever its width or text changes. Its text is selectable.
    """

    def __init__(self, text: str = "", parent=None):
        super().__init__(text, parent)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        super().setText(text)
        self._fit_height()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_height()

    def _fit_height(self) -> None:
        if self.width() > 0:
            old = self.minimumHeight()
            super().setMinimumHeight(0)  # QLabel's heightForWidth never goes below the minimum
            h = self.heightForWidth(self.width())
            super().setMinimumHeight(h if h > 0 else old)


class VerticalScrollArea(QScrollArea):
    """Scrolls its widget vertically only; as wide as the widget needs (its minimum width plus
    the scroll bar), so a dock holding it keeps every row whole."""

    def __init__(self, widget: QWidget, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidget(widget)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's name)
        if obj is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # the widget's minimum width changed: the dock follows
        return super().eventFilter(obj, event)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        hint = super().minimumSizeHint()
        w = self.widget()
        if w is None:
            return hint
        return QSize(w.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width(), hint.height())
