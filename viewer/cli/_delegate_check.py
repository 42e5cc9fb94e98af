"""``check`` under a delegate: ``--delegates default`` (XNNPACK) or ``--delegate-library PATH.so``.

Every term is measured in one fresh process running the model under the delegate
(:func:`viewer.runtime.delegates.measure_delegate`) and named by
:func:`viewer.whatif.delegate_terms.delegate_account`: LiteRT's CPU arena beside the delegate,
persistent CPU tensors, the delegate's setup (packed weights, runtime, workspace as far as
touched by ``allocate_tensors()``), the runtime overhead of the first Invoke, then the weights.
The arena LiteRT would use without the delegate is shown beside them, not counted.

A library that is missing or is no delegate: one line, exit 2. A library delegate may hold
device memory outside the process's anonymous memory: an unknown, so it never says a bare "fits".
"""

from __future__ import annotations

import argparse
import json
import sys

from viewer.errors import RuntimeProbeError, UsageError
from viewer.runtime.delegates import DelegateLoadError, DelegateSpec, library_error, measure_delegate
from viewer.units import parse_size
from viewer.whatif.budget import WEIGHTS_MODES
from viewer.whatif.delegate_terms import DelegateAccount, comparison_term, delegate_account
from viewer.whatif.footprint import SOURCE_MEASURED, SOURCE_UNKNOWN, Term
from viewer.whatif.verdict import (EXIT_CODES, VERDICT_CANNOT_TELL, VERDICT_FITS, margin_unknown,
                                   total_bytes, verdict)


def add_delegate_args(p: argparse.ArgumentParser) -> None:
    """``--delegate-library PATH`` and ``--delegate-option KEY=VALUE`` (repeatable)."""
    p.add_argument("--delegate-library", default=None, metavar="PATH.so",
                   help="measure the model under this delegate library (a GPU/NPU delegate "
                        "LiteRT loads with load_delegate; no default delegate): its CPU arena "
                        "and the delegate's memory beside it, each term measured")
    p.add_argument("--delegate-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option passed to the delegate library's load_delegate (repeatable)")


def delegate_spec(args: argparse.Namespace) -> DelegateSpec | None:
    """The delegate ``args`` ask for (None: none; the no-delegate check runs).

    Raises
    ------
    UsageError
        Options without a library, a library beside ``--delegates default``, a bad option.
    DelegateLoadError
        A library path that is missing or a directory (before any work).
    """
    lib = getattr(args, "delegate_library", None)
    opts = list(getattr(args, "delegate_option", None) or [])
    if lib is None:
        if opts:
            raise UsageError("--delegate-option needs --delegate-library PATH.so")
        return DelegateSpec("xnnpack") if getattr(args, "delegates", "none") == "default" else None
    if getattr(args, "delegates", "none") == "default":
        raise UsageError("--delegates default (XNNPACK) and --delegate-library: give one delegate")
    bad = library_error(lib)
    if bad:
        raise DelegateLoadError(bad)
    pairs = []
    for o in opts:
        k, sep, v = o.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--delegate-option {o!r}: need KEY=VALUE")
        pairs.append((k.strip(), v))
    return DelegateSpec("external", lib, tuple(pairs))


#: Flags whose answer this slice does not give under a delegate, with why.
_REFUSED = (
    ("tile", None, "--tile counts a tiled deployment without a delegate"),
    ("find_resolution", False, "--find-resolution searches without a delegate"),
    ("runtime_overhead", None, "--runtime-overhead: under a delegate every term is measured"),
    ("signature", None, "--signature: the delegate is measured on subgraph 0"),
    ("signatures", None, "--signatures counts a deployment without a delegate"),
    ("context_length", None, "--context-length counts a deployment without a delegate"),
)


def _refuse_unsupported(args, edits) -> None:
    if getattr(args, "runtime", "litert") != "litert":
        raise UsageError("--runtime tflm has no delegates; drop the delegate flags")
    for attr, default, why in _REFUSED:
        if getattr(args, attr, default) not in (default, [], ()):
            raise UsageError(f"{why}; drop it or the delegate flags")
    if getattr(args, "subgraph", 0) != 0:
        raise UsageError("--subgraph: the delegate is measured on subgraph 0")
    if not args.measure:
        raise UsageError("--no-measure: a delegate's memory exists only in the runtime; "
                         "drop --no-measure or the delegate flags")
    if edits is not None and (edits.activation_dtype or edits.tensor_dtypes or edits.rescale_fixed_sizes):
        raise UsageError("a storage or rescale what-if cannot run under a delegate (the "
                         "runtime runs the file's types); drop it or the delegate flags")


