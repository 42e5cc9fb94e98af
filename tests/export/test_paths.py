"""Atomic writes (viewer/export/paths.py) and the overwrite policy, through every writer.

Interrupted writes are made real: the command runs in a child process whose file-size limit
(``RLIMIT_FSIZE``) is 4 KiB, so its write fails half way with EFBIG (Python ignores SIGXFSZ).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tflite_builder import add_chain, write
from viewer.errors import UsageError, ViewerError
from viewer.export.paths import check_output_path, write_atomic

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4096
resource = pytest.importorskip("resource")


def test_replaces_only_with_force_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "r.json"
    assert write_atomic(out, "one") == 3
    with pytest.raises(UsageError, match="already exists; pass --force"):
        write_atomic(out, "two")
    assert out.read_text() == "one"
    write_atomic(out, "two", force=True)
    assert out.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_never_writes_through_a_hard_link(tmp_path):
    out, other = tmp_path / "a.csv", tmp_path / "b.csv"
    out.write_text("old")
    os.link(out, other)
    write_atomic(out, "new", force=True)
    assert out.read_text() == "new" and other.read_text() == "old"


def test_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    out = tmp_path / "a.svg"
    out.write_text("old")
    out.chmod(0o640)
    write_atomic(out, "new", force=True)
    assert out.stat().st_mode & 0o777 == 0o640


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "out.png"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    for force in (False, True):
        with pytest.raises(UsageError, match="is a FIFO"):
            check_output_path(fifo, force=force)
    assert time.monotonic() - t0 < 5  # opening it for writing would block forever


def test_devices_and_dangling_links_are_refused(tmp_path):
    if os.path.exists("/dev/null"):
        with pytest.raises(UsageError, match="character device"):
            write_atomic("/dev/null", "x", force=True)
    link = tmp_path / "dangling.csv"
    link.symlink_to(tmp_path / "nowhere" / "x.csv")
    with pytest.raises(UsageError, match="dangling"):
        write_atomic(link, "x")


def test_a_symlink_is_followed(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "new", force=True)
    assert link.is_symlink() and target.read_text() == "new"


def _limited_run(args, cwd):
    """Run ``python -m viewer ARGS`` (or ``-c`` code) with a 4 KiB file-size limit."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen", PYTHONDONTWRITEBYTECODE="1")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=limit)


def _assert_unchanged_one_line(r, out: Path, before: bytes):
    assert r.returncode != 0, r.stdout
    assert out.read_bytes() == before
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert str(out) in lines[0] and "unchanged" in lines[0] and "Traceback" not in r.stderr
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_interrupted_chart_export_leaves_the_old_file(tmp_path, suffix):
    model = write(tmp_path, "chain.tflite", add_chain(3))
    out = tmp_path / f"chart{suffix}"
    before = b"old chart " * 1000  # 10 kB, above the limit: the old file is never rewritten
    out.write_bytes(before)
    r = _limited_run(["-m", "viewer", "export", str(model), "-o", str(out), "--force"], tmp_path)
    _assert_unchanged_one_line(r, out, before)


def test_interrupted_csv_export_leaves_the_old_file(tmp_path):
    model = write(tmp_path, "chain.tflite", add_chain(400))
    out = tmp_path / "problem.csv"
    before = b"id,lower,upper,size\n"
    out.write_bytes(before)
    r = _limited_run(["-m", "viewer", "plan", str(model), "--export-csv", str(out), "--force"],
                     tmp_path)
    _assert_unchanged_one_line(r, out, before)


def test_interrupted_reorder_leaves_the_old_file(tmp_path):
    model = write(tmp_path, "chain.tflite", add_chain(400))
    assert model.stat().st_size > LIMIT
    out = tmp_path / "reordered.tflite"
    before = b"not a model"
    out.write_bytes(before)
    r = _limited_run(["-m", "viewer", "reorder", str(model), "-o", str(out), "--force",
                      "--time-limit", "0.5"], tmp_path)
    _assert_unchanged_one_line(r, out, before)


def test_interrupted_json_report_leaves_the_old_file(tmp_path):
    """The JSON report is written by the window (File > Export JSON) through write_report."""
    out = tmp_path / "report.json"
    before = b'{"old": true}\n'
    out.write_bytes(before)
    code = ("import sys\nfrom viewer.errors import ViewerError\nfrom viewer.export.report import write_report\n"
            f"try:\n    write_report({{'tensors': ['x' * 100] * 100}}, {str(out)!r}, force=True)\n"
            "except ViewerError as e:\n    print(e, file=sys.stderr); sys.exit(2)\n")
    r = _limited_run(["-c", code], tmp_path)
    _assert_unchanged_one_line(r, out, before)


def test_reorder_refuses_an_existing_file_without_force(tmp_path, capsys):
    """Issue 12: ``reorder -o README.md`` silently overwrote an existing file."""
    from viewer.cli import main

    model = write(tmp_path, "chain.tflite", add_chain(3))
    readme = tmp_path / "README.md"
    readme.write_text("# keep me\n")
    rc = main(["reorder", str(model), "-o", str(readme), "--time-limit", "0.2"])
    err = capsys.readouterr().err
    assert rc == 2 and "already exists; pass --force" in err and len(err.strip().splitlines()) == 1
    assert readme.read_text() == "# keep me\n"


def test_failed_write_error_is_a_viewer_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "x.json").write_text("old")
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # running as root: permissions do not stop us
            pytest.skip("permission bits do not apply to this user")
        with pytest.raises(ViewerError, match="permission denied"):
            write_atomic(ro / "x.json", "new", force=True)
    finally:
        ro.chmod(0o700)
