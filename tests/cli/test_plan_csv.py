"""`arena-viewer plan-csv`: table, JSON, alignment, and every kind of bad CSV -> exit 2, one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED
from viewer.cli import main

# MiniMalloc's README example; capacity 12 is feasible and equals the lower bound.
INPUT_12 = """id,lower,upper,size
b1,0,3,4
b2,3,9,4
b3,0,9,4
b4,9,21,4
b5,0,21,4
"""


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, text: str, name: str = "p.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def overlaps(a, b) -> bool:
    """Half-open lifetimes [lower, upper) and byte ranges [offset, offset + size)."""
    return a[0] < b[1] and b[0] < a[1] and a[3] < b[3] + b[2] and b[3] < a[3] + a[2]


def test_json_keys_offsets_and_lower_bound(tmp_path, capsys):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--json")
    assert rc == 0, err
    r = json.loads(out)
    assert set(r) >= {"problem", "lower_bound_bytes", "plans", "best_plan"}
    assert r["problem"] == str(p)
    assert r["lower_bound_bytes"] == 12  # b3 + b5 + b1/b2/b4: 4 + 4 + 4 at every time
    assert {"greedy_by_size", "greedy_by_breadth", "strip_packing", "naive"} <= set(r["plans"])
    assert "optimal" not in r["plans"]  # exact planners only when named
    rows = {"b1": (0, 3, 4), "b2": (3, 9, 4), "b3": (0, 9, 4), "b4": (9, 21, 4), "b5": (0, 21, 4)}
    for name, plan in r["plans"].items():
        assert set(plan) >= {"arena_bytes", "offsets", "seconds", "proven_optimal"}
        assert set(plan["offsets"]) == set(rows), name  # keyed by the file's own ids
        placed = [(*rows[k], off) for k, off in plan["offsets"].items()]
        assert plan["arena_bytes"] == max(lo + s for _, _, s, lo in placed)
        for i, a in enumerate(placed):
            for b in placed[i + 1:]:
                assert not overlaps(a, b), (name, a, b)
    assert r["plans"]["naive"]["arena_bytes"] == 20
    assert r["plans"]["greedy_by_size"]["arena_bytes"] == 12
    assert r["plans"]["strip_packing"]["arena_bytes"] == 12
    assert r["plans"][r["best_plan"]]["arena_bytes"] == 12


def test_table(tmp_path, capsys):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--planner", "greedy_by_size,naive")
    assert rc == 0, err
    lines = out.splitlines()
    assert "lower bound 12 B" in out
    rows = {}
    for ln in lines:
        if ln.startswith(("greedy", "naive")):
            cells = [c for c in ln.split() if c != "*"]  # "*" marks the smallest arena
            rows[cells[0]] = cells
    assert set(rows) == {"greedy_by_size", "naive"}
    assert rows["greedy_by_size"][1] == "12" and "1.000x" in rows["greedy_by_size"]
    assert rows["naive"][1] == "20" and "1.667x" in rows["naive"]
    assert "greedy_by_size *" in out and "naive *" not in out


def test_alignment(tmp_path, capsys):
    # Two overlapping 3-byte buffers: packed 0 and 3 with alignment 1, 0 and 8 with 8.
    p = write(tmp_path, "id,lower,upper,size\nx,0,2,3\ny,1,3,3\n")
    _, out, _ = run_cli(capsys, "plan-csv", str(p), "--planner", "greedy_by_size", "--json")
    assert json.loads(out)["plans"]["greedy_by_size"]["arena_bytes"] == 6
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--planner", "greedy_by_size", "--json",
                           "--alignment", "8")
    assert rc == 0, err
    plan = json.loads(out)["plans"]["greedy_by_size"]
    assert sorted(plan["offsets"].values()) == [0, 8]
    assert plan["arena_bytes"] == 11


@pytest.mark.parametrize(
    "text, needle",
    [
        ("lower,upper,size\n0,1,4\n", "lacks column(s) id"),
        ("id,start,end,size\na,0,1,4\n", "lacks column(s) lower, upper"),
        ("id,lower,upper,size\na,0,x,4\n", "not an integer"),
        ("id,lower,upper,size\na,0,1,4.5\n", "not an integer"),
        ("id,lower,upper,size\na,3,3,4\n", "must be greater than lower"),
        ("id,lower,upper,size\na,5,2,4\n", "must be greater than lower"),
        ("id,lower,upper,size\na,0,1,-4\n", "negative"),
        ("", "empty file"),
    ],
)
def test_bad_csv_is_one_line_and_exit_2(tmp_path, capsys, text, needle):
    p = write(tmp_path, text)
    rc, out, err = run_cli(capsys, "plan-csv", str(p))
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and str(p) in err and needle in err, err
    assert "Traceback" not in err


def test_missing_file(tmp_path, capsys):
    p = tmp_path / "absent.csv"
    rc, out, err = run_cli(capsys, "plan-csv", str(p))
    assert rc == 2 and err.count("\n") == 1 and str(p) in err and "no such file" in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--planner", "bogus"], "unknown planner 'bogus'"),
        (["--alignment", "0"], "--alignment"),
        (["--time-limit", "-1"], "--time-limit"),
    ],
)
def test_bad_options(tmp_path, capsys, argv, needle):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), *argv)
    assert rc == 2 and err.count("\n") == 1 and needle in err, err


def test_minimalloc_instance_a(capsys):
    path = SHARED / "benchmarks" / "minimalloc" / "A.1048576.csv"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not beside this checkout)")
    rc, out, err = run_cli(capsys, "plan-csv", str(path), "--json",
                           "--planner", "greedy_by_size,strip_packing")
    assert rc == 0, err
    r = json.loads(out)
    assert r["lower_bound_bytes"] == 1048576  # MiniMalloc proves this capacity feasible
    assert len(r["plans"]["strip_packing"]["offsets"]) == 154
    for plan in r["plans"].values():
        # SOURCE.txt: best-fit planners land 1.31-1.41x the lower bound on A-K.
        assert 1.0 <= plan["arena_bytes"] / r["lower_bound_bytes"] < 1.5


def test_header_only_problem_plans_to_zero(tmp_path, capsys):
    p = write(tmp_path, "id,lower,upper,size\n")
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--json")
    assert rc == 0, err
    r = json.loads(out)
    assert r["lower_bound_bytes"] == 0
    assert all(plan["arena_bytes"] == 0 and plan["offsets"] == {} for plan in r["plans"].values())


@pytest.mark.shared
def test_exported_model_problem_replans_the_same(tmp_path, capsys):
    """`plan MODEL --export-csv` then `plan-csv`: the same problem, so the same lower bound
    and the same heuristic arenas (at LiteRT's 64-byte alignment)."""
    from conftest import shared_model

    model = shared_model("mobilenet_v2_224.tflite")
    exported = tmp_path / "mnv2.csv"
    rc, out, err = run_cli(capsys, "plan", str(model), "--json", "--export-csv", str(exported))
    assert rc == 0, err
    from_model = json.loads(out)
    rc, out, err = run_cli(capsys, "plan-csv", str(exported), "--json", "--alignment", "64",
                           "--planner", "greedy_by_size,greedy_by_breadth,strip_packing")
    assert rc == 0, err
    from_csv = json.loads(out)
    assert from_csv["lower_bound_bytes"] == from_model["lower_bound_bytes"]
    for name, plan in from_csv["plans"].items():
        assert plan["arena_bytes"] == from_model["plans"][name]["arena_bytes"], name


def test_one_buffer_singular_one_decimal_units_and_proof_label(tmp_path, capsys):
    p = write(tmp_path, "id,lower,upper,size\na,0,10,1536\n")
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--planner", "litert,optimal")
    assert rc == 0, err
    assert "(1 buffer," in out and "1 buffers" not in out
    assert "1.5 KiB" in out and "1.500 KiB" not in out
    opt = next(ln for ln in out.splitlines() if ln.startswith("optimal"))
    assert "(proven optimal)" in opt
    assert not any(ln.startswith(("naive", "greedy")) for ln in out.splitlines())  # only those named


def test_not_proven_label_gives_bound_and_gap():
    from viewer.cli.plan_csv import _proof
    from viewer.planning.types import Plan

    plan = Plan("optimal", {0: 0}, 1100, 1, proven_optimal=False, bound_bytes=1000)
    assert _proof("optimal", plan) == "(not proven: bound 1000 B, gap 10.0%)"
    assert _proof("greedy_by_size", Plan("greedy_by_size", {0: 0}, 1100, 1)) == ""


@pytest.mark.parametrize("argv, needle", [
    (["--time-limit", "0"], "--time-limit: 0"),
    (["--time-limit", "nan"], "--time-limit: nan"),
    (["--planner", "litert,bogus"], "unknown planner 'bogus'"),
])
def test_limits_and_planner_lists_are_one_line(tmp_path, capsys, argv, needle):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), *argv)
    assert rc == 2 and needle in err and err.count("\n") == 1


