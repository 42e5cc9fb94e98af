"""A subgraph's operator edges and tensor attributes as flat numpy arrays, for :func:`analyze`.

:func:`viewer.analysis.intervals.analyze` runs on graphs of 100k operators (issue 15), several
times per command; a Python loop per edge and a dict per tensor cost seconds there. These
arrays let it do the per-edge work (producers, consumers, reference counts, last uses) with
numpy, and keep Python loops for what must stay sequential (in-place sharing) or must build
objects (the usage records).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

import numpy as np

from viewer.model.types import Subgraph

_IDX = np.int64


@dataclass(frozen=True)
class Edges:
    """One side of every operator (its inputs or its outputs), flattened in execution order.

    Attributes
    ----------
    tensor : numpy.ndarray
        Shape (e,), int64: the tensor index of each edge whose index is valid
        (0 <= index < number of tensors); -1 (omitted optional) and out-of-range ones dropped.
    op : numpy.ndarray
        Shape (e,), int64: ``Operator.index`` of the operator each edge belongs to.
    """

    tensor: np.ndarray
    op: np.ndarray


def edges(subgraph: Subgraph, side: str) -> Edges:
    """The valid ``side`` edges ("inputs" or "outputs") of every operator, in execution order."""
    ops = subgraph.operators
    get = attrgetter(side)
    lens = np.fromiter(map(len, map(get, ops)), _IDX, len(ops))
    flat = np.fromiter(chain.from_iterable(map(get, ops)), _IDX, int(lens.sum()))
    op_index = np.fromiter((op.index for op in ops), _IDX, len(ops))
    owner = np.repeat(op_index, lens)
    keep = (flat >= 0) & (flat < len(subgraph.tensors))
    return Edges(flat[keep], owner[keep])


def mask(n: int, indices) -> np.ndarray:
    """Boolean array of shape (n,), True at ``indices`` (an iterable of ints in 0..n-1)."""
    m = np.zeros(n, dtype=bool)
    idx = np.fromiter(indices, _IDX)
    m[idx] = True
    return m


def first_writer(n_t: int, out: Edges) -> np.ndarray:
    """Shape (n_t,), int64: the first operator (in execution order) listing each tensor as an
    output, -1 for none."""
    producer = np.full(n_t, -1, dtype=_IDX)
    first = first_occurrences(out.tensor)
    producer[out.tensor[first]] = out.op[first]
    return producer


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct value of ``keys`` (shape (n,)), in
    ascending key order: ``np.unique(keys, return_index=True)[1]`` without its first-call
    import of ``numpy.ma`` (see :func:`viewer.analysis.problem.unique_sorted`)."""
    order = np.argsort(keys, kind="stable")
    s = keys[order]
    keep = np.ones(len(s), dtype=bool)
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return order[keep]


def consumer_lists(n_t: int, inp: Edges) -> tuple[np.ndarray, list[int]]:
    """CSR of each tensor's distinct readers, ascending: ``(ptr, ops)`` with ``ptr`` of shape
    (n_t + 1,) and tensor ``t``'s readers ``ops[ptr[t]:ptr[t + 1]]`` (a Python list)."""
    order = np.lexsort((inp.op, inp.tensor))
    t, o = inp.tensor[order], inp.op[order]
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = (t[1:] != t[:-1]) | (o[1:] != o[:-1])
    t, o = t[keep], o[keep]
    ptr = np.zeros(n_t + 1, dtype=_IDX)
    np.cumsum(np.bincount(t, minlength=n_t), out=ptr[1:])
    return ptr, o.tolist()


@contextmanager
def no_gc():
    """Pause the cyclic garbage collector while many acyclic records are built.

    Building 100k frozen dataclasses triggers generation-2 collections that walk every object
    alive (the model's 100k tensors and operators among them): about a third of
    :func:`analyze`'s time at 100k operators. The records hold no cycles, so nothing is lost.
    The previous state is restored on exit: a process that keeps automatic collection off (the
    window collects on its GUI thread only, :mod:`viewer.ui.gc_guard`) keeps it off.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class LazyTuple(Sequence):
    """A tuple of ``length`` items that ``build()`` makes on first use (with the collector
    paused), then kept.

    For :attr:`viewer.analysis.types.Analysis.alloc_queue`: only the ``litert`` planner reads
    it, and building its 100k Buffers costs a sixth of :func:`analyze` at 100k operators (the
    measured footprint analyses twice and plans once). It compares equal to the tuple it
    stands for, and pickles as that tuple.
    """

    __slots__ = ("_build", "_value", "_length")

    def __init__(self, length: int, build) -> None:
        self._build, self._value, self._length = build, None, int(length)

    def _get(self) -> tuple:
        if self._value is None:
            with no_gc():
                self._value = tuple(self._build())
            self._build = None
        return self._value

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, i):
        return self._get()[i]

    def __iter__(self):
        return iter(self._get())

    def __eq__(self, other) -> bool:
        return self._get() == (other._get() if isinstance(other, LazyTuple) else other)

    def __hash__(self) -> int:
        return hash(self._get())

    def __reduce__(self):
        return (tuple, (self._get(),))

    def __repr__(self) -> str:
        return repr(self._get())
