"""A MiniMalloc-style exact search for the decision problem "does the tensor arena fit in C bytes?".

Follows Moffitt, "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated Machine
Learning" (ASPLOS 2023) and its reference implementation google/minimalloc (``src/sweeper.cc``,
``src/solver.cc``), re-implemented in Python + numpy:

- a sweep over usage intervals (:mod:`viewer.planning._mm_sweep`) builds *sections* (sets of buffers live together, one per
  distinct end time), *partitions* (runs of time where some buffer is always live) and the
  pairwise overlaps;
- a depth-first search (:mod:`viewer.planning._mm_search`) places one buffer at a time at its lowest feasible offset, restricted
  to *canonical* solutions (offsets non-decreasing along the search, ties broken by a static
  preorder), with *section inference* (a section's floor plus its unplaced bytes must fit),
  *unallocated floors*, *dominance* (no placement above the lowest top of any unplaced buffer),
  *hatless* pruning, and *dynamic decomposition* at time cut-lines no unplaced buffer crosses;
- static preorders (MiniMalloc's ``WAT``, ``TAW``, ``TWA`` of width, area, section total; also
  ``CAT``, ``TAC``, ``TCA`` with the width counted in sections) each drive one complete search;
  :class:`Decision` runs them in equal time turns and suspends each between turns, where
  ``Solver::RoundRobin`` restarts each with a doubled node limit; given a worker pool
  (:mod:`viewer.planning._mm_workers`) it runs every preorder but the first in its own process,
  all at the same time.

This module holds the turns (:class:`Decision`, :func:`decide`) and re-exports the names of the
other two.

Nothing here imports Qt or any other planner; :mod:`viewer.planning.optimal` drives it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

import numpy as np

from viewer.planning._mm_search import (  # noqa: F401  (re-exported: the search's public names)
    ABORTED, CANCELLED, FEASIBLE, INFEASIBLE, TIMEOUT, SearchParams, SearchResult, _Solver, _Stop)
from viewer.planning._mm_sweep import Sweep, sweep  # noqa: F401  (re-exported)


class _Runner:
    """One preorder's depth-first search in its own thread, run in turns like a coroutine.

    Only one thread of a :class:`Decision` runs at a time: the caller's thread hands a turn
    (until a given time) to the search and waits until the search pauses at a checkpoint
    (every 64 nodes) or finishes. A paused search keeps its whole state, so a
    later turn resumes it where it stopped instead of starting again.
    """

    def __init__(self, solver: _Solver):
        self.solver = solver
        solver.runner = self
        self.status: str | None = None
        self.error: BaseException | None = None
        self._resume = threading.Event()
        self._paused = threading.Event()
        self._abort = False
        self._thread: threading.Thread | None = None
        self._turn_end = 0.0

    def step(self, turn_end: float) -> str | None:
        """Run until ``turn_end`` (``time.monotonic()``); the final status, or None while
        the search is unfinished."""
        if self.status is not None:
            return self.status
        self._turn_end = turn_end
        self._paused.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, daemon=True,
                                            name=f"minimalloc-{self.solver.heuristic}")
            self._thread.start()
        else:
            self._resume.set()
        self._paused.wait()
        if self.error is not None:
            raise self.error
        return self.status

    def checkpoint(self) -> None:
        """In the search thread: pause when the turn is used up."""
        if time.monotonic() > self._turn_end:
            self._paused.set()
            self._resume.wait()
            self._resume.clear()
            if self._abort:
                raise _Stop(ABORTED)

    def _main(self) -> None:
        try:
            st = self.solver.solve()
        except _Stop as s:
            st = s.status
        except BaseException as e:  # handed to the caller's thread by step()
            self.error, st = e, ABORTED
        self.status = st
        self._paused.set()

    def close(self) -> None:
        """End a paused search (its thread unwinds and exits)."""
        if self._thread is not None and self.status is None:
            self._abort = True
            self._paused.clear()
            self._resume.set()
            self._paused.wait()
        if self._thread is not None:
            self._thread.join()


def _raise_recursion_limit(n: int) -> None:
    # Each placement is one nested search (and a decomposition one more). The limit is never
    # lowered again: a suspended search elsewhere may still be deep.
    if sys.getrecursionlimit() < 8 * n + 2000:
        sys.setrecursionlimit(8 * n + 2000)


class Decision:
    """A resumable decision search: "does the arena fit in ``capacity`` bytes?".

    One complete depth-first search per static preorder of ``params.preordering_heuristics``,
    run in equal turns of ``quantum`` seconds; the first to finish answers (every one of them is
    complete, so a proof of infeasibility by one is a proof). MiniMalloc's
    ``Solver::RoundRobin`` restarts each preorder with a doubled node limit; here a preorder's
    search is suspended between turns and resumed, so no node is searched twice, and a
    :meth:`run` that ends at its deadline can be continued by a later :meth:`run`.

    Call :meth:`close` when done with it (it ends the searches' threads); it is also a
    context manager.

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals ``[start, end)`` (time steps).
    size : ndarray of int, shape (n,)
        Bytes, all > 0.
    capacity : int
        Arena bytes to fit in.
    alignment : int
        Every offset is a multiple of it.
    params : SearchParams, optional
        Ingredients (default all).
    sw : Sweep, optional
        ``sweep(start, end)``, when the caller has it.
    """

    def __init__(self, start, end, size, capacity: int, alignment: int = 1, *,
                 params: SearchParams | None = None, sw: Sweep | None = None,
                 quantum: float = 0.01, pool=None):
        self.params = params or SearchParams()
        self.start = np.asarray(start, np.int64)
        self.end = np.asarray(end, np.int64)
        self.size = np.asarray(size, np.int64)
        self.capacity = int(capacity)
        self.alignment = max(int(alignment), 1)
        self.quantum = float(quantum)
        self.status: str | None = None
        self.offsets: np.ndarray | None = None
        self.heuristic = ""
        self.seconds = 0.0
        n = len(self.size)
        self._runners: dict[str, _Runner] = {}
        self.pool = pool  # a _mm_workers.WorkerPool, or None: every preorder in turns here
        self._remote: dict[str, object] = {}  # preorder -> the worker searching it
        self._remote_nodes: dict[str, int] = {}
        self._dropped_nodes = 0  # nodes of local searches handed over to a worker
        if n == 0:
            self.status, self.offsets = FEASIBLE, np.zeros(0, np.int64)
            return
        if int(self.size.max()) > self.capacity:
            self.status = INFEASIBLE
            return
        self._sw = sw or sweep(self.start, self.end)
        heur = self.params.preordering_heuristics or ("",)
        if not self.params.static_preordering:
            heur = heur[:1]  # every preorder is the same one
        _raise_recursion_limit(n)
        self._heuristics = list(dict.fromkeys(heur))
        for h in self._heuristics:
            self._runners[h] = self._runner(h)

    def _runner(self, h: str) -> _Runner:
        return _Runner(_Solver(self.size, self.start, self.end, self._sw, self.capacity,
                               self.alignment, self.params, h))

    @property
    def nodes(self) -> int:
        """Nodes searched so far, over every preorder (a worker's as of its last answer)."""
        return (sum(r.solver.nodes for r in self._runners.values()) + self._dropped_nodes
                + sum(self._remote_nodes.values()))

    @property
    def backtracks(self) -> int:
        return sum(r.solver.backtracks for r in self._runners.values())

    def run(self, deadline: float | None = None, cancelled: Callable[[], bool] | None = None,
            on_turn: Callable[["Decision"], None] | None = None) -> str:
        """Search until an answer, ``deadline`` (``time.monotonic()``) or cancellation.

        Returns ``feasible`` (:attr:`offsets`, shape (n,), bytes), ``infeasible`` (proven),
        ``timeout`` (resumable by another call) or ``cancelled`` (``cancelled()`` returned
        True; also resumable). ``cancelled`` and ``on_turn`` are called in the caller's
        thread between turns (every ``quantum`` seconds). With a worker pool, preorders whose
        worker is ready search there at the same time (:mod:`viewer.planning._mm_workers`);
        every worker has stopped when this returns.
        """
        if self.status is not None:
            return self.status
        deadline = float("inf") if deadline is None else deadline
        t0 = time.monotonic()
        try:
            status = self._turns(deadline, cancelled, on_turn)
            if self._remote and self.status is None:
                for w, msg in self.pool.pause(self.capacity):
                    self._answer(w, msg)  # a worker may have answered meanwhile
            if self.status is not None:
                self.close()
                return self.status
            return status
        finally:
            self.seconds += time.monotonic() - t0

    def _turns(self, deadline, cancelled, on_turn) -> str:
        while True:
            self._hand_over(deadline)
            for h, r in list(self._runners.items()):
                if cancelled is not None and cancelled():
                    return CANCELLED
                st = r.step(min(time.monotonic() + self.quantum, deadline))
                if st in (FEASIBLE, INFEASIBLE):
                    self.status, self.heuristic = st, h
                    if st == FEASIBLE:
                        self.offsets = r.solver.solution.copy()
                    return st
                if on_turn is not None:
                    on_turn(self)
                if time.monotonic() > deadline:
                    return TIMEOUT
            if self._remote:
                wait = 0.0 if self._runners else min(self.quantum, max(deadline - time.monotonic(), 0))
                for w, msg in self.pool.poll(wait):
                    self._answer(w, msg)
                if self.status is not None:
                    return self.status
                if not self._runners:
                    if cancelled is not None and cancelled():
                        return CANCELLED
                    if on_turn is not None:
                        on_turn(self)
                    if time.monotonic() > deadline:
                        return TIMEOUT

    def _hand_over(self, deadline: float) -> None:
        """Move preorders to their workers once ready; (re)start idle workers' runs."""
        if self.pool is None:
            return
        for w in self.pool.ready():
            h = w.heuristic
            if h in self._runners and h != self._heuristics[0]:
                r = self._runners.pop(h)
                self._dropped_nodes += r.solver.nodes
                r.close()
                self._remote[h] = w
        left = deadline - time.monotonic()
        for w in self._remote.values():
            if w.busy_cap is None and not w.broken and left > 0:
                self.pool.start_run(w, self.capacity, min(left, 1e9))

    def _answer(self, w, msg) -> None:
        """Take a worker's answer (``None``: it failed, so its preorder runs here again)."""
        h = w.heuristic
        if msg is None or w.broken:
            if self._remote.pop(h, None) is not None and self.status is None:
                self._runners[h] = self._runner(h)
            return
        _, cap, st, nodes, offsets = msg
        if cap != self.capacity:
            return
        self._remote_nodes[h] = nodes
        if st in (FEASIBLE, INFEASIBLE) and self.status is None:
            self.status, self.heuristic = st, h
            if st == FEASIBLE:
                self.offsets = np.asarray(offsets, np.int64)

    def close(self) -> None:
        """End every suspended search, here and in workers (idempotent)."""
        for r in self._runners.values():
            r.close()
        if self._remote:
            self.pool.pause(self.capacity)
            self.pool.drop(self.capacity)
            self._remote = {}

    def __enter__(self) -> "Decision":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def decide(
    start: np.ndarray,
    end: np.ndarray,
    size: np.ndarray,
    capacity: int,
    alignment: int = 1,
    *,
    params: SearchParams | None = None,
    deadline: float | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_node: Callable | None = None,
    sw: Sweep | None = None,
) -> SearchResult:
    """Is there a placement of every buffer within ``capacity`` bytes?

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals ``[start, end)`` (time steps, e.g. operator indices).
    size : ndarray of int, shape (n,)
        Bytes, all > 0.
    capacity : int
        Arena bytes to fit in.
    alignment : int
        Every offset is a multiple of it.
    params : SearchParams
        Ingredients to use (default: all).
    deadline : float
        ``time.monotonic()`` value to give up at.
    cancelled : callable
        Polled between turns; True stops the search with status ``cancelled``.
    on_node : callable
        Called between turns with the :class:`Decision` (for progress).

    Returns
    -------
    SearchResult
        ``status`` is ``feasible`` (``offsets``: shape (n,), bytes), ``infeasible`` (proven),
        ``timeout`` or ``cancelled``.

    Notes
    -----
    Follows google/minimalloc src/solver.cc (``SolverImpl::SearchSolutions``,
    ``DynamicallyDecompose``; ``RoundRobin`` without its restarts, see :class:`Decision`).
    """
    with Decision(start, end, size, capacity, alignment, params=params, sw=sw) as d:
        status = d.run(deadline, cancelled, on_node)
        return SearchResult(status, d.offsets, nodes=d.nodes, backtracks=d.backtracks,
                            seconds=d.seconds, heuristic=d.heuristic)
