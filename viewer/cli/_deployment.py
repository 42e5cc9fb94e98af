"""``check``/``plan`` ``--signatures all|K1,K2 [--context-length N]``: a deployment of several
signatures in one interpreter, KV caches included (:mod:`viewer.whatif.deployment`,
:mod:`viewer.whatif.context_length`).

``check`` counts every listed signature's arena (resident together), the persistent and heap
tensors of every subgraph, the KV caches once (their own term, per form), the runtime overhead
(the interpreter's heap beyond those) and the weights, against ``--budget``; ``plan`` prints the
same terms without a budget. ``--context-length N`` first writes a copy of the model whose
caches hold N positions and counts that copy (measured by LiteRT; our planner's estimate
beside it), with the stored context length's figures for comparison.
"""

from __future__ import annotations

import argparse
import json
import sys

from viewer.errors import UsageError
from viewer.units import format_bytes


def add_deployment_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--signatures", default=None, metavar="all|K1,K2",
                   help="count a deployment that allocates these signatures in one interpreter "
                        "(all: every one): their arenas are resident together, and the KV caches "
                        "they keep (resource variables, variable tensors, signature input/output "
                        "pairs) are their own term, counted once")
    p.add_argument("--context-length", type=int, default=None, metavar="N",
                   help="what if the KV caches held N positions: resizes the caches' sequence "
                        "dimension and every shape that follows from it in a copy of the model, "
                        "measured by LiteRT (implies --signatures all unless given)")


def wanted(args) -> bool:
    """The deployment path was asked for (``--signatures`` or ``--context-length``)."""
    return getattr(args, "signatures", None) is not None or getattr(args, "context_length", None) is not None


def _keys(args, model):
    spec = args.signatures or "all"
    if spec == "all":
        return None
    keys = [k.strip() for k in spec.split(",") if k.strip()]
    if not keys:
        raise UsageError(f"--signatures {spec!r}: give 'all' or signature keys separated by commas")
    return keys


def _b(n: int | None) -> str:
    if n is None:
        return "n/a"
    return f"{n:,d} B" + (f" ({format_bytes(n)})" if abs(n) >= 1024 else "")


#: Flags the deployment path does not apply: (attribute, its default, flag as typed).
_UNSUPPORTED = (("signature", None, "--signature KEY"), ("subgraph", 0, "--subgraph N"),
                ("input_shape", [], "--input-shape"), ("batch", None, "--batch"),
                ("activation_dtype", None, "--activation-dtype"), ("tensor_dtype", [], "--tensor-dtype"),
                ("rescale_fixed_sizes", False, "--rescale-fixed-sizes"), ("tile", None, "--tile"),
                ("find_resolution", False, "--find-resolution"), ("runtime", "litert", "--runtime tflm"),
                ("delegates", "none", "--delegates default"), ("export_csv", None, "--export-csv"),
                ("delegate_library", None, "--delegate-library"), ("delegate_option", [], "--delegate-option"),
                ("time_limit", None, "--time-limit"))


def _refuse_unsupported(args) -> None:
    """One line naming a flag this path would otherwise ignore silently."""
    for attr, default, flag in _UNSUPPORTED:
        if getattr(args, attr, default) not in (default, None) or (
                default is None and getattr(args, attr, None) is not None):
            raise UsageError(f"{flag} cannot be combined with --signatures/--context-length "
                             "(a deployment of several signatures is counted as the file stores it)")
    planner = getattr(args, "planner", None)
    if planner not in (None, "litert", "all"):
        raise UsageError(f"--planner {planner} cannot be combined with --signatures/--context-length "
                         "(LiteRT lays out each signature's arena itself)")


def _compute(args):
    from viewer.model.reader import load_model
    from viewer.whatif.context_length import context_length_whatif
    from viewer.whatif.deployment import deployment

    _refuse_unsupported(args)
    model = load_model(args.model)
    keys = _keys(args, model)
    measure = getattr(args, "measure", True) is not False
    timeout = float(getattr(args, "timeout", None) or 120.0)
    if args.context_length is not None:
        w = context_length_whatif(model, args.context_length, keys, measure=measure, timeout=timeout)
        return model, w.edited, w
    return model, deployment(model, keys, measure=measure, timeout=timeout), None


def _weights_term(model, mode: str):
    from viewer.whatif.footprint import SOURCE_MEASURED, Term

    return Term("weights", int(model.weights_bytes), SOURCE_MEASURED,
                "constant buffers in the model file, stored once for every signature, "
                + ("copied into RAM" if mode == "copied" else "mapped from the file (not counted)"),
                counted=mode == "copied")


def _context_lines(w) -> list[str]:
    e = w.edit
    out = [f"what-if: context length {e.old} -> {e.new} ({e.axis.describe()}; {e.tensors_changed} "
           f"tensor shapes and {len(e.operands_changed)} shape operand(s) changed in a copy)",
           f"  KV cache (one copy of every cache): {_b(w.kv_bytes_before)} -> {_b(w.kv_bytes_after)}  "
           "[estimated: bytes of the caches' shapes]"]
    for k in w.edited.keys:
        src = "measured" if w.edited.measured else "planned"
        est = w.estimated_arenas.get(k)
        out.append(f"  arena of '{k}': {_b(w.baseline.arenas.get(k))} -> {_b(w.edited.arenas.get(k))} "
                   f"[{src}]; estimate " + (f"{_b(est)} [estimated]" if est is not None else
                                            f"{_b(w.planned_arenas.get(k))} [planned, kernel "
                                            "temporaries not included]"))
    if any(v is not None for v in w.estimated_arenas.values()):
        from viewer.whatif.context_length import ESTIMATE_METHOD

        out.append(f"  (estimate: {ESTIMATE_METHOD})")
    return out


