"""Prepare-time placement rules of ``analyze`` against LiteRT 2.3 itself.

Hand-built models (tests/analysis/_fold_models.py) exercise each rule; the runtime probe (a
subprocess running LiteRT) gives every tensor's allocation type, which is the oracle.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from conftest import shared_model
from tests.analysis._fold_models import folding_cases, unread_output_model
from tests.tflite_builder import write
from viewer.analysis.intervals import (
    OUT_WHILE_FORWARDED,
    PERSISTENT_RO_RULES,
    analyze,
)
from viewer.analysis.problem import PlanningProblem
from viewer.analysis.types import OUT_PERSISTENT, OUT_PERSISTENT_RO
from viewer.model.reader import load_model
from viewer.planning.litert import plan_litert
from viewer.runtime.probe import REGION_NONE, probe_analysis, probe_model


@functools.lru_cache(maxsize=None)
def _folding(tmp_dir):
    from pathlib import Path

    data, expect = folding_cases()
    path = write(Path(tmp_dir), "folding.tflite", data)
    return load_model(path), probe_model(path, check=True), expect


@pytest.fixture(scope="module")
def folding(tmp_path_factory):
    return _folding(str(tmp_path_factory.mktemp("fold")))


def test_every_folding_case_matches_the_runtime(folding):
    model, probe, expect = folding
    sg = model.subgraph(0)
    an = analyze(sg, model=model)
    ours, runtime = {}, {}
    for name, where in expect.items():
        t = next(x.index for x in sg.tensors if x.name == name)
        runtime[name] = probe.tensor(t).allocation
        why = an.outside.get(t)
        ours[name] = {OUT_PERSISTENT_RO: "persistent-ro", OUT_PERSISTENT: "arena-rw-persistent"}.get(
            why, "arena-rw" if an.usage(t) is not None else why)
    assert runtime == expect  # the measured table, so a LiteRT upgrade that changes it shows up
    assert ours == runtime


def test_every_rule_of_the_table_is_exercised(folding):
    model, _, expect = folding
    sg = model.subgraph(0)
    by_name = {t.name: t.index for t in sg.tensors}
    folded_ops = {op.op_name for op in sg.operators
                  if expect.get(sg.tensors[op.outputs[0]].name) == "persistent-ro"}
    assert set(PERSISTENT_RO_RULES) <= folded_ops
    # Propagation: STRIDED_SLICE of SHAPE's output, then MUL of that, both folded.
    assert expect["strided_slice"] == expect["mul_of_folded"] == "persistent-ro"
    assert by_name["shape"] in analyze(sg).outside


@pytest.mark.shared
def test_dynamic_shapes_chain_is_folded_like_the_runtime():
    """SHAPE #9 -> STRIDED_SLICE #10 -> MUL #11: tensors 28, 29, 30 are kTfLitePersistentRo."""
    path = shared_model("litert_testdata_dynamic_shapes.tflite")
    model = load_model(path)
    an = analyze(model.subgraph(0))
    # LiteRT prepares the operators after the first dynamic output only when it runs them.
    probe = probe_model(path, check=True, invoke=True)
    for t in (28, 29, 30):
        assert probe.tensor(t).allocation == "persistent-ro"
        assert an.outside.get(t) == OUT_PERSISTENT_RO and an.usage(t) is None
    folded = {t for t, why in an.outside.items() if why == OUT_PERSISTENT_RO}
    assert folded == {t.id for t in probe.tensors[:len(model.subgraph(0).tensors)]
                      if t.allocation == "persistent-ro"}


@pytest.mark.shared
def test_while_outputs_forwarded_by_the_body_get_no_memory():
    path = shared_model("litert_testdata_while_op_with_forwarding_input.tflite")
    model = load_model(path)
    probe = probe_model(path, check=True, invoke=True)
    an = probe_analysis(model, probe)
    for t in (8, 12):
        assert probe.tensor(t).region == REGION_NONE
        assert an.outside.get(t) == OUT_WHILE_FORWARDED and an.usage(t) is None
    # Outputs 7, 9, 10 change in the body; 11 is a STRING: none is dropped.
    assert not {7, 9, 10, 11} & {t for t, w in an.outside.items() if w == OUT_WHILE_FORWARDED}
    # Without the model the body is unknown: the old behaviour (they stay in the arena).
    assert analyze(model.subgraph(0)).usage(8) is not None


@pytest.mark.shared
def test_while_output_that_is_read_or_a_graph_output_is_kept():
    model = load_model(shared_model("litert_testdata_while_op_with_forwarding_input.tflite"))
    sg = model.subgraph(0)
    as_output = dataclasses.replace(sg, outputs=sg.outputs + (8,))
    assert analyze(as_output, model=model).usage(8) is not None
    ops = list(sg.operators)
    reader = dataclasses.replace(ops[0], index=len(ops), inputs=(12, ops[0].inputs[1]), outputs=(6,))
    read = dataclasses.replace(sg, operators=tuple(ops) + (reader,))
    an = analyze(read, model=model)
    assert an.usage(12) is not None and an.outside.get(8) == OUT_WHILE_FORWARDED


def test_pinned_means_never_deallocated_and_matches_the_runtime(tmp_path):
    """A produced tensor nothing reads is never freed; LiteRT places a tensor allocated at node 0
    and never freed before the others, so without the allocation queue (what-ifs drop it) the
    ``litert`` planner needs ``pinned`` to reproduce the runtime."""
    path = write(tmp_path, "unread.tflite", unread_output_model())
    model = load_model(path)
    probe = probe_model(path, check=True)
    an = probe_analysis(model, probe)
    problem = an.problem()
    unread = next(t.index for t in model.subgraph(0).tensors if t.name == "unread")
    pinned = {b.id for b in problem.buffers if b.pinned}
    assert unread in pinned and an.usage(unread).never_freed
    assert pinned == {u.tensor for u in an.usages if u.never_freed}
    bare = PlanningProblem(problem.buffers, problem.num_ops)  # no alloc_queue
    assert plan_litert(bare).offsets == probe.offsets
    assert plan_litert(problem).offsets == probe.offsets
