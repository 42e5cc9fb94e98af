"""The reader: contents, sizes, op names, weights bytes, flags, and every malformed-input case."""

from __future__ import annotations

import struct

import pytest
from ai_edge_litert import schema_py_generated as S

from tests.tflite_builder import add_chain, build, tensor, write
from viewer.errors import ModelFormatError, SubgraphError
from viewer.model import dtypes
from viewer.model.reader import load_model
from viewer.model.types import FLAG_DYNAMIC, FLAG_RESOURCE, FLAG_STRING, FLAG_VARIANT


def test_reads_operators_tensors_in_order(tmp_path):
    m = load_model(write(tmp_path, "a.tflite", add_chain(3)))
    sg = m.subgraph(0)
    assert [op.op_name for op in sg.operators] == ["ADD"] * 3
    assert [op.inputs for op in sg.operators] == [(0, 0), (1, 1), (2, 2)]
    assert sg.inputs == (0,) and sg.outputs == (3,)
    t = sg.tensors[1]
    assert (t.shape, t.dtype, t.nbytes, t.is_constant) == ((1, 8, 8, 3), "float32", 768, False)


@pytest.mark.parametrize(
    "dtype, shape, expected",
    [
        ("float32", (2, 3), 24), ("float16", (5,), 10), ("bfloat16", (5,), 10),
        ("int4", (5,), 3), ("uint4", (4,), 2), ("int2", (5,), 2), ("complex64", (3,), 24),
        ("complex128", (3,), 48), ("int8", (7,), 7), ("bool", (3,), 3), ("float64", (1,), 8),
        ("int64", (2,), 16), ("uint16", (3,), 6), ("float8_e4m3fn", (3,), 3), ("string", (4,), 0),
    ],
)
def test_bytes_per_element(dtype, shape, expected):
    assert dtypes.nbytes(dtype, shape) == expected


def test_every_tensor_type_has_a_size_or_is_flagged_unsized():
    for code, name in dtypes.TYPE_NAMES.items():
        assert name in dtypes.BITS or name in dtypes.UNSIZED, name


def test_op_name_is_max_of_deprecated_and_builtin_code_and_custom_code(tmp_path):
    big = S.BuiltinOperator.STABLEHLO_ADD  # > 127: deprecated code saturates at 127
    data = build(
        [tensor("a", (2,)), tensor("b", (2,)), tensor("c", (2,))],
        [(0, [0, 0], [1]), (1, [1], [2])],
        [0], [2],
        opcodes=[(big, 127, None), (S.BuiltinOperator.CUSTOM, S.BuiltinOperator.CUSTOM, "MyFancyOp")],
    )
    sg = load_model(write(tmp_path, "m.tflite", data)).subgraph(0)
    assert sg.operators[0].op_name == "STABLEHLO_ADD"
    assert sg.operators[1].op_name == "MyFancyOp" and sg.operators[1].is_custom
    # Old files carry only the deprecated code (builtin_code 0 = ADD): max() picks it.
    data = build([tensor("a", (2,)), tensor("b", (2,))], [(0, [0], [1])], [0], [1],
                 opcodes=[(0, S.BuiltinOperator.CONV_2D, None)])
    assert load_model(write(tmp_path, "o.tflite", data)).subgraph(0).operators[0].op_name == "CONV_2D"


def test_weights_bytes_counts_inline_and_offset_buffers_once(tmp_path):
    # Buffer 1 inline (40 B), buffer 2 stored after the flatbuffer via offset/size (files > 2 GB).
    ts = [tensor("x", (10,)), tensor("w", (10,), buffer=1), tensor("w2", (10,), buffer=1),
          tensor("big", (25,), buffer=2), tensor("y", (10,))]
    probe = build(ts, [(0, [0, 1], [4])], [0], [4], buffers=[None, b"\0" * 40, (10**6, 100)])
    off = len(probe) + 16
    data = build(ts, [(0, [0, 1], [4])], [0], [4], buffers=[None, b"\0" * 40, (off, 100)])
    p = write(tmp_path, "w.tflite", data + b"\0" * (off - len(data)) + b"\1" * 100)
    m = load_model(p)
    assert m.weights_bytes == 140
    assert m.subgraph(0).tensors[3].is_constant


def test_flags_string_resource_variant_and_dynamic(tmp_path):
    ts = [tensor("s", (3,), S.TensorType.STRING), tensor("r", (), S.TensorType.RESOURCE),
          tensor("v", (), S.TensorType.VARIANT), tensor("d", (1, 4), signature=(-1, 4))]
    sg = load_model(write(tmp_path, "f.tflite", build(ts, [], [0], [3]))).subgraph(0)
    assert FLAG_STRING in sg.tensors[0].flags
    assert FLAG_RESOURCE in sg.tensors[1].flags
    assert FLAG_VARIANT in sg.tensors[2].flags
    assert FLAG_DYNAMIC in sg.tensors[3].flags and sg.tensors[3].shape_signature == (-1, 4)
    assert not sg.tensors[3].flags - {FLAG_DYNAMIC}


# ---- malformed input: one clear ModelFormatError naming the file and the step -------------

