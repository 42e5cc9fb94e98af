"""Write a reordered copy of a model, atomically (:func:`viewer.export.paths.write_atomic`)."""

from __future__ import annotations

import os
from typing import Sequence

from viewer.export.paths import write_atomic
from viewer.model.writer import reordered_model_bytes


def write_reordered(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    subgraph_index: int,
    order: Sequence[int],
    *,
    repack: bool = False,
    force: bool = False,
) -> int:
    """Write ``src`` to ``dst`` with subgraph ``subgraph_index``'s operators in ``order``.

    See :func:`viewer.model.writer.reordered_model_bytes` for how the copy is made.

    Parameters
    ----------
    src, dst : path
        The model and where to write the copy; they must be different files.
    subgraph_index : int
    order : sequence of int
        Original operator indices in their new execution order.
    repack : bool
        Always re-serialise through the object API.
    force : bool
        Replace an existing ``dst``.

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    viewer.errors.UsageError
        ``dst`` is ``src`` (or a link to it), exists without ``force``, or is not a regular file.
    viewer.errors.ModelFormatError, viewer.errors.ViewerError
        ``src`` cannot be read, ``order`` does not fit, or the write failed (``dst`` unchanged).
    """
    from viewer.export.paths import check_output_path

    check_output_path(dst, src, what="reordered model", force=force)  # before the work
    data = reordered_model_bytes(src, subgraph_index, order, repack=repack)
    return write_atomic(dst, data, src, what="reordered model", force=force)


def write_offline_planned(src, dst, offsets, num_subgraphs: int, *, force: bool = False) -> int:
    """Write a copy of ``src`` whose ``OfflineMemoryAllocation`` holds ``offsets``, atomically.

    See :func:`viewer.model.offline_plan.offline_planned_bytes`; never over ``src``.

    Raises
    ------
    viewer.errors.UsageError
        ``dst`` is ``src`` (or a link to it), exists without ``force``, or is not a regular file.
    viewer.errors.ModelFormatError, viewer.errors.ViewerError
        ``src`` cannot be read, or the write failed (``dst`` unchanged).
    """
    from viewer.export.paths import check_output_path
    from viewer.model.offline_plan import offline_planned_bytes

    check_output_path(dst, src, what="offline-planned model", force=force)
    data = offline_planned_bytes(src, offsets, num_subgraphs)
    return write_atomic(dst, data, src, what="offline-planned model", force=force)
