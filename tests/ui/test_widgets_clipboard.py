"""A flag copied from a wrapping label pastes as typed (no invisible word joiners)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel

from viewer.ui import widgets
from viewer.ui.main_window import MainWindow


def test_flag_copied_from_a_label_has_no_word_joiners(qtbot, tmp_path):
    from PySide6.QtCore import QSettings
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), measure=False)
    qtbot.addWidget(w)
    text = "cannot tell: give --input-shape 1x?x?x3"
    label = QLabel(w)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                  | Qt.TextInteractionFlag.TextSelectableByKeyboard)
    label.setText(widgets.plain_to_html(text))
    assert widgets.WORD_JOINER in label.text()  # the label keeps the flag whole when it wraps
    label.show()
    label.setFocus()
    from PySide6.QtGui import QTextDocument
    doc = QTextDocument()
    doc.setHtml(label.text())
    label.setSelection(0, doc.characterCount() - 1)
    assert widgets.WORD_JOINER in label.selectedText()
    qtbot.keyClick(label, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() != "", timeout=5000)
    assert QGuiApplication.clipboard().text() == text
    w.runner.shutdown()
