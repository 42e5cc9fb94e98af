"""Tiling what-if: geometry, memory and the runtime's word on the written models.

The real checks are LiteRT's: every written signature's arena and the tail's equal the
prediction to the byte, the stitched patch outputs equal the original model's cut tensors
(int8 exactly; float within 1e-5 of the tensor's largest magnitude) and the tail reproduces the
original outputs. The full acceptance list (three models at 2x2 and 4x4) is
benchmarks/bench_tiling.py; the suite keeps three representative cases.
"""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from viewer.whatif.tiling.geometry import cut_tensors, split_bounds
from viewer.whatif.tiling.plan import STREAMED, search
from viewer.whatif.tiling.report import make_tiler, tile_report


def test_split_bounds_are_uneven_where_size_does_not_divide():
    assert split_bounds(7, 3) == [0, 2, 4, 7]
    assert split_bounds(8, 4) == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("model,grid,split", [
    ("mobilenet_v2_224_int8.tflite", (4, 4), 12),
    ("mobilenet_v2_224.tflite", (2, 2), 12),
    ("unet_256.tflite", (2, 2), 2),  # the first skip connection crosses the cut
])
def test_written_models_agree_with_litert(model, grid, split, tmp_path):
    path = shared_model(model)
    rep = tile_report(str(path), grid=grid, split=split, out_dir=str(tmp_path))
    v = rep["verification"]
    assert rep["measured"]
    assert [s["measured_bytes"] for s in v["signatures"]] == [s["predicted_bytes"] for s in v["signatures"]]
    assert v["tail"]["measured_bytes"] == v["tail"]["predicted_bytes"]
    assert v["untiled_equal"], (v["untiled_measured_bytes"], rep["untiled_peak_bytes"])
    assert v["stitching"]["every_element_once"]
    assert v["cut_equal"] and v["outputs_equal"], v["stitching"]
    assert v["measured_peak_bytes"] == rep["peak_bytes"]
    if model.startswith("unet"):
        assert len(rep["cut_tensors"]) == 2  # skip + pooled
    assert {p.name for p in tmp_path.iterdir()} == {"patch.tflite", "tail.tflite", "tiling.json"}


def test_mobilenet_int8_4x4_reduces_the_peak_4x_with_the_input_resident():
    """Splits 0..20 (block 5); the full search is in benchmarks/bench_tiling.py."""
    tiler = make_tiler(str(shared_model("mobilenet_v2_224_int8.tflite")))
    res = search(tiler, grids=[(4, 4)], splits=range(21))
    best = res.best[(4, 4)]
    assert res.untiled_peak_bytes == 1_655_808
    assert best.reduction >= 4.0 and best.split == 12
    assert [k for k, _, _ in res.curve[(4, 4)]] == list(range(21))
    assert tiler.evaluate((4, 4), 12, STREAMED).peak_bytes < best.peak_bytes


def test_unet_no_split_lowers_the_peak():
    path = shared_model("unet_256.tflite")
    rep = tile_report(str(path), grid=(2, 2), split=None)
    assert not rep["helps"]
    assert rep["verdict"].startswith("no split lowers the peak: untiled 130,809,856 B")
    assert rep["widest_operator"] == 43 and rep["prefix"]["last_operator"] == 12


def test_cut_of_a_unet_includes_the_skip():
    tiler = make_tiler(str(shared_model("unet_256.tflite")))
    names = [tiler.sg.tensors[t].name for t in cut_tensors(tiler.sg, 2)]
    assert names == ["unet_1/re_lu_1_2/Relu;unet_1/conv2d_1_2/convolution", "unet_1/max_pooling2d_1/MaxPool2d"]


def _chain():
    """input 1x7x7x1 -> CONV 3x3 s1 SAME -> CONV 3x3 s2 SAME -> 1x4x4x1 (a graph built in code)."""
    from viewer.model.types import Operator, Subgraph, Tensor

    def t(i, name, shape, const=False):
        return Tensor(i, name, shape, shape, "float32", 4 * int(__import__("numpy").prod(shape)), buffer=int(const),
                      is_constant=const)

    tensors = (t(0, "x", (1, 7, 7, 1)), t(1, "w1", (1, 3, 3, 1), True), t(2, "a", (1, 7, 7, 1)),
               t(3, "w2", (1, 3, 3, 1), True), t(4, "y", (1, 4, 4, 1)), t(5, "z", (1, 4, 4, 1)))
    conv = dict(padding=0, stride_h=1, stride_w=1)
    ops = (Operator(0, "CONV_2D", 3, None, 1, (0, 1, -1), (2,), options=conv),
           Operator(1, "CONV_2D", 3, None, 1, (2, 3, -1), (4,), options=dict(conv, stride_h=2, stride_w=2)),
           Operator(2, "RELU", 19, None, 1, (4,), (5,)))
    return Subgraph(0, "chain", tensors, ops, (0,), (5,))


@pytest.mark.parametrize("index,share,mid,inp,pads", [
    # patch rows of y; rows of a held; rows of x held; (pad before, after) of conv 2's read of a
    (0, (0, 2), (0, 4), (0, 5), (1, 0)),
    (1, (2, 4), (3, 7), (2, 7), (0, 1)),
])
def test_halo_and_border_padding_per_patch(index, share, mid, inp, pads):
    from viewer.whatif.tiling.geometry import axis_geometry, patchable_prefix

    sg = _chain()
    assert patchable_prefix(sg).last_op == 2
    g = axis_geometry(sg, 1, cut_tensors(sg, 1), 1, index, 2)
    assert cut_tensors(sg, 1) == [4]
    assert (g.share[4], g.need[2], g.need[0]) == (share, mid, inp)
    assert g.crop((1, 0), 2)[2:] == pads


def test_weights_dequantized_from_fp16_do_not_end_the_prefix():
    """mobilenet_v2_224_fp16 dequantizes its weights with DEQUANTIZE operators interleaved in the
    graph: they are weights (prepare time), so the image path is tiled as in the float model."""
    tiler = make_tiler(str(shared_model("mobilenet_v2_224_fp16.tflite")))
    assert tiler.prefix.last_op > 100 and "MEAN" in tiler.prefix.reason
    assert 0 not in tiler.splits()  # #0 DEQUANTIZE makes a weight: no split there
    plan = tiler.evaluate((2, 2), 78)
    assert plan.peak_bytes == 3_620_096  # the float model's 2x2 figure (LiteRT measured the same)
