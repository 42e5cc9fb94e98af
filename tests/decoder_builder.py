"""A small decoder-shaped .tflite built in code: two signatures sharing KV caches.

``decoder(style)`` writes a model with the shape LiteRT's LLM deployments have (in miniature):
``prefill`` (subgraph 0, sequence length P) and ``decode`` (subgraph 1, sequence length 1), each
running ``layers`` attention blocks over a key and a value cache of ``context`` positions:

    q, k, v = FC(x)                                 [1, T, D]
    k_cache' = DYNAMIC_UPDATE_SLICE(k_cache, k, input_pos)   [1, C, D]   (same for v)
    scores = BATCH_MATMUL(q, k_cache', adj_y) + mask         [1, T, C]
    x' = x + FC(BATCH_MATMUL(SOFTMAX(scores), v_cache'))     [1, T, D]

The weights are stored once and shared by both signatures. Where the caches live (``style``):

- ``"resource"``: resource variables. Each signature reads a cache with ``VAR_HANDLE``
  (``shared_name`` ``k_cache_L`` / ``v_cache_L``) + ``READ_VARIABLE`` and writes the updated one
  with ``ASSIGN_VARIABLE``; a ``CALL_ONCE`` at the start of each signature runs an init
  subgraph (subgraph 2) that assigns zeros (``FILL``) to every cache, once per interpreter;
- ``"external"``: the caches are signature inputs (``k_cache_L``...) and the updated caches
  signature outputs of the same names: the application holds them (ai-edge-torch's export);
- ``"variable"``: the caches are ``is_variable`` tensors of each subgraph, updated in place by
  ``DYNAMIC_UPDATE_SLICE`` writing into the variable (each subgraph owns its own variables:
  the schema has no way to share a tensor between subgraphs).

Signature inputs: ``x`` [1, T, D] float32, ``input_pos`` [3] int32 (the update's start
indices, ``[0, pos, 0]``), ``mask`` [1, T, C] float32 (additive attention mask), plus the
caches in the external style.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

B = S.BuiltinOperator
STYLES = ("resource", "external", "variable")


class _Graph:
    """One subgraph under construction (tensors and operators of the object API)."""

    def __init__(self, model: "_Model", name: str):
        self.m, self.g = model, S.SubGraphT()
        self.g.name, self.g.tensors, self.g.operators = name, [], []
        self.g.inputs, self.g.outputs = [], []

    def tensor(self, name, shape, ttype=S.TensorType.FLOAT32, buffer=0, variable=False) -> int:
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer, t.isVariable = name, list(shape), ttype, buffer, variable
        self.g.tensors.append(t)
        return len(self.g.tensors) - 1

    def const(self, name, array: np.ndarray, key=None) -> int:
        ttype = {np.float32: S.TensorType.FLOAT32, np.int32: S.TensorType.INT32}[array.dtype.type]
        return self.tensor(name, array.shape, ttype, self.m.buffer(array, key))

    def op(self, code, inputs, outputs, opt_type=0, options=None) -> None:
        o = S.OperatorT()
        o.opcodeIndex = self.m.opcode(code)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options is not None:
            o.builtinOptionsType, o.builtinOptions = opt_type, options
        self.g.operators.append(o)


class _Model:
    def __init__(self):
        self.codes: list[int] = []
        self.buffers = [S.BufferT()]
        self.by_key: dict = {}

    def opcode(self, code: int) -> int:
        if code not in self.codes:
            self.codes.append(code)
        return self.codes.index(code)

    def buffer(self, array: np.ndarray, key=None) -> int:
        """A buffer for ``array``; the same ``key`` returns the same buffer (shared weights)."""
        if key is not None and key in self.by_key:
            return self.by_key[key]
        b = S.BufferT()
        b.data = np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=np.uint8).copy()
        self.buffers.append(b)
        if key is not None:
            self.by_key[key] = len(self.buffers) - 1
        return len(self.buffers) - 1


def _fc_options():
    o = S.FullyConnectedOptionsT()
    o.keepNumDims = True
    return o


def _bmm_options(adj_y: bool):
    o = S.BatchMatMulOptionsT()
    o.adjY = adj_y
    return o


def _var_handle(g: _Graph, name: str) -> int:
    h = g.tensor(f"{name}/handle", [], S.TensorType.RESOURCE)
    o = S.VarHandleOptionsT()
    o.sharedName = name
    g.op(B.VAR_HANDLE, [], [h], S.BuiltinOptions.VarHandleOptions, o)
    return h


def _signature(key: str, index: int, inputs: dict, outputs: dict):
    def tmap(name, i):
        m = S.TensorMapT()
        m.name, m.tensorIndex = name, i
        return m

    s = S.SignatureDefT()
    s.signatureKey, s.subgraphIndex = key, index
    s.inputs = [tmap(k, i) for k, i in inputs.items()]
    s.outputs = [tmap(k, i) for k, i in outputs.items()]
    return s


def _attention_graph(m: _Model, key: str, style: str, t_len: int, layers: int, d: int, c: int,
                     weights: list, init_index: int | None):
    """The ``key`` signature's subgraph: ``layers`` blocks at sequence length ``t_len``."""
    g = _Graph(m, key)
    x = g.tensor("x", [1, t_len, d])
    pos = g.tensor("input_pos", [3], S.TensorType.INT32)
    mask = g.tensor("mask", [1, t_len, c])
    ins = {"x": x, "input_pos": pos, "mask": mask}
    outs: dict = {}
    if style == "resource" and init_index is not None:
        o = S.CallOnceOptionsT()
        o.initSubgraphIndex = init_index
        g.op(B.CALL_ONCE, [], [], S.BuiltinOptions.CallOnceOptions, o)
    cur = x
    for layer in range(layers):
        w = [g.const(f"l{layer}/w{n}", weights[layer][n], key=(layer, n)) for n in "qkvo"]
        q, k, v = (g.tensor(f"l{layer}/{n}", [1, t_len, d]) for n in "qkv")
        for wi, out in zip(w[:3], (q, k, v)):
            g.op(B.FULLY_CONNECTED, [cur, wi, -1], [out], S.BuiltinOptions.FullyConnectedOptions,
                 _fc_options())
        caches = []
        for name, new in ((f"k_cache_{layer}", k), (f"v_cache_{layer}", v)):
            if style == "resource":
                h = _var_handle(g, name)
                old = g.tensor(f"{name}/read", [1, c, d])
                g.op(B.READ_VARIABLE, [h], [old])
                upd = g.tensor(f"{name}/updated", [1, c, d])
                g.op(B.DYNAMIC_UPDATE_SLICE, [old, new, pos], [upd])
                g.op(B.ASSIGN_VARIABLE, [h, upd], [])
            elif style == "external":
                old = g.tensor(f"{name}/in", [1, c, d])
                upd = g.tensor(f"{name}/out", [1, c, d])
                g.op(B.DYNAMIC_UPDATE_SLICE, [old, new, pos], [upd])
                ins[name], outs[name] = old, upd
            else:  # is_variable, written in place
                upd = old = g.tensor(name, [1, c, d], variable=True)
                g.op(B.DYNAMIC_UPDATE_SLICE, [old, new, pos], [upd])
            caches.append(upd)
        scores = g.tensor(f"l{layer}/scores", [1, t_len, c])
        g.op(B.BATCH_MATMUL, [q, caches[0]], [scores], S.BuiltinOptions.BatchMatMulOptions,
             _bmm_options(True))
        masked = g.tensor(f"l{layer}/masked", [1, t_len, c])
        g.op(B.ADD, [scores, mask], [masked])
        probs = g.tensor(f"l{layer}/probs", [1, t_len, c])
        so = S.SoftmaxOptionsT()
        so.beta = 1.0
        g.op(B.SOFTMAX, [masked], [probs], S.BuiltinOptions.SoftmaxOptions, so)
        att = g.tensor(f"l{layer}/attention", [1, t_len, d])
        g.op(B.BATCH_MATMUL, [probs, caches[1]], [att], S.BuiltinOptions.BatchMatMulOptions,
             _bmm_options(False))
        proj = g.tensor(f"l{layer}/proj", [1, t_len, d])
        g.op(B.FULLY_CONNECTED, [att, w[3], -1], [proj], S.BuiltinOptions.FullyConnectedOptions,
             _fc_options())
        nxt = g.tensor(f"l{layer}/out", [1, t_len, d])
        g.op(B.ADD, [cur, proj], [nxt])
        cur = nxt
    outs = {"y": cur, **outs}
    g.g.inputs, g.g.outputs = list(ins.values()), list(outs.values())
    return g, ins, outs