def test_huge_size_is_exit_2_not_an_overflow(tmp_path, capsys):
    p = write(tmp_path, "id,lower,upper,size\na,0,10,99999999999999999999999\n")
    rc, out, err = run_cli(capsys, "plan-csv", str(p))
    assert rc == 2 and "line 2" in err and str(p) in err and "internal error" not in err


# -- --capacity: "does it fit in SIZE?" (exit 0 fits, 1 proven not to, 3 not decided) ----------

def _instance(letter: str) -> Path:
    path = SHARED / "benchmarks" / "minimalloc" / f"{letter}.1048576.csv"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is not beside this checkout)")
    return path


def test_capacity_fits_names_the_planner_and_exits_0(tmp_path, capsys):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--capacity", "12")
    assert rc == 0, err
    assert "optimal" in out  # --capacity adds the exact planner to the default list
    # The first planner in display order (viewer/planning/__init__.py: naive, litert, greedy, ...) that fits.
    assert out.splitlines()[-1].startswith("capacity 12 B: fits (litert: 12 B in ")


def test_capacity_below_the_breadth_does_not_fit_exit_1(tmp_path, capsys):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--capacity", "11", "--json")
    assert rc == 1, err
    v = json.loads(out)["capacity"]
    assert v["verdict"] == "does not fit" and v["bound_bytes"] == 12 and v["exit_code"] == 1
    assert "breadth is 12 B" in v["line"]


