"""The what-if panel: input resolution / shape, batch, activation precision, device budget.

It only collects the user's choices and emits them; the main window applies them off the GUI
thread (``viewer.whatif.apply_edits`` -> analysis -> planning) and can show
:func:`viewer.whatif.budget.compare` against the baseline.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from viewer.model.types import Model
from viewer.ui.widgets import FocusWheelComboBox, FocusWheelDoubleSpinBox, FocusWheelSpinBox, WrapLabel, plain_to_html
from viewer.whatif.apply import ACTIVATION_DTYPES
from viewer.whatif.budget import WEIGHTS_MODES, BudgetSettings, compare  # noqa: F401 (compare re-exported)
from viewer.whatif.edits import WhatIfEdits
from viewer.whatif.verdict import batch_dimension_problem

#: The batch field's tooltip when dimension 0 is a batch.
BATCH_TIP = "dimension 0 of every input"

#: Square resolutions offered for an image (NHWC, rank-4) input.
PRESETS = (128, 224, 256, 320, 512, 1024)
#: Unit name -> bytes, for the budget and runtime overhead editors.
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
MAX_SIDE = 16384
_MODEL_DTYPE = "as in the model"


def _dims(shape) -> str:
    return "x".join(str(int(d)) for d in shape)


class _InputEditor(QWidget):
    """Shape editors of one graph input: full shape, and H x W (+ presets, keep aspect) for NHWC."""

    changed = Signal()

    def __init__(self, position: int, name: str, shape: tuple[int, ...], parent=None):
        super().__init__(parent)
        self.position = position
        self.name = name
        self.original = tuple(int(d) for d in shape)
        self.is_image = len(self.original) == 4
        self._updating = False
        lay = QFormLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        # A long input name goes above its field instead of widening the dock.
        lay.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.shape_edit = QLineEdit(_dims(self.original))
        self.shape_edit.setToolTip("full shape, dimensions separated by x (e.g. 1x512x512x3)")
        self.shape_edit.editingFinished.connect(self._on_shape_edit_finished)
        lay.addRow(f"{position}: {name[:40]}", self.shape_edit)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #b00020")
        self.error.hide()
        lay.addRow(self.error)
        if self.is_image:
            row = QHBoxLayout()
            self.h = FocusWheelSpinBox()
            self.w = FocusWheelSpinBox()
            for sb, v in ((self.h, self.original[1]), (self.w, self.original[2])):
                sb.setRange(1, MAX_SIDE)
                sb.setValue(max(1, v))
                sb.setKeyboardTracking(False)
            self.h.valueChanged.connect(self._on_h_value_changed)
            self.w.valueChanged.connect(self._on_w_value_changed)
            row.addWidget(self.h)
            row.addWidget(QLabel("x"))
            row.addWidget(self.w)
            self.keep_aspect = QCheckBox("keep aspect")
            self.keep_aspect.setChecked(True)
            row.addWidget(self.keep_aspect)
            lay.addRow("H x W", row)
            self.presets = FocusWheelComboBox()
            self.presets.addItem("preset...")
            for p in PRESETS:
                self.presets.addItem(f"{p} x {p}", p)
            self.presets.activated.connect(self._on_presets_activated)
            lay.addRow("", self.presets)

    # -- state -------------------------------------------------------------------------------
    def shape(self) -> tuple[int, ...]:
        """The shape the editors hold (the full-shape text, kept in sync with H x W)."""
        return tuple(int(d) for d in re.split(r"[x,]", self.shape_edit.text()))

    def set_hw(self, h: int, w: int) -> None:
        """Set H and W (NHWC image inputs only); emits ``changed`` once."""
        if not self.is_image:
            return
        self._updating = True
        self.h.setValue(h)
        self.w.setValue(w)
        self._updating = False
        self._sync_text_from_hw()

    def reset(self) -> None:
        self.show_shape(self.original)

    def show_shape(self, shape) -> None:
        """Show ``shape`` in the editors without emitting ``changed``."""
        shape = tuple(int(d) for d in shape)
        self._updating = True
        self.shape_edit.setText(_dims(shape))
        if self.is_image and len(shape) == 4:
            self.h.setValue(shape[1])
            self.w.setValue(shape[2])
        self._updating = False
        self.error.hide()

    # -- slots -------------------------------------------------------------------------------
    def _on_h_value_changed(self, h: int) -> None:
        if self._updating:
            return
        if self.keep_aspect.isChecked() and self.original[1] > 0:
            self._updating = True
            self.w.setValue(max(1, round(h * self.original[2] / self.original[1])))
            self._updating = False
        self._sync_text_from_hw()

    def _on_w_value_changed(self, w: int) -> None:
        if self._updating:
            return
        if self.keep_aspect.isChecked() and self.original[2] > 0:
            self._updating = True
            self.h.setValue(max(1, round(w * self.original[1] / self.original[2])))
            self._updating = False
        self._sync_text_from_hw()

    def _on_presets_activated(self, index: int) -> None:
        side = self.presets.itemData(index)
        if side:
            # A preset sets H; with keep aspect W follows the model's aspect ratio.
            w = round(side * self.original[2] / self.original[1]) if self.keep_aspect.isChecked() else side
            self.set_hw(int(side), max(1, int(w)))
        self.presets.setCurrentIndex(0)

    def _sync_text_from_hw(self) -> None:
        cur = list(self.shape())
        cur[1], cur[2] = self.h.value(), self.w.value()
        self.shape_edit.setText(_dims(cur))
        self.error.hide()
        self.changed.emit()

    def _on_shape_edit_finished(self) -> None:
        text = self.shape_edit.text().strip().lower().replace(" ", "")
        if not re.fullmatch(r"\d+(?:[x,]\d+)*", text):
            self._show_error(f"cannot read shape {text!r}: use e.g. {_dims(self.original)}")
            return
        dims = tuple(int(d) for d in re.split(r"[x,]", text))
        if len(dims) != len(self.original) or min(dims) < 1:
            self._show_error(f"need {len(self.original)} dimensions, each >= 1")
            return
        self.error.hide()
        if self.is_image:
            self._updating = True
            self.h.setValue(dims[1])
            self.w.setValue(dims[2])
            self._updating = False
        self.shape_edit.setText(_dims(dims))
        self.changed.emit()

    def _show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()


class _SizeEditor(QWidget):
    """A byte size: value + unit."""

    changed = Signal()

    def __init__(self, value: float, unit: str, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.value = FocusWheelDoubleSpinBox()
        self.value.setDecimals(2)
        self.value.setRange(0.0, 1e9)
        self.value.setValue(value)
        self.value.setKeyboardTracking(False)
        self.unit = FocusWheelComboBox()
        self.unit.addItems(list(UNITS))
        self.unit.setCurrentText(unit)
        lay.addWidget(self.value, 1)
        lay.addWidget(self.unit)
        self.value.valueChanged.connect(self.changed)
        self.unit.currentIndexChanged.connect(self.changed)

    def nbytes(self) -> int:
        return int(round(self.value.value() * UNITS[self.unit.currentText()]))


class WhatIfPanel(QWidget):
    """Per-input shape (H x W, presets, keep aspect), batch, activation dtype and device budget.

    Signals
    -------
    edits_changed(WhatIfEdits)
        Whenever a shape, the batch or the dtype changes. Input keys are input positions (int).
    budget_changed(BudgetSettings)
        Whenever the budget, the runtime overhead or the weights mode changes.
    reset_requested()
        The Reset edits button: every edit goes (the window's document also drops the
        per-tensor storage what-ifs and puts these controls back with :meth:`show_edits`).
    """

    edits_changed = Signal(object)
    budget_changed = Signal(object)
    reset_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self._inputs: list[_InputEditor] = []
        self._quiet = False
        outer = QVBoxLayout(self)

        self.shapes_box = QGroupBox("Inputs (resolution / shape)")
        self.shapes_layout = QVBoxLayout(self.shapes_box)
        self.no_model = QLabel("no model")
        self.shapes_layout.addWidget(self.no_model)
        self.rescale = QCheckBox("Rescale fixed sizes (estimated)")
        self.rescale.setToolTip(
            "With a new resolution, also rescale the sizes the model fixes for its stored one "
            "(RESHAPE targets, RESIZE sizes, global pooling windows), as a re-export would. The "
            "runtime cannot run the stored model so: shapes come from our inference, unmeasured.")
        self.rescale.toggled.connect(self._on_edit_control_changed)
        outer.addWidget(self.shapes_box)
        self.shapes_layout.addWidget(self.rescale)

        box = QGroupBox("Batch and precision")
        form = QFormLayout(box)
        self.batch = FocusWheelSpinBox()
        self.batch.setRange(1, 4096)
        self.batch.setKeyboardTracking(False)
        self.batch.setToolTip(BATCH_TIP)
        self.batch.valueChanged.connect(self._on_edit_control_changed)
        form.addRow("batch", self.batch)
        self.dtype = FocusWheelComboBox()
        self.dtype.addItem(_MODEL_DTYPE, None)
        for d in ACTIVATION_DTYPES:
            self.dtype.addItem(d, d)
        self.dtype.setToolTip("storage what-if for non-constant float tensors; bytes only, not an accuracy claim")
        self.dtype.currentIndexChanged.connect(self._on_edit_control_changed)
        form.addRow("activations", self.dtype)
        outer.addWidget(box)

        box = QGroupBox("Device budget")
        form = QFormLayout(box)
        self.use_budget = QCheckBox("check against a limit")
        self.use_budget.toggled.connect(self._on_budget_control_changed)
        form.addRow(self.use_budget)
        self.limit = _SizeEditor(4.0, "MiB")
        self.limit.changed.connect(self._on_budget_control_changed)
        form.addRow("limit", self.limit)
        self.runtime = _SizeEditor(0.0, "KiB")
        self.runtime.value.setSpecialValueText("measured (as check)")  # 0: check's measured term
        self.runtime.setToolTip("0 (\"measured\"): the overhead check measures, for the file as "
                                "stored; a size here is counted instead (--runtime-overhead)")
        self.runtime.changed.connect(self._on_budget_control_changed)
        form.addRow("runtime overhead", self.runtime)
        self.weights = FocusWheelComboBox()
        self.weights.addItem("copied (counted)", "copied")
        self.weights.addItem("mapped (page cache, not counted)", "mapped")
        self.weights.currentIndexChanged.connect(self._on_budget_control_changed)
        form.addRow("weights", self.weights)
        self.verdict = WrapLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setToolTip("the shown plan against the limit (details in the Summary tab)")
        self.verdict.hide()
        form.addRow(self.verdict)
        outer.addWidget(box)

        self.reset_button = QPushButton("Reset edits")
        self.reset_button.setToolTip("Undo every edit: shapes, batch, precision and the per-tensor "
                                     "storage what-ifs of the chart's context menu")
        self.reset_button.clicked.connect(self.reset_requested)
        outer.addWidget(self.reset_button)
        outer.addStretch(1)

    # -- public ------------------------------------------------------------------------------
    def set_model(self, model: Model | None, subgraph: int = 0) -> None:
        """Rebuild the input editors for ``model``'s subgraph ``subgraph``; edits are reset.

        Emits nothing (the caller already shows the baseline).
        """
        for ed in self._inputs:
            ed.setParent(None)
            ed.deleteLater()
        self._inputs = []
        self._quiet = True
        self.batch.setValue(1)
        self.dtype.setCurrentIndex(0)
        self.rescale.setChecked(False)
        self._quiet = False
        self._show_batch_problem("")
        if model is None:
            self.no_model.show()
            return
        sg = model.subgraph(subgraph)
        inputs = [t for t in sg.inputs if t >= 0]
        self.no_model.setVisible(not inputs)
        self.no_model.setText("no inputs")
        for k, t in enumerate(inputs):
            tensor = sg.tensors[t]
            ed = _InputEditor(k, tensor.name, tensor.shape)
            ed.changed.connect(self._on_edit_control_changed)
            self.shapes_layout.insertWidget(self.shapes_layout.indexOf(self.rescale), ed)
            self._inputs.append(ed)
        self.batch.setValue(max(1, sg.tensors[inputs[0]].shape[0]) if inputs and sg.tensors[inputs[0]].shape else 1)
        self._show_batch_problem(batch_dimension_problem(model, subgraph) if inputs else "no inputs")

    def _show_batch_problem(self, why: str) -> None:
        """The batch field as ``check`` sees the model: disabled and showing "none" (the
        reason as its tooltip) when dimension 0 is no batch (scalars, a conformer's frames)."""
        self._quiet = True
        try:
            self.batch.setEnabled(not why)
            self.batch.setSpecialValueText("none" if why else "")
            if why:
                self.batch.setValue(self.batch.minimum())
            self.batch.setToolTip(f"no batch: {why}" if why else BATCH_TIP)
        finally:
            self._quiet = False

    def set_runtime(self, runtime: str) -> None:
        """Weights as ``check --runtime RUNTIME`` counts them by default: LiteRT copies them into
        RAM (counted); TFLite Micro reads them from flash (not counted unless ``--weights
        copied``). Emits ``budget_changed`` when the mode changes."""
        if runtime == getattr(self, "_runtime", "litert"):
            return
        self._runtime = runtime
        tflm = runtime == "tflm"
        self.weights.setItemText(0, "copied into RAM (counted)" if tflm else "copied (counted)")
        self.weights.setItemText(1, "in flash (not counted)" if tflm else "mapped (page cache, not counted)")
        self.weights.setCurrentIndex(self.weights.findData("mapped" if tflm else "copied"))

    def input_editors(self) -> list[_InputEditor]:
        return list(self._inputs)

    def edits(self) -> WhatIfEdits:
        """The edits the controls describe; empty when nothing differs from the model."""
        shapes = {}
        for ed in self._inputs:
            try:
                s = ed.shape()
            except ValueError:
                continue
            if s != ed.original and len(s) == len(ed.original):
                shapes[ed.position] = s
        base_batch = self._inputs[0].original[0] if self._inputs and self._inputs[0].original else 1
        batch = self.batch.value() if self.batch.value() != base_batch else None
        if not self.batch.isEnabled():
            batch = None  # dimension 0 is no batch (see _show_batch_problem)
        return WhatIfEdits(input_shapes=shapes, batch=batch, activation_dtype=self.dtype.currentData(),
                           rescale_fixed_sizes=self.rescale.isChecked())

    def budget(self) -> BudgetSettings:
        """The budget the controls describe (``limit_bytes`` None when unchecked)."""
        return BudgetSettings(
            self.limit.nbytes() if self.use_budget.isChecked() else None,
            self.runtime.nbytes(),
            self.weights.currentData(),
        )

    def show_edits(self, edits: WhatIfEdits | None) -> None:
        """Set the controls to ``edits`` (None: the model's own shapes, batch and dtypes).

        Emits nothing: the window calls it to go back to the edits that are applied after it
        rejected a newer one. Input keys are input positions (int); ``tensor_dtypes`` are not
        shown here.
        """
        shapes = dict(edits.input_shapes) if edits is not None else {}
        self._quiet = True
        try:
            for ed in self._inputs:
                s = shapes.get(ed.position)
                ed.show_shape(s if s is not None and len(s) == len(ed.original) else ed.original)
            base_batch = self._inputs[0].original[0] if self._inputs and self._inputs[0].original else 1
            if self.batch.isEnabled():
                self.batch.setValue(max(1, edits.batch if edits is not None and edits.batch else base_batch))
            k = self.dtype.findData(edits.activation_dtype) if edits is not None else 0
            self.dtype.setCurrentIndex(max(0, k))
            self.rescale.setChecked(edits is not None and bool(edits.rescale_fixed_sizes))
        finally:
            self._quiet = False

    def set_verdict(self, text: str, fits: bool | None = None) -> None:
        """One line under the budget inputs: green when ``fits``, red when not; hidden when empty."""
        color = "#1a7f37" if fits else "#c62828"
        html = plain_to_html(text)  # a flag or shape in it never breaks across lines
        self.verdict.setText(html if "white-space" in html else text)
        self.verdict.setStyleSheet(f"color: {color}" if fits is not None else "")
        self.verdict.setVisible(bool(text))

    def reset(self) -> None:
        """Back to the model's own shapes, batch and dtypes; emits ``edits_changed`` once."""
        self._quiet = True
        for ed in self._inputs:
            ed.reset()
        base_batch = self._inputs[0].original[0] if self._inputs and self._inputs[0].original else 1
        if self.batch.isEnabled():
            self.batch.setValue(max(1, base_batch))
        self.dtype.setCurrentIndex(0)
        self.rescale.setChecked(False)
        self._quiet = False
        self.edits_changed.emit(self.edits())

    # -- slots -------------------------------------------------------------------------------
    def _on_edit_control_changed(self, *_args) -> None:
        if not self._quiet:
            self.edits_changed.emit(self.edits())

    def _on_budget_control_changed(self, *_args) -> None:
        self.budget_changed.emit(self.budget())
