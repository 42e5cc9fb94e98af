"""Small dialogs: export size, overwrite confirmation, errors, keyboard shortcuts."""

from __future__ import annotations

import os

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMessageBox,
    QSpinBox,
    QWidget,
)

IMAGE_FORMATS = ("png", "svg")


def image_size_problem(width: int, height: int, fmt: str) -> str:
    """Why :func:`viewer.export.image.check_output` would refuse a ``width`` x ``height`` px
    image of format ``fmt`` ("png" or "svg"), in its words; "" when it would not."""
    from viewer.export.image import MAX_SIZE, MIN_SIZE, PNG_MAX_PIXELS

    for name, v in (("width", width), ("height", height)):
        if not MIN_SIZE <= v <= MAX_SIZE:
            return f"{name} {v} px is out of range ({MIN_SIZE}..{MAX_SIZE})"
    if fmt == "png" and width * height > PNG_MAX_PIXELS:
        return (f"{width}x{height} px is {width * height / 2**20:.1f} Mi px, above the PNG limit of "
                f"{PNG_MAX_PIXELS // 2**20} Mi px (8192x8192); choose SVG for a larger chart")
    return ""


class ExportImageDialog(QDialog):
    """Ask for the exported image's size in pixels and its format (PNG or SVG).

    The size boxes take exactly what the export takes (:data:`viewer.export.image.MIN_SIZE`
    .. ``MAX_SIZE`` per side; a value typed outside goes to the nearest limit), the line under
    them says so, and a PNG above ``PNG_MAX_PIXELS`` in all is refused here, with the reason,
    before a file is asked for.
    """

    def __init__(self, parent: QWidget | None = None, width: int = 1600, height: int = 900,
                 fmt: str = "png"):
        from viewer.export.image import MAX_SIZE, MIN_SIZE, PNG_MAX_PIXELS

        super().__init__(parent)
        self.setWindowTitle("Export image")
        form = QFormLayout(self)
        self.width_spin, self.height_spin = QSpinBox(), QSpinBox()
        for spin, value in ((self.width_spin, width), (self.height_spin, height)):
            spin.setRange(MIN_SIZE, MAX_SIZE)
            spin.setCorrectionMode(QSpinBox.CorrectionMode.CorrectToNearestValue)
            spin.setValue(value)
            spin.setSuffix(" px")
            spin.valueChanged.connect(self._on_size_changed)
        self.format_combo = QComboBox()
        for f in IMAGE_FORMATS:
            self.format_combo.addItem(f.upper(), f)
        self.format_combo.setCurrentIndex(max(0, self.format_combo.findData(fmt)))
        self.format_combo.currentIndexChanged.connect(self._on_size_changed)
        self.limits = QLabel(f"{MIN_SIZE}..{MAX_SIZE} px per side; a PNG has at most "
                             f"{int(PNG_MAX_PIXELS ** 0.5)}x{int(PNG_MAX_PIXELS ** 0.5)} pixels in all "
                             "(SVG: any size)")
        self.limits.setWordWrap(True)
        self.problem = QLabel("")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c62828")
        self.problem.hide()
        form.addRow("Width", self.width_spin)
        form.addRow("Height", self.height_spin)
        form.addRow("Format", self.format_combo)
        form.addRow(self.limits)
        form.addRow(self.problem)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self._on_size_changed()

    def _on_size_changed(self, *_args) -> None:
        why = image_size_problem(*self.values())
        self.problem.setText(why)
        self.problem.setVisible(bool(why))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not why)

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
