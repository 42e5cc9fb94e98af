"""`arena-viewer export`: PNG/SVG of the requested size, planner choice, bad input -> exit 2."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_png_of_the_smallest_plan_by_default(tmp_path, capsys, qapp):
    model = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / "chart.png"
    rc, stdout, err = run_cli(capsys, "export", model, "-o", out, "--width", 800, "--height", 500)
    assert rc == 0, err
    assert png_size(out) == (800, 500)
    # Four 768-byte tensors; the lower bound is three of them, and the smallest plan reaches it.
    assert "lower bound 2.3 KiB" in stdout and "arena 2.3 KiB" in stdout  # 2,304 B = 2.25 KiB


def test_svg_with_a_named_planner_overwrites_only_with_force(tmp_path, capsys, qapp):
    model = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / "chart.svg"
    out.write_text("old")
    rc, _, err = run_cli(capsys, "export", model, "-o", out, "--planner", "naive")
    assert rc == 2 and "already exists; pass --force" in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "old"
    rc, stdout, err = run_cli(capsys, "export", model, "-o", out, "--planner", "naive",
                              "--color-by", "op", "--force")
    assert rc == 0, err
    root = ET.parse(out).getroot()
    assert root.get("viewBox") == "0 0 1600 1000" and root.get("width") == "1600px"
    assert "naive plan, arena 3.0 KiB" in stdout
    assert "chain.tflite — kernel temporaries included (measured) — subgraph 0 — naive" in out.read_text()


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["-o", "{tmp}/c.gif"], "unknown image type"),
        (["-o", "{tmp}/c.png", "--planner", "bogus"], "unknown planner 'bogus'"),
        (["-o", "{tmp}/c.png", "--subgraph", "4"], "no subgraph 4"),
        (["-o", "{tmp}/c.png", "--width", "5"], "--width 5"),
        (["-o", "{tmp}/missing/c.png"], "does not exist"),
        (["-o", "{tmp}/folder.svg"], "is a folder"),
        (["-o", "{tmp}/folder.png"], "is a folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, extra, expect):
    model = write(tmp_path, "chain.tflite", add_chain(2))
    (tmp_path / "folder.svg").mkdir()
    (tmp_path / "folder.png").mkdir()
    argv = ["export", model] + [a.format(tmp=tmp_path) for a in extra]
    rc, _, err = run_cli(capsys, *argv)
    assert rc == 2
    assert expect in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_not_a_model_is_exit_2_naming_the_file(tmp_path, capsys):
    bad = write(tmp_path, "bad.tflite", b"not a flatbuffer at all")
    rc, _, err = run_cli(capsys, "export", bad, "-o", tmp_path / "c.png")
    assert rc == 2 and str(bad) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c.png").exists()


@pytest.mark.shared
def test_headless_console_run_on_mobilenet_v2(tmp_path):
    """A separate process with no display variables at all, as on a server or in CI."""
    model = shared_model("mobilenet_v2_224.tflite")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(ROOT)
    out = tmp_path / "mnv2.png"
    r = subprocess.run(
        [sys.executable, "-m", "viewer", "export", str(model), "-o", str(out),
         "--planner", "greedy_by_size", "--width", "1280", "--height", "720"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert png_size(out) == (1280, 720)
    assert "greedy_by_size plan" in r.stdout and "lower bound 6.3 MiB" in r.stdout


def test_what_if_edits_are_named_in_the_title(tmp_path, capsys, qapp):
    model = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / "b2.svg"
    rc, stdout, err = run_cli(capsys, "export", model, "-o", out, "--batch", 2)
    assert rc == 0, err
    assert "chain.tflite — what-if: batch 2 — kernel temporaries included (measured) — subgraph 0" in out.read_text()
    assert "lower bound 4.5 KiB" in stdout  # twice the batch-1 lower bound


@pytest.mark.shared
def test_subgraph_without_operators_exports_an_empty_chart(tmp_path, capsys, qapp):
    model = shared_model("litert_testdata_2_subgraphs.tflite")
    out = tmp_path / "empty.png"
    rc, stdout, err = run_cli(capsys, "export", model, "-o", out, "--width", 640, "--height", 400)
    assert rc == 0, err
    assert png_size(out) == (640, 400) and "arena 0 B" in stdout


def test_export_never_overwrites_the_model_through_a_link(tmp_path, capsys):
    from tests.tflite_builder import add_chain, write
    from viewer.cli import main

    model = write(tmp_path, "m.tflite", add_chain(2))
    before = model.read_bytes()
    link = tmp_path / "chart.png"
    link.symlink_to(model)
    rc = main(["export", str(model), "-o", str(link)])
    err = capsys.readouterr().err
    assert rc == 2 and "refusing to overwrite the input model" in err
    assert model.read_bytes() == before


@pytest.mark.shared
def test_export_draws_the_footprint_check_counts(tmp_path, capsys):
    """unet_256: export --measure (the default) draws the runtime's 124.8 MiB arena with its
    kernel temporaries, and the title says so; --no-measure draws the tensors only and says so."""
    from conftest import shared_model

    p = shared_model("unet_256.tflite")
    out = tmp_path / "u.svg"
    assert main(["export", str(p), "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "130,809,856 B" in stdout and "kernel temporaries included (measured)" in out.read_text()
    assert main(["export", str(p), "-o", str(out), "--force", "--no-measure"]) == 0
    assert "kernel temporaries NOT included" in out.read_text()


def test_no_measure_at_wrong_stored_shapes_says_so_on_the_title(tmp_path, capsys):
    """The file stores its outputs as [1,4] where LiteRT computes [1,8,8,3]: the planned-only
    chart's title says it is at the file's stored shapes, and a note names the tensor."""
    from tests.cli.test_plan_cli import _wrong_stored_shapes

    p = write(tmp_path, "wide.tflite", _wrong_stored_shapes())
    out = tmp_path / "w.svg"
    rc, _, err = run_cli(capsys, "export", str(p), "-o", str(out), "--no-measure")
    assert rc == 0, err
    assert "at the file's stored shapes (LiteRT computes others)" in out.read_text()
    assert "#1 'o0' [1, 4] -&gt; [1, 8, 8, 3]" not in out.read_text()  # the note goes to stderr
    assert "2 tensor(s) are stored with other shapes than LiteRT computes at prepare" in err
    out2 = tmp_path / "c.svg"
    assert run_cli(capsys, "export", str(write(tmp_path, "c.tflite", add_chain(2))), "-o", str(out2),
                   "--no-measure")[0] == 0
    assert "stored shapes" not in out2.read_text()


def test_png_above_64_mi_pixels_is_refused_with_svg_advice(tmp_path, capsys):
    """16384x16384 PNG: 1.2 GB to draw and no default viewer opens it; refused before any work."""
    from viewer.export.image import PNG_MAX_PIXELS, check_output

    model = write(tmp_path, "chain.tflite", add_chain(2))
    out = tmp_path / "huge.png"
    rc, _, err = run_cli(capsys, "export", model, "-o", out, "--width", 16384, "--height", 16384, "--no-measure")
    assert rc == 2 and not out.exists()
    assert err.splitlines() == [
        f"arena-viewer: error: {out}: 16384x16384 px is 256.0 Mi px, above the PNG limit of 64 Mi px "
        "(8192x8192, which Qt and ImageMagick still open and takes 256 MiB to draw); use .svg for a larger chart"]
    assert PNG_MAX_PIXELS == 8192 * 8192
    assert check_output(tmp_path / "edge.png", 16384, 4096) == ".png"  # exactly the limit: taken
    assert check_output(tmp_path / "huge.svg", 16384, 16384) == ".svg"  # SVG: no raster, no limit
    rc, out_help, _ = run_cli(capsys, "export", "--help")
    assert rc == 0 and "at most 8192x8192 pixels" in " ".join(out_help.split())


@pytest.mark.shared
def test_compare_draws_what_check_counts_or_says_what_it_leaves_out(tmp_path, capsys, qapp):
    """export --compare drew the tensors-only arenas (unet_256: 24.8 MiB) while export alone
    draws the runtime's (124.8 MiB, im2col included), and said nothing; now both sides are the
    footprint check counts, and --no-measure says on the line that temporaries are left out."""
    from viewer.units import format_bytes
    from viewer.whatif.edits import WhatIfEdits
    from viewer.whatif.footprint import footprint

    model = shared_model("unet_256.tflite")
    out = tmp_path / "cmp.svg"
    rc, stdout, err = run_cli(capsys, "export", str(model), "-o", str(out), "--compare",
                              "--activation-dtype", "float16")
    assert rc == 0, err
    base = footprint(str(model), 0, None, planner="litert", measure=True)
    edit = footprint(str(model), 0, WhatIfEdits(activation_dtype="float16"), planner="litert",
                     measure=True)
    assert base.measured and base.temporaries_included
    assert (f"arena {format_bytes(base.arena_bytes)} -> {format_bytes(edit.arena_bytes)}, "
            in stdout), stdout
    assert "not included" not in stdout
    titles = out.read_text()
    assert "kernel temporaries included (measured)" in titles  # the baseline
    assert "kernel temporaries included (estimated)" in titles  # a storage what-if
    rc, stdout, err = run_cli(capsys, "export", str(model), "-o", str(out), "--force", "--compare",
                              "--activation-dtype", "float16", "--no-measure")
    assert rc == 0, err
    assert "(kernel temporaries not included)" in stdout
    assert out.read_text().count("kernel temporaries NOT included") >= 2  # both titles