def _term_lines(dep) -> list[str]:
    return [f"  {'+ ' if k else ''}{t.name}: {_b(t.bytes)}  [{t.source}: {t.method}]"
            + ("" if t.counted else "  (not counted)") for k, t in enumerate(dep.terms)]


def _header(model, dep) -> str:
    together = {True: "resident together (measured at disjoint addresses)",
                False: "OVERLAPPING in memory (measured)", None: "residency not measured"}
    return (f"{model.path}: signatures {', '.join(dep.keys)} allocated in one interpreter; "
            f"arenas {together[dep.resident_together]}")


def run_check(args) -> int:
    """``check --signatures ...``: exit 0 fits, 1 does not, 3 cannot tell (as ``check``)."""
    from viewer.units import parse_size
    from viewer.whatif.verdict import EXIT_CODES, VERDICT_CANNOT_TELL, total_bytes, verdict

    limit = parse_size(args.budget)
    if limit <= 0:
        raise UsageError(f"--budget {args.budget}: a device budget must be more than 0 bytes")
    model, dep, w = _compute(args)
    dep = _with_given_overhead(dep, args)
    terms = list(dep.terms) + [_weights_term(model, args.weights or "copied")]
    used = total_bytes(terms)
    result = verdict(used, limit, dep.unknowns)
    if args.json:
        out = {"model": model.path, "verdict": result, "fits": result == "fits", "budget_bytes": limit,
               "used_bytes": used, "headroom_bytes": limit - used,
               "estimated": any(t.source == "estimated" and t.counted for t in terms),
               "configuration": "LiteRT without default delegates (XNNPACK off), one interpreter",
               **dep.as_dict(), "terms": [t.as_dict() for t in terms]}
        if w is not None:
            out["context_length_whatif"] = w.as_dict()
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        word = {"fits": "fits", "does_not_fit": "DOES NOT FIT", "cannot_tell": "CANNOT TELL whether it fits"}[result]
        est = [t.name for t in terms if t.counted and t.source == "estimated"]
        print(f"{_header(model, dep)}: {word}" + (f" (estimated: {', '.join(est)})" if est and result == "fits" else "")
              + f" in {_b(limit)}")
        for u in dep.unknowns:
            print(f"  unknown: {u}")
        for n in dep.notes:
            print(f"note: {n}")
        for line in _term_lines(dep) + [f"  + {_term_of_weights(terms[-1])}"]:
            print(line)
        print(f"  = used: {_b(used)} of {_b(limit)}" + (" (a lower bound: something is unknown)" if dep.unknowns else ""))
        head = limit - used
        print(f"  headroom: {_b(head)}" if head >= 0 else f"  over budget by {_b(-head)}")
        if w is not None:
            for line in _context_lines(w):
                print(f"  {line}")
    if result == VERDICT_CANNOT_TELL:
        print(f"arena-viewer: cannot tell whether {model.path} fits in {_b(limit)}: " + "; ".join(dep.unknowns),
              file=sys.stderr)
    return EXIT_CODES[result]


def _given_overhead(t, args):
    """The runtime overhead term replaced by ``--runtime-overhead SIZE`` when given."""
    from viewer.units import parse_size
    from viewer.whatif.footprint import SOURCE_GIVEN, Term

    if t.name != "runtime overhead" or getattr(args, "runtime_overhead", None) is None:
        return t
    return Term("runtime overhead", parse_size(args.runtime_overhead), SOURCE_GIVEN, "--runtime-overhead")


def _with_given_overhead(dep, args):
    import dataclasses

    terms = tuple(_given_overhead(t, args) for t in dep.terms)
    if getattr(args, "runtime_overhead", None) is not None and not any(t.name == "runtime overhead" for t in terms):
        terms += (_given_overhead(dataclasses.replace(terms[0], name="runtime overhead"), args),)
    return dataclasses.replace(dep, terms=terms)


def _term_of_weights(t) -> str:
    label = "weights (copied, counted)" if t.counted else "weights (mapped: page cache, not counted)"
    return f"{label}: {_b(t.bytes)}  [{t.source}: {t.method}]"


def run_plan(args) -> int:
    """``plan --signatures ...``: the deployment's terms, no budget (exit 0)."""
    args.measure = True if not hasattr(args, "measure") else args.measure
    model, dep, w = _compute(args)
    if args.json:
        out = {"model": model.path, **dep.as_dict()}
        if w is not None:
            out["context_length_whatif"] = w.as_dict()
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(_header(model, dep))
    for u in dep.unknowns:
        print(f"  unknown: {u}")
    for n in dep.notes:
        print(f"note: {n}")
    for c in dep.caches:
        print(f"  KV cache {c.name}: {c.style}, {c.dtype}{list(c.shape)}, {_b(c.nbytes)}, "
              f"subgraph(s) {', '.join(map(str, c.subgraphs))}")
    for line in _term_lines(dep):
        print(line)
    print(f"  = {_b(sum(t.bytes for t in dep.terms if t.counted))} in all (weights aside: "
          f"{_b(model.weights_bytes)}, stored once)")
    if w is not None:
        for line in _context_lines(w):
            print(line)
    return 0
