"""``arena-viewer compare A.tflite B.tflite [C...]``: models side by side, ranked two ways."""

from __future__ import annotations

import argparse
import json
import os
import sys

from viewer.cli._common import add_edit_args, add_runtime_args, edits_from_args
from viewer.errors import UsageError
from viewer.units import format_bytes


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="compare models: naive sum, lower bound, best plan, runtime arena, persistent, weights",
        description="Plan each MODEL (and run it in LiteRT for its kernel temporaries) and print "
        "one table: naive sum, lower bound, best plan, the arena that counts, persistent tensors, "
        "what is held (arena + other subgraphs + persistent), weights and the widest operator; "
        "then the models ranked by naive sum, by arena and by what is held, with a line when the "
        "naive sum ranks them otherwise than what is held.",
    )
    p.add_argument("models", nargs="+", metavar="MODEL", help="two or more .tflite files")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph index (default 0)")
    add_runtime_args(p, no_measure_help="plan only: the arena then leaves out kernel temporaries "
                     "(said on it)", timeout=60.0, timeout_help="seconds for each runtime subprocess")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_edit_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from viewer.whatif.models_compare import rankings, summarize

    if len(args.models) < 2:
        raise UsageError("compare needs at least two models")
    import os

    from viewer.runtime.probe import display_path, model_file_error

    seen: dict[str, str] = {}
    for path in args.models:
        bad = model_file_error(path)  # a missing model: one line before the others are measured
        if bad is not None:
            raise UsageError(display_path(bad))
        key = os.path.realpath(path)
        if key in seen:
            raise UsageError(f"{path}: given twice (as {seen[key]}); compare different models")
        seen[key] = path
    edits = edits_from_args(args)
    rows = []
    for i, path in enumerate(args.models, 1):
        print(f"[{i}/{len(args.models)}] {path}", file=sys.stderr)
        rows.append(summarize(path, args.subgraph, edits, measure=args.measure,
                              timeout=args.timeout))
    rank = rankings(rows)
    if args.json:
        doc = {"models": [dict(asdict(r), held_bytes=r.held_bytes) for r in rows],
               "ranking": {"naive_sum": [rows[i].path for i in rank["naive_sum"]],
                           "arena": [rows[i].path for i in rank["arena"]],
                           "held": [rows[i].path for i in rank["held"]],
                           "disagree": rank["disagree"]}}
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    _print_table(rows, rank)
    return 0


def _print_table(rows, rank) -> None:
    names = [os.path.basename(r.path) for r in rows]
    w = max(len(n) for n in names)
    head = ["naive sum", "lower bound", "best plan", "arena", "persistent", "held", "weights",
            "widest operator of the arena"]
    print(f"{'model':<{w}}  " + "  ".join(f"{h:>12}" for h in head[:-1]) + f"  {head[-1]}")
    for n, r in zip(names, rows):
        star = "" if r.measured else "*"
        arena = format_bytes(r.arena_bytes) + star
        cells = [format_bytes(r.naive_bytes), format_bytes(r.lower_bound_bytes),
                 format_bytes(r.best_plan_bytes), arena, format_bytes(r.persistent_bytes),
                 format_bytes(r.held_bytes) + star, format_bytes(r.weights_bytes)]
        widest = "-"
        if r.widest_op >= 0:
            widest = f"#{r.widest_op} {r.widest_op_name} ({format_bytes(r.widest_op_bytes)}){star}"
            if r.tensors_widest_op != r.widest_op and r.tensors_widest_op >= 0:
                widest += f"; tensors only: #{r.tensors_widest_op} {r.tensors_widest_op_name}"
        print(f"{n:<{w}}  " + "  ".join(f"{c:>12}" for c in cells) + f"  {widest}")
    print("naive sum, lower bound, best plan: the model's own tensors; arena and its widest "
          "operator: " + ("LiteRT's planner with the runtime's kernel temporaries (measured)"
                          if all(r.measured for r in rows) else "see *"))
    print("persistent: tensors held outside the arena (prepare-time outputs such as a float16 "
          "model's dequantized weights, variables); held: arena + other subgraphs' arenas + "
          "persistent, the anonymous memory besides the weights (runtime overhead not counted: "
          "`check` measures it)")
    if not all(r.measured for r in rows):
        print("* planned only: kernel temporaries not included (the runtime did not measure it)")
    order = lambda key: " < ".join(names[i] for i in rank[key])  # noqa: E731
    print(f"ranked by naive sum: {order('naive_sum')}")
    print(f"ranked by arena:     {order('arena')}")
    print(f"ranked by held:      {order('held')}")
    if rank["disagree"]:
        print("the naive sum ranks these models differently from the memory they hold: "
              "compare what is held, not naive sums")
    for n, r in zip(names, rows):
        for note in r.notes:
            if "not measured" in note or "cannot" in note:
                print(f"note: {n}: {note}", file=sys.stderr)
