"""`arena-viewer check MODEL --budget SIZE`: exit 0 fits, 1 does not, 2 bad input."""

from __future__ import annotations

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def chain(tmp_path):
    # 4 float32 tensors of 1x8x8x3 = 768 B; no weights. Breadth: 3 x 768 = 2304 B at operator 1.
    return write(tmp_path, "chain.tflite", add_chain(3))


def arena_of(out: str) -> int:
    line = next(x for x in out.splitlines() if "tensor arena at batch" in x)
    return int(line.split(":")[1].split("B")[0].replace(",", ""))


def test_fits_exit_0_prints_headroom(chain, capsys):
    # The arena alone (--runtime-overhead 0): the measured overhead varies by a page or so between runs.
    rc, out, err = run_cli(capsys, "check", str(chain), "--budget", "1MiB", "--runtime-overhead", "0")
    assert rc == 0, err
    assert "fits in 1,048,576 B" in out
    arena = arena_of(out)
    assert arena >= 2304
    assert f"headroom: {1048576 - arena:,d} B" in out


def test_over_budget_exit_1_prints_arena_budget_and_binding_operator(chain, capsys):
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "2KB", "--runtime-overhead", "0")
    assert rc == 1
    assert "DOES NOT FIT in 2,000 B" in out
    assert "tensor arena at batch 1" in out and "binding (widest) operator: 1 ADD" in out
    assert f"over budget by {arena_of(out) - 2000:,d} B" in out


def test_runtime_overhead_counts(chain, capsys):
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "1MiB")
    assert rc == 0 and arena_of(out) == 3 * 768  # LiteRT's arena: the breadth
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "3300", "--runtime-overhead", "1000")
    assert rc == 1 and "used: 3,304 B" in out


def test_another_planner_is_a_whatif_not_the_verdict(chain, capsys):
    """--planner naive: LiteRT does not lay its arena out that way, so the verdict counts the
    runtime's arena (2,304 B) and naive's (3,072 B) is printed as a what-if line."""
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "3000", "--planner", "naive",
                         "--runtime-overhead", "0")
    assert rc == 0 and arena_of(out) == 3 * 768 and "with planner litert" in out
    assert ("  what-if: with naive's layout the tensor arena would be 3,072 B (3.0 KiB) [planned: "
            in out) and "used 3,072 B (3.0 KiB), over budget by 72 B" in out
    assert ("  LiteRT does not use that layout (it plans its own arena, re-stated as litert): the "
            "verdict above counts that one") in out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--budget", "lots"], "cannot read size 'lots'"),
        (["--budget", "1MiB", "--planner", "bogus"], "unknown planner 'bogus'"),
        (["--budget", "1MiB", "--batch", "0"], "--batch 0"),
        (["--budget", "1MiB", "--subgraph", "7"], "no subgraph 7"),
        (["--budget", "1MiB", "--input-shape", "t0=1x8x8"], "has rank 4"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(chain, capsys, argv, msg):
    rc, out, err = run_cli(capsys, "check", str(chain), *argv)
    assert rc == 2
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_model_is_exit_2(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "check", str(tmp_path / "none.tflite"), "--budget", "1MiB")
    assert rc == 2 and "none.tflite" in err


def test_edits_change_the_verdict(chain, capsys):
    # batch 4 quadruples every tensor; int8 quarters it back.
    ro = ("--runtime-overhead", "0")  # the arena alone: the measured overhead varies by a page
    rc, out1, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", *ro)
    rc4, out4, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", "--batch", "4", *ro)
    rc8, out8, _ = run_cli(capsys, "check", str(chain), "--budget", "5000", "--batch", "4",
                           "--activation-dtype", "int8", *ro)
    assert (rc, rc4, rc8) == (0, 1, 0)
    assert arena_of(out4) == 4 * arena_of(out1) == 4 * 2304
    assert arena_of(out8) == arena_of(out1)
    assert "tensor arena at batch 4" in out4 and "largest batch: 2" in out4


@pytest.mark.shared
@pytest.mark.slow
def test_mobilenet_budget_and_resolution_search(capsys):
    p = shared_model("mobilenet_v2_224.tflite")
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "4MiB", "--weights", "mapped", "--find-resolution",
                         "--planner", "greedy_by_size")
    assert rc == 1
    assert "binding (widest) operator:" in out and "not counted" in out
    assert "largest square input that fits:" in out


