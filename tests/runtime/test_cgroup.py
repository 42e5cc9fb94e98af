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
    assert base.survived and 0 < base.peak_bytes <= found.smallest_surviving_bytes


def test_cli_prints_predicted_limit_and_baseline(tmp_path, capsys):
    _support()
    p = write(tmp_path, "chain.tflite", add_chain(2))
    import json

    rc = main(["measure", str(p), "--cgroup", "--runs", "1", "--weights", "mapped", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["cgroup_version"] in ("v1", "v2")
    assert r["predicted_total_bytes"] == r["predicted_terms"]["arena_bytes"]  # mapped, no overhead
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
