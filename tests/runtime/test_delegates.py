"""The delegate child against LiteRT itself (viewer.runtime.delegates).

The oracle is an interpreter in this process: ``interpreter.tensor(i)()`` data pointers after
``allocate_tensors()`` and one ``invoke()``, with XNNPACK applied (``OpResolverType.AUTO``) or
not. Tensors inside XNNPACK's partitions have no data ("Tensor data is null"); the others that
are not the file's constants make up LiteRT's CPU arena.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_model
from viewer.runtime.delegates import (DelegateLoadError, DelegateSpec, library_error,
                                      measure_delegate)

MODEL = "mobilenet_v2_224_int8.tflite"


def _litert_view(path: Path, resolver: str):
    """({id: (start, end)} of the tensors with data that are not the file's constants, ids
    without data), read through LiteRT's own Python API."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from viewer.model.reader import load_model

    kind = {"xnnpack": OpResolverType.AUTO,
            "none": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}[resolver]
    it = Interpreter(model_path=str(path), experimental_op_resolver_type=kind)
    it.allocate_tensors()
    it.invoke()
    sg = load_model(path).subgraph(0)
    constants = {i for i, t in enumerate(sg.tensors) if t.is_constant}
    spans, null = {}, set()
    for d in it.get_tensor_details():
        i = d["index"]
        try:
            a = it.tensor(i)()
        except ValueError as e:
            if "null" in str(e):
                null.add(i)
            continue
        if i not in constants and a.nbytes:
            spans[i] = (a.ctypes.data, a.ctypes.data + a.nbytes)
    return spans, null


@pytest.mark.shared
@pytest.mark.parametrize("kind", ["xnnpack", "none"])
def test_cpu_arena_and_delegated_tensors_are_litert_own(kind):
    p = shared_model(MODEL)
    m = measure_delegate(p, DelegateSpec(kind))
    spans, null = _litert_view(p, kind)
    assert set(spans) == set(m.arena_ids) | set(m.persistent_ids)
    arena = [spans[i] for i in m.arena_ids]
    assert m.arena_bytes == max(e for _, e in arena) - min(s for s, _ in arena)
    assert set(m.without_memory) == null
    if kind == "xnnpack":  # the partitions' tensors left the arena: it holds input and output
        assert null and m.delegate_kernels >= 1 and m.delegated_operators > 0
        assert m.arena_bytes < 200_000
    else:
        assert m.delegate_kernels == 0 and m.arena_bytes == 1_655_808
    assert m.measured and m.total_growth == m.setup_growth + m.invoke_growth


def test_library_errors_name_the_path(tmp_path):
    assert "no such delegate library" in library_error(str(tmp_path / "gpu.so"))
    assert "is a directory" in library_error(str(tmp_path))
    with pytest.raises(DelegateLoadError, match="no such delegate library"):
        measure_delegate("unused.tflite", DelegateSpec("external", str(tmp_path / "gpu.so")))


@pytest.mark.shared
def test_a_library_that_is_no_delegate_is_one_line():
    import ai_edge_litert

    not_a_delegate = Path(ai_edge_litert.__file__).parent / "_pywrap_string_util.so"
    if not not_a_delegate.exists():
        pytest.skip(f"{not_a_delegate} not in this wheel")
    with pytest.raises(DelegateLoadError) as e:
        measure_delegate(shared_model(MODEL), DelegateSpec("external", str(not_a_delegate)))
    msg = str(e.value)
    assert "\n" not in msg and str(not_a_delegate) in msg and "not a LiteRT delegate" in msg


from delegate_library import hold_delegate  # noqa: E402,F401  (the fixture)

HOLD = 8 << 20


@pytest.mark.shared
def test_a_library_delegates_own_buffers_are_in_its_setup_term(hold_delegate):
    """The test delegate holds exactly 8 MiB it allocated and touched in Prepare: the setup
    growth sees it (within a few pages), and the CPU arena is LiteRT's own (nothing delegated)."""
    p = shared_model(MODEL)
    empty = measure_delegate(p, DelegateSpec("external", str(hold_delegate)))
    held = measure_delegate(p, DelegateSpec("external", str(hold_delegate),
                                            (("hold_bytes", str(HOLD)),)))
    assert abs((held.setup_growth - empty.setup_growth) - HOLD) <= 64 << 10
    assert held.delegated_operators == 0 and held.delegate_kernels == 0
    assert held.arena_bytes == measure_delegate(p, DelegateSpec("none")).arena_bytes == 1_655_808


@pytest.mark.shared
def test_a_delegate_whose_create_fails_is_one_line(hold_delegate):
    with pytest.raises(DelegateLoadError) as e:
        measure_delegate(shared_model(MODEL), DelegateSpec("external", str(hold_delegate),
                                                           (("fail", "1"),)))
    assert "\n" not in str(e.value) and "asked to fail" in str(e.value)
