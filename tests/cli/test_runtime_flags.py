"""The runtime flags every command shares (viewer/cli/_common.py ``add_runtime_args``):
``--timeout`` is validated the same everywhere (it was an internal error for -1 in plan, export
and compare, and 0 or nan ran), and overlay's bounds the LiteRT run too (it bounded TFLM's only)."""

from __future__ import annotations

import pytest

from tests.tflite_builder import add_chain, write
from viewer.cli import main


def _argv(cmd: str, p, tmp_path) -> list[str]:
    return {
        "plan": ["plan", str(p), "--measure"],
        "export": ["export", str(p), "-o", str(tmp_path / "x.png")],
        "overlay": ["overlay", str(p), "--format", "netron", "-o", str(tmp_path / "x.json")],
        "compare": ["compare", str(p), str(tmp_path / "other.tflite")],
        "measure": ["measure", str(p)],
        "check": ["check", str(p), "--budget", "1MiB"],
        "offline-plan": ["offline-plan", str(p), "-o", str(tmp_path / "o.tflite")],
    }[cmd]


@pytest.mark.parametrize("cmd", ["plan", "export", "overlay", "compare", "measure", "check",
                                 "offline-plan"])
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_a_bad_timeout_is_one_line_exit_2_before_any_work(tmp_path, capsys, cmd, value):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    write(tmp_path, "other.tflite", add_chain(2))
    rc = main([*_argv(cmd, p, tmp_path), f"--timeout={value}"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", (out, err)
    assert len(err.strip().splitlines()) == 1 and "--timeout" in err, err
    assert "internal error" not in err and "Traceback" not in err
    assert not any((tmp_path / f).exists() for f in ("x.png", "x.json", "o.tflite"))


def test_overlay_timeout_bounds_the_litert_run(tmp_path, capsys, monkeypatch):
    """A hanging runtime is killed after --timeout (the overlay then says what it leaves out)."""
    p = write(tmp_path, "chain.tflite", add_chain(2))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "hang")
    out = tmp_path / "x.json"
    rc = main(["overlay", str(p), "--format", "netron", "-o", str(out), "--timeout", "1"])
    o, err = capsys.readouterr()
    assert rc == 0, err
    assert "within 1 s" in err and "kernel temporaries not included" in o
