"""The confirmed largest-batch search (viewer.whatif.delegate_batch), on footprints built in code
(the real-runtime case is tests/cli/test_check_delegates.py)."""

from __future__ import annotations

from viewer.whatif.delegate_batch import search


def _run(f, limit, start=1):
    calls = []

    def total_at(k):
        calls.append(k)
        return f(k)

    return search(total_at, limit, {start: f(start), start + 1: f(start + 1)}), calls


def test_a_flat_first_step_does_not_promise_a_batch_that_does_not_fit():
    f = lambda k: 10_000 + 100 * min(k, 2) + 1_000 * max(0, k - 2)  # noqa: E731
    s, calls = _run(f, 20_000)
    assert s.confirmed and s.largest == 11 and f(11) <= 20_000 < f(12)
    assert all(c > 2 for c in calls) and s.probes == len(calls) <= 6


def test_a_refused_batch_bounds_the_answer():
    s, _ = _run(lambda k: 100 * k if k <= 4 else None, 10_000)
    assert s.largest == 4 and s.confirmed and "refused" in s.reason


def test_not_bounded_within_the_probes_is_a_lower_bound():
    s, _ = _run(lambda k: k, 10**12)
    assert s.largest is not None and not s.confirmed and "lower bound" in s.reason


def test_the_first_batch_over_the_limit_has_no_answer():
    s, _ = _run(lambda k: 100 * k, 50)
    assert s.largest is None and not s.confirmed
