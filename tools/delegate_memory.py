"""On-demand table: a model's memory with and without XNNPACK (or a delegate library), measured.

    .venv/bin/python tools/delegate_memory.py ../shared/models/mobilenet_v2_224_int8.tflite ... \\
        [--delegate-library PATH.so [--delegate-option KEY=VALUE ...]] [--batch-split] [--json]

For each model two fresh LiteRT processes (:func:`viewer.runtime.delegates.measure_delegate`):
no delegate, and XNNPACK (or the library). One markdown row each: the file's weights, the CPU
arena and the total Pss_Anon growth without a delegate; under the delegate the CPU arena (span of
the arena tensors' data pointers), the setup and first-Invoke growth, the total, the arena
tensors left without CPU memory (inside the delegated partitions), and operators delegated /
all with the partition count. ``--batch-split`` measures the delegate again at batch 2 and adds
the setup's per-example part (workspace) and fixed part (packed weights, runtime): a straight
line through two measurements. Not a test: run it on demand (each model takes seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from viewer.errors import ViewerError  # noqa: E402
from viewer.model.reader import load_model  # noqa: E402
from viewer.runtime.delegates import DelegateSpec, measure_delegate  # noqa: E402

HEADER = ("| model | weights | none: arena | none: total | delegate: CPU arena | setup | invoke "
          "| total | without CPU memory | delegated, partitions |")


def _row(path: str, spec: DelegateSpec, split: bool) -> dict:
    model = load_model(path)
    none = measure_delegate(path, DelegateSpec("none"), timeout=600)
    d = measure_delegate(path, spec, timeout=600)
    row = {"model": Path(path).name, "weights": model.weights_bytes,
           "none": {"arena": none.arena_bytes, "persistent": none.persistent_bytes,
                    "total": none.total_growth},
           "delegate": {"name": spec.name, "arena": d.arena_bytes, "persistent": d.persistent_bytes,
                        "setup": d.setup_growth, "invoke": d.invoke_growth, "total": d.total_growth,
                        "without_memory": len(d.without_memory),
                        "without_memory_bytes": d.without_memory_bytes,
                        "delegated": d.delegated_operators, "operators": d.model_operators,
                        "partitions": d.delegate_kernels}}
    if split:
        sg = model.subgraph(0)
        shape = list(sg.tensors[sg.inputs[0]].shape)
        try:
            two = measure_delegate(path, spec, input_shapes={"0": [2, *shape[1:]]}, timeout=600)
            per = two.setup_growth - d.setup_growth
            row["delegate"].update(setup_per_example=per, setup_fixed=d.setup_growth - per)
        except ViewerError as e:
            row["delegate"]["batch_split_error"] = str(e)
    return row


def _markdown(r: dict) -> str:
    n, d = r["none"], r["delegate"]
    f = "{:,d}".format
    extra = (f" (per example {f(d['setup_per_example'])}, fixed {f(d['setup_fixed'])})"
             if "setup_per_example" in d else "")
    return (f"| {r['model']} | {f(r['weights'])} | {f(n['arena'])} | {f(n['total'])} | "
            f"{f(d['arena'])} | {f(d['setup'])}{extra} | {f(d['invoke'])} | {f(d['total'])} | "
            f"{d['without_memory']} / {f(d['without_memory_bytes'])} | "
            f"{d['delegated']}/{d['operators']}, {d['partitions']} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--delegate-library", default=None)
    p.add_argument("--delegate-option", action="append", default=[])
    p.add_argument("--batch-split", action="store_true")
    p.add_argument("--json", action="store_true", help="one JSON line per model")
    a = p.parse_args(argv)
    opts = tuple(tuple(o.split("=", 1)) for o in a.delegate_option)
    spec = (DelegateSpec("external", a.delegate_library, opts) if a.delegate_library
            else DelegateSpec("xnnpack"))
    if not a.json:
        print(HEADER)
        print("|" + "---|" * HEADER.count(" | ") + "---|")
    for m in a.models:
        try:
            r = _row(m, spec, a.batch_split)
        except ViewerError as e:
            print(f"{m}: {e}", file=sys.stderr)
            continue
        print(json.dumps(r) if a.json else _markdown(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
