"""Read and write TFLite Micro's ``OfflineMemoryAllocation`` metadata entry.

The entry is a model metadata record named ``OfflineMemoryAllocation`` whose buffer holds
little-endian int32 words ``[version, subgraphs, N, offset_0 ... offset_{N-1}]``: N is the
tensor count across every subgraph (subgraph 0's tensors first), each offset is a byte offset
in the arena's head, and -1 means "plan this tensor online". Sources: tflite-micro
``tensorflow/lite/micro/docs/memory_management.md`` and
``AllocationInfoBuilder::GetOfflinePlannedOffsets`` (micro_allocation_info.cc), which reads
word 2 as N and the offsets from word 3 on, and refuses a model whose N differs from its tensor
count.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Sequence

from viewer.errors import ModelFormatError

#: ``kOfflineMemAllocMetadata`` (micro_allocation_info.cc).
OFFLINE_METADATA_NAME = "OfflineMemoryAllocation"
#: ``kOnlinePlannedBuffer`` (micro_memory_planner.h): the tensor is planned online.
ONLINE = -1
#: The version word Vela and the documentation write.
OFFLINE_VERSION = 1


def encode_offsets(offsets: Sequence[int], num_subgraphs: int) -> bytes:
    """The metadata buffer for ``offsets`` (one per tensor across all subgraphs; -1 = online).

    Returns
    -------
    bytes
        ``4 * (3 + len(offsets))`` bytes, little-endian int32.
    """
    words = [OFFLINE_VERSION, int(num_subgraphs), len(offsets), *(int(o) for o in offsets)]
    return struct.pack(f"<{len(words)}i", *words)


def decode_offsets(data: bytes, path: str = "") -> tuple[int, ...]:
    """The per-tensor offsets of an ``OfflineMemoryAllocation`` buffer.

    Raises
    ------
    viewer.errors.ModelFormatError
        When the buffer is shorter than its own N says.
    """
    if len(data) < 12:
        raise ModelFormatError(path, OFFLINE_METADATA_NAME, f"buffer of {len(data)} bytes, need at least 12")
    n = struct.unpack_from("<i", data, 8)[0]
    if n < 0 or len(data) < 12 + 4 * n:
        raise ModelFormatError(path, OFFLINE_METADATA_NAME,
                               f"says {n} offsets but holds {max(len(data) - 12, 0) // 4}")
    return struct.unpack_from(f"<{n}i", data, 12)


def read_offline_offsets(path: str | os.PathLike) -> tuple[int, ...] | None:
    """The offline-planned offsets stored in the model at ``path``, or None when it has none.

    Like TFLM, the entry is matched by its exact name; the last matching entry wins.

    Raises
    ------
    viewer.errors.ModelFormatError
        When the entry points at a missing buffer or is malformed.
    """
    from ai_edge_litert import schema_py_generated as S

    raw = Path(path).read_bytes()
    m = S.Model.GetRootAs(raw, 0)
    found = None
    for i in range(m.MetadataLength()):
        md = m.Metadata(i)
        name = md.Name()
        if name is None or name.decode("utf-8", "replace") != OFFLINE_METADATA_NAME:
            continue
        b = md.Buffer()
        if not 0 <= b < m.BuffersLength():
            raise ModelFormatError(path, OFFLINE_METADATA_NAME, f"buffer {b} out of range")
        buf = m.Buffers(b)
        if buf.DataLength() > 0:
            data = buf.DataAsNumpy().tobytes()
        elif buf.Offset() > 1 and buf.Size() > 0:
            data = raw[buf.Offset(): buf.Offset() + buf.Size()]
        else:
            data = b""
        found = decode_offsets(data, str(path))
    return found


def offline_planned_bytes(src: str | os.PathLike, offsets: Sequence[int], num_subgraphs: int) -> bytes:
    """The bytes of a copy of ``src`` with an ``OfflineMemoryAllocation`` entry holding ``offsets``.

    An existing entry of that name is replaced (its buffer re-pointed); every other field is
    kept, through LiteRT's schema object API (buffer data re-aligned to 16 bytes, as the
    reordered copy's repack does). Writing the file is
    :func:`viewer.export.model_copy.write_offline_planned`'s job (atomic, never over ``src``).

    Raises
    ------
    viewer.errors.ModelFormatError
        ``src`` is not a readable model, or stores buffers outside the flatbuffer.
    """
    import flatbuffers
    import numpy as np
    from ai_edge_litert import schema_py_generated as S

    from viewer.model.writer import FILE_IDENTIFIER, _AlignedBufferT, _realign_buffers, _unpack

    src_p = Path(src)
    raw, model = _unpack(src_p)
    _realign_buffers(src_p, model)
    buf = _AlignedBufferT()
    buf.data = np.frombuffer(encode_offsets(offsets, num_subgraphs), dtype=np.uint8).copy()
    buf.offset, buf.size = 0, 0
    model.buffers = list(model.buffers or []) + [buf]
    metas = [m for m in (model.metadata or [])
             if (m.name.decode() if isinstance(m.name, bytes) else m.name) != OFFLINE_METADATA_NAME]
    md = S.MetadataT()
    md.name = OFFLINE_METADATA_NAME
    md.buffer = len(model.buffers) - 1
    model.metadata = metas + [md]
    builder = flatbuffers.Builder(len(raw) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())
