"""No first-call imports on the planning hot path (issue 14): a planner's first call must not
pay for importing a module (numpy 2's ``np.unique`` pulls in ``numpy.ma``, 7 ms)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from viewer.planning.types import unique_sorted


def test_unique_sorted_equals_np_unique():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 17, 1000):
        a = rng.integers(-5, 50, n)
        assert np.array_equal(unique_sorted(a), np.unique(a))
    assert unique_sorted(np.array([], np.int64)).dtype == np.int64


def test_first_plan_imports_nothing():
    code = textwrap.dedent("""
        import sys
        from viewer.analysis.problem import Buffer, PlanningProblem
        from viewer.planning.registry import PLANNERS, _load_all
        _load_all()
        problem = PlanningProblem(tuple(Buffer(i, f, l, s) for i, (f, l, s) in enumerate(
            [(0, 2, 64), (1, 3, 128), (2, 5, 32), (4, 6, 256), (0, 6, 16)])), 7)
        before = set(sys.modules)
        problem.lower_bound(), problem.aligned_lower_bound(64)
        new = sorted(set(sys.modules) - before)
        if new:
            print("bounds", new)
        for name, spec in PLANNERS.items():
            before = set(sys.modules)
            spec.func(problem, 64, time_limit=1.0)
            new = sorted(m for m in set(sys.modules) - before if not m.startswith("ortools"))
            if new:
                print(name, new)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