def _input_shapes(model, edits) -> dict | None:
    """Input position -> shape of the resized inputs (None: the file's shapes)."""
    if edits is None or edits.is_empty():
        return None
    from viewer.whatif.apply import apply_edits
    from viewer.whatif.footprint import _probe_positions

    edited = apply_edits(model, 0, edits)
    return {str(k): list(v) for k, v in (_probe_positions(model, 0, edited.input_shapes) or {}).items()}


def _budget_terms(account: DelegateAccount | None, spec, fp, weights_mode: str, why: str) -> list[Term]:
    if account is not None:
        terms = list(account.terms)
    else:
        terms = [Term(n, 0, SOURCE_UNKNOWN, why + "; 0 B counted")
                 for n in ("tensor arena", f"delegate: {spec.name} setup", "runtime overhead")]
    terms.append(Term("weights", int(fp.weights_bytes), SOURCE_MEASURED,
                      "constant buffers in the model file, " + (
                          "copied into RAM" if weights_mode == "copied" else
                          "mapped from the file (page cache, reclaimable: not counted)"),
                      counted=weights_mode == "copied"))
    if fp.measured:
        terms.append(comparison_term(fp.arena_bytes, fp.arena_term.method + " (no delegate)"))
    return terms


def run_delegate_check(args: argparse.Namespace, spec: DelegateSpec) -> int:
    """``check`` under ``spec``; the exit code (0 fits, 1 does not, 3 cannot tell)."""
    from viewer.cli._edits import edit_notes, edits_from_args
    from viewer.model.reader import load_model
    from viewer.whatif.footprint import footprint

    args.weights = args.weights or "copied"
    if args.weights not in WEIGHTS_MODES:
        raise UsageError(f"--weights {args.weights}: one of {', '.join(WEIGHTS_MODES)}")
    limit = parse_size(args.budget)
    if limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    edits = edits_from_args(args)
    args._delegate_edits = edits
    _refuse_unsupported(args, edits)
    model = load_model(args.model)
    fp = footprint(model, 0, edits, planner="litert", measure=True, timeout=args.timeout)
    account, unknowns, why = _measure(model, spec, edits, fp, args.timeout)
    terms = _budget_terms(account, spec, fp, args.weights, why)
    used = total_bytes(terms)
    within = margin_unknown(terms, used, limit)
    if within:  # a "fits" the measurement's own margin could turn: not a bare "fits"
        unknowns.append(within)
    result = verdict(used, limit, unknowns)
    weights_counted = int(fp.weights_bytes) if args.weights == "copied" else 0
    split, args._delegate_largest, per = _batch_answer(args, model, spec, edits, account, limit,
                                                       used, weights_counted, unknowns)
    if split is not None and split.terms:  # shown under the setup term that holds them
        at = next(k for k, t in enumerate(terms) if t.name.startswith("delegate:")) + 1
        terms[at:at] = list(split.terms)
    notes = edit_notes(model, 0, edits) + list(fp.notes) + list(account.notes if account else ())
    if fp.other_subgraphs and account is not None:
        notes.append(f"the {len(fp.other_subgraphs)} other subgraph(s)' arenas (control flow) are "
                     f"inside the Pss_Anon terms under {spec.name}, not laid out apart")
    report = _report(args, model, fp, spec, account, terms, unknowns, notes, limit, used, result)
    report["delegate"]["per_example_bytes"] = per
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_lines(report, terms, account)
    if result == VERDICT_CANNOT_TELL:
        print(f"arena-viewer: cannot tell whether {model.path} fits in {_b(limit)} under "
              f"{spec.name}: " + "; ".join(unknowns), file=sys.stderr)
    return EXIT_CODES[result]


