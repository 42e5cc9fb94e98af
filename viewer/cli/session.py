"""``arena-viewer session MODEL --steps 1x128x4,64x128x4 [--budget SIZE]``: a dynamic-shape session.

One LiteRT interpreter runs every step in turn (resize, ``allocate_tensors()``, one ``invoke()``),
as an application serving inputs of changing size does; each step prints the arena its plan
needs, the arena the interpreter holds (the largest so far: LiteRT never shrinks it), whether it
grew (the old buffer is copied into the new one, both allocated meanwhile), the dynamic tensors
and the step's total. Each arena figure is LiteRT's (measured) beside our ``litert`` planner's
replay of the same step. With ``--budget`` the verdict is taken on the session's high-water mark:
exit 0 fits, 1 does not, 3 cannot tell; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from viewer.cli._common import positive_seconds, add_model_args, resolve_signature
from viewer.errors import RuntimeProbeError, UsageError
from viewer.model.reader import load_model
from viewer.units import SIZE_SYNTAX, format_bytes, parse_size
from viewer.whatif.budget import WEIGHTS_MODES
from viewer.whatif.session_plan import parse_steps
from viewer.whatif.verdict import EXIT_CODES, VERDICT_CANNOT_TELL, VERDICT_FITS

#: The configuration the session measures (the probe's).
CONFIGURATION = "LiteRT without default delegates (XNNPACK off), one interpreter for every step"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "session",
        help="run a sequence of input shapes in one LiteRT interpreter: the arena each step "
             "needs, the arena held (it never shrinks), dynamic tensors, and a budget verdict "
             "on the high-water mark",
        description="Run MODEL's input shapes step by step in one LiteRT interpreter (without "
        "default delegates) and report, per step, the arena the plan needs, the arena held (the "
        "largest so far), growth, dynamic tensors and the total, measured by LiteRT beside our "
        "litert planner's replay. With --budget: exit 0 fits, 1 does not, 3 cannot tell.",
    )
    add_model_args(p)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--steps", metavar="LIST",
                     help="comma-separated steps; a step is a SHAPE (e.g. 1x128x4) for every "
                          "input with a dynamic dimension, or NAME=SHAPE+NAME=SHAPE per input "
                          "(NAME: the input's name or position 0, 1, ...)")
    how.add_argument("--batches", metavar="LIST",
                     help="comma-separated batch sizes (e.g. 1,4,2): dimension 0 of every input "
                          "whose dimension 0 is dynamic, the file's other dimensions")
    p.add_argument("--budget", default=None, metavar="SIZE",
                   help=f"device limit in {SIZE_SYNTAX}: verdict on the session's high-water mark")
    p.add_argument("--weights", choices=WEIGHTS_MODES, default="copied",
                   help="copied (default): weights count against the budget; mapped: "
                        "file-backed page cache, shown but not counted")
    p.add_argument("--no-measure", dest="measure", action="store_false",
                   help="predict only, without running LiteRT: our inferred shapes, estimated "
                        "kernel temporaries and our litert planner (dynamic tensors and the "
                        "runtime overhead are then left out: a fit cannot be told)")
    p.add_argument("--delegates", choices=("none", "default"), default="none",
                   help="none (LiteRT without default delegates, XNNPACK off: the arena our "
                        "planner re-states) or default (a stock interpreter, XNNPACK on: LiteRT's "
                        "CPU arena beside the delegate, whose memory counts in the runtime "
                        "overhead and the delegate transient; no planner figures)")
    p.add_argument("--memory-limit", default="8GiB", metavar="SIZE",
                   help="address space the LiteRT process may map (RLIMIT_AS; default 8GiB): a "
                        "step that needs more fails to allocate and ends the session there, "
                        "instead of driving the machine into swap")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="S",
                   help="seconds for the whole session before the LiteRT process is killed")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    p.set_defaults(run=run)


def batch_steps(model, subgraph: int, text: str) -> list[dict]:
    """``--batches 1,4,2`` -> steps setting dimension 0 of every batch-dynamic input.

    Raises
    ------
    viewer.errors.UsageError
        Not positive integers; no input with a dynamic dimension 0; or such an input has other
        dynamic dimensions (its shape at each step is then not known: use ``--steps``).
    """
    items = [s.strip() for s in str(text).split(",")]
    if not all(re.fullmatch(r"-?\d+", s) for s in items):
        raise UsageError(f"--batches {text!r}: use batch sizes separated by commas, e.g. 1,4,2")
    sg = model.subgraph(subgraph)
    inputs = [i for i in sg.inputs if i >= 0]
    batched = [(p, sg.tensors[t]) for p, t in enumerate(inputs)
               if tuple(sg.tensors[t].shape_signature or ())[:1] == (-1,)]
    if not batched:
        raise UsageError(f"{model.path}: subgraph {subgraph} has no input whose dimension 0 (the "
                         "batch) is dynamic (-1 in its shape_signature); use --steps")
    for _, t in batched:
        if -1 in tuple(t.shape_signature)[1:]:
            raise UsageError(f"{model.path}: input {t.name!r} has dynamic dimensions besides the batch "
                             f"(shape_signature {list(t.shape_signature)}); give its shapes with --steps")
    return [{p: (int(b),) + tuple(t.shape_signature)[1:] for p, t in batched} for b in items]


def run(args: argparse.Namespace) -> int:
    from viewer.runtime.session import measure_session
    from viewer.whatif.session import session_report
    from viewer.whatif.session_plan import session_steps

    limit = parse_size(args.budget) if args.budget is not None else None
    if limit is not None and limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    if not (args.timeout > 0):
        raise UsageError(f"--timeout {args.timeout:g}: need a positive number of seconds")
    address_space = parse_size(args.memory_limit)
    if address_space < 256 << 20:
        raise UsageError(f"--memory-limit {args.memory_limit}: LiteRT's process needs at least "
                         "256 MiB of address space to start")
    resolve_signature(args)
    model = load_model(args.model)
    raw = (batch_steps(model, args.subgraph, args.batches) if args.batches is not None
           else parse_steps(args.steps))
    steps = session_steps(model, args.subgraph, raw)
    delegated = args.delegates == "default"
    if delegated and not args.measure:
        raise UsageError("--delegates default needs the runtime: our planner re-states LiteRT's "
                         "CPU arena without delegates (drop --no-measure)")
    predicted, why = ((None, "our planner re-states LiteRT's CPU arena without delegates, and "
                             "this session runs with them (--delegates default)") if delegated
                      else _predict(model, args.subgraph, steps))
    if not args.measure:
        return _run_planned(args, model, predicted, why, limit)
    run_ = measure_session(model.path, steps, args.subgraph, args.timeout,
                           address_space=address_space,
                           resolver="default" if delegated else "builtin")
    if not run_.ok:  # the prediction stands in, and says so; never a "fits"
        rc = (_run_planned(args, model, predicted, why, limit, failed=run_.error)
              if predicted is not None else EXIT_CODES[VERDICT_CANNOT_TELL])
        print(f"arena-viewer: cannot tell: {run_.error}", file=sys.stderr)
        return rc if rc == EXIT_CODES["does_not_fit"] else EXIT_CODES[VERDICT_CANNOT_TELL]
    try:
        rep = session_report(model, run_, limit=limit, weights_mode=args.weights,
                             other_signatures=_other_signatures(model, args), predicted=predicted)
    except RuntimeProbeError as e:
        print(f"arena-viewer: cannot tell: {e}", file=sys.stderr)
        return EXIT_CODES[VERDICT_CANNOT_TELL]
    if rep.error and _refused(rep.error) and rep.verdict is not None:
        import dataclasses

        rep = dataclasses.replace(rep, verdict=VERDICT_REFUSED)
    if args.json:
        print(json.dumps({"command": "session", "configuration": _configuration(args), **rep.as_dict(),
                          "prediction_error": why or None}, indent=1))
    else:
        for line in report_lines(rep):
            print(line)
        if why:
            print(f"note: not predicted without the runtime: {why}")
    if rep.error:
        print(f"arena-viewer: {rep.error}", file=sys.stderr)
        if _refused(rep.error):
            return 2
    if rep.verdict is not None:
        return EXIT_CODES[rep.verdict]
    return EXIT_CODES[VERDICT_CANNOT_TELL] if rep.error else 0


def _configuration(args) -> str:
    if getattr(args, "delegates", "none") == "default":
        return "LiteRT with its default delegates (XNNPACK on), one interpreter for every step"
    return CONFIGURATION


def _predict(model, subgraph: int, steps) -> tuple[list | None, str]:
    """Our prediction of every step without the runtime, or (None, why not)."""
    from viewer.errors import ViewerError
    from viewer.whatif.session_plan import plan_session

    try:
        return plan_session(model, subgraph, steps), ""
    except ViewerError as e:
        return None, str(e)


def _run_planned(args, model, predicted, why: str, limit: int | None, failed: str = "") -> int:
    """``--no-measure`` (or LiteRT failed: ``failed`` says how): our prediction alone; a verdict
    only when it is already over budget."""
    from viewer.whatif.session_plan import PLANNED_ONLY_CAVEAT

    if predicted is None:
        raise UsageError(f"{model.path}: cannot predict the session without the runtime: {why}")
    weights = int(model.weights_bytes) if args.weights == "copied" else 0
    high = max(range(len(predicted)), key=lambda k: predicted[k].buffer.during_growth)
    peak = predicted[high].buffer.during_growth + weights
    result = None
    if limit is not None:
        result = "does_not_fit" if peak > limit else VERDICT_CANNOT_TELL
    left_out = ("dynamic tensors, persistent tensors and the runtime overhead are not predicted "
                "(run without --no-measure)")
    if args.json:
        print(json.dumps({"command": "session", "configuration": CONFIGURATION + ", predicted only (not measured)",
                          "measurement_error": failed or None,
                          "model": model.path, "subgraph": args.subgraph, "method": PLANNED_ONLY_CAVEAT,
                          "steps": [p.as_dict() for p in predicted],
                          "high_water": {"step": high + 1, "bytes": peak, "weights_bytes": weights},
                          "budget_bytes": limit, "verdict": result, "unknowns": [left_out]}, indent=1))
    else:
        out = [f"{model.path} subgraph {args.subgraph}: session of {len(predicted)} steps predicted "
               f"without the runtime [{PLANNED_ONLY_CAVEAT}]"]
        if failed:
            out.append(f"  not measured: {failed}")
        for p in predicted:
            b = p.buffer
            grew = f" grew (old + new {b.during_growth:,d} B while copied)" if b.grew and b.during_growth > b.held else ""
            out.append(f"  step {p.index + 1}: {_shape_text(p.shapes)}: plan needs {b.needed:,d} B; "
                       f"held {b.held:,d} B{grew}")
        out.append(f"high-water mark: step {high + 1}, {_b(peak)} (arena"
                   + (f" + weights {_b(weights)}" if weights else "") + f"; {left_out})")
        if result is not None:
            out.append(f"verdict: {_VERDICT_TEXT[result]} in {_b(limit)}: predicted high-water mark "
                       f"{_b(peak)} (a lower bound)")
        print("\n".join(out))
    return EXIT_CODES[result] if result is not None else 0


def _other_signatures(model, args) -> str:
    if getattr(args, "signature", None) is not None:
        return ""
    return ", ".join(f"{s.key} -> subgraph {s.subgraph_index}" for s in model.signatures
                     if s.subgraph_index != args.subgraph)


def _b(n: int | None) -> str:
    if n is None:
        return "not read"
    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


def _shape_text(shapes) -> str:
    return ", ".join(f"{name} {'x'.join(map(str, s))}" for name, s in shapes) or "(as stored)"


#: The verdict of a session LiteRT refused at a step for a reason that is not memory: the
#: application fails there whatever the budget (exit 2, as ``check`` at that shape).
VERDICT_REFUSED = "refused"

_VERDICT_TEXT = {VERDICT_FITS: "fits", "does_not_fit": "DOES NOT FIT",
                 VERDICT_CANNOT_TELL: "CANNOT TELL whether it fits",
                 VERDICT_REFUSED: "FAILS: LiteRT refuses a step of the session, so it does not run"}


def report_lines(rep) -> list[str]:
    """The text report of a :class:`~viewer.whatif.session.SessionReport`."""
    n = len(rep.steps)
    head = f"{rep.path} subgraph {rep.subgraph}: session of {n} step{'s' if n != 1 else ''} in one "
    if rep.resolver == "builtin":
        head += ("LiteRT interpreter (without default delegates); plan needs: LiteRT measured / our "
                 "litert planner's replay / our prediction without the runtime; held: LiteRT's "
                 "block / our buffer rule's request")
    else:
        head += ("LiteRT interpreter with its default delegates (XNNPACK on); plan needs and held: "
                 "LiteRT's CPU arena, measured (the delegate's own memory is in the runtime "
                 "overhead and the delegate transient)")
    out = [head]
    for s in rep.steps:
        grew = (" grew" + (" during Invoke" if s.grew_during_invoke else "")
                + f" (+{s.growth_extra:,d} B old buffer while copied)") if s.grew else ""
        same = " [replay differs]" if s.replay_exact is False else ""
        out.append(f"  step {s.index + 1}: {_shape_text(s.shapes)}")
        ours = "" if s.needed_planned is None else f" / {s.needed_planned:,d}"
        pred = "" if s.needed_predicted is None else f" / {s.needed_predicted:,d}"
        req = "" if s.request_planned is None else f" / {s.request_planned:,d} B"
        out.append(f"    plan needs {s.needed:,d}{ours}{pred} B{same}; held "
                   f"{_b(s.held)}{req}{grew}; dynamic tensors {s.dynamic_count} "
                   f"({s.dynamic_held:,d} B held); total {_b(s.total)}")
    if rep.high_water_step is not None:
        hw = rep.steps[rep.high_water_step]
        ours = ("" if hw.total_planned is None else
                f" (with our planner's arena figures {_b(hw.total_planned)})")
        out.append(f"high-water mark: step {hw.index + 1}, {_b(hw.total)}{ours}")
        for t in hw.terms:
            if not t.bytes and t.name in ("arena growth", "persistent", "dynamic tensors"):
                continue
            mark = "" if t.counted else " (not counted)"
            out.append(f"  {t.name}: {_b(t.bytes)}{mark} [{t.source}: {t.method}]")
        warm = rep.warm_up_bytes
        if warm is not None and warm < hw.total:
            out.append(f"  warm-up: with the largest step run first the buffer is allocated once and "
                       f"never copied: high-water mark {_b(warm)} [estimated: buffer rule on the "
                       "measured terms]")
    for u in rep.unknowns:
        out.append(f"  unknown: {u}")
    for note in rep.notes:
        out.append(f"note: {note}")
    if rep.verdict is not None:
        used = rep.high_water_bytes or 0
        bound = " (a lower bound: something is unknown)" if rep.unknowns else ""
        if rep.verdict == VERDICT_REFUSED:
            out.append(f"verdict: {_VERDICT_TEXT[rep.verdict]} (in {_b(rep.limit)} or any budget); "
                       f"high-water mark of the steps that ran {_b(used)}")
        else:
            out.append(f"verdict: {_VERDICT_TEXT[rep.verdict]} in {_b(rep.limit)}: high-water mark "
                       f"{_b(used)}{bound}")
        head = rep.limit - used
        if rep.verdict == VERDICT_REFUSED:
            pass
        elif head < 0:
            out.append(f"  over budget by {_b(-head)}")
        elif rep.verdict != VERDICT_CANNOT_TELL:  # no "headroom" beside an unknown (newuser3 #4)
            out.append(f"  headroom: {_b(head)}")
    return out


def _refused(error: str) -> bool:
    """LiteRT refused a step for a reason that is not memory (``Conv im2col elements ...
    exceed the 32-bit integer limit``): the application fails at that input whatever the
    budget, as ``check`` says with exit 2. Memory exhaustion under ``--memory-limit`` stays an
    unknown."""
    msg = error.lower().replace("allocatetensors failed", "").split("(if it ran out of memory")[0]
    return "refused step" in msg and not any(
        w in msg for w in ("memory", "bad_alloc", "cannot allocate", "failed to allocate", "out of"))
