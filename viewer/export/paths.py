"""Output paths: never overwrite an input, never write into nowhere."""

from __future__ import annotations

import os
from pathlib import Path

from viewer.errors import UsageError


def check_output_path(output: str | os.PathLike, *inputs: str | os.PathLike, what: str = "output") -> Path:
    """Check that ``output`` can be written and is none of ``inputs``.

    An existing ``output`` is overwritten (as command-line tools do) unless it is, or links to,
    one of the inputs: a model must never be replaced by a chart or a CSV by accident.

    Raises
    ------
    viewer.errors.UsageError
        Empty path, a folder, a missing parent folder, no permission, or the same file as an input
        (same path, a symlink to it, or a hard link).
    """
    if output is None or str(output) == "":
        raise UsageError(f"the {what} path is empty")
    out = Path(output)
    for src in inputs:
        src = Path(src)
        try:
            same = out.exists() and src.exists() and os.path.samefile(out, src)
        except OSError:
            same = False
        if same or out.resolve() == src.resolve():
            raise UsageError(f"{out}: refusing to overwrite the input model {src} with the {what}")
    if out.is_dir():
        raise UsageError(f"{out}: is a folder; give a file name for the {what}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{out}: folder {parent} does not exist")
    if not os.access(out if out.exists() else parent, os.W_OK):
        raise UsageError(f"{out}: cannot write here (permission denied)")
    return out
