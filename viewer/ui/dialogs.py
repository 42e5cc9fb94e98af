"""Small dialogs: export size, overwrite confirmation, errors, keyboard shortcuts."""

from __future__ import annotations

import os

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QMessageBox,
    QSpinBox,
    QWidget,
)

IMAGE_FORMATS = ("png", "svg")


class ExportImageDialog(QDialog):
    """Ask for the exported image's size in pixels and its format (PNG or SVG)."""

    def __init__(self, parent: QWidget | None = None, width: int = 1600, height: int = 900,
                 fmt: str = "png"):
        super().__init__(parent)
        self.setWindowTitle("Export image")
        form = QFormLayout(self)
        self.width_spin = QSpinBox()
        self.width_spin.setRange(200, 16000)
        self.width_spin.setValue(width)
        self.width_spin.setSuffix(" px")
        self.height_spin = QSpinBox()
        self.height_spin.setRange(150, 16000)
        self.height_spin.setValue(height)
        self.height_spin.setSuffix(" px")
        self.format_combo = QComboBox()
        for f in IMAGE_FORMATS:
            self.format_combo.addItem(f.upper(), f)
        self.format_combo.setCurrentIndex(max(0, self.format_combo.findData(fmt)))
        form.addRow("Width", self.width_spin)
        form.addRow("Height", self.height_spin)
        form.addRow("Format", self.format_combo)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[int, int, str]:
        """``(width, height, format)``."""
        return self.width_spin.value(), self.height_spin.value(), self.format_combo.currentData()


def confirm_overwrite(parent: QWidget | None, path: str) -> bool:
    """True when ``path`` does not exist or the user agrees to replace it."""
    if not os.path.exists(path):
        return True
    answer = QMessageBox.question(
        parent, "Replace file?",
        f"{path} already exists. Replace it?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes


def show_error(parent: QWidget | None, title: str, message: str) -> None:
    """A modal warning with the one-line reason."""
    QMessageBox.warning(parent, title, message)


SHORTCUTS = (
    ("Ctrl+O", "Open a model"),
    ("Ctrl+E", "Export the chart as PNG/SVG"),
    ("Ctrl+Shift+E", "Export the JSON report"),
    ("Ctrl+F", "Search tensors"),
    ("Ctrl+] / Ctrl+[", "Next / previous planner"),
    ("Ctrl+0", "Reset the chart's zoom"),
    ("Ctrl+K", "Colour by tensor kind / producer op"),
    ("Ctrl+T", "Include kernel temporaries (when measured)"),
    ("Ctrl+B", "Compare with the baseline (the model as stored) or the other model"),
    ("Ctrl+Shift+M", "Compare with another model"),
    ("Ctrl+Shift+O", "Optimize: the exact planner, proven optimal or within X % of its bound"),
    ("Ctrl+Shift+R", "Reorder operators to lower the peak"),
    ("Esc", "Clear the selection; cancel planning, optimize or reorder"),
    ("Ctrl+Q", "Quit"),
    ("F1", "These keyboard shortcuts"),
)


def show_shortcuts(parent: QWidget | None) -> None:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in SHORTCUTS)
    QMessageBox.information(parent, "Keyboard shortcuts", f"<table>{rows}</table>")