def _assert_one_line(err: ModelFormatError, path):
    msg = str(err)
    assert str(path) in msg and "\n" not in msg


def test_missing_file(tmp_path):
    p = tmp_path / "nope.tflite"
    with pytest.raises(ModelFormatError, match="no such file") as e:
        load_model(p)
    _assert_one_line(e.value, p)


def test_directory(tmp_path):
    with pytest.raises(ModelFormatError, match="directory"):
        load_model(tmp_path)


@pytest.mark.parametrize("content", [b"", b"abc", b"hello world, I am not a flatbuffer at all" * 3,
                                     b"\x89PNG\r\n\x1a\n" + b"\0" * 64])
def test_not_a_flatbuffer(tmp_path, content):
    p = write(tmp_path, "x.tflite", content)
    with pytest.raises(ModelFormatError) as e:
        load_model(p)
    _assert_one_line(e.value, p)


def test_wrong_file_identifier(tmp_path):
    data = bytearray(add_chain())
    data[4:8] = b"TFL2"
    p = write(tmp_path, "id.tflite", bytes(data))
    with pytest.raises(ModelFormatError, match="identifier"):
        load_model(p)


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_file(tmp_path, keep):
    data = add_chain(4)
    p = write(tmp_path, "t.tflite", data[: int(len(data) * keep)])
    with pytest.raises(ModelFormatError) as e:
        load_model(p)
    _assert_one_line(e.value, p)


def test_root_offset_out_of_range(tmp_path):
    data = bytearray(add_chain())
    struct.pack_into("<I", data, 0, 0x7FFFFFF0)
    p = write(tmp_path, "r.tflite", bytes(data))
    with pytest.raises(ModelFormatError, match="root"):
        load_model(p)


def test_tensor_index_out_of_range(tmp_path):
    data = build([tensor("a", (2,)), tensor("b", (2,))], [(0, [0, 7], [1])], [0], [1])
    with pytest.raises(ModelFormatError, match="operator 0 inputs.*tensor 7"):
        load_model(write(tmp_path, "i.tflite", data))


def test_buffer_index_out_of_range(tmp_path):
    data = build([tensor("a", (2,), buffer=9), tensor("b", (2,))], [(0, [0, 0], [1])], [0], [1])
    with pytest.raises(ModelFormatError, match="buffer index 9"):
        load_model(write(tmp_path, "b.tflite", data))


def test_buffer_offset_past_end_of_file(tmp_path):
    data = build([tensor("a", (2,)), tensor("w", (2,), buffer=1), tensor("b", (2,))],
                 [(0, [0, 1], [2])], [0], [2], buffers=[None, (10**9, 8)])
    with pytest.raises(ModelFormatError, match="past the end"):
        load_model(write(tmp_path, "o.tflite", data))


def test_corrupted_bytes_never_escape_as_other_exceptions(tmp_path):
    """Flip bytes all over a valid file: only ModelFormatError (or success) may come out."""
    import random

    base = add_chain(3)
    rng = random.Random(1234)
    for k in range(200):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(8, len(data))] = rng.randrange(256)
        p = write(tmp_path, f"c{k}.tflite", bytes(data))
        try:
            load_model(p)
        except ModelFormatError:
            pass


def test_subgraph_that_does_not_exist(tmp_path):
    m = load_model(write(tmp_path, "a.tflite", add_chain()))
    with pytest.raises(SubgraphError, match="no subgraph 5"):
        m.subgraph(5)


def test_tables_sharing_one_huge_vector_do_not_make_reading_quadratic(tmp_path):
    """Many tensors pointing at one long shape vector: refused quickly, not read for minutes."""
    import flatbuffers

    n_t, dims = 3000, 3000
    b = flatbuffers.Builder(1 << 16)
    S.TensorStartShapeVector(b, dims)
    for _ in range(dims):
        b.PrependInt32(1)
    shape = b.EndVector()
    ts = []
    for _ in range(n_t):
        S.TensorStart(b)
        S.TensorAddShape(b, shape)  # every tensor shares the same 3000-long shape
        ts.append(S.TensorEnd(b))
    S.SubGraphStartTensorsVector(b, n_t)
    for t in reversed(ts):
        b.PrependUOffsetTRelative(t)
    tv = b.EndVector()
    S.SubGraphStart(b)
    S.SubGraphAddTensors(b, tv)
    sg = S.SubGraphEnd(b)
    S.ModelStartSubgraphsVector(b, 1)
    b.PrependUOffsetTRelative(sg)
    sgs = b.EndVector()
    S.ModelStart(b)
    S.ModelAddVersion(b, 3)
    S.ModelAddSubgraphs(b, sgs)
    b.Finish(S.ModelEnd(b), file_identifier=b"TFL3")
    p = write(tmp_path, "shared.tflite", bytes(b.Output()))
    with pytest.raises(ModelFormatError, match="more vector elements than the file can hold"):
        load_model(p)


def test_fifo_and_devices_are_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "pipe.tflite"
    os.mkfifo(fifo)
    with pytest.raises(ModelFormatError, match="not a regular file"):
        load_model(fifo)
    with pytest.raises(ModelFormatError, match="not a regular file"):
        load_model("/dev/zero")
