"""``arena-viewer tile``: JSON keys, bad input, whole-input tiling."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_model
from viewer.cli import main

KEYS = {"grid", "split_operator", "cut_tensors", "untiled_peak_bytes", "peak_bytes", "reduction",
        "overhead_pct", "patch_stage", "tail_stage", "measured", "candidates"}


def _json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_tile_json_keys(capsys):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    code, rep = _json(capsys, ["tile", str(path), "--grid", "2x2", "--split-after", "12", "--json"])
    assert code == 0
    assert KEYS <= set(rep)
    assert set(rep["patch_stage"]) >= {"patch_input_shape", "arena_bytes", "cut_bytes", "input_bytes"}
    assert set(rep["tail_stage"]) == {"arena_bytes"}
    assert rep["grid"] == [2, 2] and rep["split_operator"] == 12 and rep["measured"] is False
    assert rep["candidates"] == [{"grid": [2, 2], "split_operator": 12, "peak_bytes": rep["peak_bytes"],
                                  "overhead_pct": rep["overhead_pct"]}]
    ps = rep["patch_stage"]
    assert ps["total_bytes"] == ps["arena_bytes"] + ps["cut_bytes"] + ps["input_bytes"]
    assert rep["peak_bytes"] == max(ps["total_bytes"], rep["tail_stage"]["arena_bytes"])


@pytest.mark.parametrize("argv,needle", [
    (["--grid", "4by4"], "--grid 4by4: expected ROWSxCOLUMNS"),
    (["--split-after", "99", "--grid", "2x2"], "--split-after 99: the patchable prefix is operators 0..61"),
    (["--split-after", "x"], "--split-after x: expected an operator index or auto"),
    (["--grid", "200x200", "--split-after", "12"], "fewer than 200 patches"),
])
def test_bad_input_is_one_line(capsys, argv, needle):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    assert main(["tile", str(path), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_missing_model_is_one_line(capsys, tmp_path):
    assert main(["tile", str(tmp_path / "nope.tflite")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_output_never_overwrites_the_model(capsys, tmp_path):
    src = shared_model("mobilenet_v2_224_int8.tflite")
    victim = tmp_path / "patch.tflite"
    victim.write_bytes(src.read_bytes())
    before = victim.read_bytes()
    assert main(["tile", str(victim), "--grid", "2x2", "--split-after", "2", "-o", str(tmp_path)]) == 2
    assert "refusing to overwrite the input model" in capsys.readouterr().err
    assert victim.read_bytes() == before


def test_whole_input_unet_1024_in_256_tiles(capsys):
    path = shared_model("unet_256.tflite")
    code, rep = _json(capsys, ["tile", str(path), "--whole-input", "256x256", "--overlap", "0",
                               "--full", "1024x1024", "--json"])
    assert code == 0
    assert rep["tiles"] == 16 and rep["tile_input"] == [256, 256]
    assert rep["peak_bytes"] == 130_809_856  # the model's runtime arena at 256x256 (LiteRT measured the same)
    assert rep["redundant_compute_pct"] == 0.0
    assert rep["receptive_field"]["radius_px"] > 0


def test_check_tile_counts_the_tiled_peak(capsys):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    argv = ["check", str(path), "--budget", "512KiB", "--weights", "mapped", "--no-measure", "--json",
            "--runtime-overhead", "0"]  # not measured: without it the overhead is an unknown
    code, untiled = _json(capsys, argv)
    assert code == 1 and untiled["arena_bytes"] == 1_655_808
    code, tiled = _json(capsys, argv + ["--tile", "4x4@12"])
    assert code == 0 and tiled["fits"]
    assert tiled["arena_bytes"] == tiled["tile"]["peak_bytes"] == 394_560
    assert tiled["tile"]["grid"] == [4, 4] and tiled["tile"]["split_operator"] == 12


def test_check_tile_bad_spec_is_one_line(capsys):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    assert main(["check", str(path), "--budget", "1MiB", "--no-measure", "--tile", "4x4@x"]) == 2
    assert "--tile 4x4@x" in capsys.readouterr().err


def test_tile_output_refuses_to_replace_files_without_force(tmp_path, capsys):
    # A new user's report: `tile -o DIR` replaced an existing tiling.json without a word.
    from conftest import shared_model
    from viewer.cli import main

    model = str(shared_model("mobilenet_v2_224_int8.tflite"))
    out = tmp_path / "d"
    out.mkdir()
    (out / "tiling.json").write_text("precious")
    argv = ["tile", model, "--grid", "2x2", "--split-after", "12", "-o", str(out), "--no-measure"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (out / "tiling.json").read_text() == "precious"
    assert main(argv + ["--force"]) == 0
    assert (out / "tiling.json").read_text() != "precious"
