"""How the runtime's child process is started: the one place that names the interpreter.

Every LiteRT subprocess (the one-shot probe, the measuring runs, the resident worker) is started
from :func:`child_command`. A frozen build (PyInstaller, Briefcase) has no ``python -m``; it
replaces this one function, e.g. with its own executable and a hidden argument.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: The module that runs LiteRT (viewer/runtime/_child.py).
CHILD_MODULE = "viewer.runtime._child"
#: The directory that holds the ``viewer`` package (the child's working directory).
ROOT = str(Path(__file__).resolve().parents[2])


def child_command(*args: str) -> list[str]:
    """The argv that runs ``viewer.runtime._child`` with ``args`` (e.g. ``"probe", MODEL``)."""
    return [sys.executable, "-m", CHILD_MODULE, *args]


def child_env() -> dict[str, str]:
    """The child's environment: ours, with the package importable and TensorFlow's INFO lines off."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env