def test_capacity_not_decided_says_so_exit_3(tmp_path, capsys):
    # naive alone (20 B) at 15 B: no plan fits, and nothing proves the breadth (12 B) unmeetable.
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--capacity", "15", "--planner", "naive")
    assert rc == 3, err
    last = out.splitlines()[-1]
    assert last.startswith("capacity 15 B: not decided (") and "add --planner optimal" in last
    assert "best arena 20 B, proven bound 12 B" in last


def test_capacity_exact_planner_stops_at_the_first_plan_within_it(capsys):
    # E: heuristics reach 1.40x, the optimum is the breadth (1.0x); asked for 1.25 MiB the exact
    # planner stops at a plan within it instead of going on to the optimum.
    path = _instance("E")
    cap = 1310720
    rc, out, err = run_cli(capsys, "plan-csv", str(path), "--capacity", str(cap), "--json",
                           "--planner", "optimal", "--time-limit", "60")
    assert rc == 0, err
    r = json.loads(out)
    arena = r["plans"]["optimal"]["arena_bytes"]
    assert arena <= cap and r["capacity"]["verdict"] == "fits"
    assert not r["plans"]["optimal"]["proven_optimal"]  # it did not look further


def test_capacity_time_limit_is_an_honest_not_decided(capsys):
    # D at 0.95 MiB: no one has found a plan below 0.994 MiB, nor proven one impossible.
    path = _instance("D")
    rc, out, err = run_cli(capsys, "plan-csv", str(path), "--capacity", "996147",
                           "--planner", "optimal", "--time-limit", "0.3")
    assert rc == 3, err
    last = out.splitlines()[-1]
    assert last.startswith("capacity 996,147 B (972.8 KiB): not decided (no plan within it found "
                           "in the time limit by optimal; best arena ")
    assert "proven bound 986,112 B" in last


@pytest.mark.parametrize(
    "value, needle",
    [("-3", "negative"), ("0", "more than 0 bytes"), ("abc", "cannot read size"),
     ("1e30", "too large"), ("4XB", "cannot read size")],
)
def test_bad_capacity_is_one_line_exit_2(tmp_path, capsys, value, needle):
    p = write(tmp_path, INPUT_12)
    rc, out, err = run_cli(capsys, "plan-csv", str(p), "--capacity", value)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert "--capacity" in err and needle in err, err
