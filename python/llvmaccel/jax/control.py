"""Lowering rules for JAX's control flow and sorting primitives.

``scan`` (``lax.scan``, and ``fori_loop`` with static bounds), ``while``
(``lax.while_loop``, ``fori_loop`` with traced bounds) and ``cond``
(``lax.cond``, ``lax.switch``) become graph regions
(:meth:`Graph.scan <llvmaccel.graph.Graph.scan>`, ``while_loop``,
``switch``): their jaxprs are lowered into sub-graphs, which the code
generator emits as real loops and branches (:mod:`llvmaccel.codegen.control`),
never unrolled. ``sort`` (``lax.sort``, ``jnp.sort``, ``jnp.argsort``) and
``top_k`` become :meth:`Graph.sort <llvmaccel.graph.Graph.sort>`; ``rev``
reverses dims.
"""

from __future__ import annotations

from typing import Any

from ..graph import DType, Graph, Node
from .lowering import (
    UnsupportedPrimitive,
    _dim_value,
    _lower,
    _rule,
    _shape,
    _static,
    graph_dim,
    graph_dtype,
    start_index,
)


def _region(closed: Any, what: str) -> Graph:
    """A closed jaxpr as a graph of its own (inputs: the jaxpr's invars)."""
    jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
    g = Graph()
    ins = [g.input(f"{what}{k}", _shape(v.aval.shape), graph_dtype(v.aval.dtype, what))
           for k, v in enumerate(jaxpr.invars)]
    g.set_outputs(_inline(closed, g, ins))
    return g


@_rule("scan")
def _scan(g: Graph, ins: list, eqn: Any) -> list[Node]:
    p = eqn.params
    nc, nk = int(p["num_consts"]), int(p["num_carry"])
    body = _region(p["jaxpr"], "scan")
    return g.scan(body, ins[:nc], ins[nc:nc + nk], ins[nc + nk:], graph_dim(p["length"]),
                  bool(p["reverse"]))


