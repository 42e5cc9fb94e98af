"""Arena and KV-cache bytes vs context length, measured by LiteRT, on the decoder test model.

    .venv/bin/python benchmarks/bench_context_length.py [--contexts 64,128,256,512,1024]
                                                        [--layers 4] [--hidden 64] [--prefill 16]

For each cache style (resource variables, external caches) and context length N it writes the
decoder (tests/decoder_builder.py) at the base context, applies ``--context-length N``
(viewer.whatif.context_length: a model copy), and prints per signature: LiteRT's arena measured
with both signatures allocated in one interpreter, our estimate (planner litert over the copy's
tensors plus the stored length's measured kernel temporaries scaled by N / C; and the planner
alone), the KV cache bytes (one copy of every cache), and
the heap LiteRT grew by over the first invoke (where the resource variables' storage appears).
Not a test: figures to read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.decoder_builder import decoder
    from viewer.model.reader import load_model
    from viewer.whatif.context_length import context_length_whatif

    p = argparse.ArgumentParser()
    p.add_argument("--contexts", default="64,128,256,512,1024")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--prefill", type=int, default=16)
    p.add_argument("--base", type=int, default=96, help="the stored context length")
    a = p.parse_args()
    contexts = [int(c) for c in a.contexts.split(",")]
    print(f"decoder: {a.layers} layers, hidden {a.hidden}, prefill {a.prefill}, stored context {a.base}; "
          "bytes; arena = LiteRT measured; est = ESTIMATE_METHOD; plan = our planner, no kernel temporaries")
    print(f"{'style':9} {'context':>7} {'KV cache':>10} {'prefill arena':>14} {'(est)':>10} {'(plan)':>10} "
          f"{'decode arena':>13} {'(est)':>10} {'(plan)':>10} {'heap 1st invoke':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for style in ("resource", "external"):
            path = Path(tmp) / f"{style}.tflite"
            path.write_bytes(decoder(style, layers=a.layers, hidden=a.hidden, context=a.base,
                                     prefill=a.prefill))
            model = load_model(path)
            for n in contexts:
                w = context_length_whatif(model, n)
                e = w.edited
                grown = (e.probe.heap_at("invoke prefill #1") - e.probe.heap_at("allocate decode")
                         if e.probe is not None else None)
                print(f"{style:9} {n:7d} {w.kv_bytes_after:10,d} {e.arenas['prefill']:14,d} "
                      f"{w.estimated_arenas['prefill']:10,d} {w.planned_arenas['prefill']:10,d} "
                      f"{e.arenas['decode']:13,d} {w.estimated_arenas['decode']:10,d} "
                      f"{w.planned_arenas['decode']:10,d} {grown if grown is not None else 'n/a':>16,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
