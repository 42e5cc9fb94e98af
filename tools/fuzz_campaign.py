"""On-demand fuzz campaign: many structured mutants of shared models, each in a limited child.

    .venv/bin/python tools/fuzz_campaign.py [--mutants 100000] [--workers 2] [--seed 15]
        [--models a.tflite,b.tflite,...] [--check-every 10] [--time-budget S] [--nice 19]
        [--keep DIR]

Mutants come from tests/fuzz/harness.py (:func:`mutate`: byte flips, truncations, offsets and
counts set to 0 / 2^31-1 / -1 / large, stacked); each runs ``plan`` (every ``--check-every``-th
``check --no-measure`` instead) in a forked child with a 4 GiB address-space limit, stopped at
11 CPU seconds (10 s is the limit counted; 60 s of wall time kills a hang). Outcomes are counted as result / one-line ViewerError / other, with the number over 10 s
and over 1 GiB peak RSS; mutants with any other outcome are kept in ``--keep`` for
reproduction. Run it with ``nice -n 19`` (``--nice``) and at most 2 workers on a shared machine.
Prints progress every 2,000 mutants and a summary (counts, rate) at the end, or when
``--time-budget`` seconds have passed. Not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import RSS_LIMIT, Runner, mutate  # noqa: E402

SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
DEFAULT_MODELS = (
    "coral_split_concat.tflite", "dyn_hw.tflite", "fixed_flatten.tflite",
    "litert_test_topo_sort_fork_split.tflite", "litert_testdata_call_once_mul.tflite",
    "litert_testdata_dynamic_shapes.tflite", "litert_testdata_lstm.tflite",
    "litert_testdata_multi_signatures.tflite", "litert_testdata_multi_subgraphs_while.tflite",
    "litert_testdata_nested_while.tflite", "litert_testdata_while_op_with_forwarding_input.tflite",
    "mlperftiny_ic_resnet8_int8.tflite", "mlperftiny_kws_dscnn_int8.tflite",
    "mlperftiny_streaming_wakeword.tflite", "mp_face_detection_short_range.tflite",
    "multi_out_sigs.tflite", "tfmicro_audio_preprocessor_int8.tflite",
    "tfmicro_hello_world_int8.tflite", "tfmicro_micro_speech_int8.tflite",
)


class Tally:
    """Thread-safe counts of outcomes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds: Counter[str] = Counter()
        self.by_cmd: Counter[tuple[str, str]] = Counter()
        self.over_time = 0
        self.over_rss = 0
        self.max_seconds = 0.0
        self.max_wall = 0.0
        self.max_rss = 0
        self.done = 0
        self.others: list[str] = []

    def add(self, cmd: str, o, keep: Path, data: bytes, k: int) -> None:
        with self.lock:
            self.done += 1
            self.kinds[o.kind] += 1
            self.by_cmd[(cmd, o.kind)] += 1
            self.over_time += o.over_time
            self.over_rss += o.max_rss > RSS_LIMIT
            self.max_seconds = max(self.max_seconds, o.cpu_seconds)
            self.max_wall = max(self.max_wall, o.seconds)
            self.max_rss = max(self.max_rss, o.max_rss)
            if o.kind == "other" or o.over_time or o.max_rss > RSS_LIMIT:
                keep.mkdir(parents=True, exist_ok=True)
                p = keep / f"other_{k:06d}_{cmd}.tflite"
                p.write_bytes(data)
                last = o.stderr.strip().splitlines()[-1:] if o.stderr.strip() else [""]
                self.others.append(f"{p.name}: rc {o.rc} signal {o.signal} "
                                   f"{o.seconds:.1f} s {o.max_rss >> 20} MiB {last[0][:200]}")


def _worker(wid: int, jobs, seeds, args, tally: Tally, keep: Path, deadline: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"arena-fuzz-w{wid}-"))
    path = tmp / "mutant.tflite"
    with Runner(nice=args.nice) as runner:
        for k in jobs:
            if time.monotonic() > deadline:
                break
            rng = random.Random(args.seed * 1_000_003 + k)
            name, src = seeds[rng.randrange(len(seeds))]
            data = mutate(src, rng)
            path.write_bytes(data)
            check = args.check_every and k % args.check_every == 0
            argv = (["check", path, "--budget", "1MiB", "--no-measure"] if check
                    else ["plan", path])
            tally.add(argv[0], runner.run(argv), keep, data, k)
            if tally.done % 2000 == 0:
                _progress(tally)
    path.unlink(missing_ok=True)
    tmp.rmdir()


def _progress(t: Tally) -> None:
    print(f"... {t.done:,d} mutants: {dict(t.kinds)}, over 10 s {t.over_time}, "
          f"over 1 GiB {t.over_rss}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated names in ../shared/models")
    ap.add_argument("--check-every", type=int, default=10)
    ap.add_argument("--time-budget", type=float, default=None, metavar="S")
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "arena-fuzz-others")
    args = ap.parse_args(argv)
    seeds = []
    for name in args.models.split(","):
        p = SHARED / "models" / name
        if p.is_file():
            seeds.append((name, p.read_bytes()))
        else:
            print(f"skip {name}: not in {SHARED / 'models'}", file=sys.stderr)
    if not seeds:
        print("no models", file=sys.stderr)
        return 2
    deadline = time.monotonic() + (args.time_budget or float("inf"))
    tally = Tally()
    t0 = time.monotonic()
    threads = [threading.Thread(target=_worker, daemon=True,
                                args=(w, range(w, args.mutants, args.workers), seeds, args, tally,
                                      args.keep, deadline))
               for w in range(args.workers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.monotonic() - t0
    print(f"\n{tally.done:,d} mutants of {len(seeds)} models in {dt:.0f} s "
          f"({tally.done / dt:.1f} per s, {args.workers} workers, nice {args.nice})")
    for kind in ("result", "error", "other"):
        print(f"  {kind:<7} {tally.kinds[kind]:>8,d}   "
              + ", ".join(f"{c} {n:,d}" for (c, k), n in sorted(tally.by_cmd.items()) if k == kind))
    print(f"  over 10 s: {tally.over_time}   over 1 GiB: {tally.over_rss}   "
          f"slowest {tally.max_seconds:.2f} s CPU ({tally.max_wall:.2f} s wall)   largest peak RSS {tally.max_rss / 2**20:.0f} MiB")
    for line in tally.others[:50]:
        print(f"  other: {line}")
    if tally.others:
        print(f"  kept in {args.keep}")
    return 1 if tally.others or tally.over_time or tally.over_rss else 0


if __name__ == "__main__":
    sys.exit(main())
