"""What a deployment that allocates several signatures holds at once, KV caches included.

An LLM deployment builds one interpreter and allocates the runners of all the signatures it
calls (``prefill``, ``decode``...). LiteRT gives each signature's subgraph its own
``ArenaPlanner`` (tflite/core/subgraph.cc), so **their arenas are resident together**; the
caches kept between calls live where their form puts them (:mod:`viewer.analysis.kv_cache`):

- resource variables: one storage per ``shared_name`` for the whole interpreter, ``malloc``-ed
  by the first ``ASSIGN_VARIABLE`` during ``Invoke`` (resource_variable.cc ``AssignFrom``),
  outside every arena: counted **once**, whatever the number of signatures using it; each
  ``READ_VARIABLE`` also copies a cache into its own (arena) output while it runs;
- variable tensors: each subgraph's own, in its persistent arena (never shared);
- external caches (signature inputs/outputs): the application holds one copy between calls;
  each signature's arena holds its own input and output copies as well (in its arena term).

:func:`deployment` adds these up from one LiteRT run (:func:`viewer.runtime.signatures.
measure_signatures`), or plans them when the runtime is not run, and says what it cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from viewer.analysis.kv_cache import STYLE_EXTERNAL, STYLE_RESOURCE, STYLE_VARIABLE, KVCache, find_kv_caches
from viewer.model.types import Model
from viewer.whatif.footprint import (SOURCE_ESTIMATED, SOURCE_MEASURED, SOURCE_PLANNED, SOURCE_UNKNOWN, Term,
                                     footprint)

KV_TERM = "KV cache"
#: Endings of the names of terms held only while something runs (not in the heap afterwards).
_TRANSIENT = ("first invoke only)", "while its caller runs)")


@dataclass(frozen=True)
class Deployment:
    """The memory of one interpreter with ``keys`` allocated (bytes).

    Attributes
    ----------
    keys : tuple of str
        Signatures allocated, in order.
    subgraphs : dict
        Key -> subgraph index.
    arenas : dict
        Key -> arena bytes of that signature's subgraph (measured, or planned).
    terms : tuple of Term
        One per signature arena, then persistent and heap tensors, resident arenas of other
        subgraphs, the KV caches (one term per form), the runtime overhead (measured: heap
        growth less the other terms).
    caches : tuple of KVCache
    kv_bytes : int
        One copy of every cache (all forms).
    unknowns : tuple of str
        What could not be told (the sum is then a lower bound).
    notes : tuple of str
    resident_together : bool or None
        The signatures' arenas were measured at disjoint addresses after all were allocated
        (None: not measured).
    measured : bool
    probe : object
        The :class:`viewer.runtime.signatures.DeploymentProbe`, when measured.
    """

    keys: tuple[str, ...]
    subgraphs: dict
    arenas: dict
    terms: tuple[Term, ...]
    caches: tuple[KVCache, ...]
    kv_bytes: int
    unknowns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    resident_together: bool | None = None
    measured: bool = False
    probe: object = field(default=None, compare=False, repr=False)

    def _copies(self, key: str) -> int | None:
        if self.probe is None:
            return None
        return cache_copies_in_arena(self.probe.subgraph(self.subgraphs[key]))

    def as_dict(self) -> dict:
        return {
            "signatures": [{"key": k, "subgraph": self.subgraphs[k], "arena_bytes": self.arenas[k],
                            "kv_cache_tensors_in_arena_bytes": self._copies(k)} for k in self.keys],
            "kv_caches": [{"name": c.name, "style": c.style, "shape": list(c.shape), "dtype": c.dtype,
                           "bytes": c.nbytes, "subgraphs": list(c.subgraphs)} for c in self.caches],
            "kv_cache_bytes": self.kv_bytes,
            "arenas_resident_together": self.resident_together,
            "terms": [t.as_dict() for t in self.terms],
            "unknowns": list(self.unknowns), "notes": list(self.notes), "measured": self.measured,
        }


def _names(caches, limit: int = 3) -> str:
    names = [c.name for c in caches]
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _kv_terms(caches, probe, keys, subgraphs) -> tuple[list[Term], list[str]]:
    """One term per cache form (bytes of one copy each), and the unknowns they leave."""
    terms, unknowns = [], []
    def users(cs) -> list[str]:
        return [k for k in keys if any(subgraphs[k] in c.subgraphs for c in cs)]

    res = [c for c in caches if c.style == STYLE_RESOURCE]
    if res:
        n = sum(c.nbytes for c in res)
        method = (f"{len(res)} resource variable(s) ({_names(res)}): bytes of each shared_name's "
                  f"assigned value, counted once for signature(s) {', '.join(users(res)) or 'none'} "
                  "(one resource map per interpreter: var_handle.cc); the storage is malloc-ed by "
                  "the first ASSIGN_VARIABLE during Invoke (resource_variable.cc AssignFrom), "
                  "outside every arena")
        grown = _first_invoke_growth(probe, keys)
        if grown is not None:
            method += f"; LiteRT's heap grew by {grown:,d} B over the first invoke"
            if grown < n:
                unknowns.append(f"{KV_TERM}: the heap grew by {grown:,d} B over the first invoke, "
                                f"less than the caches' {n:,d} B: where they live cannot be told")
        unsized = [c.name for c in res if not c.nbytes]
        if unsized:
            unknowns.append(f"{KV_TERM}: resource variable(s) {', '.join(unsized[:3])} have no shape in "
                            "the file; their storage is sized by the first ASSIGN_VARIABLE at run time")
        terms.append(Term(f"{KV_TERM} (resource variables, shared)", n, SOURCE_ESTIMATED, method))
    var = [c for c in caches if c.style == STYLE_VARIABLE]
    if var:
        src = SOURCE_MEASURED if probe is not None else SOURCE_PLANNED
        terms.append(Term(f"{KV_TERM} (variable tensors, one set per subgraph)", sum(c.nbytes for c in var),
                          src, f"{len(var)} is_variable tensor(s) ({_names(var)}) in their subgraph's "
                          "persistent arena (kTfLiteArenaRwPersistent); a subgraph never shares them"))
    ext = [c for c in caches if c.style == STYLE_EXTERNAL]
    if ext:
        terms.append(Term(f"{KV_TERM} (held by the application)", sum(c.nbytes for c in ext),
                          SOURCE_ESTIMATED,
                          f"{len(ext)} signature input/output pair(s) ({_names(ext)}): one copy of each, "
                          "kept by the application between calls (outside LiteRT); each signature's "
                          f"arena holds its own input and output copies too (in its arena term: "
                          f"{', '.join(users(ext))})"))
    return terms, unknowns


def _first_invoke_growth(probe, keys) -> int | None:
    if probe is None or not keys:
        return None
    before = probe.heap_at(f"allocate {keys[-1]}")
    after = probe.heap_at(f"invoke {keys[0]} #1")
    return None if before is None or after is None else int(after - before)


def _measured_terms(model: Model, probe, keys, caches) -> tuple[list[Term], dict, list[str], list[str]]:
    terms, arenas, unknowns, notes = [], {}, [], []
    for k in keys:
        s = probe.subgraph(probe.signature_subgraphs[k])
        arenas[k] = s.arena_bytes
        copies = cache_copies_in_arena(s)
        terms.append(Term(f"arena of signature '{k}' (subgraph {s.subgraph})", s.arena_bytes, SOURCE_MEASURED,
                          "LiteRT's arena (extent of its kTfLiteArenaRw tensors, kernel temporaries "
                          "included) with every listed signature allocated and invoked"
                          + (f"; of which KV-cache tensors (READ_VARIABLE copies, cache inputs/outputs) "
                             f"at distinct addresses: {copies:,d} B" if copies else "")))
    var_bytes = sum(c.nbytes for c in caches if c.style == STYLE_VARIABLE)
    persistent = sum(s.persistent_bytes for s in probe.subgraphs) - var_bytes
    heap_tensors = sum(s.persistent_ro_bytes + s.dynamic_bytes for s in probe.subgraphs)
    terms.append(Term("persistent (all subgraphs)", max(0, persistent), SOURCE_MEASURED,
                      "kTfLiteArenaRwPersistent tensors of every subgraph (resource handles, "
                      "prepare-time outputs), variable-tensor caches excepted"))
    if heap_tensors:
        terms.append(Term("heap tensors (all subgraphs)", heap_tensors, SOURCE_MEASURED,
                          "kTfLitePersistentRo and kTfLiteDynamic tensors holding data after the invokes"))
    used = {probe.signature_subgraphs[k] for k in keys}
    for s in probe.subgraphs:
        if s.subgraph not in used and s.arena_bytes:
            terms.append(Term(f"subgraph {s.subgraph} arena (resident)", s.arena_bytes, SOURCE_MEASURED,
                              "LiteRT's arena of a subgraph no listed signature runs, still resident"))
    reached = _reached(model, used)
    for s in probe.subgraphs:
        if s.subgraph in reached and s.subgraph not in used and not s.arena_bytes:
            planned = int(footprint(model, s.subgraph, None, planner="litert", measure=False).arena_bytes)
            how = reached[s.subgraph]
            once = "CALL_ONCE" in how
            terms.append(Term(f"subgraph {s.subgraph} arena ({how}, " + ("first invoke only)" if once else
                                                                          "while its caller runs)"),
                              planned, SOURCE_PLANNED,
                              "planner litert over its tensors (kernel temporaries not included): "
                              + ("CALL_ONCE allocates it, runs it and releases it during the first invoke "
                                 "(call_once.cc ReleaseNonPersistentMemory)" if once else
                                 "its caller's kernel allocates it while it runs")
                              + "; measured: none resident after the invokes, so it counts toward "
                              "the peak beside the terms above"))
            if not once:
                unknowns.append(f"kernel temporaries of subgraph {s.subgraph} ({how}): not measured")
    released = [s.subgraph for s in probe.subgraphs
                if s.subgraph not in used and s.subgraph not in reached and not s.arena_bytes]
    if released:
        notes.append(f"subgraph(s) {', '.join(map(str, released))}: run by no listed signature, no arena")
    return terms, arenas, unknowns, notes



def cache_copies_in_arena(s) -> int:
    """Bytes of the watched (KV-cache) tensors of subgraph memory ``s`` that LiteRT placed in its
    arena, each address counted once (in-place DYNAMIC_UPDATE_SLICE shares its input's bytes).
    They share the arena over time with everything else: this is no extra term."""
    seen: dict[int, int] = {}
    for _, where, nbytes, addr in s.watched:
        if where == "arena-rw" and addr:
            seen[addr] = max(seen.get(addr, 0), nbytes)
    return sum(seen.values())


def _reached(model: Model, entries) -> dict[int, str]:
    """Subgraphs reached from the entry subgraphs through control flow -> how (first found)."""
    from viewer.whatif.footprint import reachable_subgraphs

    out: dict[int, str] = {}
    for g in sorted(entries):
        for idx, how in reachable_subgraphs(model, g):
            out.setdefault(idx, how)
    return out

def _planned_terms(model: Model, keys, subgraphs) -> tuple[list[Term], dict, list[str]]:
    terms, arenas = [], {}
    for k in keys:
        fp = footprint(model, subgraphs[k], None, planner="litert", measure=False)
        arenas[k] = int(fp.arena_bytes)
        terms.append(Term(f"arena of signature '{k}' (subgraph {subgraphs[k]})", arenas[k], SOURCE_PLANNED,
                          "planner litert over the model's tensors (kernel temporaries not included)"))
    return terms, arenas, ["kernel temporaries, persistent tensors and the runtime overhead: not measured "
                           "(planned only, LiteRT not run)"]


def deployment(model: Model, keys=None, *, measure: bool = True, timeout: float = 120.0,
               model_path: str | None = None) -> Deployment:
    """The memory of one interpreter with the signatures ``keys`` (all by default) allocated.

    Parameters
    ----------
    model : Model
    keys : sequence of str, optional
        Signature keys, in the order the application allocates and calls them.
    measure : bool
        Run LiteRT (one process: :func:`viewer.runtime.signatures.measure_signatures`); else
        plan each signature's arena over its tensors (kernel temporaries not included).
    timeout : float
        Seconds for the LiteRT process.
    model_path : str, optional
        The file LiteRT runs (default ``model.path``; a what-if's written copy).

    Returns
    -------
    Deployment

    Raises
    ------
    viewer.errors.SubgraphError
        A key names no signature, or the model has none.
    """
    from viewer.errors import SubgraphError

    sigs = {s.key: int(s.subgraph_index) for s in model.signatures}
    if not sigs:
        raise SubgraphError(f"{model.path}: the model has no signatures (--signatures needs them; check it without --signatures)")
    keys = tuple(sigs) if keys is None else tuple(keys)
    for k in keys:
        if k not in sigs:
            raise SubgraphError(f"{model.path}: no signature {k!r}; the signatures are "
                                + ", ".join(f"'{s}' (subgraph {i})" for s, i in sigs.items()))
    subgraphs = {k: sigs[k] for k in keys}
    caches = find_kv_caches(model)
    probe, unknowns, notes, resident = None, [], [], None
    if measure:
        from viewer.runtime.signatures import measure_signatures

        watch: dict = {}
        for c in caches:
            for g, t in c.tensors:
                watch.setdefault(g, []).append(t)
        probe = measure_signatures(model_path or model.path, keys, timeout=timeout, watch=watch)
        if not probe.ok:
            unknowns.append(f"the signatures' arenas (not measured: {probe.error})")
            probe = None
    if probe is not None:
        terms, arenas, more, notes = _measured_terms(model, probe, keys, caches)
        unknowns += more
        resident = not probe.arena_overlaps
    else:
        terms, arenas, more = _planned_terms(model, keys, subgraphs)
        unknowns += more if not unknowns else []
    kv, kv_unknowns = _kv_terms(caches, probe, keys, subgraphs)
    terms += kv
    unknowns += kv_unknowns
    if probe is not None:
        terms.append(_overhead(probe, terms))
    return Deployment(keys, subgraphs, arenas, tuple(terms), caches, sum(c.nbytes for c in caches),
                      tuple(unknowns), tuple(notes), resident, probe is not None, probe)


def _overhead(probe, terms) -> Term:
    """The interpreter's heap beyond the terms above (never negative)."""
    heap = probe.heap_final
    if heap is None:
        return Term("runtime overhead", 0, SOURCE_UNKNOWN, "the heap cannot be read (no glibc mallinfo2); 0 B counted")
    inside = sum(t.bytes for t in terms if "held by the application" not in t.name
                 and not t.name.endswith(_TRANSIENT))  # what the heap holds after the invokes
    method = (f"heap in use (glibc mallinfo2) after every signature ran minus before the interpreter "
              f"was built = {heap:,d} B, less the terms above (interpreter, kernel and resource state)")
    if heap < inside:
        method += "; the heap grew by less than those terms, so they count in full"
    return Term("runtime overhead", max(0, heap - inside), SOURCE_MEASURED, method)


def with_resource_caches(terms: list, model: Model, subgraph_index: int) -> list:
    """``check``'s terms for one subgraph with the resource-variable KV caches it touches added.

    Their storage is in no arena (resource_variable.cc ``AssignFrom`` mallocs it at the first
    ``ASSIGN_VARIABLE``), so the arena and persistent terms never hold it. The term is estimated
    from the assigned values' shapes (:mod:`viewer.analysis.kv_cache`), placed after the
    persistent term. A measured runtime overhead (process growth over one Invoke, which ran the
    assignment) already holds those bytes: it is lowered by them, never below 0, and says so.

    Parameters
    ----------
    terms : list of Term
        ``budget_terms``' result (tensor arena first, ``runtime overhead`` among them).
    model : Model
    subgraph_index : int

    Returns
    -------
    list of Term
        ``terms`` unchanged when the subgraph touches no resource variable.
    """
    import dataclasses

    from viewer.whatif.footprint import SOURCE_MEASURED as MEASURED

    caches = [c for c in find_kv_caches(model) if c.style == STYLE_RESOURCE and subgraph_index in c.subgraphs]
    if not caches:
        return terms
    n = sum(c.nbytes for c in caches)
    term = Term(f"{KV_TERM} (resource variables)", n, SOURCE_ESTIMATED,
                f"{len(caches)} resource variable(s) ({_names(caches)}): bytes of each shared_name's "
                "assigned value, malloc-ed by the first ASSIGN_VARIABLE (resource_variable.cc "
                "AssignFrom), in no arena; shared with every signature naming them "
                "(--signatures all counts them once for all)")
    out = []
    for t in terms:
        if t.name == "runtime overhead" and t.source == MEASURED:
            t = dataclasses.replace(t, bytes=max(0, int(t.bytes) - n),
                                    method=t.method + f"; less the KV cache's {n:,d} B counted on its own line")
        out.append(t)
    at = next((k + 1 for k, t in enumerate(out) if t.name.startswith("persistent")), 1)
    return out[:at] + [term] + out[at:]
