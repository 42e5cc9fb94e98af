"""MiniMalloc-style problem CSV: read, write, round trip, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED
from viewer.errors import PlanningError, ViewerError
from viewer.export.problem_csv import write_problem_csv
from viewer.planning.csv_io import read_problem_csv
from viewer.planning.types import Buffer, Plan, PlanningProblem

BENCH = SHARED / "benchmarks" / "minimalloc"

INPUT_12 = """id,lower,upper,size
b1,0,3,4
b2,3,9,4
b3,0,9,4
b4,9,21,4
b5,0,21,4
"""


def _write(tmp_path: Path, text: str, name: str = "p.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_half_open_intervals_and_renumbered_ids(tmp_path):
    problem, names = read_problem_csv(_write(tmp_path, INPUT_12))
    assert names == ["b1", "b2", "b3", "b4", "b5"]
    assert [b.id for b in problem.buffers] == [0, 1, 2, 3, 4]
    assert problem.buffers[0] == Buffer(0, 0, 2, 4)
    assert problem.buffers[1] == Buffer(1, 3, 8, 4)
    assert problem.buffers[3] == Buffer(3, 9, 20, 4)
    assert problem.num_ops == 21
    # b1 and b2 are half-open neighbours: never live at once, so the bound is 12 not 16.
    assert problem.lower_bound() == 12


def test_columns_in_any_order_extra_columns_ignored(tmp_path):
    problem, names = read_problem_csv(
        _write(tmp_path, "size,upper,id,lower,offset\n8,5,x,2,0\n 16 , 3 , y , 0 , 8\n")
    )
    assert names == ["x", "y"]
    assert problem.buffers == (Buffer(0, 2, 4, 8), Buffer(1, 0, 2, 16))


def test_round_trip_with_plan(tmp_path):
    problem = PlanningProblem((Buffer(7, 0, 2, 4), Buffer(9, 1, 5, 12)), num_ops=6)
    plan = Plan("x", {7: 12, 9: 0}, 16, alignment=4)
    out = tmp_path / "out.csv"
    write_problem_csv(problem, out, plan=plan, names=["a", "b"])
    assert out.read_text().splitlines() == [
        "id,lower,upper,size,offset", "a,0,3,4,12", "b,1,6,12,0",
    ]
    back, names = read_problem_csv(out)
    assert names == ["a", "b"]
    assert [(b.first, b.last, b.size) for b in back.buffers] == [(0, 2, 4), (1, 5, 12)]


def test_write_without_names_uses_ids(tmp_path):
    problem = PlanningProblem((Buffer(3, 1, 1, 5),), num_ops=2)
    out = tmp_path / "o.csv"
    write_problem_csv(problem, out)
    assert out.read_text() == "id,lower,upper,size\n3,1,2,5\n"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "empty file"),
        ("id,lower,size\n1,0,4\n", "lacks column(s) upper"),
        ("id,lower,upper,size\n1,0,x,4\n", "line 2: column 'upper'"),
        ("id,lower,upper,size\n1,5,5,4\n", "upper 5 must be greater than lower 5"),
        ("id,lower,upper,size\n1,-1,5,4\n", "lower -1 is negative"),
        ("id,lower,upper,size\n1,0,5,-4\n", "size -4 is negative"),
        ("id,lower,upper,size\n1,0,5,4\n1,0,2,4\n", "id '1' repeats line 2"),
        ("id,lower,upper,size\n1,0,5\n", "line 2: 3 fields"),
        ("id,lower,upper,size\n,0,5,4\n", "empty id"),
    ],
)
def test_bad_input_is_one_line_viewer_error(tmp_path, text, needle):
    p = _write(tmp_path, text)
    with pytest.raises(ViewerError) as ei:
        read_problem_csv(p)
    msg = str(ei.value)
    assert needle in msg
    assert str(p) in msg
    assert "\n" not in msg


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(PlanningError, match="no such file"):
        read_problem_csv(tmp_path / "nope.csv")
    b = tmp_path / "bin.csv"
    b.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(PlanningError, match="bin.csv"):
        read_problem_csv(b)


def test_write_errors(tmp_path):
    problem = PlanningProblem((Buffer(0, 0, 0, 1),), num_ops=1)
    with pytest.raises(PlanningError, match="1 buffers"):
        write_problem_csv(problem, tmp_path / "x.csv", names=["a", "b"])
    with pytest.raises(PlanningError, match="no offset"):
        write_problem_csv(problem, tmp_path / "x.csv", plan=Plan("p", {}, 0))
    with pytest.raises(ViewerError, match="does not exist"):
        write_problem_csv(problem, tmp_path / "no" / "dir" / "x.csv")


def test_reads_shared_minimalloc_benchmark():
    p = BENCH / "A.1048576.csv"
    if not p.exists():
        pytest.skip(f"{p} not present (../shared is not beside this checkout)")
    problem, names = read_problem_csv(p)
    assert len(problem.buffers) == len(p.read_text().splitlines()) - 1
    assert len(set(names)) == len(names)
    # MiniMalloc proves 1048576 feasible, so the widest time step fits in it.
    assert 0 < problem.lower_bound() <= 1048576


@pytest.mark.parametrize("row, needle", [
    ("a,0,10,99999999999999999999999", "line 2: size 99999999999999999999999 is too large"),
    ("a,0,999999999999999999,10", "line 2: upper 999999999999999999 is too large"),
    (f"a,0,10,{(1 << 53) + 1}", "is too large (at most 2**53"),
    ("a,0,10,5,7", "line 2: 5 fields, the header has 4"),
])
def test_out_of_range_and_extra_fields_name_file_and_row(tmp_path, row, needle):
    p = _write(tmp_path, "id,lower,upper,size\n" + row + "\n")
    with pytest.raises(PlanningError) as e:
        read_problem_csv(p)
    assert needle in str(e.value) and str(p) in str(e.value) and "\n" not in str(e.value)


def test_sizes_summing_past_2_62_are_rejected(tmp_path):
    rows = "".join(f"b{i},0,1,{1 << 53}\n" for i in range(513))  # 513 * 2**53 > 2**62
    with pytest.raises(PlanningError, match="more than 2\\*\\*62"):
        read_problem_csv(_write(tmp_path, "id,lower,upper,size\n" + rows))


def test_the_limits_themselves_are_taken_and_planned_without_a_time_axis(tmp_path):
    import tracemalloc

    from viewer.planning.run import run_planners
    from viewer.planning.verify import verify_plan

    big = 1 << 53
    p = _write(tmp_path, f"id,lower,upper,size\na,0,{big},{big}\nb,5,7,3\nc,{big - 10},{big},7\n")
    problem, _ = read_problem_csv(p)
    tracemalloc.start()
    try:
        plans = run_planners(problem, ["naive", "litert", "greedy_by_size", "greedy_by_breadth",
                                       "strip_packing", "optimal"], 1, time_limit=5)
        assert problem.lower_bound() == big + 7
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # nothing proportional to the 2**53-step time range
    for plan in plans.values():
        verify_plan(problem, plan)
    assert plans["optimal"].arena_bytes == big + 7 and plans["optimal"].proven_optimal
