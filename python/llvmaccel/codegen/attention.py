"""Fused attention: ``softmax(f(Q @ K^T)) @ V`` without the score matrix.

``scaled_dot_product_attention`` reaches the graph decomposed (the torch
frontend's ATen decompositions), as does attention written out: a matmul of
the scores, elementwise ops on them (the scale, an additive or boolean mask,
a causal mask built from iotas), a softmax along the last axis (max,
``exp(x - max)``, sum, division; the decomposition's ``where`` that zeroes
rows whose every key is masked out) and a matmul by V. Unfused, that is a
matmul writing the ``[L, S]`` scores of every batch index and head to
memory, a row group reading them back, and a matmul reading the
probabilities once more. :func:`find_attention` recognizes the pattern in
the graph; :meth:`AttentionEmitter.emit_attention` emits one loop nest for
it that writes only the output, in one of two forms (:func:`attention_form`).

The one-pass form (``"rows"``)::

    for t in [0, batch * ceil(L / BQ)):       # (batch index, query block)
      rows = min(BQ, L - i0)                  # i0 = (t % blocks) * BQ
      sc[0:rows, 0:S] = Q[b, i0:i0+rows, :] @ K[b]^T   # mm_panels, own kernel
      for r in [0, rows):                     # the graph's own elementwise ops
        sc[r, j] = x(sc[r, j], mask...)       # scale, mask: emitted from the graph
        m = max_j sc[r, j]
        sc[r, j] = exp(sc[r, j] - m); den[r] = sum_j sc[r, j]
      O[b, i0:i0+rows, :] = sc[0:rows, :] @ V[b]       # mm_panels again
      O[b, i0+r, :] /= den[r]

The block's scores ``sc`` (a temporary of ``BQ x S`` per thread) stay in
the L2 cache between the three stages (:func:`query_block`: from the cache
size LLVM's TTI reports, :class:`llvmaccel.target.TargetInfo`). For long key
sequences, where such a block would have few rows (and the packed panels of
K and V would serve few rows), the online-softmax (flash attention) form
(``"online"``, :meth:`AttentionEmitter.emit_attention_online`) takes the keys
in blocks whose scores stay in L1, with a running maximum and sum per row
and the output block rescaled as the maximum grows. Both products are the
matmul emitter's register-tiled kernel (:meth:`MatmulEmitter.mm_panels`,
or :meth:`MatmulEmitter.mm_dot` for a tiny S or D, tiled by
:meth:`MatmulEmitter.mm_plan`). The elementwise stages are the graph's
nodes emitted by the elemental emitter with the scores (and then ``x`` and
the row maximum) taken from the block (``memo``), so the scale and masks are
whatever the graph says. The probabilities are normalized after the product
by V (a division of the ``L x D`` output, not of the ``L x S``
probabilities). Scalar factors of Q and K (the decomposition's ``q *
sqrt(scale)`` and ``k^T * sqrt(scale)``) are taken out of the operands: Q and
K are read in place, from the graph's inputs or from a contiguous buffer of
the node they are read through (a head sliced from a QKV projection, or its
f32 cast: K is read transposed from it, not copied transposed), and the
scores multiplied by the product of the factors.

On CPUs with AMX-BF16, when Q and K are f32 casts of bf16 heads (a bf16
model) and the query blocks and sizes are static ones the tiles take, the
one-pass form computes each block's scores on AMX tiles from the bf16 heads
(:func:`tile_sources`, :meth:`MatmulEmitter.mm_amx`): products of bf16
values are exact in f32, so only the order of the sums differs (and bf16
subnormals, read as zero). A bf16 TransformerEncoder on the Emerald Rapids
Xeon went from 3.22-3.31 to 3.08 ms (eager 3.29).

In a parallel kernel (:mod:`.parallel`) the outer loop is split between the
threads by (batch index, query block): every block is computed by one thread
with the operations of the serial kernel, so results are bit-identical for
every thread count.

Declined (the unfused path, recorded in :attr:`Kernel.attention` with the
reason): ``LLVMACCEL_FUSED_ATTENTION=off``; softmaxes of half-precision
scores (the explicit pattern on f16/bf16 tensors, whose matmuls round the
scores and the probabilities to the half type; PyTorch's sdpa decomposition
computes in f32 and is fused); operands other than f32 or f64; scores
returned or read by another op, or attention weights read by another op
(attention weights that are a result of the graph, as aot_autograd's
forward graphs save them for the backward, are written by the one-pass
form: ``exp(x - max) / sum`` per row of the block, before its product by
V; with the online form such an attention is not fused); a row
condition other than a function of row reductions of the softmax's operand;
Q or the probabilities read transposed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..graph import DType, Graph, Node, SymExpr, dim_eval, dim_str, shape_numel
from ..target import TargetInfo
from . import parallel
from .common import Buffer, _const
from .elementwise import ElementwiseEmitter, _reduce_identity, accumulator_dtype
from .matmul import (
    _MATMUL_NR_VECTORS,
    MatmulEmitter,
    _matmul_source,
    _matmul_tiling,
    matmul_operands,
)
from .matmul_amx import AMX_NR, amx_reason
from .matmul_bf16 import bf16_dot

__all__ = ["AttentionPlan", "AttentionEmitter", "enabled", "find_attention", "query_block"]

# Elementwise ops the score chain and the softmax's exponent may consist of.
_ELEMENTWISE = frozenset({"unary", "binary", "compare", "where", "cast"})
# The share of the L2 cache the block's scores may take (the panels of K
# and V and the block's output share the rest), and the most query rows a
# block has (beyond it the panels of K and V are reused enough).
_L2_SHARE = 2
_MAX_BLOCK_ROWS = 256
# When TTI reports no cache sizes (targets without getCacheSize): blocks
# sized for these.
_UNKNOWN_L2_BYTES = 1 << 18
_UNKNOWN_L1_BYTES = 1 << 15
# The online form: keys per block, the share of L1 its scores may take, and
# the fewest rows of a one-pass block below which the online form is used.
_ONLINE_KEYS = 64
_L1_SHARE = 2
_MIN_ROWS = 64


@dataclass
class AttentionPlan:
    """One recognized attention: the nodes the fused loop nest replaces.

    ``out`` is the matmul by V (its buffer is the only one written),
    ``scores`` the matmul of Q by K^T, ``score_view`` the node the softmax
    chain reads the scores as (``scores`` itself, or a reshape of it to
    ``x``'s shape), ``x`` the softmax's input, ``mx`` and ``den`` its max and
    sum reductions (keepdim, last axis), ``e`` its exponential, ``p`` the
    probabilities (``e / den``). ``inner``: ids of every node fused away.
    ``cond``: see below."""

    out: Node
    scores: Node
    score_view: Node
    x: Node
    mx: Node
    e: Node
    den: Node
    p: Node
    inner: set[int] = field(default_factory=set)
    # ``where(cond, 0, p)`` (or ``where(cond, p, 0)`` when not ``zero_if``):
    # rows whose condition, a function of row reductions of x (the
    # decomposition's "every key masked out": any(x != -inf)), zeroes them.
    cond: Node | None = None
    zero_if: bool = True
    row_reductions: list[Node] = field(default_factory=list)
    # Where the scores' matmul reads Q and K: (source node, read transposed,
    # the node whose leading dims index the batch). A scalar factor of an
    # operand (the decomposition's q * sqrt(scale), k^T * sqrt(scale)) is
    # taken out: the operand is read unscaled and the scores multiplied by
    # ``scale`` (the operands then need no buffers of their own).
    # Row values between the exponent and the maximum (see _row_chain).
    row_nodes: list[Node] = field(default_factory=list)
    q_operand: tuple[Node, bool, Node] | None = None
    k_operand: tuple[Node, bool, Node] | None = None
    scale: float = 1.0
    # The probabilities (``p``, or the row condition's ``where`` of it) when
    # they are a result of the graph too (aot_autograd's forward graphs
    # save them for the backward): the one-pass form writes them.
    saved: Node | None = None
    # The bf16 heads the scores are computed from on AMX tiles
    # (tile_sources; set by codegen.emit_graph, which knows the host).
    tiles: tuple[Node, Node] | None = None


def enabled() -> bool:
    """False when ``LLVMACCEL_FUSED_ATTENTION=off`` (every attention then
    takes the unfused path; part of the compiled-graph cache's key)."""
    return os.environ.get("LLVMACCEL_FUSED_ATTENTION", "").lower() != "off"


def _users(graph: Graph) -> dict[int, list[Node]]:
    users: dict[int, list[Node]] = {n.id: [] for n in graph.nodes}
    for n in graph.nodes:
        for i in n.inputs:
            users[i.id].append(n)
    return users


def _through_reshapes(x: Node) -> tuple[Node, list[Node]]:
    """``x`` without the reshapes that keep its last two dims, and those
    reshapes (outermost first)."""
    chain: list[Node] = []
    while x.op == "reshape" and x.inputs[0].rank >= 2 and \
            tuple(x.inputs[0].shape[-2:]) == tuple(x.shape[-2:]):
        chain.append(x)
        x = x.inputs[0]
    return x, chain


def _path(top: Node, bottom: set[int]) -> set[int] | None:
    """The ids of the nodes between ``top`` (included) and the ``bottom``
    ids (excluded) whose value depends on a bottom node; None when one of
    them is not an elementwise op of ``top``'s shape (the nodes that do not
    depend on the bottom, a mask, are emitted as they are)."""
    reach: dict[int, bool] = {}
    order: list[Node] = []
    stack = [top]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in bottom:
            continue
        seen.add(n.id)
        order.append(n)
        stack.extend(n.inputs)
    for n in sorted(order, key=lambda n: n.id):  # operands first
        reach[n.id] = any(i.id in bottom or reach.get(i.id, False) for i in n.inputs)
    path = {nid for nid, r in reach.items() if r}
    for n in order:
        if n.id in path and (n.op not in _ELEMENTWISE or tuple(n.shape) != tuple(top.shape)):
            return None
    return path


def _last_axis_reduce(n: Node, fn: str) -> bool:
    """A reduction ``fn`` over the last axis (keepdim or not: JAX's
    reductions drop the axis, a reshape puts it back)."""
    return n.op == "reduce" and n.attrs["fn"] == fn and \
        tuple(n.attrs["axes"]) == (n.inputs[0].rank - 1,)


def _row_shape(n: Node, x: Node) -> bool:
    """Whether ``n`` holds one value per row of ``x`` (its shape without
    the last dim, or with a last dim of 1)."""
    rows = tuple(x.shape[:-1])
    return tuple(n.shape) in (rows, rows + (1,))


def _same(a: object, b: object) -> bool:
    """Whether two sizes are equal for all values of their symbols: the same
    text, or (products of symbols in another order) equal at a few points."""
    if dim_str(a) == dim_str(b):  # type: ignore[arg-type]
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    names = sorted({*(a.symbols() if isinstance(a, SymExpr) else ()),
                    *(b.symbols() if isinstance(b, SymExpr) else ())})
    for k in range(3):
        env = {n: 7 + 13 * j + 101 * k for j, n in enumerate(names)}
        if dim_eval(a, env) != dim_eval(b, env):  # type: ignore[arg-type]
            return False
    return True


def find_attention(graph: Graph, target: TargetInfo
                   ) -> tuple[dict[int, AttentionPlan], list[tuple[int, str, str]]]:
    """The attentions of ``graph`` to fuse on ``target``, by the id of their
    product by V, and the choice made for every matmul by a softmax:
    ``(node id, "fused" or "unfused", reason)``."""
    users = _users(graph)
    outputs = {o.id for o in graph.outputs}
    plans: dict[int, AttentionPlan] = {}
    choices: list[tuple[int, str, str]] = []
    for o in graph.nodes:
        if o.op != "matmul":
            continue
        p, p_views = _through_reshapes(o.inputs[0])
        half = False
        # Half-precision probabilities: f32 casts of f16/bf16 roundings of them.
        while p.op == "cast" and (p.inputs[0].dtype.is_half or p.dtype.is_half):
            half, p = True, p.inputs[0]
            p, more = _through_reshapes(p)
            p_views += more
        select = None
        if p.op == "where":
            select = p
            zero_a, zero_b = (_is_zero(v) for v in p.inputs[1:])
            if zero_a == zero_b:
                continue
            p = p.inputs[2] if zero_a else p.inputs[1]
        if not (p.op == "binary" and p.attrs["fn"] == "div"):
            continue
        e, den = p.inputs
        den_views = []
        while den.op in ("broadcast", "reshape") and den.inputs[0].rank >= 1 and \
                _row_shape(den.inputs[0], e):
            den_views.append(den)
            den = den.inputs[0]
        if not (_last_axis_reduce(den, "sum") and den.inputs[0] is e):
            continue
        p_views += den_views
        # A softmax feeds this matmul: from here on every refusal is recorded.
        plan = _match(graph, target, o, p, p_views, e, den, half, users, outputs, select)
        if not enabled():
            plan = "LLVMACCEL_FUSED_ATTENTION=off"
        if isinstance(plan, str):
            choices.append((o.id, "unfused", plan))
        else:
            plans[o.id] = plan
            choices.append((o.id, "fused", plan_reason(plan, target)))
    # A node fused away by two plans (impossible by the users check) or a
    # plan's product read by another plan's inner nodes: keep it simple.
    return plans, choices


def _match(graph: Graph, target: TargetInfo, o: Node, p: Node, p_views: list[Node], e: Node,
           den: Node, half: bool, users: dict[int, list[Node]], outputs: set[int],
           select: Node | None) -> AttentionPlan | str:
    """The plan of the attention whose product by V is ``o``, or why not."""
    if half:
        return "half-precision attention (the unfused path rounds the scores)"
    # The row max: the one max reduction the exponent reads.
    seen: set[int] = set()
    stack, maxes = [e], []
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if _last_axis_reduce(n, "max"):
            maxes.append(n)
        elif n.op in _ELEMENTWISE or n.op in ("broadcast", "reshape"):
            stack.extend(n.inputs)
    if len(maxes) != 1:
        return "no single row maximum in the softmax"
    mx = maxes[0]
    x = mx.inputs[0]
    if tuple(x.shape) != tuple(e.shape) or x.rank < 2:
        return "softmax operand and exponent differ in shape"
    # The row values the exponent reads: the maximum, maybe through
    # elementwise ops of scalars and reshapes (JAX: maximum(-inf, max)
    # reshaped to [..., L, 1]).
    row_nodes = _row_chain(e, x, mx)
    if row_nodes is None:
        return "the exponent reads row values other than of the row maximum"
    # The scores: a matmul (maybe reshaped) that x is an elementwise function of.
    found: list[Node] = []
    stack, seen = [x], set()
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        base, _ = _through_reshapes(n)
        if base.op == "matmul" and tuple(n.shape) == tuple(x.shape):
            found.append(n)
        elif n.op in _ELEMENTWISE and tuple(n.shape) == tuple(x.shape):
            stack.extend(n.inputs)
    if len(found) != 1:
        return "the softmax does not read one product of Q and K"
    score_view = found[0]
    scores, s_views = _through_reshapes(score_view)
    for n in (o, scores, x, e, p):
        if n.dtype not in (DType.f32, DType.f64) or n.dtype is not o.dtype:
            return f"{n.dtype.value[0]} operands (fused: f32, f64)"
    length, keys = x.shape[-2], x.shape[-1]
    if not (_same(scores.shape[-2], length) and _same(scores.shape[-1], keys) and
            _same(o.shape[-2], length) and _same(o.inputs[0].shape[-1], keys)):
        return "scores, softmax and output do not agree in shape"
    nb = shape_numel(scores.shape[:-2])
    if not (_same(nb, shape_numel(x.shape[:-2])) and _same(nb, shape_numel(o.shape[:-2]))):
        return "batch dims of scores and output differ"
    x_path = _path(x, {score_view.id})
    row_ids = {n.id for n in row_nodes} | {mx.id}
    e_path = _path(e, {x.id} | row_ids)
    if x_path is None or e_path is None:
        return "the softmax's operand is not elementwise in the scores"
    if score_view.id in _path_ids(e, {x.id} | row_ids):
        return "the exponent reads the scores besides through the softmax's operand"
    (sq, ta), (sk, tb), dot2 = matmul_operands(scores, target)
    (pa, ta2), (vb, _), dot2b = matmul_operands(o, target)
    narrow = any(src.dtype is not mm.dtype for src, mm in
                 ((sq, scores), (sk, scores), (pa, o), (vb, o)))
    if ta or ta2 or dot2 or dot2b or narrow:
        return "Q or the probabilities are read transposed or as bf16"
    inner = {scores.id, *(v.id for v in s_views), *x_path, x.id, *row_ids, *e_path, e.id,
             den.id, p.id, *(v.id for v in p_views)}
    operands, scale = [], 1.0
    for operand, (src, tr) in zip(scores.inputs, ((sq, ta), (sk, tb)), strict=True):
        peeled = _unscaled(operand, scores, users)
        if peeled is not None and not (operand is scores.inputs[0] and peeled[1][1]):
            factor, (src, tr), node, ids = peeled
            scale *= factor
            inner |= ids
            operands.append((src, tr, node))
        else:
            operands.append((src, tr, operand))
    inner |= {n.id for n in graph.nodes if n.op == "broadcast" and n.inputs and
              n.inputs[0].id == den.id}
    cond, zero_if, reductions = None, True, []
    if select is not None:
        cond, zero_if = select.inputs[0], _is_zero(select.inputs[1])
        if tuple(cond.shape) != tuple(x.shape[:-1]) + (1,):
            return "the probabilities are selected by more than a row condition"
        below = _reductions(cond)
        if below is None:
            return "the row condition is not a function of row reductions"
        for red in below:
            if not (red.op == "reduce" and red.attrs["fn"] in ("any", "all", "max", "min")
                    and red.attrs["keepdim"] and
                    tuple(red.attrs["axes"]) == (red.inputs[0].rank - 1,) and
                    tuple(red.inputs[0].shape) == tuple(x.shape)):
                return "the row condition reduces other than over the keys"
            rpath = _path(red.inputs[0], {x.id})
            if red.inputs[0] is not x and not rpath:
                return "the row condition does not reduce the softmax's operand"
            if rpath is None or score_view.id in _path_ids(red.inputs[0], {x.id}):
                return "the row condition is not elementwise in the softmax's operand"
            inner |= rpath | {red.id}
            reductions.append(red)
        cpath = _path_ids(cond, {r.id for r in reductions})
        inner |= {select.id} | {n for n in cpath if graph.nodes[n].op != "scalar"}
    if vb.id in inner or pa.id not in inner:
        return "V is computed from the probabilities"
    probs = select if select is not None else p
    for nid in inner:
        if nid in outputs and nid != probs.id:
            return "the attention scores are a result of the graph"
        if any(u.id not in inner and u.id != o.id for u in users[nid]):
            return "the attention weights or scores are read by another op"
    plan = AttentionPlan(out=o, scores=scores, score_view=score_view, x=x, mx=mx, e=e, den=den,
                         p=p, inner=inner, cond=cond, zero_if=zero_if,
                         row_reductions=reductions, row_nodes=row_nodes,
                         q_operand=operands[0],
                         k_operand=operands[1], scale=scale)
    if probs.id in outputs:
        if attention_form(plan, target) != "rows":
            return "the attention weights are a result of the graph (written by the " \
                   "one-pass form only, and the keys are too many for it)"
        plan.saved = probs
    return plan


def _row_chain(e: Node, x: Node, mx: Node) -> list[Node] | None:
    """The nodes between the exponent ``e`` and the row maximum ``mx`` that
    hold a value per row (elementwise ops of it and scalars, reshapes and
    broadcasts of one row value), in graph order; None when the exponent
    reads a row value that is not a function of the maximum alone."""
    out: dict[int, Node] = {}
    stack, seen = [e], {x.id, mx.id}
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n is not e and _row_shape(n, x) and n.op != "scalar" and \
                x.id not in _path_ids(n, {mx.id}):
            if n.op not in _ELEMENTWISE and n.op not in ("reshape", "broadcast"):
                return None
            if any(i is not mx and i.op != "scalar" and not _row_shape(i, x)
                   for i in n.inputs):
                return None
            out[n.id] = n
        if n.op in _ELEMENTWISE or n.op in ("reshape", "broadcast"):
            stack.extend(n.inputs)
    for n in out.values():  # every row node's operands: row nodes, mx, scalars
        if any(i.id not in out and i is not mx and i.op != "scalar" for i in n.inputs):
            return None
    return sorted(out.values(), key=lambda n: n.id)


def _unscaled(operand: Node, scores: Node, users: dict[int, list[Node]]
              ) -> tuple[float, tuple[Node, bool], Node, set[int]] | None:
    """``(s, (source, transposed), x, ids)`` when the matmul operand
    ``operand`` is ``x * s`` (maybe reshaped in its batch dims) for a scalar
    ``s`` and an ``x`` read in place (maybe transposed) from ``source``: a
    graph input or constant, or a node that then gets a contiguous buffer
    of its own (codegen.emit_graph; a view is copied into one: ``k^T`` of a
    head sliced from a QKV projection, or of its f32 cast, reads the head's
    buffer transposed instead of a copy of the scaled, transposed K, which
    is strided by the projection's width), the product used by the scores'
    matmul alone (``ids``: the product and its reshapes, which need no
    buffer then)."""
    import numpy as np

    z, chain = _through_reshapes(operand)
    if not (z.op == "binary" and z.attrs["fn"] == "mul"):
        return None
    a, b = z.inputs
    if b.op != "scalar":
        a, b = b, a
    if b.op != "scalar" or a.op == "scalar" or a.dtype is not z.dtype:
        return None
    src, tr = _matmul_source(a)
    if src.op in ("scalar", "iota") or tuple(a.shape) != tuple(z.shape):
        return None
    path = [z, *reversed(chain)]  # each used only by the next, the last by the matmul
    for n, nxt in zip(path, [*path[1:], scores], strict=True):
        if [u.id for u in users[n.id]] != [nxt.id]:
            return None
    return float(np.float32(b.attrs["value"])), (src, tr), a, {n.id for n in path}


def _is_zero(x: Node) -> bool:
    """Whether ``x`` is the scalar 0 (maybe broadcast)."""
    while x.op == "broadcast":
        x = x.inputs[0]
    return x.op == "scalar" and x.attrs["value"] == 0


def _reductions(cond: Node) -> list[Node] | None:
    """The reductions a row condition is an elementwise function of (None
    when it reads anything else but scalars)."""
    out: list[Node] = []
    stack, seen = [cond], set()
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.op == "reduce":
            out.append(n)
        elif n.op in _ELEMENTWISE or n.op == "broadcast":
            stack.extend(n.inputs)
        elif n.op != "scalar":
            return None
    return out


def _path_ids(top: Node, bottom: set[int]) -> set[int]:
    """Every node id ``top`` reaches through elementwise ops above ``bottom``."""
    out: set[int] = set()
    stack = [top]
    while stack:
        n = stack.pop()
        if n.id in out or n.id in bottom:
            continue
        out.add(n.id)
        if n.op in _ELEMENTWISE or n.op == "broadcast":
            stack.extend(n.inputs)
    return out


def _rows_for(budget: int, row_bytes: int, length: object, mr: int) -> int:
    """Query rows whose ``row_bytes`` each fit in ``budget`` bytes: a
    multiple of ``mr`` (at least ``mr``, at most ``_MAX_BLOCK_ROWS``), no
    more than a static ``length`` needs, a divisor of it where one at least
    half as large exists (every block then has the same static rows)."""
    rows = max(mr, min(_MAX_BLOCK_ROWS, budget // max(row_bytes, 1)) // mr * mr)
    if isinstance(length, int) and length > 0:
        rows = min(rows, -(-length // mr) * mr)
        for cand in range(rows, max(mr, rows // 2) - 1, -mr):
            if length % cand == 0:
                return cand
    return rows


def query_block(length: object, keys: object, dt: DType, target: TargetInfo) -> int:
    """The query rows of a block of the one-pass form: as many as keep the
    block's ``rows x keys`` scores within a share of the L2 cache (TTI's
    size, :attr:`TargetInfo.l2_bytes`; a symbolic ``keys`` is taken as
    1024), a multiple of the matmul's register tile rows."""
    mr = _matmul_tiling(dt, 2, target)[1]
    l2 = target.l2_bytes or _UNKNOWN_L2_BYTES
    row = (keys if isinstance(keys, int) else 1024) * dt.itemsize
    return _rows_for(l2 // _L2_SHARE, row, length, mr)


def online_blocks(length: object, keys: object, dt: DType, target: TargetInfo
                  ) -> tuple[int, int]:
    """(query rows, keys) of a block of the online form: ``_ONLINE_KEYS``
    keys (fewer when there are fewer, a multiple of the register tile's
    columns), and as many rows as keep the block's scores within a share of
    the L1 data cache (:attr:`TargetInfo.l1d_bytes`)."""
    vw, mr, _ = _matmul_tiling(dt, 2, target)
    nr = 2 * vw
    kb = _ONLINE_KEYS if not isinstance(keys, int) else \
        min(_ONLINE_KEYS, -(-max(keys, 1) // nr) * nr)
    l1 = target.l1d_bytes or _UNKNOWN_L1_BYTES
    return _rows_for(l1 // _L1_SHARE, kb * dt.itemsize, length, mr), kb


def attention_form(plan: AttentionPlan, target: TargetInfo) -> str:
    """``"rows"`` (one pass over the keys per query block) or ``"online"``
    (key blocks with a running maximum): ``$LLVMACCEL_ATTENTION_FORM`` when
    set, else the online form where the one-pass block would have fewer
    than ``_MIN_ROWS`` rows (or than the queries need; long key sequences:
    its K panels would be packed for too few rows) and K and V are stored
    along the keys."""
    want = os.environ.get("LLVMACCEL_ATTENTION_FORM", "").lower()
    tk = plan.k_operand[1] if plan.k_operand is not None else False
    _, (_, tv), _ = matmul_operands(plan.out, target)
    able = tk and not tv
    if want in ("rows", "online"):
        return want if able or want == "rows" else "rows"
    x = plan.x
    length = x.shape[-2]
    mr = _matmul_tiling(x.dtype, 2, target)[1]
    least = min(_MIN_ROWS, -(-length // mr) * mr) if isinstance(length, int) else _MIN_ROWS
    if able and query_block(length, x.shape[-1], x.dtype, target) < least:
        return "online"
    return "rows"


def tile_sources(plan: AttentionPlan, target: TargetInfo, host: bool
                 ) -> tuple[Node, Node] | None:
    """The bf16 values whose f32 casts are Q and K (the heads of a bf16
    model), when the one-pass form computes the scores on AMX tiles
    (:mod:`.matmul_amx`) from them: static query blocks and sizes the tiles
    take. The product of two bf16 values is exact in f32, so the scores are
    the f32 product's up to the order of the sums (and bf16 subnormals,
    which the tiles read as zero). Else None."""
    if plan.q_operand is None or plan.k_operand is None or \
            attention_form(plan, target) != "rows":
        return None
    srcs = []
    for src, _, _ in (plan.q_operand, plan.k_operand):
        if src.op != "cast" or src.dtype is not DType.f32 or src.inputs[0].dtype is not DType.bf16:
            return None
        srcs.append(src.inputs[0])
    x = plan.x
    length, keys = x.shape[-2], x.shape[-1]
    depth = plan.scores.inputs[0].shape[-1]
    rows = query_block(length, keys, x.dtype, target)
    if not (isinstance(length, int) and length % rows == 0):
        return None
    vw = _matmul_tiling(DType.f32, 1, target)[0]
    if _MATMUL_NR_VECTORS * vw != AMX_NR or bf16_dot(target, vw) is None or \
            amx_reason(target, host, rows, keys, depth, False) is not None:
        return None
    return srcs[0], srcs[1]


def plan_reason(plan: AttentionPlan, target: TargetInfo) -> str:
    """The text recorded for a fused attention."""
    x = plan.x
    if attention_form(plan, target) == "online":
        bq, kb = online_blocks(x.shape[-2], x.shape[-1], x.dtype, target)
        return f"online softmax, {bq}-row query blocks x {kb}-key blocks"
    bq = query_block(x.shape[-2], x.shape[-1], x.dtype, target)
    return f"one pass, {bq}-row query blocks"


class AttentionEmitter(ElementwiseEmitter, MatmulEmitter):
    """Emission of a fused attention (see the module docstring)."""

    def emit_attention(self, plan: AttentionPlan, out: Buffer) -> None:
        """The fused loop nest of ``plan``, writing ``out`` (the product by
        V's buffer), in the form :func:`attention_form` picks."""
        if attention_form(plan, self.target) == "online":
            self.emit_attention_online(plan, out)
        else:
            self.emit_attention_rows(plan, out)

    def attention_operands(self, plan: AttentionPlan) -> tuple:
        """What both forms read: (Q's buffer, the node whose leading dims
        index the batch), (K's buffer, read transposed, its batch node),
        (V's buffer, read transposed) (see AttentionPlan.q_operand). With
        ``plan.tiles`` (the scores from the bf16 heads, :func:`tile_sources`),
        Q and K are those heads' buffers."""
        assert plan.q_operand is not None and plan.k_operand is not None
        (src_q, _, q_in), (src_k, tk, k_in) = plan.q_operand, plan.k_operand
        if plan.tiles is not None:
            src_q, src_k = plan.tiles
        (_, _), (src_v, tv), _ = matmul_operands(plan.out, self.target)
        bq_, bk, bv = (self.buffer_of(s) for s in (src_q, src_k, src_v))
        assert bq_ is not None and bk is not None and bv is not None
        return (bq_, q_in), (bk, tk, k_in), (bv, tv)

    def emit_attention_rows(self, plan: AttentionPlan, out: Buffer) -> None:
        """One pass over the keys per block of query rows, the block's
        scores in a scratch buffer (see the module docstring)."""
        o, scores, x = plan.out, plan.scores, plan.x
        dt = o.dtype
        # The scores on AMX tiles from the bf16 heads where tile_sources allows.
        tiles = plan.tiles is not None
        (bq_, q_in), (bk, tk, k_in), (bv, tv) = self.attention_operands(plan)
        length, keys = x.shape[-2], x.shape[-1]
        depth, width = scores.inputs[0].shape[-1], o.shape[-1]
        batch = tuple(scores.shape[:-2])
        rows_max = query_block(length, keys, dt, self.target)
        static_rows = isinstance(length, int) and length % rows_max == 0
        dl, ds, dd, dw = (self.dim(d) for d in (length, keys, depth, width))
        # One block of scores per thread (rows_max x S), and the row sums.
        sc = self.scratch((self.par_cap, rows_max, keys), dt)
        sc = parallel.thread_row(self, sc, (rows_max, keys))
        # The row sums as a sum of the same length elsewhere (f32 up to
        # F32_ACCUMULATION_MAX keys, in SUM_LANES partial sums: att_softmax).
        acc_dt = accumulator_dtype(dt, "sum", keys)
        den = Buffer("temp", (rows_max,), acc_dt, self.stack_array("att.den", rows_max, acc_dt))
        flags = Buffer("temp", (rows_max,), DType.bool,
                       self.stack_array("att.flag", rows_max, DType.bool)) \
            if plan.cond is not None else None
        nqb = self.op(f"udiv i64 {self.iadd(dl, str(rows_max - 1))}, {rows_max}", "i")
        nb = self.dim(shape_numel(batch))
        total = self.op(f"mul nsw i64 {nb}, {nqb}", "i")
        begin, end = self.par_range(total, shape_numel(x.shape))
        with self.loop(end, start=begin, hint="att") as t:
            bt = self.op(f"udiv i64 {t}, {nqb}", "i")
            qb = self.op(f"urem i64 {t}, {nqb}", "i")
            i0 = self.imul(qb, str(rows_max))
            rows = str(rows_max) if static_rows else self.imin(
                str(rows_max), self.op(f"sub nsw i64 {dl}, {i0}", "i"))
            bidx = self.delinearize(bt, batch) if batch else []
            v_in = o.inputs[1]
            batch_off = self.att_batch_offset(batch, bt, bidx)

            # The block's scores: Q[b, i0:i0+rows, :] @ K[b]^T.
            dot2 = bf16_dot(self.target, _matmul_tiling(dt, 1, self.target)[0]) \
                if tiles else None
            mm, dot = self.mm_plan(bq_, bk, sc, dt, rows, keys, dd, False, tk, dot2)
            mm.oa = self.iadd(batch_off(q_in, self.imul(dl, dd)), self.imul(i0, dd))
            mm.ob = batch_off(k_in, self.imul(dd, ds))
            if tiles:
                self.mm_amx(mm)
            else:
                self.mm_dot(mm) if dot else self.mm_panels(mm)
            # The softmax of each row, in place; the row sums kept apart.
            xb = self.delinearize(bt, tuple(x.shape[:-2])) if x.rank > 2 else []
            self.att_softmax(plan, sc, den, flags, rows, ds, i0, xb, acc_dt)
            if plan.saved is not None:
                self.att_save_probs(plan, sc, den, flags, rows, ds, bt, dl, i0)
            # The output block: probabilities @ V, then divided by the sums.
            oc = self.iadd(self.imul(bt, self.imul(dl, dw)), self.imul(i0, dw))
            mm2, dot2 = self.mm_plan(sc, bv, out, dt, rows, width, ds, False, tv)
            mm2.ob = batch_off(v_in, self.imul(ds, dw))
            mm2.oc = oc
            self.mm_dot(mm2) if dot2 else self.mm_panels(mm2)
            self.att_normalize(plan, out, den, flags, [], rows, oc, dw, xb, i0)

    def att_save_probs(self, plan: AttentionPlan, sc: Buffer, den: Buffer,
                       flags: Buffer | None, rows: str, ds: str, bt: str, dl: str,
                       i0: str) -> None:
        """The block's probabilities written to their output (``plan.saved``,
        of the softmax operand's shape): ``exp(x - max) / sum`` as the graph
        divides them, rows whose condition holds set to 0."""
        assert plan.saved is not None
        out = self.buffers[plan.saved.id]
        dt = out.dtype
        zero = _const(0, dt)
        first = self.imul(self.iadd(self.imul(bt, dl), i0), ds)
        with self.loop(rows, hint="ap") as r:
            d = self.convert(self.load(den, r), den.dtype, dt)
            flag = self.load(flags, r) if flags is not None else None
            row, base = self.iadd(first, self.imul(r, ds)), self.imul(r, ds)
            with self.loop(ds, hint="aq") as j:
                v = self.op(f"fdiv {dt.llvm} {self.load(sc, self.iadd(base, j))}, {d}")
                if flag is not None:
                    a, b = (zero, v) if plan.zero_if else (v, zero)
                    v = self.op(f"select i1 {flag}, {dt.llvm} {a}, {dt.llvm} {b}")
                self.store(out, self.iadd(row, j), v)

    def att_row_values(self, plan: AttentionPlan, m: str, idx_row: list[str]
                       ) -> list[tuple[Node, str]]:
        """The row maximum ``m`` and the row values computed from it
        (``plan.row_nodes``), each put in ``memo`` at its row's index."""
        vals = {plan.mx.id: m}
        for n in plan.row_nodes:
            if n.op in ("reshape", "broadcast"):
                vals[n.id] = vals[n.inputs[0].id]
            else:
                vals[n.id] = self.compute(n, [vals[i.id] if i.id in vals else
                                              _const(i.attrs["value"], i.dtype)
                                              for i in n.inputs])
        out = [(n, vals[n.id]) for n in (plan.mx, *plan.row_nodes)]
        for n, v in out:
            at = idx_row + ["0"] if n.rank == len(idx_row) + 1 else idx_row
            self.memo[(n.id, tuple(at))] = v
        return out

    def att_row_at(self, row_vals: list[tuple[Node, str]], idx: list[str]) -> None:
        """The row values also at the key index ``idx`` (with one key, a
        value of the keepdim shape is read there)."""
        for n, v in row_vals:
            if n.rank == len(idx):
                self.memo[(n.id, tuple(idx))] = v

    def att_batch_offset(self, batch: tuple, bt: str, bidx: list[str]
                         ) -> Callable[[Node, str], str]:
        """The element offset, at batch index ``bt`` (``bidx`` in the
        scores' batch dims ``batch``), of an operand node's matrix of ``per``
        elements: its batch dims broadcast to ``batch``, or of as many
        elements (a reshape of them: the same linear index)."""
        def offset(node: Node, per: str) -> str:
            lead = tuple(node.shape[:-2])
            if len(lead) != len(batch) and _same(shape_numel(lead), shape_numel(batch)):
                return self.imul(bt, per)
            b = self.bcast_idx_shape(lead, batch, bidx)
            return self.imul(self.linear(b, lead), per)
        return offset

    def att_score(self, plan: AttentionPlan, sc: Buffer, off: str) -> str:
        """The score at ``off`` of the block (times the operands' factors)."""
        v = self.load(sc, off)
        if plan.scale != 1.0:
            v = self.op(f"fmul {sc.dtype.llvm} {v}, {_const(plan.scale, sc.dtype)}")
        return v

    def att_normalize(self, plan: AttentionPlan, out: Buffer, den: Buffer,
                      flags: Buffer | None, reds: list[tuple[Node, Buffer]], rows: str,
                      oc: str, dw: str, xb: list[str], i0: str) -> None:
        """``out[oc + r * D + c] /= den[r]`` for the block's rows, and rows
        whose condition holds (``plan.cond``: from ``flags``, or computed
        from the row reductions' values in ``reds``) set to 0."""
        dt = out.dtype
        zero = _const(0, dt)
        with self.loop(rows, hint="an") as r:
            d = self.convert(self.load(den, r), den.dtype, dt)
            flag = None
            if flags is not None:
                flag = self.load(flags, r)
            elif plan.cond is not None:
                at_row = tuple(xb + [self.iadd(i0, r), "0"])
                for red, buf in reds:
                    self.memo[(red.id, at_row)] = self.load(buf, r)
                flag = self.emit(plan.cond, list(at_row))
            row = self.iadd(oc, self.imul(r, dw))
            with self.loop(dw, hint="ad") as c:
                off = self.iadd(row, c)
                v = self.op(f"fdiv {dt.llvm} {self.load(out, off)}, {d}")
                if flag is not None:
                    a, b = (zero, v) if plan.zero_if else (v, zero)
                    v = self.op(f"select i1 {flag}, {dt.llvm} {a}, {dt.llvm} {b}")
                self.store(out, off, v)

    def emit_attention_online(self, plan: AttentionPlan, out: Buffer) -> None:
        """The online-softmax (flash attention) form: for each block of
        query rows, the keys in blocks of ``BK``; each key block's scores,
        their running row maximum ``m`` and sum ``l``, and the output block
        rescaled by ``exp(m_old - m_new)`` before the block's
        ``P @ V[keys]`` is added::

            O[rows] = 0; m = -inf; l = 0
            for k0 in [0, S) step BK:
              sc = Q[rows] @ K[k0:k0+BK]^T; x = f(sc)
              m' = max(m, max_j x); a = exp(m - m'); p = exp(x - m')
              l = l * a + sum_j p; O[rows] = O[rows] * a + p @ V[k0:k0+BK]
            O[rows] /= l
        """
        o, scores, x = plan.out, plan.scores, plan.x
        dt = o.dtype
        t = dt.llvm
        (bq_, q_in), (bk, _, k_in), (bv, _) = self.attention_operands(plan)
        length, keys = x.shape[-2], x.shape[-1]
        depth, width = scores.inputs[0].shape[-1], o.shape[-1]
        batch = tuple(scores.shape[:-2])
        rows_max, kb_max = online_blocks(length, keys, dt, self.target)
        static_rows = isinstance(length, int) and length % rows_max == 0
        static_cols = isinstance(keys, int) and keys % kb_max == 0
        dl, ds, dd, dw = (self.dim(d) for d in (length, keys, depth, width))
        sc = parallel.thread_row(self, self.scratch((self.par_cap, rows_max, kb_max), dt),
                                 (rows_max, kb_max))
        pv = parallel.thread_row(self, self.scratch((self.par_cap, rows_max, width), dt),
                                 (rows_max, width))
        acc_dt = DType.f64 if dt is DType.f32 else dt

        def array(role: str, adt: DType) -> Buffer:
            return Buffer("temp", (rows_max,), adt, self.stack_array(role, rows_max, adt))

        m_run, l_run, alpha = array("att.m", dt), array("att.l", acc_dt), array("att.a", dt)
        reds = [(red, array("att.r", red.dtype)) for red in plan.row_reductions]
        nqb = self.op(f"udiv i64 {self.iadd(dl, str(rows_max - 1))}, {rows_max}", "i")
        nkb = self.op(f"udiv i64 {self.iadd(ds, str(kb_max - 1))}, {kb_max}", "i")
        total = self.op(f"mul nsw i64 {self.dim(shape_numel(batch))}, {nqb}", "i")
        zero = _const(0, dt)
        ninf = _reduce_identity("max", dt)
        begin, end = self.par_range(total, shape_numel(x.shape))
        with self.loop(end, start=begin, hint="att") as tt:
            bt = self.op(f"udiv i64 {tt}, {nqb}", "i")
            i0 = self.imul(self.op(f"urem i64 {tt}, {nqb}", "i"), str(rows_max))
            rows = str(rows_max) if static_rows else self.imin(
                str(rows_max), self.op(f"sub nsw i64 {dl}, {i0}", "i"))
            bidx = self.delinearize(bt, batch) if batch else []
            xb = self.delinearize(bt, tuple(x.shape[:-2])) if x.rank > 2 else []
            batch_off = self.att_batch_offset(batch, bt, bidx)

            oc = self.iadd(self.imul(bt, self.imul(dl, dw)), self.imul(i0, dw))
            with self.loop(rows, hint="az") as r:
                self.store(m_run, r, ninf)
                self.store(l_run, r, _const(0, acc_dt))
                for red, buf in reds:
                    self.store(buf, r, _reduce_identity(red.attrs["fn"], red.dtype))
                row = self.iadd(oc, self.imul(r, dw))
                with self.loop(dw, hint="az") as c:
                    self.store(out, self.iadd(row, c), zero)
            with self.loop(nkb, hint="akb") as kb:
                k0 = self.imul(kb, str(kb_max))
                cols = str(kb_max) if static_cols else self.imin(
                    str(kb_max), self.op(f"sub nsw i64 {ds}, {k0}", "i"))
                # The key block's scores: Q[b, rows, :] @ K[b, k0:k0+cols, :]^T.
                mm, dot = self.mm_plan(bq_, bk, sc, dt, rows, kb_max, dd, False, True)
                mm.dn = cols
                mm.oa = self.iadd(batch_off(q_in, self.imul(dl, dd)), self.imul(i0, dd))
                mm.ob = self.iadd(batch_off(k_in, self.imul(dd, ds)), self.imul(k0, dd))
                self.mm_dot(mm) if dot else self.mm_panels(mm)
                with self.loop(rows, hint="ar") as r:
                    base = self.imul(r, cols)
                    idx_row = xb + [self.iadd(i0, r)]
                    m_old = self.load(m_run, r)
                    best = self.alloca(t)
                    self.line(f"store {t} {m_old}, ptr {best}")
                    accs = []
                    for red, buf in reds:
                        acc = self.alloca(red.dtype.llvm)
                        self.line(f"store {red.dtype.llvm} {self.load(buf, r)}, ptr {acc}")
                        accs.append((red, buf, acc))
                    with self.loop(cols, hint="aj") as j:
                        off = self.iadd(base, j)
                        idx = idx_row + [self.iadd(k0, j)]
                        self.memo[(plan.score_view.id, tuple(idx))] = self.att_score(plan, sc, off)
                        v = self.emit(x, idx)
                        if x is not plan.score_view or plan.scale != 1.0:
                            self.store(sc, off, v)
                        a = self.op(f"load {t}, ptr {best}", "a")
                        self.line(f"store {t} {self.combine('max', dt, a, v)}, ptr {best}")
                        for red, _, acc in accs:
                            w = self.emit(red.inputs[0], idx)
                            rt = red.dtype.llvm
                            a = self.op(f"load {rt}, ptr {acc}", "a")
                            self.line(f"store {rt} {self.combine(red.attrs['fn'], red.dtype, a, w)}"
                                      f", ptr {acc}")
                    for red, buf, acc in accs:
                        self.store(buf, r, self.op(f"load {red.dtype.llvm}, ptr {acc}", "a"))
                    m_new = self.op(f"load {t}, ptr {best}", "a")
                    self.store(m_run, r, m_new)
                    # Rows with no key yet: exponents from 0 (exp(-inf) = 0, no NaN).
                    none = self.op(f"fcmp oeq {t} {m_new}, {ninf}", "c")
                    m_safe = self.op(f"select i1 {none}, {t} {zero}, {t} {m_new}")
                    a_row = self.unary("exp", dt, self.op(f"fsub {t} {m_old}, {m_safe}"))
                    self.store(alpha, r, a_row)
                    row_vals = self.att_row_values(plan, m_safe, idx_row)
                    total_ = self.alloca(acc_dt.llvm)
                    self.line(f"store {acc_dt.llvm} {_const(0, acc_dt)}, ptr {total_}")
                    with self.loop(cols, hint="aj") as j:
                        off = self.iadd(base, j)
                        idx = idx_row + [self.iadd(k0, j)]
                        self.memo[(x.id, tuple(idx))] = self.load(sc, off)
                        self.att_row_at(row_vals, idx)
                        v = self.emit(plan.e, idx)
                        self.store(sc, off, v)
                        a = self.op(f"load {acc_dt.llvm}, ptr {total_}", "a")
                        w = self.convert(v, dt, acc_dt)
                        self.line(f"store {acc_dt.llvm} "
                                  f"{self.combine('sum', acc_dt, a, w, reassoc=True)}, "
                                  f"ptr {total_}")
                    lsum = self.op(f"load {acc_dt.llvm}, ptr {total_}", "a")
                    l_old = self.load(l_run, r)
                    scaled = self.op(f"fmul {acc_dt.llvm} {l_old}, "
                                     f"{self.convert(a_row, dt, acc_dt)}")
                    self.store(l_run, r, self.op(f"fadd {acc_dt.llvm} {scaled}, {lsum}"))
                # This key block's P @ V[k0:k0+cols, :], added to the rescaled output.
                mm2, dot2 = self.mm_plan(sc, bv, pv, dt, rows, width, cols, False, False)
                mm2.ob = self.iadd(batch_off(o.inputs[1], self.imul(ds, dw)), self.imul(k0, dw))
                self.mm_dot(mm2) if dot2 else self.mm_panels(mm2)
                with self.loop(rows, hint="au") as r:
                    a_row = self.load(alpha, r)
                    row = self.iadd(oc, self.imul(r, dw))
                    prow = self.imul(r, dw)
                    with self.loop(dw, hint="au") as c:
                        off = self.iadd(row, c)
                        acc = self.op(f"fmul {t} {self.load(out, off)}, {a_row}")
                        self.store(out, off, self.op(
                            f"fadd {t} {acc}, {self.load(pv, self.iadd(prow, c))}"))
            self.att_normalize(plan, out, l_run, None, reds, rows, oc, dw, xb, i0)

    def att_softmax(self, plan: AttentionPlan, sc: Buffer, den: Buffer, flags: Buffer | None,
                    rows: str, ds: str, i0: str, xb: list[str], acc_dt: DType) -> None:
        """Each row ``r`` of the block ``sc`` (the scores of query ``i0 + r``)
        replaced by ``exp(x - max x)`` of the graph's softmax operand ``x``,
        its sum stored at ``den[r]`` and its row condition (``plan.cond``) at
        ``flags[r]``: the graph's nodes emitted with the scores, then ``x``
        and the maximum, read from the block."""
        x, e = plan.x, plan.e
        dt = x.dtype
        t = dt.llvm
        at = acc_dt.llvm
        with self.loop(rows, hint="ar") as r:
            base = self.imul(r, ds)
            idx_row = xb + [self.iadd(i0, r)]
            best = self.alloca(t)
            self.line(f"store {t} {_reduce_identity('max', dt)}, ptr {best}")
            reds = []
            for red in plan.row_reductions:
                acc = self.alloca(red.dtype.llvm)
                self.line(f"store {red.dtype.llvm} {_reduce_identity(red.attrs['fn'], red.dtype)}"
                          f", ptr {acc}")
                reds.append((red, acc))
            with self.loop(ds, hint="aj") as j:
                off = self.iadd(base, j)
                idx = idx_row + [j]
                self.memo[(plan.score_view.id, tuple(idx))] = self.att_score(plan, sc, off)
                v = self.emit(x, idx)
                if x is not plan.score_view or plan.scale != 1.0:
                    self.store(sc, off, v)
                a = self.op(f"load {t}, ptr {best}", "a")
                self.line(f"store {t} {self.combine('max', dt, a, v)}, ptr {best}")
                for red, acc in reds:
                    w = self.emit(red.inputs[0], idx)
                    rt = red.dtype.llvm
                    a = self.op(f"load {rt}, ptr {acc}", "a")
                    self.line(f"store {rt} {self.combine(red.attrs['fn'], red.dtype, a, w)}, "
                              f"ptr {acc}")
            at_row = tuple(idx_row + ["0"])
            row_vals = self.att_row_values(plan, self.op(f"load {t}, ptr {best}", "a"), idx_row)
            if flags is not None and plan.cond is not None:
                for red, acc in reds:
                    self.memo[(red.id, at_row)] = self.op(f"load {red.dtype.llvm}, ptr {acc}",
                                                          "a")
                self.store(flags, r, self.emit(plan.cond, list(at_row)))

            def prob(j: str, base: str = base, idx_row: list[str] = idx_row) -> str:
                """``e`` at key ``j``, stored in the block."""
                off = self.iadd(base, j)
                idx = idx_row + [j]
                self.memo[(x.id, tuple(idx))] = self.load(sc, off)
                # (With one key the maximum is read at the key's index.)
                self.att_row_at(row_vals, idx)
                v = self.emit(e, idx)
                self.store(sc, off, v)
                return v

            if acc_dt is DType.f32 and dt is DType.f32:
                self.store(den, r, self.sum_lanes(ds, prob))
            else:
                total = self.alloca(at)
                self.line(f"store {at} {_const(0, acc_dt)}, ptr {total}")
                with self.loop(ds, hint="aj") as j:
                    w = self.convert(prob(j), dt, acc_dt)
                    a = self.op(f"load {at}, ptr {total}", "a")
                    self.line(f"store {at} {self.combine('sum', acc_dt, a, w, reassoc=True)}"
                              f", ptr {total}")
                self.store(den, r, self.op(f"load {at}, ptr {total}", "a"))

    def stack_array(self, role: str, count: int, dt: DType) -> str:
        """A stack array of ``count`` elements of ``dt`` in the entry block."""
        name = self.fresh(role.replace(".", "_"))
        self.allocas.append(f"  {name} = alloca [{count} x {dt.mem}], align 64")
        return name

