"""Lower bound before and after operator reordering, for every shared model; prints a table.

    .venv/bin/python benchmarks/bench_reorder.py [--time-limit S] [--measure] [--markdown] [MODEL ...]

For each subgraph with at least 3 operators (fewer cannot be reordered), runs
:func:`viewer.whatif.reorder.reorder` and prints the lower bound before and after, the saving,
operators moved, whether the search was exact, and the seconds it took. With ``--measure``,
also writes the reordered model to a temporary file and prints the runtime arena LiteRT
allocates for both (span of the arena tensors' data pointers, subgraph 0 of models that LiteRT
loads; constants excluded).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.analysis.intervals import analyze  # noqa: E402
from viewer.errors import ViewerError  # noqa: E402
from viewer.model.reader import load_model  # noqa: E402
from viewer.export.model_copy import write_reordered  # noqa: E402
from viewer.whatif.reorder import reorder  # noqa: E402

MODELS = ROOT.parent / "shared" / "models"


def measured_arena(path, tensors) -> int | None:
    """Span of LiteRT's data pointers over ``tensors``; None when LiteRT cannot load it."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    try:
        it = Interpreter(model_path=str(path),
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
    except Exception:
        return None
    lo = hi = None
    for t in tensors:
        try:
            a = it.tensor(t)()
        except ValueError:
            continue
        if getattr(a, "nbytes", 0) and hasattr(a, "ctypes"):
            p = a.ctypes.data
            lo = p if lo is None else min(lo, p)
            hi = p + a.nbytes if hi is None else max(hi, p + a.nbytes)
        del a
    return 0 if lo is None else hi - lo


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model files (default: every one in ../shared/models)")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--measure", action="store_true", help="also measure LiteRT's arena before/after")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    if args.models:
        paths = [Path(m) for m in args.models]
    else:
        with (MODELS / "SOURCES.tsv").open(newline="") as f:
            paths = [MODELS / r["file"] for r in csv.DictReader(f, delimiter="\t")]
    cols = ["model", "sg", "ops", "lower bound before", "after", "saving", "saving %", "moved",
            "exact", "s"]
    if args.measure:
        cols += ["LiteRT arena before", "after"]
    rows = []
    for p in paths:
        try:
            model = load_model(p)
        except ViewerError as e:
            rows.append([p.name, "-", "-", f"(not read: {e})"] + [""] * (len(cols) - 4))
            continue
        for sg in model.subgraphs:
            if len(sg.operators) < 3:
                continue
            res = reorder(sg, time_limit=args.time_limit)
            b, a = res.lower_bound_before, res.lower_bound_after
            row = [p.name, sg.index, len(sg.operators), b, a, b - a,
                   f"{100.0 * (b - a) / b:.1f}" if b else "0.0", len(res.moved_ops),
                   "yes" if res.exact else "no", f"{res.stats.get('seconds', 0):.1f}"]
            if args.measure:
                if sg.index == 0:
                    arena = [u.tensor for u in analyze(sg).usages
                             if sg.tensors[u.tensor].dtype not in ("resource", "string", "variant")]
                    with tempfile.TemporaryDirectory() as d:
                        out = Path(d) / "reordered.tflite"
                        write_reordered(p, out, 0, res.order)
                        mb, ma = measured_arena(p, arena), measured_arena(out, arena)
                    row += ["-" if mb is None else mb, "-" if ma is None else ma]
                else:
                    row += ["", ""]
            rows.append(row)
            print(f"... {p.name} sg{sg.index}: {b} -> {a}", file=sys.stderr, flush=True)
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in r) + " |")
    else:
        widths = [max(len(str(c)), *(len(f"{r[i]:,}" if isinstance(r[i], int) else str(r[i])) for r in rows))
                  for i, c in enumerate(cols)]
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cols, widths))))
        for r in rows:
            cells = [f"{v:,}" if isinstance(v, int) else str(v) for v in r]
            print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
