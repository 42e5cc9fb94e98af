"""The vectorised ``analyze`` gives exactly what the per-tensor loop it replaced gave.

``_intervals_reference.py`` is the loop version as it was on main at 969f405 (before issue 15's
vectorisation), kept verbatim as the oracle of this one test module. Compared field by field,
the dict orders included: every subgraph of every shared model and of every file in
../shared/fuzz the reader accepts, with and without kernel temporaries, and seeded random
graphs built to hit every rule (in-place chains, constants, variables, handles, dynamic
outputs, graph inputs that are also outputs, duplicated and out-of-range indices).
LiteRT itself checks the rules (test_runtime_agreement.py); this checks the rewrite.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import MODELS, SHARED, shared_model_names
from tests.analysis import _intervals_reference as reference
from viewer.analysis.intervals import analyze
from viewer.analysis.types import Temporary
from viewer.errors import ViewerError
from viewer.model.reader import load_model
from viewer.model.types import FLAG_STRING, FLAG_VARIANT, Operator, Subgraph, Tensor


def assert_same(subgraph, model=None, temporaries=()):
    try:
        want = reference.analyze(subgraph, temporaries=temporaries, model=model)
    except ViewerError as e:
        with pytest.raises(type(e), match=None):
            analyze(subgraph, temporaries=temporaries, model=model)
        return
    got = analyze(subgraph, temporaries=temporaries, model=model)
    assert got.usages == want.usages
    assert list(got.outside.items()) == list(want.outside.items())
    assert dict(got.temporaries_ops) == dict(want.temporaries_ops)
    assert np.array_equal(got.breadth, want.breadth) and got.breadth.dtype == want.breadth.dtype
    assert (got.naive_bytes, got.lower_bound_bytes, got.widest_op) == (
        want.naive_bytes, want.lower_bound_bytes, want.widest_op)
    assert got.alloc_queue == want.alloc_queue
    assert got.kernel_sized == want.kernel_sized
    assert dict(got.temporary_names) == dict(want.temporary_names)


def _temporaries(subgraph, seed):
    rng = random.Random(seed)
    n, ops = len(subgraph.tensors), len(subgraph.operators)
    if not ops:
        return ()
    return tuple(Temporary(n + k, rng.randrange(ops), rng.randrange(1, 5000), f"tmp{k}" if k % 2 else "")
                 for k in range(3))


@pytest.mark.parametrize("name", shared_model_names())
def test_every_shared_model_analyses_as_before(name):
    model = load_model(str(MODELS / name), graph_rules=False)  # self-loops too
    for sg in model.subgraphs:
        assert_same(sg, model)
        assert_same(sg, None, _temporaries(sg, sg.index))


def test_every_fuzz_corpus_file_analyses_as_before():
    files = sorted((SHARED / "fuzz").glob("*.tflite"))
    if not files:
        pytest.skip(f"{SHARED / 'fuzz'} not present")
    for p in files:
        try:
            model = load_model(str(p), graph_rules=False)
        except ViewerError:
            continue
        for sg in model.subgraphs:
            assert_same(sg, model)


_NAMES = ["ADD", "ADD", "RESHAPE", "MUL", "CONV_2D", "VAR_HANDLE", "READ_VARIABLE", "DEQUANTIZE",
          "DENSIFY", "SHAPE", "DYNAMIC_UPDATE_SLICE", "SOFTMAX", "BITCAST", "CONCATENATION"]


def _random_graph(seed: int) -> Subgraph:
    rng = random.Random(seed)
    n_t, n_ops = rng.randrange(1, 40), rng.randrange(0, 30)
    sizes = [rng.choice([0, 4, 8, 64, 64, 256, 1000]) for _ in range(n_t)]
    tensors = tuple(
        Tensor(i, f"t{i}", (sizes[i],) if rng.random() > 0.1 else (), (sizes[i],), "int8", sizes[i],
               is_constant=rng.random() < 0.1, is_variable=rng.random() < 0.05,
               flags=frozenset(rng.choice([()] * 12 + [(FLAG_STRING,), (FLAG_VARIANT,)])))
        for i in range(n_t))

    def pick():
        return rng.randrange(-1, n_t + 1) if rng.random() < 0.1 else rng.randrange(n_t)

    ops = tuple(
        Operator(k, rng.choice(_NAMES), 0, None, 1,
                 tuple(pick() for _ in range(rng.randrange(0, 4))),
                 tuple(pick() for _ in range(rng.randrange(0, 3))))
        for k in range(n_ops))
    ins = tuple(pick() for _ in range(rng.randrange(0, 3)))
    outs = tuple(pick() for _ in range(rng.randrange(0, 3)))
    return Subgraph(0, "main", tensors, ops, ins, outs)


def test_the_allocation_queue_made_on_first_use_is_a_plain_tuple_once_pickled():
    import pickle

    sg = _random_graph(11)
    got, want = analyze(sg), reference.analyze(sg)
    assert len(got.alloc_queue) == len(want.alloc_queue) and bool(got.alloc_queue)
    copy = pickle.loads(pickle.dumps(got.alloc_queue))
    assert type(copy) is tuple and copy == want.alloc_queue == got.alloc_queue
    assert got.alloc_queue[0] == want.alloc_queue[0] and list(got.alloc_queue) == list(want.alloc_queue)


def test_seeded_random_graphs_analyse_as_before():
    for seed in range(600):
        sg = _random_graph(seed)
        assert_same(sg, None, _temporaries(sg, seed) if seed % 3 == 0 else ())
