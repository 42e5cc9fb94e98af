"""newuser3 #17: check printed "fixed sizes rescaled …: 12 operator(s)", one operator, then "... 12 more"
(1 + 12 ≠ 12): the tail counts notes, and now says so."""

from __future__ import annotations

import pytest

from conftest import shared_model
from viewer.cli import main


@pytest.mark.shared
def test_the_more_line_counts_notes_and_says_so(capsys):
    model = shared_model("unet_256.tflite")
    code = main(["check", str(model), "--budget", "600MiB", "--input-shape", "1x512x512x3",
                 "--rescale-fixed-sizes", "--no-measure"])
    out = capsys.readouterr().out
    assert code in (0, 3), out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    shown, tail = notes[:-1], notes[-1]
    assert tail.startswith("note: ... ") and " more note(s) (see 'arena-viewer plan' for all)" in tail, tail
    assert len(shown) == 4
