"""Output paths and atomic writes: never overwrite an input, never write into nowhere, never
leave a half-written file.

Every file Arena Viewer writes (PNG, SVG, CSV, JSON, the reordered ``.tflite``) goes through
:func:`write_atomic`: the bytes go to a temporary file in the target's folder, which is
flushed, ``fsync``-ed and then renamed over the target. So an existing file is replaced only
once the new one is complete; a failed write (disk full, ``RLIMIT_FSIZE``, a signal) leaves it
as it was. Renaming replaces the directory entry: a target with other hard links keeps its old
bytes under the other names. A symbolic link is followed (its target is replaced).

Policy for existing files: an existing output is replaced only when the caller says so
(``force=True``: the command line's ``--force``, or the window once its save dialog has asked).
Non-regular targets (FIFO, device, socket) are refused before any work, since opening a FIFO
for writing blocks until someone reads it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from viewer.errors import UsageError, ViewerError

#: What ``--force`` says in the error when an output exists.
FORCE_HINT = "pass --force to replace it"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_output_path(output: str | os.PathLike, *inputs: str | os.PathLike, what: str = "output",
                      force: bool = False) -> Path:
    """Check that ``output`` can be written and is none of ``inputs``, before any work.

    Parameters
    ----------
    output : path
    *inputs : path
        Files that must never be replaced (the model).
    what : str
        Names the output in messages ("chart", "CSV problem", ...).
    force : bool
        Allow replacing an existing regular file.

    Returns
    -------
    Path

    Raises
    ------
    viewer.errors.UsageError
        Empty path, a folder, a missing parent folder, no permission, the same file as an input
        (same path, a symlink to it, or a hard link), a FIFO/device/socket or dangling link, or
        an existing file without ``force``.
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
    try:
        st = os.stat(out)  # follows a symlink; never opens (a FIFO would block)
    except FileNotFoundError:
        st = None
        if os.path.islink(out):
            raise UsageError(f"{out}: is a dangling symbolic link; refusing to write the {what} "
                             "through it") from None
    except OSError as e:
        raise UsageError(f"{out}: cannot write the {what} here: {e.strerror or e}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{out}: is a folder; give a file name for the {what}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{out}: is {_kind(st.st_mode)}; refusing to write the {what} there")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{out}: folder {parent} does not exist")
    if not os.access(out if st is not None else parent, os.W_OK) or not os.access(
            Path(os.path.realpath(out)).parent, os.W_OK):
        raise UsageError(f"{out}: cannot write here (permission denied)")
    if st is not None and not force:
        raise UsageError(f"{out}: already exists; {FORCE_HINT}")
    return out


def _new_file_mode(existing: os.stat_result | None) -> int:
    if existing is not None:
        return stat.S_IMODE(existing.st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | os.PathLike, data: bytes | str, *inputs: str | os.PathLike,
                 what: str = "output", force: bool = False) -> int:
    """Write ``data`` to ``path`` atomically: temporary file in the same folder, fsync, rename.

    Parameters
    ----------
    path : path
        The target. A symbolic link is followed; a hard link is not written through (the
        other names keep the old bytes).
    data : bytes or str
        ``str`` is encoded as UTF-8.
    *inputs : path
        Files that must never be replaced (see :func:`check_output_path`).
    what : str
        Names the output in messages.
    force : bool
        Replace an existing file. Without it an existing file is refused, also when it appears
        between the check and the rename (the new file is linked in with ``os.link``, which
        never replaces).

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    viewer.errors.UsageError
        See :func:`check_output_path`.
    viewer.errors.ViewerError
        The write failed (disk full, file size limit, permissions); the target is unchanged and
        the temporary file removed.
    """
    out = check_output_path(path, *inputs, what=what, force=force)
    if isinstance(data, str):
        data = data.encode("utf-8")
    real = Path(os.path.realpath(out))
    try:
        existing = os.stat(real)
    except OSError:
        existing = None
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".part")
        with os.fdopen(fd, "wb") as f:
            view = memoryview(data)
            while view:
                view = view[f.write(view):]
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _new_file_mode(existing))
        if force:
            os.replace(tmp, real)
        else:
            try:
                os.link(tmp, real)  # fails if the target appeared meanwhile
            except FileExistsError:
                raise UsageError(f"{out}: already exists; {FORCE_HINT}") from None
            except OSError:  # no hard links on this file system
                if os.path.lexists(real):
                    raise UsageError(f"{out}: already exists; {FORCE_HINT}") from None
                os.replace(tmp, real)
            else:
                os.unlink(tmp)
        tmp = None
        _fsync_dir(real.parent)
    except OSError as e:
        raise ViewerError(f"{out}: cannot write the {what}: {e.strerror or e}; "
                          f"{'the existing file is unchanged' if existing else 'nothing written'}"
                          ) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return len(data)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
