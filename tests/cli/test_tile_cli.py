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
    (["--split-after", "99", "--grid", "2x2"],
     "--split-after 99: split after operator 99, but the model has 65 operators (0..64); the patchable prefix is 0..61"),
    (["--split-after", "63", "--grid", "2x2"], "--split-after 63: split after operator 63, outside the patchable prefix 0..61 (#62 MEAN"),
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
    # default: the deployment as written, every stage's arena resident (newuser F-1)
    code, tiled = _json(capsys, argv + ["--tile", "4x4@12"])
    assert code == 1 and not tiled["fits"] and tiled["tile"]["stages"] == "resident"
    assert tiled["arena_bytes"] == tiled["tile"]["deployed_bytes"] == 2_203_296
    # in turn: max(patch stage, tail), with the assumption said on the verdict and in JSON
    code, tiled = _json(capsys, argv + ["--tile", "4x4@12", "--tile-stages", "in-turn"])
    assert code == 0 and tiled["fits"]
    assert tiled["arena_bytes"] == tiled["tile"]["peak_bytes"] == 394_560
    assert tiled["tile"]["grid"] == [4, 4] and tiled["tile"]["split_operator"] == 12
    assert "share one arena in turn" in tiled["tile"]["assumption"]
    assert main([a for a in argv if a != "--json"] + ["--tile", "4x4@12", "--tile-stages", "in-turn"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert ": fits " in head and "(assuming the tiled stages share one arena in turn" in head


def test_check_tile_counts_what_litert_holds_for_the_written_deployment(capsys):
    """The oracle: LiteRT with patch.tflite (every signature allocated) and tail.tflite built at
    once keeps disjoint arenas; check counts their sum + cut + input (2,203,296 B here)."""
    path = shared_model("mobilenet_v2_224_int8.tflite")
    code, rep = _json(capsys, ["check", str(path), "--budget", "400KiB", "--weights", "mapped",
                               "--tile", "4x4@12", "--json"])
    t = rep["tile"]
    assert code == 1 and not rep["fits"]
    assert rep["arena_bytes"] == t["measured_deployed_bytes"] == t["deployed_bytes"] == 2_203_296
    assert t["measured_peak_bytes"] == 394_560


def test_check_tile_bad_spec_is_one_line(capsys):
    path = shared_model("mobilenet_v2_224_int8.tflite")
    assert main(["check", str(path), "--budget", "1MiB", "--no-measure", "--tile", "4x4@x"]) == 2
    assert "--tile 4x4@x" in capsys.readouterr().err


@pytest.mark.parametrize("tile, line", [
    ("4x4@999", "--tile 4x4@999: split after operator 999, but the model has 65 operators (0..64); "
                "the patchable prefix is 0..61"),
    ("99x99@12", "--tile 99x99@12: 'mobilenetv2_1.00_224_1/block_3_project_1/convolution1' has 28 rows, "
                 "fewer than 99 patches"),
    ("4by4", "--tile 4by4: expected ROWSxCOLUMNS[@K], e.g. 4x4 or 4x4@12"),
])
def test_check_tile_errors_name_the_flag_typed(capsys, tile, line):
    """``check`` has no --grid / --split-after: its errors name --tile as the user typed it."""
    path = shared_model("mobilenet_v2_224_int8.tflite")
    assert main(["check", str(path), "--budget", "1MiB", "--no-measure", "--tile", tile]) == 2
    assert capsys.readouterr().err.splitlines() == [f"arena-viewer: error: {line}"]


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


def test_the_search_shows_progress_on_stderr_and_keeps_stdout_the_report(capsys):
    """newuser3 #14: `tile --grid auto --split-after auto` printed nothing for 88 s."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "viewer" / "resources" / "demo_unet.tflite"
    code = main(["tile", str(demo), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["candidates"]  # stdout is the report alone
    lines = err.splitlines()
    assert lines[0].startswith("tile: trying ") and lines[0].endswith("(grid, split after) pairs ...")
    total = int(lines[0].split()[2])
    assert lines[-1] == f"tile: {total}/{total} pairs tried"
