"""Offline plans that alias tensors on purpose (Vela's scratch / scratch_fast), under TFLM.

TFLM takes a model's ``OfflineMemoryAllocation`` as given: two tensors it places over the same
bytes while both are live are the model's plan, and TFLM's head is max(offset + size). The
oracle is TFLM's recording allocator, on a chain whose offline plan puts every tensor at 0.
"""

from __future__ import annotations

import json
import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.cli import main
from viewer.export.model_copy import write_offline_planned
from viewer.model.reader import load_model
from viewer.runtime.tflm_probe import measure_tflm, tflm_available

needs_tflm = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")
VELA = "tfmicro_person_detect_vela.tflite"


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def aliased(tmp_path):
    """input -> ADD -> ADD, every tensor offline at offset 0 (768 B each; online needs 1,536 B)."""
    src = write(tmp_path, "chain.tflite", add_chain(2))
    dst = tmp_path / "aliased.tflite"
    write_offline_planned(src, dst, [0, 0, 0], 1)
    return dst


def test_vela_plan_gives_the_offline_head_not_a_verifier_error(capsys):
    m = shared_model(VELA)
    rc, out, err = run_cli(capsys, "plan", m, "--runtime", "tflm")
    assert rc == 0, err
    assert "overlaps" not in out + err and "lower bound                         74,464 B" in out
    assert "offline plan places" in out  # the aliasing is said, as the model's plan
    rc, out, _ = run_cli(capsys, "plan", m, "--runtime", "tflm", "--json")
    r = json.loads(out)
    assert r["plans"]["tflm_greedy"]["arena_bytes"] == r["tflm"]["head_bytes"] == 74464
    assert r["lower_bound_bytes"] == 74464
    assert all(p["arena_bytes"] >= r["lower_bound_bytes"] and p["gap_pct"] >= 0 for p in r["plans"].values())
    assert r["aligned_lower_bound_bytes"] == 74464  # TFLM's sizes are 16-byte already: no other bound


def test_vela_online_planners_do_not_alias_and_csv_exports(capsys, tmp_path):
    m = shared_model(VELA)
    rc, out, _ = run_cli(capsys, "plan", m, "--runtime", "tflm", "--planner", "tflm_greedy,optimal", "--json")
    r = json.loads(out)
    # optimal plans every tensor online: it may not take tflm_greedy's aliases as its own
    assert r["plans"]["optimal"]["arena_bytes"] == 158160 and r["plans"]["tflm_greedy"]["arena_bytes"] == 74464
    rc, _, err = run_cli(capsys, "plan", m, "--runtime", "tflm", "--export-csv", tmp_path / "v.csv")
    assert rc == 0, err
    assert (tmp_path / "v.csv").read_text().splitlines()[0] == "id,lower,upper,size,offset"


def test_vela_check_and_export_agree_with_plan(capsys, tmp_path):
    m = shared_model(VELA)
    rc, out, _ = run_cli(capsys, "check", m, "--runtime", "tflm", "--budget", "256KiB", "--json")
    r = json.loads(out)
    assert rc == 3 and r["verdict"] == "cannot_tell"  # TFLM cannot run it (ethos-u)
    assert r["head_bytes"] == 74464 and r["lower_bound_bytes"] == 74464
    rc, out, err = run_cli(capsys, "export", m, "--runtime", "tflm", "-o", tmp_path / "vela.png")
    assert rc == 0, err
    assert "arena 72.7 KiB (74,464 B), lower bound 72.7 KiB" in out


def test_gap_text_never_says_plus_minus():
    from viewer.export.report import gap_text

    below = gap_text(74464, 158160, 158160, 16)
    assert "+-" not in below and "-" not in below.split("B")[0] and "no lower bound" in below
    assert gap_text(80, 64, 64, 16).startswith("+16 B")


