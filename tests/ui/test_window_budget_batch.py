"""The window's largest batch is ``check``'s (newuser finding 2): the runtime's answer at the next
batch, never a linear guess over a batch the model refuses or a dimension that is no batch."""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from tests.ui.test_main_window import measured_window, open_and_wait, settings, window  # noqa: F401

pytestmark = pytest.mark.shared


def _budget_text(qtbot, w, mib: int) -> str:
    w.whatif.use_budget.setChecked(True)
    w.whatif.limit.unit.setCurrentText("MiB")
    w.whatif.limit.value.setValue(mib)
    qtbot.waitUntil(lambda: "largest batch" in w.side.budget_label.text(), timeout=10_000)
    return w.side.budget_label.text()


def test_unet_int8_cannot_take_batch_2_so_no_largest_batch(qtbot, measured_window):
    """Was "largest batch: 4 (assumes the arena grows linearly with the batch)"; check says none:
    LiteRT refuses batch 2 at operator 13 (RESHAPE)."""
    w = measured_window
    open_and_wait(qtbot, w, shared_model("unet_256_int8.tflite"))
    text = _budget_text(qtbot, w, 130)
    assert "largest batch: none (the model cannot take batch 2: operator 13 (RESHAPE)" in text, text
    assert "linearly" not in text


def test_scalar_inputs_have_no_batch(qtbot, window):
    """nested_while (scalar inputs): was "largest batch: 308400"; check says none (scalars)."""
    w = window
    open_and_wait(qtbot, w, shared_model("litert_testdata_nested_while.tflite"))
    text = _budget_text(qtbot, w, 20)
    assert "largest batch: none (the model's inputs have no batch dimension (scalars))" in text, text
    assert not w.whatif.batch.isEnabled() and w.whatif.batch.text() == "none"


def test_conformer_frames_are_no_batch_in_the_whatif_field(qtbot, window):
    """The conformer's dimension 0 (335 frames) was shown as batch 335: the field now shows none,
    disabled, with check's reason as its tooltip; its edits carry no batch."""
    w = window
    open_and_wait(qtbot, w, shared_model("litert_test_torchaudio_conformer.tflite"))
    box = w.whatif.batch
    assert not box.isEnabled() and box.text() == "none"
    assert "a size of the data, not a batch" in box.toolTip()
    assert w.whatif.edits().batch is None
    text = _budget_text(qtbot, w, 200)
    assert "largest batch: none (dimension 0 of input" in text, text