# -- what counts: the runtime's arena, persistent, other subgraphs (the runtime is the oracle) --
def _json(capsys, *argv):
    import json

    rc, out, err = run_cli(capsys, *argv, "--json")
    assert rc in (0, 1, 3), err
    return rc, json.loads(out)


@pytest.mark.shared
def test_unet_counts_the_runtimes_arena_with_kernel_temporaries(capsys):
    from viewer.runtime.probe import probe_model

    p = shared_model("unet_256.tflite")
    probe = probe_model(p, check=True)
    rc, r = _json(capsys, "check", str(p), "--budget", "32MiB")
    assert rc == 1 and not r["fits"] and r["measured"]
    assert r["arena_bytes"] == probe.arena_bytes > 32 << 20  # 124.8 MiB, not the planned 8x less
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "32MiB")
    assert rc == 1 and "[measured: LiteRT's arena after allocate_tensors()]" in out
    assert out.count("over budget by") == 1


@pytest.mark.shared
def test_fp16_weights_dequantized_at_prepare_count_as_persistent(capsys):
    from viewer.runtime.probe import probe_model

    p = shared_model("mobilenet_v2_224_fp16.tflite")
    probe = probe_model(p, check=True)
    persistent = sum(t.nbytes for t in probe.tensors
                     if t.id in probe.outside and "persistent" in probe.outside[t.id])
    assert persistent > 13 << 20
    rc, r = _json(capsys, "check", str(p), "--budget", "14MiB")
    assert rc == 1 and r["persistent_bytes"] == persistent
    assert r["used_bytes"] == r["arena_bytes"] + persistent + r["weights_bytes"] + r["runtime_bytes"]
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "14MiB")
    assert "+ persistent" in out and "largest batch: 0 (not even one example fits" in out


@pytest.mark.shared
def test_control_flow_subgraphs_are_counted(capsys):
    p = shared_model("litert_testdata_multi_subgraphs_while.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "1MiB")
    assert {s["index"] for s in r["other_subgraphs"]} == {1, 2}
    assert r["other_subgraphs_bytes"] == sum(s["arena_bytes"] for s in r["other_subgraphs"]) > 0
    assert r["used_bytes"] == (r["arena_bytes"] + r["persistent_bytes"] + r["other_subgraphs_bytes"]
                               + r["weights_bytes"] + r["runtime_bytes"])
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "1MiB")
    assert "+ subgraph 1 arena (" in out and "[measured: the runtime's arena of that subgraph]" in out
    assert "largest batch: none (the model's inputs have no batch dimension (scalars))" in out


def test_no_measure_cannot_tell_and_says_temporaries_are_missing(chain, capsys):
    """Planned only, the arena is a lower bound: never "fits" (exit 3), but "does not fit" as
    soon as the lower bound alone exceeds the limit (exit 1)."""
    rc, out, err = run_cli(capsys, "check", str(chain), "--budget", "1MiB", "--no-measure")
    assert rc == 3 and "CANNOT TELL" in out
    assert "kernel temporaries NOT included" in out and "unknown: kernel temporaries" in out
    assert err.count("\n") == 1 and "cannot tell" in err and "kernel temporaries" in err
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "1KiB", "--no-measure")
    assert rc == 1 and "a lower bound" in out
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "1MiB")
    assert rc == 0 and "[measured: LiteRT's arena" in out


def test_over_budget_said_once_and_batch_zero_explained(chain, capsys):
    rc, out, _ = run_cli(capsys, "check", str(chain), "--budget", "2KB")
    assert rc == 1 and out.count("over budget by") == 1
    assert "largest batch: 0 (not even one example fits; extrapolated linearly" in out


@pytest.mark.parametrize("argv, msg", [
    (["--time-limit", "0"], "--time-limit: 0"),
    (["--time-limit", "inf"], "--time-limit: inf"),
    (["--budget", "99999999999999999999999TiB"], "too large"),
])
def test_bad_limits_are_one_line(chain, capsys, argv, msg):
    full = ["--budget", "1MiB", *argv] if argv[0] != "--budget" else argv
    rc, out, err = run_cli(capsys, "check", str(chain), *full)
    assert rc == 2 and msg in err and err.count("\n") == 1


