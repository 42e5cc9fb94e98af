"""The session as the document's background work: prediction first, then LiteRT's measurement."""

from __future__ import annotations

import pytest

from tests.session_models import dynamic_chain
from viewer.document.session_work import SessionRequest, compute_session, session_rows
from viewer.errors import PlanCancelled


def test_prediction_alone_lists_the_steps(tmp_path):
    path = dynamic_chain(tmp_path)
    resp = compute_session(SessionRequest(str(path), steps=({"*": (4, 8, 8, 3)}, {"*": (1, 8, 8, 3)}),
                                          measure=False))
    assert resp.error == "" and resp.report is None
    rows = session_rows(resp)
    assert [r.source for r in rows] == ["predicted", "predicted"]
    assert rows[1].needed * 4 == rows[0].needed and rows[1].held == rows[0].held
    assert [r.grew for r in rows] == [False, False]


def test_measured_rows_are_litert_and_match_the_prediction(tmp_path):
    path = dynamic_chain(tmp_path)
    seen = []
    resp = compute_session(SessionRequest(str(path), steps=({"t0": (1, 8, 8, 3)}, {"t0": (6, 8, 8, 3)}),
                                          limit=1 << 30),
                           progress=lambda f, what: seen.append(f))
    assert resp.error == "", resp.error
    rows = session_rows(resp)
    assert [r.source for r in rows] == ["measured", "measured"]
    assert [r.needed for r in rows] == [r.needed_predicted for r in rows]
    assert rows[1].grew and rows[1].held >= rows[1].needed
    assert resp.report.verdict == "fits" and seen == sorted(seen) and seen[-1] == 1.0


def test_bad_step_is_one_line_and_cancel_stops(tmp_path):
    path = dynamic_chain(tmp_path)
    resp = compute_session(SessionRequest(str(path), steps=({"*": (1, 8, 8)},)))
    assert str(path) in resp.error and "rank" in resp.error
    with pytest.raises(PlanCancelled):
        compute_session(SessionRequest(str(path), steps=({"*": (1, 8, 8, 3)},)),
                        cancelled=lambda: True)