@_rule("while")
def _while(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """``lax.while_loop``. A batched predicate (``jax.vmap`` of a loop whose
    condition depends on the batch) runs while any lane's holds, each lane's
    carry updated only while its own holds, as JAX's lowering does."""
    p = eqn.params
    cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
    cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
    if not p["cond_jaxpr"].out_avals[0].shape:
        cond = _region(p["cond_jaxpr"], "cond")
        body = _region(p["body_jaxpr"], "body")
        return g.while_loop(cond, body, cconsts, bconsts, init)
    cond = _region(p["cond_jaxpr"], "cond")
    pred = cond.outputs[0]
    cond.set_outputs([cond.reduce("any", pred, tuple(range(pred.rank)))])
    body = Graph()
    bins = [body.input(f"body{k}", tuple(x.shape), x.dtype)
            for k, x in enumerate(cconsts + bconsts + init)]
    bc, bb, carry = bins[:cn], bins[cn:cn + bn], bins[cn + bn:]
    (lane,) = _inline(p["cond_jaxpr"], body, bc + carry)
    new = _inline(p["body_jaxpr"], body, bb + carry)
    outs = []
    for n, old in zip(new, carry, strict=True):
        keep = body.reshape(lane, tuple(lane.shape) + (1,) * (old.rank - lane.rank))
        outs.append(body.where(body.broadcast_to(keep, tuple(old.shape)), n, old))
    body.set_outputs(outs)
    return g.while_loop(cond, body, cconsts, cconsts + bconsts, init)


def _inline(closed: Any, g: Graph, args: list[Node]) -> list[Node]:
    jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
    outs = _lower(jaxpr, list(getattr(closed, "consts", [])), g, args)
    return [g.cast(o, graph_dtype(v.aval.dtype)) for o, v in zip(outs, jaxpr.outvars,
                                                                   strict=True)]


@_rule("cond")
def _cond(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """``lax.cond``/``switch`` as a branch of the kernel; with an index known
    when tracing (a ``platform_index``'s), the chosen branch inlined."""
    branches = eqn.params["branches"]
    index = ins[0]
    if index.op == "scalar":  # XLA's rule: out of range is the last branch
        k = int(index.attrs["value"])
        return _inline(branches[k if 0 <= k < len(branches) else -1], g, list(ins[1:]))
    return g.switch(index, [_region(b, "branch") for b in branches], ins[1:])


@_rule("platform_index")
def _platform_index(g: Graph, ins: list, eqn: Any) -> Node:
    """The branch ``lax.platform_dependent`` takes when lowering for the CPU
    (``jnp.diag``'s, for one): the first entry naming ``cpu``, else the
    default (``None``)."""
    platforms = eqn.params["platforms"]
    for k, names in enumerate(platforms):
        if names is not None and "cpu" in names:
            return g.scalar(k, DType.i32)
    for k, names in enumerate(platforms):
        if names is None:
            return g.scalar(k, DType.i32)
    raise UnsupportedPrimitive("platform_index", f"no branch for the CPU in {platforms}")


@_rule("sort")
def _sort(g: Graph, ins: list, eqn: Any) -> list[Node]:
    p = eqn.params
    return g.sort(list(ins), int(p["dimension"]), int(p["num_keys"]))


def _top(g: Graph, x: Node, k: Any, axis: int, eqn: Any, descending: bool) -> list[Node]:
    """The ``k`` first of ``x`` sorted along ``axis`` (largest or smallest
    first) in IEEE 754's total order, ties in index order, and their
    indices in the dtype of the primitive's second result."""
    what = eqn.primitive.name
    k = _static(what, k, "k")
    n = x.shape[axis]
    if k < 0 or (isinstance(n, int) and k > n):
        raise UnsupportedPrimitive(what, f"k={k} for a dim of size {n}")
    idx_dt = graph_dtype(eqn.outvars[1].aval.dtype)
    values, indices = g.sort([x, g.iota(tuple(x.shape), axis, idx_dt)], axis, 1,
                             descending=descending, total_order=True)
    return [g.slice(values, axis, 0, k, 1), g.slice(indices, axis, 0, k, 1)]


@_rule("top_k")
def _top_k(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """The ``k`` largest along ``axis`` (the last dim), largest first, in
    IEEE 754's total order (NaN first, -NaN last, 0.0 before -0.0) and ties
    in index order, as XLA's TopK."""
    x = ins[0]
    return _top(g, x, eqn.params["k"], int(eqn.params.get("axis", -1)) % x.rank, eqn, True)


@_rule("approx_top_k")
def _approx_top_k(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """``lax.approx_max_k``/``approx_min_k``: the exact top ``k`` (recall 1,
    as XLA's CPU backend computes it), largest first or smallest first,
    ties in index order."""
    p = eqn.params
    if not p.get("aggregate_to_topk", True):
        raise UnsupportedPrimitive("approx_top_k", "aggregate_to_topk=False")
    x = ins[0]
    return _top(g, x, p["k"], int(p.get("reduction_dimension", -1)) % x.rank, eqn,
                bool(p.get("is_max_k", True)))


@_rule("rev")
def _rev(g: Graph, ins: list, eqn: Any) -> Node:
    x = ins[0]
    for d in eqn.params["dimensions"]:
        n = x.shape[d]
        last = g.scalar(n - 1, DType.i64) if isinstance(n, int) else g.binary(
            "sub", _dim_value(g, n), g.scalar(1, DType.i64))
        idx = g.binary("sub", last, g.iota((n,), 0, DType.i64))
        x = g.take(x, idx, d, "clip")
    return x



@_rule("dynamic_update_slice")
def _dynamic_update_slice(g: Graph, ins: list, eqn: Any) -> Node:
    """``x`` with ``update`` written at ``starts`` (each clamped, as XLA,
    to ``[0, size - update size]``): a scatter over the update's elements,
    so a decode loop writing one token a step costs a copy of ``x`` and
    one store, not a pass of selects."""
    x, upd, *starts = ins
    i64 = DType.i64
    in_shape = eqn.invars[0].aval.shape
    up_shape = eqn.invars[1].aval.shape
    indices = []
    for d, s in enumerate(starts):
        room = _dim_value(g, graph_dim(in_shape[d] - up_shape[d]))
        s = g.binary("minimum", g.binary("maximum", start_index(g, s), g.scalar(0, i64)), room)
        indices.append(g.binary("add", g.iota(tuple(upd.shape), d, i64), s))
    return g.scatter(x, upd, indices, tuple(("index", d) for d in range(x.rank)))
