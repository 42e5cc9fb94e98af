"""A real delegate library for the tests: ``hold_delegate.c`` built with the system C compiler.

It claims no operator and, in Prepare, allocates and touches ``hold_bytes`` (an option) it keeps
until destroyed, as a GPU/NPU delegate keeps buffers; ``fail=1`` makes its create return NULL.
Tests that need it skip with a reason when no C compiler is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).with_name("hold_delegate.c")


def build_hold_delegate(out_dir: Path) -> Path:
    """Compile the test delegate into ``out_dir``; skip the test when there is no compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the test delegate library")
    lib = out_dir / "libhold_delegate.so"
    if not lib.exists():
        done = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(SOURCE)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"the test delegate did not compile: {done.stderr.strip()[:200]}")
    return lib


@pytest.fixture(scope="session")
def hold_delegate(tmp_path_factory) -> Path:
    return build_hold_delegate(tmp_path_factory.mktemp("delegate"))