def _measure(model, spec, edits, fp, timeout: float):
    """(DelegateAccount or None, the verdict's unknowns, why the terms are unknown or "")."""
    unknowns, why, account = list(fp.unknowns), "", None
    others = ", ".join(f"{g.key} -> subgraph {g.subgraph_index}" for g in model.signatures
                       if g.subgraph_index != 0)
    if others:  # as the no-delegate check: each signature's runner has its own arena
        unknowns.append(f"the model has other signatures ({others}) that this check did not "
                        "count, each with its own arena (not measured under a delegate here)")
    try:
        m = measure_delegate(model.path, spec, input_shapes=_input_shapes(model, edits),
                             timeout=timeout)
        account = delegate_account(m, model.weights_bytes)
        unknowns += list(account.unknowns)
    except DelegateLoadError:
        raise
    except RuntimeProbeError as e:
        why = f"not measured under {spec.name} (see the unknown above)"
        unknowns.append(f"the model under {spec.name} (CPU arena, the delegate's memory): not "
                        f"measured ({e})")
    return account, unknowns, why


class _Batches:
    """The delegate measured at other batches (fresh processes), each total as ``check`` counts."""

    def __init__(self, model, spec, edits, weights_counted: int, timeout: float):
        self.model, self.spec, self.edits = model, spec, edits
        self.weights, self.timeout = weights_counted, timeout
        self.measured: dict = {}  # batch -> DelegateMeasurement
        self.refused = ""  # why the first refused batch was refused

    def total_at(self, k: int) -> int | None:
        import dataclasses

        from viewer.errors import ViewerError
        from viewer.whatif.edits import WhatIfEdits

        e = dataclasses.replace(self.edits if self.edits is not None else WhatIfEdits(), batch=k)
        try:
            m = measure_delegate(self.model.path, self.spec, timeout=self.timeout,
                                 input_shapes=_input_shapes(self.model, e))
        except DelegateLoadError:
            raise
        except ViewerError as err:
            msg = str(err)
            if msg.startswith(str(self.model.path) + ": "):
                msg = msg[len(str(self.model.path)) + 2:]
            self.refused = self.refused or f"the model cannot take batch {k}: {msg}"
            return None
        self.measured[k] = m
        a = delegate_account(m)
        return a.counted_bytes + a.margin_bytes + self.weights  # fits only with its margin


def _batch_answer(args, model, spec, edits, account, limit: int, used: int, weights_counted: int,
                  unknowns=()):
    """(BatchSplit or None, (largest batch or None, reason), per-example bytes or None): the
    batch b + 1 measured under the delegate, then :func:`viewer.whatif.delegate_batch.search`;
    nothing measured when the verdict at b is not "fits" (over, or something unknown)."""
    from viewer.whatif.delegate_batch import search
    from viewer.whatif.delegate_terms import batch_split
    from viewer.whatif.verdict import batch_dimension_problem

    if account is None:
        return None, (None, "not measured"), None
    b = (edits.batch if edits is not None else None) or 1
    why = batch_dimension_problem(model, 0)
    if why:
        return batch_split(account, b, None, why), (None, why), None
    if used > limit:
        return None, (None, f"batch {b} does not fit (measured); smaller batches not searched"), None
    if unknowns:
        return None, (None, f"cannot tell ({unknowns[0]})"), None
    runs = _Batches(model, spec, edits, weights_counted, args.timeout)
    nxt = runs.total_at(b + 1)
    if nxt is None:
        return batch_split(account, b, None, runs.refused), (None, runs.refused), None
    per = max(0, nxt - used - account.margin_bytes)
    found = search(runs.total_at, limit, {b: used + account.margin_bytes, b + 1: nxt})
    top = max(runs.measured)  # the farthest measured batch gives the split's line
    split = batch_split(account, b, runs.measured[top], at=top)
    reason = (found.reason.replace("within the limit", "within the limit with its stated margin", 1)
              if found.largest is not None or not runs.refused else runs.refused)
    if found.largest is not None and runs.refused and found.confirmed and found.totals.get(found.largest + 1) is None:
        reason += f"; {runs.refused}"
    return split, (found.largest, reason), per


def _b(n: int) -> str:
    from viewer.units import format_bytes

    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


