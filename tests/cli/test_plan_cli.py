"""`arena-viewer plan`: table, JSON keys and units, and bad input -> exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, build, tensor, write
from viewer.cli import main


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_plan_json_has_the_documented_keys(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    rc, out, err = run_cli(capsys, "plan", str(p), "--json")
    assert rc == 0, err
    r = json.loads(out)
    for key in ("model", "subgraph", "naive_bytes", "lower_bound_bytes", "weights_bytes",
                "widest_operator", "tensors", "operators", "plans", "best_plan"):
        assert key in r
    assert set(r["widest_operator"]) >= {"index", "op", "breadth_bytes", "tensors"}
    assert set(r["tensors"][0]) >= {"id", "name", "shape", "dtype", "bytes", "first_op", "last_op"}
    assert set(r["operators"][0]) >= {"index", "op", "inputs", "outputs", "breadth_bytes"}
    # 4 tensors of 768 B; input live 0..2 (never freed), t1 0..1, t2 1..2, output 2..2.
    assert r["naive_bytes"] == 4 * 768
    assert r["lower_bound_bytes"] == 3 * 768
    assert r["best_plan"] in r["plans"]
    for name, plan in r["plans"].items():
        assert plan["arena_bytes"] >= r["lower_bound_bytes"], name
        assert set(plan["offsets"]) == {str(t["id"]) for t in r["tensors"]}


def test_plan_table_names_lower_bound_and_widest_operator(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    rc, out, _ = run_cli(capsys, "plan", str(p))
    assert rc == 0
    assert "lower bound" in out and "naive sum" in out and "widest operator: #" in out


def test_single_planner(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, out, _ = run_cli(capsys, "plan", str(p), "--planner", "naive", "--json")
    assert rc == 0 and list(json.loads(out)["plans"]) == ["naive"]


def test_unknown_planner_is_exit_2(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "plan", str(p), "--planner", "bogus")
    assert rc == 2 and "unknown planner 'bogus'" in err


@pytest.mark.parametrize(
    "case, content, expect",
    [
        ("missing", None, "no such file"),
        ("not-flatbuffer", b"this is plainly text, not a flatbuffer\n" * 4, "not a .tflite"),
        ("wrong-identifier", "swap-id", "identifier"),
        ("truncated", "truncate", "x.tflite"),
        ("offset-out-of-range", "root", "root"),
        ("index-out-of-range", "bad-index", "tensor 9"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case, content, expect):
    p = tmp_path / "x.tflite"
    good = add_chain(3)
    if content == "swap-id":
        content = good[:4] + b"XXXX" + good[8:]
    elif content == "truncate":
        content = good[: len(good) // 2]
    elif content == "root":
        content = b"\xf0\xff\xff\x7f" + good[4:]
    elif content == "bad-index":
        content = build([tensor("a", (2,)), tensor("b", (2,))], [(0, [0, 9], [1])], [0], [1])
    if content is not None:
        p.write_bytes(content)
    rc, out, err = run_cli(capsys, "plan", str(p))
    assert rc == 2, (case, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0] and expect in lines[0], (case, err)
    assert "Traceback" not in err


def test_subgraph_that_does_not_exist_is_exit_2(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "plan", str(p), "--subgraph", "4")
    assert rc == 2 and "no subgraph 4" in err and str(p) in err


def test_console_script_runs_as_a_process(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    r = subprocess.run([sys.executable, "-m", "viewer", "plan", str(p), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["lower_bound_bytes"] > 0


def test_mobilenet_v2_naive_sum_of_op_produced_tensors(capsys):
    """Issue acceptance: naive sum of op-produced tensors within 2% of 27.6 MB (float32 MobileNet v2)."""
    p = shared_model("mobilenet_v2_224.tflite")
    rc, out, _ = run_cli(capsys, "plan", str(p), "--json", "--planner", "naive")
    r = json.loads(out)
    produced = sum(t["bytes"] for t in r["tensors"] if t["kind"] != "input")
    assert abs(produced - 27.6e6) / 27.6e6 < 0.02, produced


def test_export_csv_never_overwrites_the_model(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    before = p.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(p)
    for target in (p, link):
        rc, _, err = run_cli(capsys, "plan", str(p), "--export-csv", str(target))
        assert rc == 2 and "refusing to overwrite the input model" in err
    assert p.read_bytes() == before


def test_planner_comma_list_and_negative_top(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, out, _ = run_cli(capsys, "plan", str(p), "--planner", "naive,litert", "--json")
    assert rc == 0 and list(json.loads(out)["plans"]) == ["naive", "litert"]
    rc, _, err = run_cli(capsys, "plan", str(p), "--top=-1")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--top" in err


def test_usage_errors_are_one_line(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    rc, _, err = run_cli(capsys, "plan", "--subgraph", "abc", str(p))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "invalid int value" in err


def test_plan_reports_aligned_bound_and_temporaries_note(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(2, shape=(1, 3)))  # 12-byte tensors
    rc, out, _ = run_cli(capsys, "plan", str(p), "--json")
    r = json.loads(out)
    # Three 12-byte tensors live at once: 36 B of breadth, but 64-byte offsets need 64+64+12.
    assert r["lower_bound_bytes"] == 36 and r["aligned_lower_bound_bytes"] == 140
    assert min(pl["arena_bytes"] for pl in r["plans"].values()) >= r["aligned_lower_bound_bytes"]
    assert any("kernel temporaries" in n for n in r["notes"])


def test_plan_measure_adds_kernel_temporaries_and_the_runtime_arena(capsys):
    """unet_256: the tensors need 24.8 MiB, the runtime's arena (im2col included) is 124.8 MiB."""
    p = shared_model("unet_256.tflite")
    rc, out, err = run_cli(capsys, "plan", str(p), "--json", "--measure", "--planner", "litert")
    assert rc == 0, err
    r = json.loads(out)
    m = r["measured"]
    assert m["tensor_lower_bound_bytes"] == 25_952_256
    assert m["temporaries"] and all(t["op_name"] == "CONV_2D" for t in m["temporaries"])
    # Replaying the runtime's tensors with our litert planner gives the runtime's arena exactly.
    assert r["plans"]["litert"]["arena_bytes"] == m["arena_bytes"] == r["plans"]["litert_measured"]["arena_bytes"]
    assert m["arena_bytes"] > 4 * m["tensor_lower_bound_bytes"]
    assert r["lower_bound_bytes"] > max(t["bytes"] for t in m["temporaries"]) > m["tensor_lower_bound_bytes"]


