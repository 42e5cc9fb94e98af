"""``arena-viewer offline-plan``: the OfflineMemoryAllocation entry TFLM reads, measured."""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as S
import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.analysis.tflm import tflm_problem
from viewer.cli import main
from viewer.model.offline_plan import OFFLINE_METADATA_NAME, decode_offsets, encode_offsets, read_offline_offsets
from viewer.model.reader import load_model
from viewer.runtime.tflm_probe import measure_tflm, tflm_available

needs_tflm = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")


def test_words_are_version_subgraphs_count_offsets():
    data = encode_offsets([0, -1, 48], 1)
    assert data == b"".join(x.to_bytes(4, "little", signed=True) for x in (1, 1, 3, 0, -1, 48))
    assert decode_offsets(data) == (0, -1, 48)


def _unchanged_but_metadata(a: bytes, b: bytes) -> bool:
    ma = S.ModelT.InitFromPackedBuf(bytearray(a), 0)
    mb = S.ModelT.InitFromPackedBuf(bytearray(b), 0)
    same_bufs = all((x.data is None and y.data is None) or bytes(x.data) == bytes(y.data)
                    for x, y in zip(ma.buffers, mb.buffers))
    ops = lambda m: [[(o.opcodeIndex, list(o.inputs), list(o.outputs)) for o in g.operators] for g in m.subgraphs]  # noqa: E731
    ts = lambda m: [[(t.name, list(t.shape), t.type, t.buffer) for t in g.tensors] for g in m.subgraphs]  # noqa: E731
    return same_bufs and ops(ma) == ops(mb) and ts(ma) == ts(mb) and len(mb.buffers) == len(ma.buffers) + 1


def test_writes_an_entry_and_keeps_the_rest(tmp_path, capsys):
    src = write(tmp_path, "chain.tflite", add_chain(4))
    dst = tmp_path / "out.tflite"
    rc = main(["offline-plan", str(src), "-o", str(dst), "--no-measure"])
    assert rc == 0
    m = load_model(dst)
    assert OFFLINE_METADATA_NAME in m.metadata_names
    offs = read_offline_offsets(dst)
    assert len(offs) == len(m.subgraphs[0].tensors) and all(o % 16 == 0 for o in offs if o >= 0)
    assert _unchanged_but_metadata(src.read_bytes(), dst.read_bytes())
    # and the problem read back fixes exactly those offsets
    assert dict(tflm_problem(m).offline) == {i: o for i, o in enumerate(offs) if o >= 0}


def test_never_overwrites_its_input(tmp_path, capsys):
    src = write(tmp_path, "chain.tflite", add_chain(2))
    before = src.read_bytes()
    rc = main(["offline-plan", str(src), "-o", str(src), "--no-measure"])
    _, err = capsys.readouterr()
    assert rc == 2 and "refusing to overwrite" in err and src.read_bytes() == before


@needs_tflm
def test_vww_offline_plan_measured_head_equals_our_plan_and_is_smaller(tmp_path, capsys):
    """MLPerf Tiny VWW: TFLM's greedy head 73,728 B; the optimum under its rules 55,296 B."""
    src = shared_model("mlperftiny_vww_mobilenet_int8.tflite")
    dst = tmp_path / "vww_offline.tflite"
    rc = main(["offline-plan", str(src), "-o", str(dst), "--verify", "--time-limit", "5"])
    out, _ = capsys.readouterr()
    assert rc == 0, out
    assert "55,296 B   = predicted" in out and "identical" in out
    m1 = measure_tflm(load_model(dst))
    assert m1.head_bytes == 55296 < 73728


def test_an_existing_output_needs_force(tmp_path, capsys):
    src = write(tmp_path, "chain.tflite", add_chain(2))
    dst = tmp_path / "out.tflite"
    dst.write_bytes(b"keep")
    rc = main(["offline-plan", str(src), "-o", str(dst), "--no-measure"])
    _, err = capsys.readouterr()
    assert rc == 2 and "--force" in err and dst.read_bytes() == b"keep"
    assert main(["offline-plan", str(src), "-o", str(dst), "--no-measure", "--force"]) == 0
    assert read_offline_offsets(dst) is not None
