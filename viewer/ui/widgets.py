"""Small widgets the panels share: a combo box the wheel does not change unless it has focus,
and a one-line label that elides a long text and keeps all of it in its tooltip."""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
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

    A text of several lines (a TFLM status: head, LiteRT arena, what was not run) is shown on
    one line, its lines joined by " — ". :meth:`text` returns the whole text; the tooltip shows
    it too, as it was given (with any long error message readable), and the text is selectable.
    """

    JOIN = " — "

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setFixedHeight(self.fontMetrics().height() + 4)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt override)
        self._full = str(text)
        self._show()

    def text(self) -> str:  # noqa: D102
        return self._full

    def shown_text(self) -> str:
        """The text as drawn: one line, elided with "…" when it does not fit."""
        return super().text()

    def _one_line(self) -> str:
        return self.JOIN.join(ln.strip() for ln in self._full.splitlines() if ln.strip())

    def _elide(self) -> str:
        line = self._one_line()
        width = self.width() - 4
        if width <= 0:
            return line
        return QFontMetrics(self.font()).elidedText(line, Qt.TextElideMode.ElideRight, width)

    def _show(self) -> None:
        elided = self._elide()
        self.setToolTip(self._full if elided != self._full else "")
        super().setText(elided)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._show()


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


#: A command-line flag with its value (``--input-shape 1x?x?x3``, ``--budget 4MiB``), or a
#: shape (``1x256x256x3``, ``1x?x?x3``): kept on one line when a label wraps.
_UNBREAKABLE = re.compile(
    r"--[A-Za-z][\w-]*(?:[ =](?:[\w.:/]+=)?[\w.?]+(?:x[\w.?]+)*)?"
    r"|(?<![\w-])[\d?]+(?:x[\d?]+)+(?![\w-])")


#: U+2060 WORD JOINER: no line break here (Qt breaks after "-" and "?" even in a no-wrap span).
WORD_JOINER = "\u2060"


def keep_together(html_text: str) -> str:
    """``html_text`` (escaped HTML) with every flag and shape kept on one line: in a no-wrap
    span, with a word joiner after each "-" and "?" (line-break opportunities to Qt's text
    layout), so a wrapping label never breaks ``--input-shape 1x?x?x3`` after its "--" or
    inside the shape. The joiners are invisible; a copied flag carries them (the tooltip and
    the status bar have the plain text)."""
    def join(m):
        token = re.sub(r"([-?x])(?=.)", lambda c: c.group(1) + WORD_JOINER, m.group(0))
        return f'<span style="white-space:nowrap">{token}</span>'

    return _UNBREAKABLE.sub(join, html_text)


def install_clipboard_cleaner() -> None:
    """Drop the word joiners of :func:`keep_together` from whatever is copied to the clipboard,
    so a flag copied from a label (``--input-shape 1x?x?x3``) pastes into a shell as typed.
    Installed once per application; later calls do nothing."""
    app = QGuiApplication.instance()
    if app is None or app.property("arena_viewer_clipboard_cleaner"):
        return
    clipboard = QGuiApplication.clipboard()

    def clean() -> None:
        text = clipboard.text()
        if WORD_JOINER in text:
            clipboard.setText(text.replace(WORD_JOINER, ""))

    clipboard.dataChanged.connect(clean)
    app.setProperty("arena_viewer_clipboard_cleaner", True)


def plain_to_html(text: str) -> str:
    """Plain ``text`` as HTML for a rich-text label: escaped, line breaks kept, flags and
    shapes kept together (:func:`keep_together`)."""
    esc = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return keep_together(esc).replace("\n", "<br>")
