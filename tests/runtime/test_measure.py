"""``measure``'s split keeps the harness out of "added by the model" / "beyond the arena".

The oracle is a plain LiteRT process written here (no viewer code): numpy and LiteRT imported,
the heap's free pages given back (malloc_trim), Pss_Anon read, the interpreter built, allocate_tensors(), zero inputs set, Invoke, Pss_Anon read
again. Last session's split measured from after the imports, so it also held the
harness's random inputs and numpy temporaries: 6,967,296 B on mobilenet_v2_224_int8 against the
oracle's ~2.1 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main

_ORACLE = r"""
import ctypes, sys, numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

def pss_anon():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Pss_Anon:"):
            return int(line.split()[1]) * 1024

path, runs = sys.argv[1], int(sys.argv[2])
ctypes.CDLL(None).malloc_trim(0)  # free heap pages back: the interpreter touches fresh ones
before = pss_anon()
it = Interpreter(model_path=path,
                 experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
it.allocate_tensors()
# calloc'd zeros: large ones are fresh untouched mappings, so they add nothing to Pss_Anon
zeros = [(d["index"], np.zeros(d["shape"], d["dtype"])) for d in it.get_input_details()]
for _ in range(runs):
    for i, z in zeros:
        it.set_tensor(i, z)
    it.invoke()
print(pss_anon() - before)
"""


def _oracle_growth(path, runs: int) -> int:
    out = subprocess.run([sys.executable, "-c", _ORACLE, str(path), str(runs)], check=True,
                         capture_output=True, text=True, timeout=300)
    return int(out.stdout.split()[-1])


def _measure(capsys, path, runs: int) -> dict:
    rc = main(["measure", str(path), "--json", "--runs", str(runs), "--no-xnnpack"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.shared
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux only)")
def test_added_by_the_model_is_what_a_plain_litert_process_adds(capsys):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    r = _measure(capsys, path, 2)
    s = r["split"]
    oracle = _oracle_growth(path, 2)
    assert s["harness_excluded"] is True and "before the interpreter was built" in s["measured_from"]
    # within a few pages of allocator noise between two processes (the old split: +4.9 MB)
    assert abs(s["anonymous_added_by_model_bytes"] - oracle) <= 256 << 10, (s, oracle)
    assert s["anonymous_beyond_arena_bytes"] == s["anonymous_added_by_model_bytes"] - r["arena_bytes"]
    assert s["harness_bytes"] is not None and s["harness_bytes"] >= 0
    assert s["late_inputs"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux only)")
def test_beyond_the_arena_is_never_negative(tmp_path, capsys):
    """A 16 KiB arena can land in pages the process already touched: the growth is then less
    than the arena and "beyond" is not resolved (said so), never a negative number."""
    p = write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 8, 8, 4)))
    s = _measure(capsys, p, 1)["split"]
    if s["anonymous_beyond_arena_bytes"] is None:
        assert "not measured" in s["beyond_arena_unresolved"]
    else:
        assert s["anonymous_beyond_arena_bytes"] >= 0 and s["beyond_arena_unresolved"] is None


def test_input_specs_agree_with_our_reader():
    from viewer.model.reader import load_model
    from viewer.runtime._child_measure import _input_specs

    for name in ("mobilenet_v2_224_int8.tflite", "litert_testdata_multi_signatures.tflite",
                 "mp_ssd_mobilenetv2_oidv4_fp16.tflite"):
        path = shared_model(name)
        sg = load_model(path).subgraph(0)
        want = [(i, tuple(sg.tensors[i].shape or ()), sg.tensors[i].dtype) for i in sg.inputs]
        assert _input_specs(str(path)) == want


def test_input_specs_of_a_truncated_file_are_empty(tmp_path):
    from viewer.runtime._child_measure import _input_specs

    p = write(tmp_path, "chain.tflite", add_chain(2))
    p.write_bytes(p.read_bytes()[:40])
    assert _input_specs(str(p)) == []


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "float32", "float16", "bool", "int32"])
def test_values_are_made_in_the_inputs_dtype_and_differ_by_seed(dtype):
    from viewer.runtime._child_measure import _values

    a, b = _values((2, 5000), dtype, 0), _values((2, 5000), dtype, 1)
    assert a.dtype == np.dtype(dtype) and a.shape == (2, 5000)
    assert (a != b).mean() > 0.4
    if dtype == "int8":
        assert a.min() == -128 and a.max() == 127
    if dtype.startswith("float"):
        assert -2 <= a.min() < -1.9 and 1.9 < a.max() <= 2
    assert _values((3,), "S4", 0) is None
