"""measure --cgroup: the smallest memory limit a real process survives, in a fresh cgroup."""

from __future__ import annotations

import pytest

from tests.tflite_builder import add_chain, write
from viewer.cli import main
from viewer.runtime import cgroup as cg


def _support():
    try:
        return cg.detect()
    except cg.CgroupUnavailable as e:
        pytest.skip(f"no memory cgroup can be created here: {e}")


def test_smallest_surviving_limit_of_a_tiny_model(tmp_path):
    support = _support()
    p = write(tmp_path, "chain.tflite", add_chain(2))
    found = cg.smallest_surviving_limit(cg.measure_args(str(p), 1), support=support, timeout=60)
    ok = [r for r in found.runs if r.survived]
    killed = [r for r in found.runs if not r.survived]
    assert found.unlimited.survived and found.unlimited.limit_bytes is None
    assert found.unlimited.answer.get("ok") and found.unlimited.peak_bytes > 0
    # The answer is a limit that was run and survived; 1 MiB less was run and killed.
    assert found.smallest_surviving_bytes in [r.limit_bytes for r in ok]
    assert found.largest_failing_bytes == found.smallest_surviving_bytes - cg.RESOLUTION
    assert killed and all("OOM" in r.how or "signal" in r.how for r in killed)
    assert all(r.peak_bytes <= r.limit_bytes for r in found.runs if r.limit_bytes)
    base = cg.process_baseline(support=support)
    # The baseline's peak is an unlimited run's charge (page cache included, which a limit
    # reclaims): a tiny model's process survives within one bisection step of it.
    assert base.survived and 0 < base.peak_bytes <= found.smallest_surviving_bytes + cg.RESOLUTION


def test_cli_prints_predicted_limit_and_baseline(tmp_path, capsys):
    _support()
    p = write(tmp_path, "chain.tflite", add_chain(2))
    import json

    rc = main(["measure", str(p), "--cgroup", "--runs", "1", "--weights", "mapped", "--json",
               "--runtime-overhead", "0"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["cgroup_version"] in ("v1", "v2")
    assert r["predicted_total_bytes"] == r["predicted_terms"]["arena_bytes"]  # mapped, given 0
    assert r["predicted_terms"]["runtime_source"] == "given"
    assert r["difference_bytes"] == r["smallest_surviving_limit_bytes"] - r["predicted_total_bytes"]
    assert r["remainder_bytes"] == r["difference_bytes"] - r["process_baseline_bytes"]


@pytest.mark.parametrize("make, text", [
    (lambda d: d / "nope", "is not a directory"),
    (lambda d: d, "is not a memory cgroup"),
])
def test_cannot_create_a_cgroup_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch, make, text):
    root = make(tmp_path / "root")
    if root.name == "root":
        root.mkdir()
    monkeypatch.setenv(cg.ROOT_ENV, str(root))
    with pytest.raises(cg.CgroupUnavailable, match=text):
        cg.detect()
    p = write(tmp_path, "chain.tflite", add_chain(1))
    rc = main(["measure", str(p), "--cgroup"])
    out, err = capsys.readouterr()
    assert rc == 3 and out == ""
    assert err.count("\n") == 1 and "no memory cgroup can be created here" in err and text in err
    assert not list(root.glob("arena-viewer-*")) if root.exists() else True


def test_a_missing_model_is_exit_2(tmp_path, capsys):
    rc = main(["measure", str(tmp_path / "nope.tflite"), "--cgroup"])
    assert rc == 2 and "no such model file" in capsys.readouterr().err


# -- cgroup v2 detection, on a directory that looks like one (this machine may have no v2) --------
def _fake_v2(d, controllers: str, subtree: str):
    d.mkdir(parents=True, exist_ok=True)
    (d / "cgroup.controllers").write_text(controllers + "\n")
    (d / "cgroup.subtree_control").write_text(subtree + "\n")
    return d


def test_v2_without_the_memory_controller_says_so(tmp_path):
    d = _fake_v2(tmp_path / "cg", "cpu io", "")
    with pytest.raises(cg.CgroupUnavailable, match=r"memory controller is not available.*cpu io"):
        cg.detect(str(d))


def test_v2_with_memory_enabled_but_no_memory_files_is_not_a_memory_cgroup(tmp_path):
    d = _fake_v2(tmp_path / "cg", "cpu memory", "memory")
    with pytest.raises(cg.CgroupUnavailable, match="no memory.max"):
        cg.detect(str(d))
    assert not list(d.glob("arena-viewer-*"))  # the trial child was removed


def test_kernel_counters_are_read_as_integers(tmp_path):
    (tmp_path / "memory.events.local").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    assert cg._events(str(tmp_path), True) == {"low": 0, "high": 0, "max": 7, "oom": 1, "oom_kill": 1}
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (tmp_path / "memory.failcnt").write_text("5\n")
    assert cg._events(str(tmp_path), False) == {"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 2,
                                                "failcnt": 5}
    assert cg._how(-9, {}, {"oom_kill": 1}, 10).startswith("killed by the OOM killer")
    assert cg._how(None, {}, {}, 10).startswith("did not finish within 10 s")
    assert cg._how(0, {"ok": True}, {}, 10) == ""


def test_predicted_total_counts_what_check_counts(tmp_path, capsys):
    """The predicted total adds the runtime overhead check measures (it added a given 0 B),
    term by term the same as ``check --json`` under the same conventions."""
    _support()
    import json

    p = write(tmp_path, "chain.tflite", add_chain(3, shape=(1, 64, 64, 8)))
    rc = main(["measure", str(p), "--cgroup", "--runs", "1", "--weights", "copied", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0
    rc = main(["check", str(p), "--budget", "1GiB", "--weights", "copied", "--json"])
    c = json.loads(capsys.readouterr().out)
    assert rc == 0
    mine = {t["name"]: t for t in r["predicted_term_list"]}
    theirs = {t["name"]: t for t in c["terms"]}
    assert set(mine) == set(theirs)
    over = mine["runtime overhead"]
    assert over["source"] == theirs["runtime overhead"]["source"] == "measured"
    assert r["predicted_terms"]["runtime_bytes"] == over["bytes"]
    # Two measuring processes: the same figure within a few pages of allocator noise.
    assert abs(r["predicted_total_bytes"] - c["used_bytes"]) <= 64 << 10
    assert r["predicted_total_bytes"] == sum(t["bytes"] for t in mine.values() if t["counted"])
    assert r["predicted_unknowns"] == [] and r["predicted_is_lower_bound"] is False


def test_predicted_total_says_when_the_overhead_is_left_out(tmp_path, capsys, monkeypatch):
    _support()
    from viewer.cli import _cgroup
    from viewer.runtime import overhead
    from viewer.whatif import footprint as fp_module

    real = fp_module.footprint
    monkeypatch.setattr(fp_module, "footprint",  # the probe does not measure it either
                        lambda *a, **k: real(*a, **{**k, "runtime_overhead": False}))
    monkeypatch.setattr(overhead, "measure_overhead",
                        lambda path, resolver="builtin", timeout=120.0:
                        overhead.OverheadMeasurement(resolver, None, "simulated: not readable"))
    p = write(tmp_path, "chain.tflite", add_chain(2))
    r = _cgroup.predicted_total(str(p), "mapped", None, 60)
    assert r["terms"]["runtime_source"] == "unknown" and r["terms"]["runtime_bytes"] == 0
    assert any("runtime overhead" in u and "simulated" in u for u in r["unknowns"])
