"""The largest batch that fits under a delegate, confirmed by the runtime.

A delegate's memory is not linear in the batch at small sizes (XNNPACK on
mobilenet_v2_224_int8 at 160x160: setup +37 KB from batch 1 to 2, then +1.5 MB from 2 to 4), so
a straight line through batch 1 and 2 can promise a batch that does not fit. :func:`search`
therefore measures the batches it answers with: it extrapolates from the last two measured points
(at most :data:`GROWTH` times the largest batch that fits), then interpolates between a fitting
and a failing batch (bisects when the model refused it), until a batch that fits sits next to one
that does not, within ``max_probes`` runtime measurements. The answer is the largest *measured*
batch that fits; "confirmed" when the next batch was measured and does not fit.

Monotonic footprints are assumed between measured points (more examples never need less).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

#: Runtime measurements :func:`search` may make beyond the two it is given.
MAX_PROBES = 6


@dataclass(frozen=True)
class BatchSearch:
    """Attributes
    ----------
    largest : int or None
        Largest measured batch whose total fits (None: none measured fits, or no answer).
    confirmed : bool
        ``largest + 1`` was measured and does not fit (or the model refuses it).
    totals : dict
        Batch -> measured total (bytes; None where the runtime refused that batch).
    probes : int
        Runtime measurements made here (beyond the two given).
    reason : str
        How the answer was obtained, for the user.
    """

    largest: int | None
    confirmed: bool
    totals: dict = field(default_factory=dict)
    probes: int = 0
    reason: str = ""


#: A guess is at most this many times the largest batch known to fit: a first step that is
#: nearly flat must not send the runtime to a batch many times the limit.
GROWTH = 4


def _next_guess(totals: dict, lo: int, hi: int | None, limit: int) -> int:
    """The next batch to measure: the secant between the fitting ``lo`` and the failing ``hi``
    (bisection when ``hi`` was refused), else the line through ``lo`` and the batch below it,
    at most :data:`GROWTH` times ``lo``."""
    t_lo = totals[lo]
    if hi is not None:
        t_hi = totals[hi]
        if t_hi is None or t_hi <= t_lo:
            return (lo + hi) // 2
        g = lo + int((limit - t_lo) * (hi - lo) // (t_hi - t_lo))
        return min(max(g, lo + 1), hi - 1)
    below = [k for k, v in totals.items() if v is not None and k < lo]
    prev = max(below) if below else None
    per = (t_lo - totals[prev]) / (lo - prev) if prev is not None else 0
    g = 2 * lo if per <= 0 else lo + int((limit - t_lo) // per)
    return min(max(g, lo + 1), GROWTH * lo)


def search(total_at: Callable[[int], int | None], limit: int, totals: dict,
           max_probes: int = MAX_PROBES) -> BatchSearch:
    """Largest batch whose measured total fits ``limit``.

    Parameters
    ----------
    total_at : callable
        Batch -> the total (bytes) measured by the runtime at that batch, or None when the
        model (or runtime) refuses it.
    limit : int
        Bytes.
    totals : dict
        Batch -> total already measured (at least the first batch; usually b and b + 1).
    max_probes : int
        Further measurements allowed.

    Returns
    -------
    BatchSearch
    """
    totals = dict(totals)
    probes = 0

    def bounds():
        fits = [k for k, v in totals.items() if v is not None and v <= limit]
        over = [k for k, v in totals.items() if v is None or v > limit]
        lo = max(fits) if fits else None
        hi = min((k for k in over if lo is None or k > lo), default=None)
        return lo, hi

    lo, hi = bounds()
    if lo is None:
        first = min(totals)
        return BatchSearch(None, False, totals, 0,
                           f"batch {first} does not fit (measured), so no batch answer")
    while (hi is None or hi - lo > 1) and probes < max_probes:
        guess = _next_guess(totals, lo, hi, limit)
        if guess in totals:
            break
        totals[guess] = total_at(guess)
        probes += 1
        lo, hi = bounds()
    confirmed = hi is not None and hi == lo + 1
    refused = confirmed and totals.get(hi) is None
    reason = (f"batch {lo} measured within the limit and {hi} "
              + ("refused by the model" if refused else "measured over it") if confirmed else
              f"batch {lo} measured within the limit; batch {lo + 1} not measured (stopped after "
              f"{probes} further runtime probes): a lower bound of the answer")
    return BatchSearch(lo, confirmed, totals, probes,
                       reason + f" (each a fresh delegated process; {len(totals)} batches measured)")
