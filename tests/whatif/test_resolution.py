"""The largest square input: bisection on our estimate, the runtime confirms (at most 20 probes)."""

from __future__ import annotations

import pytest

from viewer.whatif.resolution import MAX_RUNTIME_PROBES, ResolutionSearch, scaled_temporaries, search_square


class Counted:
    """side -> (bytes or None, why): a callable that counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, side):
        self.calls.append(side)
        v = self.fn(side)
        return (v, "" if v is not None else f"operator 3 (RESHAPE) rejects {side}")


def _search(est, rt, avail, **kw) -> ResolutionSearch:
    kw.setdefault("stored_side", 10)
    kw.setdefault("max_side", 4096)
    return search_square(est, rt, avail, **kw)


def test_exact_estimate_needs_two_runtime_probes():
    est, rt = Counted(lambda s: s * s), Counted(lambda s: s * s)
    r = _search(est, rt, 1000)
    assert (r.side, r.total_bytes, r.neighbour, r.neighbour_bytes) == (31, 961, 32, 1024)
    assert r.confirmed and r.fixed_by == "" and sorted(rt.calls) == [31, 32]
    assert r.runtime_probes == 2 and r.estimate_error == 0.0


@pytest.mark.parametrize("factor", [0.7, 0.95, 1.05, 1.6])
def test_a_wrong_estimate_is_corrected_by_the_runtime(factor):
    est, rt = Counted(lambda s: int(s * s * factor)), Counted(lambda s: s * s)
    r = _search(est, rt, 1000)
    assert (r.side, r.neighbour) == (31, 32) and r.confirmed
    assert len(rt.calls) <= MAX_RUNTIME_PROBES and len(set(rt.calls)) == len(rt.calls)


def test_a_fixed_size_stops_at_the_first_failing_side_and_names_the_operator():
    est = Counted(lambda s: 100 if s == 10 else None)
    rt = Counted(lambda s: 100 if s == 10 else None)
    r = _search(est, rt, 1000, stored_bytes=100)
    assert r.side == 10 and r.confirmed and "operator 3 (RESHAPE)" in r.fixed_by
    assert len(rt.calls) == 1 and len(est.calls) <= 4
    r = _search(est, rt, 50, stored_bytes=100)
    assert r.side == 0 and r.fixed_by


def test_the_runtime_overrules_our_inference_on_a_fixed_size():
    """Our inference rejects every other side, the runtime takes them: not called fixed."""
    est = Counted(lambda s: s * s if s == 10 else None)
    rt = Counted(lambda s: s * s)
    r = _search(est, rt, 1000, max_side=64)
    assert r.fixed_by == "" and len(rt.calls) <= MAX_RUNTIME_PROBES


def test_sides_the_model_rejects_are_skipped():
    """Only multiples of 4 are taken: the answer is 28, its neighbour 32."""
    f = lambda s: s * s if s % 4 == 0 else None  # noqa: E731
    r = _search(Counted(f), Counted(f), 1000, stored_side=8)
    assert (r.side, r.neighbour) == (28, 32) and r.confirmed


def test_a_side_the_runtime_rejects_and_our_inference_takes_is_skipped():
    est = Counted(lambda s: s * s)
    rt = Counted(lambda s: None if s == 31 else s * s)
    r = _search(est, rt, 1000)
    assert r.side == 30 and r.confirmed


def test_nothing_fits():
    f = lambda s: 100 + s  # noqa: E731
    r = _search(Counted(f), Counted(f), 50)
    assert r.side == 0 and r.total_bytes is None and r.confirmed and r.neighbour == 1


def test_the_largest_side_fits():
    f = lambda s: s  # noqa: E731
    r = _search(Counted(f), Counted(f), 10 ** 9, max_side=300)
    assert r.side == 300 and r.neighbour is None and r.confirmed


def test_never_more_runtime_probes_than_the_budget():
    """A runtime that disagrees everywhere (not monotone): the budget holds, the answer says so."""
    rt = Counted(lambda s: 2000 if s % 2 else 10)
    r = _search(Counted(lambda s: s * s), rt, 1000, max_runtime_probes=6)
    assert len(rt.calls) <= 6 and r.runtime_probes <= 6
    assert r.confirmed or "NOT CONFIRMED" in r.note


def test_temporaries_scale_with_their_operators_output():
    from viewer.analysis.types import Temporary
    from viewer.model.types import Operator, Subgraph

    op = Operator(0, "CONV_2D", 3, None, 1, (0, 1), (2,))
    sg = Subgraph(0, "", (), (op,), (0,), (2,))
    t = (Temporary(9, 0, 1000, "im2col"),)
    out = scaled_temporaries(t, {2: (1, 10, 10, 8)}, {2: (1, 20, 20, 8)}, sg)
    assert out[0].nbytes == 4000 and out[0].id == 9


def test_a_runtime_that_cannot_answer_gives_cannot_tell():
    from viewer.whatif.resolution import CannotTell

    def confirm(side):
        raise CannotTell("operator 0 (ethos-u): no shape rule, and the runtime cannot run it")

    r = _search(Counted(lambda s: s * s if s == 10 else None), confirm, 1000)
    assert r.side == 0 and not r.confirmed and r.fixed_by == "" and "ethos-u" in r.cannot_tell