def test_plan_counts_persistent_and_names_control_flow_subgraphs(capsys):
    rc, out, _ = run_cli(capsys, "plan", str(shared_model("mobilenet_v2_224_fp16.tflite")), "--json",
                         "--planner", "litert")
    r = json.loads(out)
    assert r["persistent_bytes"] == 13_896_032  # fp16 weights dequantized once at prepare time
    rc, out, _ = run_cli(capsys, "plan", str(shared_model("litert_testdata_multi_subgraphs_while.tflite")),
                         "--json")
    r = json.loads(out)
    assert sorted(s["subgraph"] for s in r["subgraphs_reached"]) == [1, 2]
    assert any("control flow" in n for n in r["notes"])


def test_plan_measure_at_an_edited_batch_replays_the_runtime(capsys):
    """--measure probes the runtime at the edited shapes: our litert plan equals its arena."""
    from viewer.resources import resource_path

    rc, out, err = run_cli(capsys, "plan", str(resource_path("demo_unet.tflite")), "--json", "--measure",
                           "--batch", "2", "--planner", "litert")
    assert rc == 0, err
    r = json.loads(out)
    assert r["plans"]["litert"]["arena_bytes"] == r["plans"]["litert_measured"]["arena_bytes"]
    assert r["tensors"][0]["shape"][0] == 2


@pytest.mark.shared
def test_plan_lists_signature_keys_and_measures_each_signature_through_its_runner(capsys):
    """litert_testdata_multi_signatures: 'sub' runs subgraph 1, which the runtime allocates
    only through its signature runner (it used to be measured as 0 B)."""
    import json

    from conftest import shared_model

    p = shared_model("litert_testdata_multi_signatures.tflite")
    assert main(["plan", str(p), "--measure", "--signature", "sub", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["subgraph"] == 1
    assert {(s["key"], s["subgraph"]) for s in r["signatures"]} == {("add", 0), ("sub", 1)}
    assert r["plans"]["litert_measured"]["arena_bytes"] > 0
    assert r["footprint"]["terms"][0]["source"] == "measured"
    assert main(["plan", str(p)]) == 0
    assert "signatures: add (subgraph 0), sub (subgraph 1)" in capsys.readouterr().out
    assert main(["plan", str(p), "--signature", "nope"]) == 2
    assert "no signature 'nope'" in capsys.readouterr().err


def _wrong_stored_shapes() -> bytes:
    """B8 in small: x[1,8,8,3] -> ADD(x, x) -> o0, o1, each stored as [1,4] (16 B) though
    LiteRT sizes them [1,8,8,3] (768 B) at prepare."""
    ts = [tensor("in", (1, 8, 8, 3)), tensor("o0", (1, 4)), tensor("o1", (1, 4))]
    return build(ts, [(0, [0, 0], [1]), (0, [0, 0], [2])], [0], [1, 2])


def test_lower_bound_of_wrong_stored_shapes_says_so_on_the_number(tmp_path, capsys):
    p = write(tmp_path, "wide.tflite", _wrong_stored_shapes())
    rc, out, err = run_cli(capsys, "plan", str(p), "--planner", "greedy_by_size")
    assert rc == 0, err
    lb = next(line for line in out.splitlines() if line.strip().startswith("lower bound"))
    assert "800 B" in lb  # 768 + 2 x 16, the file's shapes
    assert lb.endswith("of the file's stored shapes; LiteRT computes other shapes at prepare "
                       "(shape rules): run with --measure")
    assert "note: 2 tensor(s) are stored with other shapes than LiteRT computes at prepare, e.g. " \
           "#1 'o0' [1, 4] -> [1, 8, 8, 3] (operator #0 ADD)" in out
    assert "(at the file's stored shapes)" in out
    # Our rules' figure beside it (LiteRT allocates 3 x 768 B here; check --measure agrees).
    assert "    at LiteRT's shapes                 2,304 B     2.3 KiB  [estimated: our shape rules; " \
           "kernel temporaries not included]" in out
    rc, out, err = run_cli(capsys, "plan", str(p), "--planner", "greedy_by_size", "--json")
    r = json.loads(out)
    assert r["lower_bound_note"].startswith("of the file's stored shapes")
    assert r["stored_shapes"]["status"] == "differs" and r["stored_shapes"]["differs_count"] == 2
    assert r["stored_shapes"]["computed_lower_bound_bytes"] == 3 * 768
    assert r["stored_shapes"]["differs"][0] == {
        "id": 1, "name": "o0", "stored_shape": [1, 4], "computed_shape": [1, 8, 8, 3],
        "op": 0, "op_name": "ADD"}


def test_right_stored_shapes_carry_no_caveat(tmp_path, capsys):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    rc, out, err = run_cli(capsys, "plan", str(p), "--json")
    r = json.loads(out)
    assert r["lower_bound_note"] == "" and r["stored_shapes"]["status"] == "as_stored"
    rc, out, err = run_cli(capsys, "plan", str(p))
    assert "stored shapes" not in out
