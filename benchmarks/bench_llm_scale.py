"""LLM-shaped graphs at tens of thousands of tensors, two signatures: seconds and peak RSS.

    .venv/bin/python benchmarks/bench_llm_scale.py [--layers 250,1000,2500] [--styles resource,external]
                                                   [--commands litert,plan,plan-decode,check-sigs,check-ctx]

The models are tests/decoder_builder.py's decoder (prefill + decode, hidden 16, context 64,
prefill 8) with many layers: ~19 tensors and ~17 operators per layer per signature (resource
style), so 1,000 layers are ~38k tensors and ~34k operators in the two subgraphs. Each command
runs in a fresh process (bench_scale.py's ``run_fresh``: 4 GiB address-space limit, CPU time and
peak RSS with the LiteRT child included). Anchor of the same run: ``litert``, LiteRT alone
building one interpreter, allocating both signature runners and invoking each once (the floor
of every measured command). Commands: ``plan`` (``--signature prefill``, every fast planner),
``plan-decode`` (``--signature decode``), ``check-sigs`` (``check --signatures all``, one
LiteRT process), ``check-ctx`` (``check --context-length 128``: a copy written and both
lengths measured). Not a test: figures to read.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scale import _CLI, run_fresh  # noqa: E402

_LITERT = (
    "import sys, numpy as np; from ai_edge_litert.interpreter import Interpreter, OpResolverType\n"
    "it = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type="
    "OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)\n"
    "rs = {k: it.get_signature_runner(k) for k in ('prefill', 'decode')}\n"
    "for k, r in rs.items():\n"
    "    r(**{n: np.zeros(d['shape'], d['dtype']) for n, d in r.get_input_details().items()})\n")

COMMANDS = {
    "litert": None,
    "plan": lambda m: ["plan", m, "--signature", "prefill"],
    "plan-decode": lambda m: ["plan", m, "--signature", "decode"],
    "check-sigs": lambda m: ["check", m, "--budget", "4GiB", "--signatures", "all"],
    "check-ctx": lambda m: ["check", m, "--budget", "4GiB", "--context-length", "128"],
}


def model_path(layers: int, style: str, folder: Path) -> tuple[Path, int, int]:
    """The decoder file, its tensor and operator counts (all subgraphs)."""
    from ai_edge_litert import schema_py_generated as S

    from tests.decoder_builder import decoder

    p = folder / f"decoder_{style}_{layers}.tflite"
    if not p.exists():
        t0 = time.perf_counter()
        p.write_bytes(decoder(style, layers=layers))
        print(f"built {p.name}: {p.stat().st_size:,d} B in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
    m = S.Model.GetRootAs(p.read_bytes(), 0)
    subs = [m.Subgraphs(i) for i in range(m.SubgraphsLength())]
    return p, sum(g.TensorsLength() for g in subs), sum(g.OperatorsLength() for g in subs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="250,1000,2500")
    ap.add_argument("--styles", default="resource,external")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--timeout", type=float, default=300.0, metavar="S")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "arena-bench-llm")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"{'style':9} {'layers':>6} {'tensors':>8} {'ops':>7}  {'command':<12} {'wall s':>7} {'CPU s':>7}"
          f"  {'peak RSS':>9}  {'exit':>4}  load  note")
    for style in args.styles.split(","):
        for layers in (int(s) for s in args.layers.split(",")):
            m, n_t, n_o = model_path(layers, style, args.cache)
            for name in args.commands.split(","):
                o = (run_fresh(_LITERT, [str(m)], args.timeout) if name == "litert"
                     else run_fresh(_CLI, COMMANDS[name](str(m)), args.timeout))
                lines = o.stderr.strip().splitlines()
                note = "TIMED OUT" if o.timed_out else (lines[-1][:80] if o.rc not in (0, 3) and lines else "")
                print(f"{style:9} {layers:>6} {n_t:>8,d} {n_o:>7,d}  {name:<12} {o.seconds:>7.2f} "
                      f"{o.cpu_seconds:>7.2f}  {o.max_rss / 2**20:>6.0f} MiB  {'-' if o.rc is None else o.rc:>4}"
                      f"  {os.getloadavg()[0]:4.1f}  {note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