@needs_tflm
def test_aliased_plan_head_is_tflms_in_every_command(aliased, capsys, tmp_path):
    """plan, check, export and measure give TFLM's measured head for the same file."""
    oracle = measure_tflm(load_model(aliased))
    assert oracle.ok and oracle.head_bytes == 768  # TFLM keeps the aliases: max(offset + size)
    rc, out, _ = run_cli(capsys, "check", aliased, "--runtime", "tflm", "--budget", "64KiB", "--json")
    r = json.loads(out)
    assert rc == 0 and (r["head_bytes"], r["tail_bytes"]) == (oracle.head_bytes, oracle.tail_bytes)
    assert r["lower_bound_bytes"] <= r["head_bytes"]
    rc, out, _ = run_cli(capsys, "plan", aliased, "--runtime", "tflm", "--measure", "--json")
    r = json.loads(out)
    assert r["tflm"]["head_bytes"] == r["plans"]["tflm_measured"]["arena_bytes"] == oracle.head_bytes
    assert r["tflm"]["tail_bytes"] == oracle.tail_bytes and r["lower_bound_bytes"] == 768
    rc, out, _ = run_cli(capsys, "export", aliased, "--runtime", "tflm", "-o", tmp_path / "a.svg")
    assert rc == 0 and "(768 B), lower bound 768 B" in out


@needs_tflm
def test_offline_plan_refuses_to_replace_a_better_plan(aliased, capsys, tmp_path):
    out_path = tmp_path / "replanned.tflite"
    rc, out, err = run_cli(capsys, "offline-plan", aliased, "-o", out_path)
    assert rc == 2 and not out_path.exists()
    assert len(err.strip().splitlines()) == 1 and "already carries an offline plan" in err
    assert "768 B" in err and "1,536 B" in err and "--replace-offline-plan" in err
    rc, out, err = run_cli(capsys, "offline-plan", aliased, "-o", out_path, "--replace-offline-plan")
    assert rc == 0 and out_path.exists()
    assert "the file as given: its offline plan" in out and "COSTS 768 B more" in out


def test_vela_offline_plan_compares_with_its_own_plan(capsys, tmp_path):
    m = shared_model(VELA)
    out_path = tmp_path / "v.tflite"
    rc, _, err = run_cli(capsys, "offline-plan", m, "-o", out_path)
    assert rc == 2 and not out_path.exists() and "74,464 B" in err and "158,160 B" in err
    rc, out, err = run_cli(capsys, "offline-plan", m, "-o", out_path, "--replace-offline-plan", "--verify")
    assert rc == 3, out  # TFLM cannot run it (ethos-u): NOT verified, never exit 0
    assert "NOT verified" in out and "74,464 B" in out


@needs_tflm
def test_tflm_abort_is_one_line_and_cannot_tell(capsys):
    """mobilenet_v2_224_int8 aborts tflite-micro (SIGABRT) in its child process."""
    m = shared_model("mobilenet_v2_224_int8.tflite")
    rc, out, err = run_cli(capsys, "measure", m, "--runtime", "tflm")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "TFLM aborted (SIGABRT)" in err and "Traceback" not in err
    rc, out, err = run_cli(capsys, "check", m, "--runtime", "tflm", "--budget", "4MiB")
    assert rc == 3 and "CANNOT TELL" in out and "aborted (SIGABRT)" in out


def test_a_whatif_plans_an_offline_planned_model_online(aliased, capsys):
    """The stored plan fits the stored sizes: resized, every tensor is planned online (kept, the
    resized tensors would alias: 3,072 B instead of 6,144 B, a falsely small head)."""
    rc, out, err = run_cli(capsys, "plan", aliased, "--runtime", "tflm", "--input-shape", "1x16x16x3", "--json")
    assert rc == 0, err
    r = json.loads(out)
    assert r["tflm"]["head_bytes"] == 6144 and r["runtimes"]["tflm_head_tensors_only_bytes"] == 6144
    assert any("under a what-if every tensor is planned online" in n for n in r["notes"])