def _init_graph(m: _Model, layers: int, d: int, c: int) -> _Graph:
    """CALL_ONCE's subgraph: ASSIGN_VARIABLE(FILL(dims, 0.0)) for every cache."""
    g = _Graph(m, "init_caches")
    dims = g.const("cache_dims", np.array([1, c, d], np.int32))
    zero = g.const("zero", np.array(0.0, np.float32))
    zeros = g.tensor("zeros", [1, c, d])
    g.op(B.FILL, [dims, zero], [zeros])
    for layer in range(layers):
        for name in (f"k_cache_{layer}", f"v_cache_{layer}"):
            g.op(B.ASSIGN_VARIABLE, [_var_handle(g, name), zeros], [])
    return g


def decoder(style: str = "resource", *, layers: int = 2, hidden: int = 16, context: int = 64,
            prefill: int = 8, seed: int = 0) -> bytes:
    """The .tflite bytes of the decoder (see the module docstring).

    Parameters
    ----------
    style : {"resource", "external", "variable"}
        Where the KV caches live.
    layers, hidden, context, prefill : int
        Attention blocks, D, C (cache positions) and P (prefill's sequence length).
    seed : int
        Of the random weights.

    Returns
    -------
    bytes
        Subgraph 0 ``prefill``, 1 ``decode``, 2 ``init_caches`` (resource style only). Each
        cache is ``1 * context * hidden * 4`` bytes (float32); there are ``2 * layers``.
    """
    if style not in STYLES:
        raise ValueError(f"style {style!r}: one of {STYLES}")
    rng = np.random.default_rng(seed)
    weights = [{n: (rng.standard_normal((hidden, hidden)) / hidden).astype(np.float32)
                for n in "qkvo"} for _ in range(layers)]
    m = _Model()
    init = 2 if style == "resource" else None
    graphs, sigs = [], []
    for index, (key, t_len) in enumerate((("prefill", prefill), ("decode", 1))):
        g, ins, outs = _attention_graph(m, key, style, t_len, layers, hidden, context, weights, init)
        graphs.append(g)
        sigs.append(_signature(key, index, ins, outs))
    if style == "resource":
        graphs.append(_init_graph(m, layers, hidden, context))
    model = S.ModelT()
    model.version, model.description = 3, f"decoder ({style} KV caches)"
    codes = []
    for code in m.codes:
        oc = S.OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
        codes.append(oc)
    model.operatorCodes, model.buffers = codes, m.buffers
    model.subgraphs, model.signatureDefs = [g.g for g in graphs], sigs
    b = flatbuffers.Builder(4096)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def cache_bytes(*, layers: int = 2, hidden: int = 16, context: int = 64) -> int:
    """Bytes of all the KV caches: ``2 * layers`` float32 tensors of ``[1, context, hidden]``."""
    return 2 * layers * context * hidden * 4