def _report(args, model, fp, spec, account, terms, unknowns, notes, limit, used, result) -> dict:
    """``check --json``'s object: the no-delegate report's keys, plus ``delegate``."""
    by = {t.name: t for t in terms}
    arena = by["tensor arena"]
    from viewer.whatif.check_report import dynamic_batch, invoke_qualifier, verdict_text

    dyn = dynamic_batch(model, 0, getattr(args, "_delegate_edits", None))
    text = (verdict_text(result, terms, dynamic=dyn) + invoke_qualifier(fp, result, used, limit)
            + f" in {_b(limit)} under {spec.name}")
    m = account.measurement if account else None
    return {
        "model": str(model.path), "runtime": "litert", "subgraph": 0,
        "signatures": [s.key for s in model.signatures if s.subgraph_index == 0],
        "planner": "litert",
        "delegates": "default" if spec.kind == "xnnpack" else (spec.library or spec.kind),
        "verdict": result, "fits": result == VERDICT_FITS, "verdict_text": text, "estimated": False, "dynamic_batch": dyn,
        "configuration": spec.configuration + (": every term measured in one delegated process"
                                               if account else ": not measured"),
        "sized_at_invoke": fp.invoke_sizing.as_dict() if fp.invoke_sizing is not None else None,
        "unknowns": list(unknowns), "terms": [t.as_dict() for t in terms], "limit_bytes": limit,
        "measured": account is not None, "counted_arena": f"{arena.source}: {arena.method}",
        "arena_bytes": arena.bytes, "arena_source": arena.source, "temporaries_included": True,
        "planned_tensor_arena_bytes": fp.planned_tensor_arena_bytes,
        "measured_arena_bytes": m.arena_bytes if m else None,
        "temporaries_count": None, "temporaries_bytes": None,
        "persistent_bytes": m.persistent_bytes if m else 0,
        "other_subgraphs": [{"index": s.index, "reached_by": s.reached_by, "arena_bytes": s.arena_bytes,
                             "source": s.source} for s in fp.other_subgraphs],
        "other_subgraphs_bytes": 0, "weights_bytes": by["weights"].bytes,
        "weights_counted": by["weights"].counted, "runtime_bytes": by["runtime overhead"].bytes,
        "used_bytes": used, "headroom_bytes": limit - used, "batch": _batch(args),
        "largest_batch": getattr(args, "_delegate_largest", (None, ""))[0],
        "largest_batch_note": getattr(args, "_delegate_largest", (None, "not measured"))[1],
        "lower_bound_bytes": fp.analysis.lower_bound_bytes, "widest_op": fp.analysis.widest_op,
        "lower_bound_note": "of the model without the delegate (the delegated partitions' tensors "
                            "live in the delegate's own memory)",
        "notes": notes, "whatif_planner": None,
        "delegate": account.as_dict() if account else {"kind": spec.kind, "name": spec.name,
                                                        "library": spec.library or None,
                                                        "configuration": spec.configuration},
    }


def _batch(args) -> int:
    edits = getattr(args, "_delegate_edits", None)
    return (edits.batch if edits is not None else None) or 1


def _print_lines(r: dict, terms, account) -> None:
    out = print
    out(f"{r['model']} subgraph 0: {r['verdict_text']}")
    out(f"  configuration: {r['configuration']}")
    if account is not None and account.measurement.delegated_operators is not None:
        from viewer.whatif.delegate_terms import _plan_phrase

        out(f"  delegated: {_plan_phrase(account.measurement)}")
    for u in r["unknowns"]:
        out(f"  unknown: {u}")
    for note in r["notes"][:4]:
        out(f"note: {note}")
    for k, t in enumerate(terms):
        lead = "" if k == 0 else ("+ " if t.counted else "  ")
        name = t.name
        if name == "tensor arena" and account is not None:
            name = f"tensor arena (CPU, beside {account.measurement.spec.name})"
        elif name == "weights":
            name = ("weights (copied, counted)" if t.counted else
                    "weights (mapped: page cache, reclaimable, not counted)")
        elif not t.counted and t.name.startswith("delegate:"):
            lead, name = "    of which ", t.name.split(" setup: ", 1)[-1]
        elif not t.counted:
            name += " (not counted)"
        margin = f" ±{t.margin:,d} B" if t.margin else ""
        out(f"  {lead}{name}: {_b(t.bytes)}  [{t.source}{margin}: {t.method}]")
    bound = " (a lower bound: something is unknown)" if r["unknowns"] else ""
    out(f"  = used: {_b(r['used_bytes'])} of {_b(r['limit_bytes'])}{bound}")
    head = r["headroom_bytes"]
    out(f"  headroom: {_b(head)}" if head >= 0 else f"  over budget by {_b(-head)}")
    lb = "none" if r["largest_batch"] is None else str(r["largest_batch"])
    out(f"  largest batch: {lb} ({r['largest_batch_note']})")
    if r["widest_op"] >= 0:
        out(f"  lower bound without the delegate (widest operator's breadth): "
            f"{_b(r['lower_bound_bytes'])}")
