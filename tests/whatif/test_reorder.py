"""Operator reordering: known optima on hand-built graphs, side-effect order, and LiteRT as the oracle.

The runtime checks write the reordered model, load it in LiteRT, and compare its outputs on
random inputs with the original's, and its measured arena (span of the arena tensors' data
pointers; constants are mapped from the file and excluded) with the original's.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from conftest import shared_model
from viewer.analysis.intervals import analyze
from viewer.analysis.types import Temporary
from viewer.errors import PlanCancelled, WhatIfError
from viewer.model import dtypes
from viewer.model.reader import load_model
from viewer.model.types import FLAG_RESOURCE, Operator, Subgraph, Tensor
from viewer.export.model_copy import write_reordered
from viewer.whatif import reorder as reorder_mod
from viewer.whatif.reorder import (
    apply_order,
    dependencies,
    has_side_effects,
    moved_operators,
    reorder,
)

# ---------------------------------------------------------------------------------------------
# Hand-built subgraphs (our own types). Sizes are given directly in bytes as uint8 vectors.


def _t(i, nbytes, *, const=False, variable=False, dtype="uint8"):
    shape = (nbytes,) if dtype == "uint8" else ()
    flags = frozenset({FLAG_RESOURCE}) if dtype == "resource" else frozenset()
    return Tensor(i, f"t{i}", shape, shape, dtype, dtypes.nbytes(dtype, shape) if dtype != "uint8" else nbytes,
                  buffer=i + 1 if const else 0, is_constant=const, is_variable=variable, flags=flags)


def _op(i, name, ins, outs, custom=False):
    return Operator(i, name, None if custom else 1, name if custom else None, 1, tuple(ins), tuple(outs))


def _sg(tensors, ops, inputs, outputs):
    return Subgraph(0, "main", tuple(tensors), tuple(ops), tuple(inputs), tuple(outputs))


def two_branches():
    """x -> a1 (100 B) -> a2 (10 B);  x -> b1 (100 B) -> b2 (10 B);  concat(a2, b2) -> out (20 B).

    File order a1, b1, a2, b2, concat holds both 100-byte tensors at once.
    """
    ts = [_t(0, 1), _t(1, 100), _t(2, 100), _t(3, 10), _t(4, 10), _t(5, 20)]
    ops = [
        _op(0, "CONV_2D", [0], [1]),
        _op(1, "CONV_2D", [0], [2]),
        _op(2, "MEAN", [1], [3]),
        _op(3, "MEAN", [2], [4]),
        _op(4, "CONCATENATION", [3, 4], [5]),
    ]
    return _sg(ts, ops, [0], [5])


def all_topological_orders(sg):
    deps = dependencies(sg)
    n = len(sg.operators)

    def rec(done, prefix):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for o in range(n):
            if not done >> o & 1 and not deps[o] & ~done:
                prefix.append(o)
                yield from rec(done | 1 << o, prefix)
                prefix.pop()

    yield from rec(0, [])


def brute_force_lower_bound(sg):
    return min(analyze(apply_order(sg, o)).lower_bound_bytes for o in all_topological_orders(sg))


def random_dag(seed, n_ops=7):
    """A random branchy DAG: each op reads 1-2 earlier tensors and writes one of random size."""
    rng = random.Random(seed)
    ts = [_t(0, rng.randint(1, 50))]
    ops = []
    for i in range(n_ops):
        k = rng.choice([1, 1, 2])
        ins = rng.sample(range(len(ts)), min(k, len(ts)))
        ts.append(_t(len(ts), rng.choice([4, 16, 64, 100, 200, 300])))
        ops.append(_op(i, "ADD", ins, [len(ts) - 1]))
    consumed = {t for o in ops for t in o.inputs}
    outs = [t.index for t in ts[1:] if t.index not in consumed] or [len(ts) - 1]
    return _sg(ts, ops, [0], outs)


# ---------------------------------------------------------------------------------------------
# Exact search: known optima.


def test_two_branches_known_optimum():
    sg = two_branches()
    res = reorder(sg)
    # File order: at op 2 (a2) x, a1, b1, a2 are live: 1 + 100 + 100 + 10.
    assert res.lower_bound_before == 211
    # Best: a1 a2 b1 b2 concat; widest is b2 with x, a2, b1, b2: 1 + 10 + 100 + 10.
    assert res.lower_bound_after == 121
    assert res.order == (0, 2, 1, 3, 4)
    assert res.moved_ops == (1,) or res.moved_ops == (2,)
    assert res.exact
    assert res.saving_bytes == 90
    assert analyze(apply_order(sg, res.order)).lower_bound_bytes == 121


def test_kernel_temporaries_move_with_their_operator():
    sg = two_branches()
    temps = [Temporary(6, 1, 50, "scratch of b1")]  # 50 B live only while op 1 runs
    res = reorder(sg, temporaries=temps)
    assert res.lower_bound_before == 1 + 100 + 100 + 50  # op 1 in file order
    # Now branch b must run first (b1 b2 a1 a2 concat): op 1 then holds only x, b1 and its
    # scratch; a2's step (x, b2, a1, a2 = 121) stays below.
    assert res.order == (1, 3, 0, 2, 4)
    assert res.lower_bound_after == 1 + 100 + 50
    pos = res.order.index(1)
    moved = analyze(apply_order(sg, res.order), temporaries=[Temporary(6, pos, 50)])
    assert moved.lower_bound_bytes == res.lower_bound_after


@pytest.mark.parametrize("seed", range(12))
def test_exact_search_matches_brute_force_over_every_order(seed):
    sg = random_dag(seed)
    res = reorder(sg, time_limit=None)
    assert res.exact
    assert res.lower_bound_after == brute_force_lower_bound(sg)
    assert res.lower_bound_after <= res.lower_bound_before
    assert analyze(apply_order(sg, res.order)).lower_bound_bytes == res.lower_bound_after


def test_original_order_kept_when_nothing_is_gained():
    ts = [_t(0, 8), _t(1, 8), _t(2, 8), _t(3, 8)]
    ops = [_op(i, "RELU", [i], [i + 1]) for i in range(3)]
    res = reorder(_sg(ts, ops, [0], [3]))
    assert res.order == (0, 1, 2) and res.moved_ops == () and not res.changed
    assert res.lower_bound_after == res.lower_bound_before == 24


def test_fewest_moves_among_optimal_orders():
    # two_branches plus a light op (RELU of x, 2 bytes) last in the file: it fits anywhere in
    # an optimal order, so it must not move; one operator moves in all.
    base = two_branches()
    ts = (*base.tensors, _t(6, 2))
    ops = (*base.operators, _op(5, "RELU", [0], [6]))
    sg = _sg(ts, ops, [0], [5, 6])
    res = reorder(sg)
    assert res.exact and res.lower_bound_after == 121
    assert len(res.moved_ops) == 1 and 5 not in res.moved_ops
    assert res.order[-1] == 5


def test_moved_operators_is_the_complement_of_a_longest_increasing_subsequence():
    assert moved_operators([0, 1, 2, 3]) == ()
    assert moved_operators([1, 0, 2, 3]) in ((0,), (1,))
    assert moved_operators([3, 0, 1, 2]) == (3,)
    assert len(moved_operators([4, 3, 2, 1, 0])) == 4


# ---------------------------------------------------------------------------------------------
# Side effects.


def side_effect_graph(names=("ASSIGN_VARIABLE", "ASSIGN_VARIABLE"), custom=False):
    """Branch A (big) written first in the file, then branch B; each ends in a side-effect op.

    Memory alone would run each heavy producer right before its consumer, interleaving the
    side-effect ops differently from the file; they must stay in file order.
    """
    ts = [_t(0, 1), _t(1, 100), _t(2, 100), _t(3, 4, dtype="resource"), _t(4, 4, dtype="resource")]
    ops = [
        _op(0, "CONV_2D", [0], [1]),
        _op(1, "CONV_2D", [0], [2]),
        _op(2, names[0], [3, 2] if not custom else [2], [] if not custom else [], custom=custom),
        _op(3, names[1], [4, 1] if not custom else [1], [] if not custom else [], custom=custom),
    ]
    return _sg(ts, ops, [0, 3, 4], [])


@pytest.mark.parametrize("custom", [False, True])
def test_side_effect_ops_keep_their_relative_order(custom):
    sg = side_effect_graph(names=("MY_CUSTOM", "MY_CUSTOM") if custom else ("ASSIGN_VARIABLE",) * 2,
                           custom=custom)
    assert has_side_effects(sg.operators[2], sg) and has_side_effects(sg.operators[3], sg)
    res = reorder(sg)
    pos = {o: k for k, o in enumerate(res.order)}
    assert pos[2] < pos[3]
    with pytest.raises(WhatIfError, match="depends on"):
        apply_order(sg, (0, 1, 3, 2))


def test_side_effect_chain_costs_memory_when_it_must():
    # Without the side-effect chain, (1, 2, 0, 3) would hold one 100-byte tensor at a time.
    sg = side_effect_graph()
    assert dependencies(sg)[3] >> 2 & 1  # op 3 waits for op 2
    res = reorder(sg)
    assert res.exact
    # Op 2 (reads b1) must precede op 3 (reads a1); best: b1, op2, a1, op3.
    # Live throughout: x (1 B) and two RESOURCE handles (4 B each); one 100 B tensor at a time.
    assert res.order == (1, 2, 0, 3)
    assert (res.lower_bound_before, res.lower_bound_after) == (209, 109)


@pytest.mark.parametrize("name", ["CALL_ONCE", "WHILE", "IF", "CALL", "VAR_HANDLE", "READ_VARIABLE"])
def test_control_flow_and_resource_ops_have_side_effects(name):
    sg = two_branches()
    assert has_side_effects(_op(0, name, [0], [1]), sg)
    assert not has_side_effects(_op(0, "CONV_2D", [0], [1]), sg)


def test_variable_tensor_users_keep_order():
    ts = [_t(0, 1), _t(1, 16, variable=True), _t(2, 16), _t(3, 16)]
    ops = [_op(0, "SVDF", [0, 1], [2]), _op(1, "SVDF", [0, 1], [3])]
    sg = _sg(ts, ops, [0], [2, 3])
    assert dependencies(sg)[1] & 1


# ---------------------------------------------------------------------------------------------
# Bad orders, limits, cancellation, progress, beam search.


def test_apply_order_rejects_non_permutations_and_bad_dependencies():
    sg = two_branches()
    with pytest.raises(WhatIfError, match="permutation"):
        apply_order(sg, (0, 1, 2, 3))
    with pytest.raises(WhatIfError, match="depends on"):
        apply_order(sg, (2, 0, 1, 3, 4))
    new = apply_order(sg, (1, 0, 3, 2, 4))
    assert [o.index for o in new.operators] == [0, 1, 2, 3, 4]
    assert [o.outputs for o in new.operators] == [(2,), (1,), (4,), (3,), (5,)]
    assert new.tensors == sg.tensors and new.inputs == sg.inputs and new.outputs == sg.outputs


def test_cancelled_raises():
    with pytest.raises(PlanCancelled):
        reorder(random_dag(3, 12), cancelled=lambda: True)


def test_progress_reports_fractions():
    seen = []
    reorder(random_dag(1, 10), progress=lambda f, m: seen.append((f, m)))
    assert seen and all(0.0 <= f <= 1.0 for f, _ in seen) and seen[-1][0] == 1.0


def test_zero_time_limit_still_returns_a_valid_order():
    sg = random_dag(5, 14)
    res = reorder(sg, time_limit=0.0)
    apply_order(sg, res.order)
    assert res.lower_bound_after <= res.lower_bound_before


def wide_graph(width=14, seed=0):
    """x fans out to ``width`` expand/reduce pairs joined by one ADD chain: many sets per level."""
    rng = random.Random(seed)
    ts = [_t(0, 1)]
    ops = []
    ends = []
    for _ in range(width):
        big = _t(len(ts), rng.choice([100, 200, 300]))
        ts.append(big)
        ops.append(_op(len(ops), "CONV_2D", [0], [big.index]))
    for k in range(width):
        small = _t(len(ts), 4)
        ts.append(small)
        ops.append(_op(len(ops), "MEAN", [1 + k], [small.index]))
        ends.append(small.index)
    out = _t(len(ts), 4)
    ts.append(out)
    ops.append(_op(len(ops), "CONCATENATION", ends, [out.index]))
    return _sg(ts, ops, [0], [out.index])


def test_beam_search_when_the_exact_search_is_capped(monkeypatch):
    sg = wide_graph()
    monkeypatch.setattr(reorder_mod, "EXACT_LEVEL_CAP", 50)
    monkeypatch.setattr(reorder_mod, "BEAM_WIDTHS", (8, 32))
    res = reorder(sg, time_limit=5.0)
    assert not res.exact and res.stats["method"] == "beam"
    apply_order(sg, res.order)
    # Each expand right before its reduce: x, the largest expand, and up to 14 small results.
    assert res.lower_bound_after <= 1 + 300 + 14 * 4 + 4
    assert res.lower_bound_after < res.lower_bound_before


@pytest.mark.shared
def test_search_model_matches_analysis_on_random_orders_of_a_real_model():
    sg = load_model(shared_model("mp_face_detection_short_range.tflite")).subgraphs[0]
    g = reorder_mod._build_graph(sg, analyze(sg))
    orders = list(itertools.islice(_random_orders(sg, seed=0), 5))
    for order in orders:
        assert reorder_mod._peak_of(g, order) == analyze(apply_order(sg, order)).lower_bound_bytes


def _random_orders(sg, seed):
    rng = random.Random(seed)
    deps = dependencies(sg)
    n = len(sg.operators)
    while True:
        done, order = 0, []
        while len(order) < n:
            ready = [o for o in range(n) if not done >> o & 1 and not deps[o] & ~done]
            o = rng.choice(ready)
            order.append(o)
            done |= 1 << o
        yield tuple(order)


# ---------------------------------------------------------------------------------------------
# LiteRT is the oracle.


def _interpreter(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    return it


def _random_inputs(it, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for d in it.get_input_details():
        shape, dt = tuple(d["shape"]), np.dtype(d["dtype"])
        if dt == np.bool_:
            x = rng.integers(0, 2, shape).astype(bool)
        elif np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            x = rng.integers(max(info.min, -100), min(info.max, 100) + 1, shape).astype(dt)
        else:
            x = rng.standard_normal(shape).astype(dt)
        out.append(x)
    return out


def run_model(path, seed=0):
    it = _interpreter(path)
    for d, x in zip(it.get_input_details(), _random_inputs(it, seed)):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def arena_tensors(sg):
    """Arena tensors with plain data (a RESOURCE handle's pointer is not ours to read)."""
    return [u.tensor for u in analyze(sg).usages
            if sg.tensors[u.tensor].dtype not in ("resource", "string", "variant")]


def measured_arena_bytes(path, tensors):
    """Span of the runtime's data pointers over ``tensors`` (bytes).

    Scalars (returned by value) and tensors with no data yet (allocated at run time) are skipped.
    """
    it = _interpreter(path)
    lo = hi = None
    for t in tensors:
        try:
            a = it.tensor(t)()
        except ValueError:  # "Tensor data is null"
            continue
        if isinstance(a, np.ndarray) and a.nbytes:
            p = a.ctypes.data
            lo = p if lo is None else min(lo, p)
            hi = p + a.nbytes if hi is None else max(hi, p + a.nbytes)
        del a
    return 0 if lo is None else hi - lo


def assert_same_outputs(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


ORACLE_MODELS = [
    "coral_split_concat.tflite",
    "mp_face_detection_short_range.tflite",
    "coral_deeplabv3_mnv2_pascal_quant.tflite",
    "litert_test_topo_sort_fork_split.tflite",
    "litert_testdata_call_once_mul.tflite",
]


@pytest.mark.shared
@pytest.mark.parametrize("name", ORACLE_MODELS)
def test_reordered_model_runs_the_same_in_litert_with_no_larger_arena(name, tmp_path):
    src = shared_model(name)
    sg = load_model(src).subgraphs[0]
    res = reorder(sg, time_limit=3.0)
    assert res.lower_bound_after <= res.lower_bound_before
    out = tmp_path / "reordered.tflite"
    write_reordered(src, out, 0, res.order)
    assert_same_outputs(run_model(src), run_model(out))
    arena = arena_tensors(sg)
    assert measured_arena_bytes(out, arena) <= measured_arena_bytes(src, arena)
    # The reader sees the new order.
    new = load_model(out).subgraphs[0]
    assert [o.outputs for o in new.operators] == [sg.operators[i].outputs for i in res.order]


@pytest.mark.shared
@pytest.mark.parametrize("name", ORACLE_MODELS)
def test_other_topological_orders_also_run_the_same(name, tmp_path):
    """Random valid orders (not just ours) give the same outputs: the dependency model is sound."""
    src = shared_model(name)
    sg = load_model(src).subgraphs[0]
    reference = run_model(src)
    seen = set()
    for k, order in enumerate(itertools.islice(_random_orders(sg, seed=1), 3)):
        if order in seen:
            continue
        seen.add(order)
        apply_order(sg, order)  # valid
        out = tmp_path / f"order{k}.tflite"
        write_reordered(src, out, 0, order)
        assert_same_outputs(reference, run_model(out))


@pytest.mark.shared
def test_repack_path_writes_a_model_litert_runs(tmp_path):
    src = shared_model("litert_test_topo_sort_fork_split.tflite")
    sg = load_model(src).subgraphs[0]
    order = (0, 1, 4, 2, 3)
    apply_order(sg, order)
    out = tmp_path / "repacked.tflite"
    write_reordered(src, out, 0, order, repack=True)
    assert_same_outputs(run_model(src), run_model(out))
    assert [o.op_name for o in load_model(out).subgraphs[0].operators] == [
        sg.operators[i].op_name for i in order
    ]


@pytest.mark.shared
@pytest.mark.slow
def test_traffic_model_reorder_lowers_the_measured_arena(tmp_path):
    src = shared_model("coral_automl_traffic_model.tflite")
    sg = load_model(src).subgraphs[0]
    res = reorder(sg, time_limit=3.0)
    assert res.lower_bound_after < res.lower_bound_before
    out = tmp_path / "reordered.tflite"
    write_reordered(src, out, 0, res.order)
    assert_same_outputs(run_model(src), run_model(out))
    arena = arena_tensors(sg)
    before, after = measured_arena_bytes(src, arena), measured_arena_bytes(out, arena)
    assert after < before
    assert after >= res.lower_bound_after  # the runtime cannot beat the lower bound
    # Everything but the operator order is byte-for-byte the same: the file keeps its size.
    assert out.stat().st_size == src.stat().st_size


@pytest.mark.shared
def test_reordering_a_while_body_subgraph_runs_the_same(tmp_path):
    """Subgraph 2 of a WHILE model (its body: three independent ops) reversed; the rest untouched."""
    src = shared_model("litert_testdata_multi_subgraphs_while.tflite")
    model = load_model(src)
    body = model.subgraphs[2]
    order = (2, 1, 0)
    apply_order(body, order)
    out = tmp_path / "body_reversed.tflite"
    write_reordered(src, out, 2, order)
    assert_same_outputs(run_model(src), run_model(out))
    new = load_model(out)
    assert [o.outputs for o in new.subgraphs[2].operators] == [body.operators[i].outputs for i in order]
    assert new.subgraphs[0] == model.subgraphs[0] and new.subgraphs[1] == model.subgraphs[1]


# ---------------------------------------------------------------------------------------------
# Wide graphs (B8: 16,000 operators all ready at once): the deadline, Cancel and memory hold
# inside one level, not only between levels. Counted in steps and clock reads, never timed.


def fan_out(n_ops):
    """x feeds ``n_ops`` independent ADDs, each an output: every operator is ready at once."""
    ts = [_t(0, 768)] + [_t(1 + i, 16) for i in range(n_ops)]
    ops = [_op(i, "ADD", [0, 0], [1 + i]) for i in range(n_ops)]
    return _sg(ts, ops, [0], [1 + i for i in range(n_ops)])


class FakeClock:
    """``time.perf_counter`` advancing 1 ms per read: a deadline is a number of reads."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        self.now += 0.001
        return self.now


def test_time_limit_holds_inside_one_level_of_a_wide_graph(monkeypatch):
    sg = fan_out(1500)  # one level of the first beam: 16 sets x 1,500 ready operators
    clock = FakeClock()
    monkeypatch.setattr(reorder_mod.time, "perf_counter", clock)
    res = reorder(sg, time_limit=0.2)  # about 200 clock reads
    assert res.order == tuple(range(1500)) and not res.exact
    # The clock is read every POLL_EVERY steps: the work done is bounded by the limit.
    assert res.stats["steps"] <= 250 * reorder_mod.POLL_EVERY


def test_cancel_acts_within_the_first_level_of_a_wide_graph():
    sg = fan_out(1500)
    calls = []
    seen = []

    def cancelled():
        calls.append(1)
        return len(calls) > 5  # the user presses Cancel after the fifth look

    with pytest.raises(PlanCancelled):
        reorder(sg, time_limit=None, cancelled=cancelled, progress=lambda f, m: seen.append(m))
    # Cancelled in the first level (was: looked at once per level, so five levels ran first).
    assert not any("operator 3 of" in m for m in seen)


def test_wide_graph_memory_stays_bounded(monkeypatch):
    import tracemalloc

    sg = fan_out(1500)
    clock = FakeClock()
    monkeypatch.setattr(reorder_mod.time, "perf_counter", clock)
    tracemalloc.start()
    try:
        reorder(sg, time_limit=0.3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A level of the beam keeps at most 2 x 16 + 16 sets (two 1,500-bit masks each); it kept
    # every one of the 24,000 candidates (about 10 MB here, 1.1 GB on B8).
    assert peak < 6_000_000, peak


def test_progress_moves_while_one_level_takes_long(monkeypatch):
    sg = fan_out(1500)
    clock = FakeClock()
    monkeypatch.setattr(reorder_mod.time, "perf_counter", clock)
    seen = []
    reorder(sg, time_limit=1.0, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen[:-1]]
    assert len(fractions) >= 3 and fractions == sorted(fractions) and fractions[-1] > 0.5
    assert "steps tried" in seen[-2][1]