def test_help_lists_best(capsys):
    rc = main(["check", "--help"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "best" in out and "--no-measure" in out and "--json" in out


def test_find_resolution_says_not_an_image_model(tmp_path, capsys):
    from tests.tflite_builder import add_chain as chain_of

    p = write(tmp_path, "flat.tflite", chain_of(2, shape=(1, 16)))
    rc, out, _ = run_cli(capsys, "check", str(p), "--budget", "1MiB", "--find-resolution", "--no-measure")
    assert rc == 3 and "not an image model" in out  # 3: planned only, temporaries unknown


@pytest.mark.shared
@pytest.mark.slow
def test_find_resolution_is_the_true_largest_per_the_runtime(capsys):
    """mobilenet_v2_224_int8, 5 MiB, weights mapped: the side found fits in the runtime's arena
    beside the measured runtime overhead, and the next side does not (the ~2.5 MiB LiteRT
    measures beyond the arena in a process whose freed heap was given back before the
    measurement; at 4 MiB not even 224 fits beside it)."""
    from viewer.runtime.probe import probe_model

    p = shared_model("mobilenet_v2_224_int8.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "5MiB", "--weights", "mapped", "--find-resolution")
    side = r["find_resolution"]["side"]
    assert side > 224 and r["runtime_bytes"] > 0
    limit = (5 << 20) - r["runtime_bytes"]
    at = probe_model(p, input_shapes={0: (1, side, side, 3)}, check=True)
    above = probe_model(p, input_shapes={0: (1, side + 1, side + 1, 3)}, check=True)
    assert at.arena_bytes <= limit < above.arena_bytes
    # with --rescale-fixed-sizes too (no --input-shape needed)
    rc, out, err = run_cli(capsys, "check", str(p), "--budget", "4MiB", "--weights", "mapped",
                           "--find-resolution", "--rescale-fixed-sizes", "--no-measure")
    assert rc == 3 and "largest square input that fits: 3" in out, err  # planned only


# -- issue 9: never a false "fits" (each situation against the runtime) ---------------------------
@pytest.mark.shared
def test_storage_whatif_keeps_the_kernel_temporaries_as_estimates(capsys):
    """unet_256 with float16 activations at 30 MiB: the runtime's im2col buffers shrink with
    their operator's input element size; they do not vanish. Exit 1, the arena estimated."""
    p = shared_model("unet_256.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "30MiB", "--activation-dtype", "float16")
    assert rc == 1 and r["verdict"] == "does_not_fit" and r["fits"] is False
    arena = r["terms"][0]
    assert arena["name"] == "tensor arena" and arena["source"] == "estimated"
    assert "im2col" in arena["method"] and r["temporaries_included"]
    # the runtime's float32 arena (130,809,856 B) roughly halves; never the 12.4 MiB of tensors only
    assert 60 << 20 < arena["bytes"] < 130_809_856 // 2 + (1 << 20)


@pytest.mark.shared
def test_deferred_arena_counted_after_one_invoke(capsys):
    """se_dynbatch at 3 MiB: LiteRT places half its arena during the first Invoke."""
    p = shared_model("se_dynbatch.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "3MiB")
    assert rc == 1 and r["verdict"] == "does_not_fit"
    assert r["terms"][0] == {"name": "tensor arena", "bytes": 11_583_488, "source": "measured",
                             "method": r["terms"][0]["method"], "counted": True, "margin_bytes": 0}
    assert "Invoke" in r["terms"][0]["method"]


@pytest.mark.shared
@pytest.mark.parametrize("how", [["--subgraph", "1"], ["--signature", "split_unpack"]])
def test_a_signature_other_than_the_first_is_allocated_through_its_runner(capsys, how):
    p = shared_model("multi_out_sigs.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "30KiB", *how)
    assert rc == 1 and r["subgraph"] == 1 and r["signatures"] == ["split_unpack"]
    assert r["arena_bytes"] == 41_600 and r["terms"][0]["source"] == "measured"


@pytest.mark.shared
def test_dynamic_height_and_width_need_an_input_shape(capsys):
    p = shared_model("dyn_hw.tflite")
    rc, out, err = run_cli(capsys, "check", str(p), "--budget", "50MiB")
    assert rc == 3 and "serving_default_keras_tensor_4:0" in err and "--input-shape" in err
    assert err.count("\n") == 1
    rc, r = _json(capsys, "check", str(p), "--budget", "50MiB", "--input-shape", "1x480x640x3")
    from viewer.runtime.probe import probe_model

    probe = probe_model(p, input_shapes={0: (1, 480, 640, 3)}, check=True)
    assert rc == 1 and r["verdict"] == "does_not_fit"
    assert r["arena_bytes"] == probe.arena_bytes == 62_668_800  # 59.8 MiB


@pytest.mark.shared
def test_largest_batch_is_null_where_the_model_cannot_be_rebatched(capsys):
    rc, r = _json(capsys, "check", str(shared_model("fixed_flatten.tflite")), "--budget", "1MiB")
    assert rc == 0 and r["largest_batch"] is None
    assert "RESHAPE" in r["largest_batch_note"] and "operator 1" in r["largest_batch_note"]
    rc, r = _json(capsys, "check", str(shared_model("litert_test_torchaudio_conformer.tflite")),
                  "--budget", "1GiB")
    assert r["largest_batch"] is None and "not a batch" in r["largest_batch_note"]


@pytest.mark.shared
def test_a_custom_op_the_runtime_cannot_load_is_cannot_tell(capsys):
    p = shared_model("tfmicro_person_detect_vela.tflite")
    rc, out, err = run_cli(capsys, "check", str(p), "--budget", "1MiB")
    assert rc == 3 and "ethos-u" in err and err.count("\n") == 1
    rc, r = _json(capsys, "check", str(p), "--budget", "1MiB")
    assert r["verdict"] == "cannot_tell" and r["fits"] is False and r["unknowns"]


def test_an_internal_error_is_exit_70_not_3(chain, capsys, monkeypatch):
    """A bug (an exception that is no ViewerError) exits 70 (EX_SOFTWARE), apart from check's 3."""
    import viewer.cli.check as check

    def boom(*a, **k):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(check, "footprint", boom)
    rc, out, err = run_cli(capsys, "check", str(chain), "--budget", "1MiB")
    assert rc == 70 and "internal error" in err and err.count("\n") == 1


@pytest.mark.shared
def test_other_planner_smaller_than_litert_does_not_make_it_fit(capsys):
    """tfmicro_hello_world_int8: LiteRT's arena is 144 B, greedy_by_size's layout 129 B. At a
    140 B limit the board does not fit (was: exit 0 'fits' with greedy_by_size's figure)."""
    import json

    p = shared_model("tfmicro_hello_world_int8.tflite")
    argv = ["check", str(p), "--budget", "140", "--weights", "mapped", "--planner", "greedy_by_size",
            "--runtime-overhead", "0"]  # the arena alone: the measured overhead varies by a page
    rc, out, _ = run_cli(capsys, *argv)
    assert rc == 1 and "DOES NOT FIT in 140 B with planner litert" in out
    assert "  tensor arena at batch 1: 144 B  [measured: LiteRT's arena" in out
    assert "  what-if: with greedy_by_size's layout the tensor arena would be 129 B [planned:" in out
    assert "used 129 B, headroom 11 B" in out and "LiteRT does not use that layout" in out
    rc, out, _ = run_cli(capsys, *argv, "--json")
    r = json.loads(out)
    assert rc == 1 and r["verdict"] == "does_not_fit" and r["planner"] == "litert"
    assert r["arena_bytes"] == 144 and r["used_bytes"] == 144
    w = r["whatif_planner"]
    assert w["planner"] == "greedy_by_size" and w["arena_bytes"] == 129 and w["headroom_bytes"] == 11
    assert "LiteRT does not use this layout" in w["note"]


# -- newuser F-3, F-4: the headline says what a "fits" rests on -----------------------------------
@pytest.mark.shared
def test_fits_with_an_estimated_arena_says_estimated_on_the_headline(capsys):
    p = shared_model("mobilenet_v2_224.tflite")
    rc, r = _json(capsys, "check", str(p), "--budget", "200MiB", "--activation-dtype", "float16")
    assert rc == 0 and r["fits"] and r["estimated"] is True
    assert r["verdict_text"].startswith("fits") and "(estimated: tensor arena" in r["verdict_text"]
    assert main(["check", str(p), "--budget", "200MiB", "--activation-dtype", "float16"]) == 0
    assert " (estimated: tensor arena" in capsys.readouterr().out.splitlines()[0]
    rc, r = _json(capsys, "check", str(p), "--budget", "200MiB", "--batch", "1")  # measured
    assert rc == 0 and "(estimated: tensor arena" not in r["verdict_text"]


@pytest.mark.shared
def test_dynamic_batch_fits_only_at_the_assumed_batch_1(capsys):
    p = shared_model("litert_test_simple_add_dynamic_shape.tflite")
    assert main(["check", str(p), "--budget", "1TiB"]) == 0
    assert ": fits at batch 1 (dynamic batch) in " in capsys.readouterr().out.splitlines()[0]
    rc, r = _json(capsys, "check", str(p), "--budget", "1TiB", "--batch", "2")
    assert rc == 0 and r["dynamic_batch"] is False and "at batch 1" not in r["verdict_text"]
