"""No first-call imports when a model is opened (issue 14): the first ``load_model`` +
``analyze`` + ``plan_litert`` must not pay for importing a module (numpy 2's ``np.unique``
pulls in ``numpy.ma``, ~7 ms; the options layouts table)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from viewer.model._flatbuf import unique


def test_unique_equals_np_unique():
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 30, 500):
        a = rng.integers(-3, 40, n)
        u, inv = unique(a, return_inverse=True)
        want_u, want_inv = np.unique(a, return_inverse=True)
        assert np.array_equal(u, want_u) and np.array_equal(inv, want_inv)
        assert np.array_equal(unique(a), want_u)


def test_first_load_imports_nothing():
    from conftest import shared_model

    path = shared_model("coral_automl_traffic_model.tflite")  # 409 buffers, 8 options types
    code = textwrap.dedent(f"""
        import sys
        from viewer.analysis.intervals import analyze
        from viewer.model.reader import load_model
        from viewer.planning.litert import plan_litert
        before = set(sys.modules)
        model = load_model({str(path)!r})
        plan_litert(analyze(model.subgraph(0), model=model).problem())
        new = sorted(set(sys.modules) - before)
        if new:
            print(new)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
