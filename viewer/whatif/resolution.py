"""The largest square input that fits: bisection on our own estimate, confirmed by the runtime.

``check --find-resolution`` answers "what is the largest H = W this model can take within the
budget?". Each runtime measurement is a LiteRT probe; the search therefore runs on our own
estimate (our shape inference, the runtime's kernel temporaries measured once at the stored size
and scaled with their operator's output, the same planner) and asks the runtime only to confirm
the final answer and its neighbour above, at most :data:`MAX_RUNTIME_PROBES` times in all.

Before bisecting, the first side the model rejects is examined: when the model also rejects
half and twice its stored side, its size is fixed (a RESHAPE to a constant shape, a RESIZE to a
constant size...). The search then stops there and names the operator, confirmed by the runtime.

:func:`search_square` is the search over two plain callables (tests drive it with lambdas);
:func:`find_largest_square` builds them for a model.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

#: Runtime probes one search may spend (the stored size's measurement included).
MAX_RUNTIME_PROBES = 20
#: Sides tried one by one below a side the model rejects, for the nearest it takes (estimate only).
WALK = 64
#: How :mod:`viewer.whatif.apply` words a side the runtime itself rejected.
RUNTIME_REJECTS = "the LiteRT runtime failed to prepare it"
#: Sides above the answer checked one by one with the estimate (the bytes need not be monotone).
VERIFY_ABOVE = 8

#: What an evaluation says: (bytes at side x side, or None when the model rejects that side;
#: one line saying why when rejected, else "").
Outcome = tuple


@dataclass(frozen=True)
class ResolutionSearch:
    """The answer of :func:`search_square`.

    Attributes
    ----------
    side : int
        Largest side (pixels) found to fit; 0 when none does.
    total_bytes : int or None
        The bytes at ``side`` (the runtime's when ``confirmed``), None when none fits.
    confirmed : bool
        The runtime measured ``side`` (fits) and ``neighbour`` (does not fit or is rejected, or
        there is none up to the largest side searched).
    neighbour : int or None
        The next side above ``side`` the model takes (None: none up to the largest side).
    neighbour_bytes : int or None
        Its bytes as the runtime measured them (None when rejected or not measured).
    fixed_by : str
        One line naming the operator that fixes the input size ("" when the size is not fixed).
    runtime_probes : int
        Runtime measurements made (cached answers included), <= the budget given.
    estimates : int
        Evaluations of our own estimate.
    runtime : Mapping[int, int or None]
        Every side the runtime measured -> its bytes (None: rejected).
    estimate_error : float or None
        Largest relative difference estimate vs runtime over the sides both measured.
    note : str
        One line: how the answer was found and what was verified.
    cannot_tell : str
        Why no answer can be given ("" when there is one): the runtime cannot run the model
        and our inference does not reach the end of it.
    """

    side: int
    total_bytes: int | None
    confirmed: bool
    neighbour: int | None = None
    neighbour_bytes: int | None = None
    fixed_by: str = ""
    runtime_probes: int = 0
    estimates: int = 0
    runtime: Mapping[int, int | None] = field(default_factory=dict, compare=False)
    estimate_error: float | None = None
    note: str = ""
    cannot_tell: str = ""


class _Budgeted:
    """A cached evaluator that counts its calls and refuses past ``limit``."""

    def __init__(self, fn: Callable[[int], Outcome], limit: int | None = None, progress=None,
                 kind: str = ""):
        self.fn, self.limit, self.progress, self.kind = fn, limit, progress, kind
        self.cache: dict[int, Outcome] = {}
        self.calls = 0

    def left(self) -> int:
        return (self.limit - self.calls) if self.limit is not None else 1 << 30

    def __call__(self, side: int) -> Outcome:
        if side not in self.cache:
            if self.limit is not None and self.calls >= self.limit:
                raise _OutOfProbes()
            self.calls += 1
            out = self.fn(side)
            self.cache[side] = (out[0] if out[0] is None else int(out[0]), out[1] or "")
            if self.progress is not None:
                self.progress(self.kind, side, self.cache[side][0])
        return self.cache[side]


class _OutOfProbes(Exception):
    pass


class CannotTell(Exception):
    """Raised by a ``confirm`` callable when the runtime cannot answer at all (it cannot run
    the model, as opposed to rejecting a side); ``str()`` says why."""


def search_square(
    estimate: Callable[[int], Outcome],
    confirm: Callable[[int], Outcome],
    available_bytes: int,
    *,
    stored_side: int,
    stored_bytes: int | None = None,
    min_side: int = 1,
    max_side: int = 4096,
    max_runtime_probes: int = MAX_RUNTIME_PROBES,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> ResolutionSearch:
    """Largest side in ``[min_side, max_side]`` whose bytes fit in ``available_bytes``.

    Bisection on "fits" with ``estimate`` (valid when the bytes grow with the side, checked on
    the :data:`VERIFY_ABOVE` sides above the answer); a side the model rejects is skipped for
    the nearest one below it takes. ``confirm`` (the runtime) then measures the answer and the
    next side above; when it disagrees, the estimate is rescaled by the runtime's figure and the
    bisection resumes between what the runtime has shown, until both agree or the probe budget
    is spent (the answer is then the largest side the runtime confirmed, and says so).

    Parameters
    ----------
    estimate, confirm : callable
        side -> (bytes or None, why rejected). ``confirm`` is called at most
        ``max_runtime_probes`` times.
    available_bytes : int
        The limit minus the fixed costs, bytes.
    stored_side : int
        The side stored in the model (the size-fixed test compares with it).
    stored_bytes : int, optional
        The runtime's bytes at the stored side, when already measured (saves a probe).
    progress : callable, optional
        ``progress(kind, side, bytes or None)`` after each evaluation; kind is "estimate" or
        "runtime".

    Returns
    -------
    ResolutionSearch
    """
    est = _Budgeted(estimate, progress=progress, kind="estimate")
    rt = _Budgeted(confirm, max_runtime_probes, progress=progress, kind="runtime")
    if stored_bytes is not None and min_side <= stored_side <= max_side:
        rt.cache[stored_side] = (int(stored_bytes), "")
    try:
        fixed = _fixed_size(est, rt, stored_side, min_side, max_side)
        if fixed is not None:
            return _fixed_answer(fixed, est, rt, available_bytes, stored_side)
        return _confirmed_bisection(est, rt, available_bytes, min_side, max_side)
    except _OutOfProbes:
        return _out_of_probes(est, rt, available_bytes)
    except CannotTell as e:
        return _result(0, None, False, None, None, "", est, rt,
                       f"cannot tell: the runtime cannot confirm any side ({e})", cannot_tell=str(e))


def _fits(out: Outcome, avail: int, scale: float = 1.0) -> bool | None:
    return None if out[0] is None else math.ceil(out[0] * scale) <= avail


def _fixed_size(est, rt, s0: int, lo: int, hi: int) -> str | None:
    """The operator that fixes the size, when the model takes no side but ``s0``; else None.

    Follows the bisection's first steps to its first side the estimate rejects, then checks
    half and twice the stored side; the runtime confirms the first rejection (one probe).
    """
    first = None
    a, b = lo, hi
    for _ in range(4):
        mid = (a + b) // 2
        if mid != s0 and est(mid)[0] is None:
            first = mid
            break
        a = mid + 1
    if first is None:
        return None
    others = [s for s in (s0 // 2, s0 * 2) if lo <= s <= hi and s != s0 and s != first]
    if any(est(s)[0] is not None for s in others):
        return None
    ask = others[-1] if others else first  # twice the stored side: the runtime names the op
    if rt(ask)[0] is not None:  # our inference rejects what the runtime takes: do not trust it
        return None
    return rt(ask)[1] or est(ask)[1] or f"the model rejects {ask}x{ask}"


def _fixed_answer(why: str, est, rt, avail: int, s0: int) -> ResolutionSearch:
    at = rt(s0)
    ok = _fits(at, avail)
    side = s0 if ok else 0
    note = (f"the model takes only its stored size {s0}x{s0}: our inference rejects half and "
            f"twice it and the first side the search tried, the runtime confirms; "
            f"{s0}x{s0} {'fits' if ok else 'does not fit'}")
    return _result(side, at[0] if ok else None, True, None, None, why, est, rt, note)


def _largest_fitting(est, avail: int, lo: int, hi: int, scale: float, skip: set[int]) -> int:
    """Bisection on the (scaled) estimate over [lo, hi]; the largest side that fits, or lo - 1."""
    def fits(k: int) -> bool | None:
        return None if k in skip else _fits(est(k), avail, scale)

    best = lo - 1
    a, b = lo, hi
    while a <= b:
        mid = (a + b) // 2
        k, ok = mid, fits(mid)
        while ok is None and k > max(a, mid - WALK):
            k -= 1
            ok = fits(k)
        if ok is None:  # nothing taken in [k, mid] (e.g. too small for the kernels): go up
            a = mid + 1
            continue
        if ok:
            best = max(best, k)
            a = mid + 1
        else:
            b = k - 1
    # The bytes need not be monotone: look at the sides just above, with the estimate.
    k = best + 1
    while k <= min(hi, best + VERIFY_ABOVE):
        if fits(k):
            return _largest_fitting(est, avail, k, hi, scale, skip)
        k += 1
    return best


def _next_taken(est, side: int, hi: int, skip: set[int]) -> int | None:
    """The smallest side above ``side`` (up to ``hi``) the estimate takes, within :data:`WALK`."""
    for k in range(side + 1, min(hi, side + WALK) + 1):
        if k not in skip and est(k)[0] is not None:
            return k
    return None


def _confirmed_bisection(est, rt, avail: int, lo: int, hi: int) -> ResolutionSearch:
    ok_side, bad_side = 0, hi + 1  # runtime: largest side that fits, smallest that does not
    scale = 1.0
    skip: set[int] = set()  # sides our inference takes and the runtime rejects
    while True:
        a = max(lo, ok_side + 1) if ok_side else lo
        best = _largest_fitting(est, avail, a, bad_side - 1, scale, skip)
        if best < a:
            best = ok_side  # nothing new fits by the estimate: the runtime's answer stands
        if best:
            got = rt(best)
            if got[0] is None:
                skip.add(best)
                continue
            if not _fits(got, avail):
                bad_side = best
                scale = _rescale(est(best), got, scale)
                continue
            ok_side = best
        nb = _next_taken(est, best, bad_side - 1, skip) if best else _first_taken(est, lo, bad_side - 1, skip)
        if nb is None and bad_side <= hi:
            nb = bad_side  # already measured by the runtime: it does not fit
        if nb is None:
            return _result(best, rt(best)[0] if best else None, True, None, None, "", est, rt,
                           _note(best, None, est, rt))
        got = rt(nb)
        if got[0] is None:
            skip.add(nb)
            continue
        if _fits(got, avail):
            ok_side = nb
            scale = _rescale(est(nb), got, scale)
            continue
        return _result(best, rt(best)[0] if best else None, True, nb, got[0], "", est, rt,
                       _note(best, nb, est, rt))


def _first_taken(est, lo: int, hi: int, skip: set[int]) -> int | None:
    return _next_taken(est, lo - 1, hi, skip)


def _rescale(e: Outcome, r: Outcome, scale: float) -> float:
    """The factor that makes the estimate at one side equal the runtime's there."""
    if e[0] and r[0]:
        return r[0] / e[0]
    return scale


def _note(best: int, nb: int | None, est, rt) -> str:
    above = (f"the next side it takes, {nb}x{nb}, does not fit (runtime)" if nb is not None
             else "no larger side up to the search's limit is taken")
    what = f"{best}x{best} fits (runtime)" if best else "no side fits"
    return f"bisection on our estimate, confirmed by the runtime: {what}; {above}"


def _out_of_probes(est, rt, avail: int) -> ResolutionSearch:
    good = [s for s, (b, _) in rt.cache.items() if b is not None and b <= avail]
    bad = [s for s, (b, _) in rt.cache.items() if b is not None and b > avail]
    side = max(good, default=0)
    above = min((s for s in bad if s > side), default=None)
    note = (f"NOT CONFIRMED: the runtime disagreed with our estimate until the runtime probes "
            f"were spent; {side}x{side} is the largest side the runtime showed to fit"
            + (f", {above}x{above} the smallest shown not to" if above else ""))
    return _result(side, rt.cache[side][0] if side else None, False, above,
                   rt.cache[above][0] if above else None, "", est, rt, note)


def _result(side, total, confirmed, nb, nb_bytes, fixed_by, est, rt, note,
            cannot_tell: str = "") -> ResolutionSearch:
    errs = [abs(est.cache[s][0] - b) / b for s, (b, _) in rt.cache.items()
            if b and s in est.cache and est.cache[s][0] is not None]
    return ResolutionSearch(side, total, confirmed, nb, nb_bytes, fixed_by, rt.calls, est.calls,
                            {s: b for s, (b, _) in rt.cache.items()},
                            max(errs) if errs else None, note, cannot_tell)


# -- a model ------------------------------------------------------------------------------------
def square_input_problem(model, subgraph_index: int) -> str | None:
    """Why the square search cannot resize this model's image input, or None when it can.

    The search sets H = W of the only rank-4 input, read as NHWC; an input that looks NCHW
    (``[N, C, H, W]`` with C <= 4 and H = W > C) would have its channels resized instead.
    """
    sg = model.subgraph(subgraph_index)
    images = [sg.tensors[t] for t in sg.inputs if sg.tensors[t].shape is not None
              and len(sg.tensors[t].shape) == 4]
    if len(images) > 1:
        return (f"{len(images)} rank-4 inputs ({', '.join(repr(t.name) for t in images)}): the "
                "square search resizes the only image input")
    if images:
        n, a, b, c = (int(d) for d in images[0].shape)
        if 0 < a <= 4 and b == c and b > a:
            return (f"input {images[0].name!r} {n}x{a}x{b}x{c} looks NCHW (channels first); the "
                    "square search resizes dimensions 1 and 2 of an NHWC input")
    return None


def scaled_temporaries(temporaries, base_shapes: Mapping[int, tuple], new_shapes: Mapping[int, tuple],
                       subgraph) -> tuple:
    """The runtime's kernel temporaries at new shapes: each scaled with its operator's output.

    im2col (CONV_2D) is ``[N, OH, OW, KH * KW * IC]``: exactly proportional to the output's
    elements; every other temporary is assumed to follow its operator's output in the same
    way (MEAN's index and accumulator do; a temporary of fixed size would be over-estimated).

    Parameters
    ----------
    temporaries : iterable of viewer.analysis.types.Temporary
        Measured at ``base_shapes``.
    base_shapes, new_shapes : Mapping[int, tuple of int]
        Tensor index -> shape, before and after.
    subgraph : viewer.model.types.Subgraph

    Returns
    -------
    tuple of Temporary
        Bytes rounded up.
    """
    out = []
    for tp in temporaries:
        op = subgraph.operators[tp.op] if 0 <= tp.op < len(subgraph.operators) else None
        t = op.outputs[0] if op is not None and op.outputs else -1
        old, new = _numel(base_shapes.get(t)), _numel(new_shapes.get(t))
        nbytes = tp.nbytes if not old or new is None else -(-tp.nbytes * new // old)
        out.append(dataclasses.replace(tp, nbytes=int(nbytes)))
    return tuple(out)


def _numel(shape) -> int | None:
    if shape is None:
        return None
    n = 1
    for d in shape:
        n *= int(d)
    return n


def find_largest_square(
    model, subgraph_index: int, edits, available_bytes: int, *,
    total: Callable[[object], int],
    planner: str = "litert",
    measure: bool = True,
    timeout: float = 60.0,
    time_limit: float | None = None,
    min_side: int = 1,
    max_side: int = 4096,
    max_runtime_probes: int = MAX_RUNTIME_PROBES,
    progress=None,
) -> ResolutionSearch:
    """:func:`search_square` for the only image input of ``model`` (H = W = side).

    Parameters
    ----------
    total : callable
        Footprint -> the bytes that count against ``available_bytes`` (the caller's
        convention, e.g. ``check``'s arena + persistent + other subgraphs).
    edits : WhatIfEdits or None
        Other edits (batch, dtype) are kept at every side.

    The runtime side is :func:`viewer.whatif.footprint.footprint` (LiteRT through the model's
    resident worker); the estimate re-plans our own inferred shapes with the runtime's kernel
    temporaries measured at the stored size, scaled by :func:`scaled_temporaries`.
    """
    from viewer.analysis.intervals import analyze
    from viewer.errors import WhatIfError
    from viewer.whatif.edits import WhatIfEdits, apply_edits
    from viewer.whatif.footprint import footprint

    base_edits = edits if edits is not None else WhatIfEdits()

    def at(side: int) -> WhatIfEdits:
        shapes = dict(base_edits.input_shapes)
        shapes[""] = (side, side)
        return dataclasses.replace(base_edits, input_shapes=shapes)

    base = footprint(model, subgraph_index, edits, planner=planner, measure=measure,
                     timeout=timeout, time_limit=time_limit)  # runtime probe 1: the stored size
    sg = model.subgraph(subgraph_index)
    image = next(t for t in sg.inputs if sg.tensors[t].shape is not None and len(sg.tensors[t].shape) == 4)
    stored = int(base.analysis.subgraph.tensors[image].shape[1])
    # With fixed sizes rescaled the runtime cannot run the edit, and footprint plans without
    # kernel temporaries: the estimate does the same, so both count the same terms.
    temps = () if base_edits.rescale_fixed_sizes else tuple(_temporaries_of(base.analysis))
    base_shapes = {t.index: tuple(t.shape) for t in base.analysis.subgraph.tensors}
    fixed = base.persistent_bytes + base.other_subgraphs_bytes
    base_total = total(base)
    # Can the runtime run this model at all? (If not, footprint's shapes are our own inference
    # and a rejection is ours: it confirms nothing.)
    runtime_runs = not base_edits.rescale_fixed_sizes and (base.measured or not measure)

    def estimate(side: int) -> Outcome:
        try:
            edited = apply_edits(model, subgraph_index, at(side), shape_source="inferred")
        except WhatIfError as e:
            return None, str(e)
        new_shapes = {t.index: tuple(t.shape) for t in edited.subgraph.tensors}
        a = analyze(edited.subgraph, model=model,
                    temporaries=scaled_temporaries(temps, base_shapes, new_shapes, sg))
        return _plan_bytes(a, planner, time_limit) + fixed, ""

    def confirm(side: int) -> Outcome:
        try:
            fp = footprint(model, subgraph_index, at(side), planner=planner, measure=measure,
                           timeout=timeout, time_limit=time_limit)
        except WhatIfError as e:
            if not base_edits.rescale_fixed_sizes and (not runtime_runs or RUNTIME_REJECTS not in str(e)):
                raise CannotTell(str(e)) from None  # our inference failed, not the runtime
            return None, str(e)
        return total(fp), ""

    found = search_square(estimate, confirm, available_bytes, stored_side=stored,
                          stored_bytes=base_total, min_side=min_side, max_side=max_side,
                          max_runtime_probes=max_runtime_probes - 1, progress=progress)
    found = dataclasses.replace(found, runtime_probes=found.runtime_probes + 1)
    if not runtime_runs and found.confirmed:
        why = ("--rescale-fixed-sizes: the model as stored cannot take the resize"
               if base_edits.rescale_fixed_sizes else "the runtime cannot run this model")
        found = dataclasses.replace(found, confirmed=False, note=(
            f"NOT confirmed by the runtime ({why}): our estimate at every side; " + found.note))
    return found


def _temporaries_of(analysis):
    from viewer.analysis.types import KIND_TEMPORARY, Temporary

    names = getattr(analysis, "temporary_names", None) or {}
    for u in analysis.usages:
        if u.kind == KIND_TEMPORARY:
            yield Temporary(u.tensor, u.first_op, u.nbytes, names.get(u.tensor, ""))


def _plan_bytes(analysis, planner: str, time_limit: float | None) -> int:
    from viewer.planning.run import best_plan_name, default_planner_names, run_planners

    problem = analysis.problem()
    if planner == "best":
        plans = run_planners(problem, default_planner_names(), time_limit=time_limit)
        return plans[best_plan_name(plans)].arena_bytes
    return run_planners(problem, [planner], time_limit=time_limit)[planner].arena_bytes
