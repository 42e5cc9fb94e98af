"""Our own immutable view of a .tflite model.

The reader (:mod:`viewer.model.reader`) turns flatbuffer accessors into these at once, so no
later stage ever touches flatbuffers. Weight bytes are never read: a constant tensor only
records which buffer holds it and how many bytes that buffer has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


#: Tensor flags. A flagged tensor's ``nbytes`` is not a trustworthy arena size.
FLAG_STRING = "string"  # STRING: size depends on the data; LiteRT allocates it dynamically
FLAG_RESOURCE = "resource"  # RESOURCE handle: a resource-variable id, not data
FLAG_VARIANT = "variant"  # VARIANT: e.g. a TensorList; sized at run time
FLAG_DYNAMIC = "dynamic"  # shape_signature has -1: ``shape`` is only the default
FLAG_UNKNOWN_DTYPE = "unknown-dtype"  # a TensorType this reader does not know
FLAG_NO_SHAPE = "no-shape"  # the tensor has no shape (unranked): size unknown


def replaced(record, **changes):
    """``dataclasses.replace(record, **changes)`` for the frozen records here (none has
    ``__post_init__`` or slots): a copy of its ``__dict__`` with ``changes``, ~5x faster, which
    matters when a what-if re-shapes 100k tensors."""
    new = object.__new__(type(record))
    d = new.__dict__
    d.update(record.__dict__)
    for k, v in changes.items():
        if k not in d:
            raise TypeError(f"{type(record).__name__} has no field {k!r}")
        d[k] = v
    return new


@dataclass(frozen=True)
class Tensor:
    """One tensor of a subgraph.

    Attributes
    ----------
    index : int
        Position in the subgraph's tensor list; the id used everywhere else.
    name : str
    shape : tuple of int
        Static shape as stored (dynamic dims usually stored as 1).
    shape_signature : tuple of int
        Shape with -1 for unknown dimensions; equals ``shape`` when the file has none.
    dtype : str
        Lower-case TensorType name, e.g. ``"float32"``, ``"int4"``.
    nbytes : int
        Bytes of one tensor of ``shape`` (packed for sub-byte types: INT4 is ceil(n/2)).
    buffer : int
        Index into the model's buffers; 0 means "no buffer".
    is_constant : bool
        The buffer holds data (inline or at offset/size), so the runtime maps it read-only.
    is_variable : bool
        ``is_variable`` flag of the schema (stateful tensors, live for the whole inference).
    flags : frozenset of str
        Any of the ``FLAG_*`` values: sizes that must not be taken at face value.
    """

    index: int
    name: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...]
    dtype: str
    nbytes: int
    buffer: int = 0
    is_constant: bool = False
    is_variable: bool = False
    flags: frozenset[str] = frozenset()

    @property
    def is_dynamic(self) -> bool:
        """True when ``shape_signature`` holds an unknown (-1) dimension."""
        return FLAG_DYNAMIC in self.flags


@dataclass(frozen=True)
class Operator:
    """One operator, in execution order.

    Attributes
    ----------
    index : int
        Execution-order position in its subgraph (0-based).
    op_name : str
        Builtin name from max(deprecated_builtin_code, builtin_code), e.g. ``"CONV_2D"``;
        or the custom op's ``custom_code``.
    builtin_code : int or None
        The resolved BuiltinOperator value; None for custom ops.
    custom_code : str or None
    version : int
    inputs, outputs, intermediates : tuple of int
        Tensor indices; -1 marks an omitted optional input.
    options : Mapping[str, Any]
        Builtin options as plain Python values (snake_case keys as in the schema's object
        API, e.g. ``stride_h``, ``padding``, ``new_shape``); empty for custom ops.
    options_type : str
        Name of the builtin options table, e.g. ``"Conv2DOptions"``; "" when none.
    """

    index: int
    op_name: str
    builtin_code: int | None
    custom_code: str | None
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    options_type: str = ""

    @property
    def is_custom(self) -> bool:
        return self.builtin_code is None


@dataclass(frozen=True)
class Subgraph:
    """A subgraph: tensors, operators in execution order, graph inputs and outputs."""

    index: int
    name: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def variables(self) -> tuple[int, ...]:
        """Indices of variable tensors, in index order (LiteRT's ``variables()``)."""
        return tuple(t.index for t in self.tensors if t.is_variable)


@dataclass(frozen=True)
class Signature:
    """A SignatureDef: a named entry point into one subgraph."""

    key: str
    subgraph_index: int
    inputs: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)
    outputs: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Model:
    """A whole .tflite file.

    Attributes
    ----------
    path : str
    file_bytes : int
        Size of the file on disk.
    version : int
        Schema version (3 for every current converter).
    description : str
    subgraphs : tuple of Subgraph
        Subgraph 0 is the main one.
    weights_bytes : int
        Sum of the sizes of every buffer referenced by a constant tensor, each buffer counted
        once; includes buffers stored after the flatbuffer via offset/size (files > 2 GB).
        File-backed: a runtime that maps the file keeps these in reclaimable page cache.
    signatures : tuple of Signature
    metadata_names : tuple of str
    """

    path: str
    file_bytes: int
    version: int
    description: str
    subgraphs: tuple[Subgraph, ...]
    weights_bytes: int
    signatures: tuple[Signature, ...] = ()
    metadata_names: tuple[str, ...] = ()

    def subgraph(self, index: int) -> Subgraph:
        """Return subgraph ``index``.

        Raises
        ------
        viewer.errors.SubgraphError
            When the model has no such subgraph.
        """
        from viewer.errors import SubgraphError

        if not isinstance(index, int) or index < 0 or index >= len(self.subgraphs):
            raise SubgraphError(
                f"{self.path}: no subgraph {index}; the model has "
                f"{len(self.subgraphs)} (0..{len(self.subgraphs) - 1})"
            )
        return self.subgraphs[index]
