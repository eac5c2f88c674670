"""ATen FX graph -> :class:`llvmaccel.graph.Graph`.

:func:`node_support` says whether one FX node can be lowered (and why not);
:func:`lower` turns a whole FX graph (placeholders: tensors and SymInts) into
a graph plus the bookkeeping to call it with the FX graph's arguments.
Sizes come from the FakeTensor/SymInt values in ``node.meta["val"]``, so
symbolic sizes (dynamic shapes) become size symbols of the graph.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.fx

from .. import composite
from ..graph import DTYPE_BY_NAME, DType, Graph, GraphError, Node, Sym, SymExpr, dim_op, shape_numel

__all__ = ["LoweredGraph", "LoweringError", "draw_seed", "lower", "node_support", "torch_dtype"]


class LoweringError(GraphError):
    """An FX node cannot be lowered to the llvmaccel graph."""


_DTYPES = {getattr(torch, name): dt for name, dt in DTYPE_BY_NAME.items()
           if isinstance(getattr(torch, name, None), torch.dtype)}
_TORCH = {v: k for k, v in _DTYPES.items()}


def torch_dtype(dt: DType) -> torch.dtype:
    """The torch dtype of a graph dtype."""
    return _TORCH[dt]


def _dtype(dt: torch.dtype) -> DType:
    try:
        return _DTYPES[dt]
    except KeyError:
        names = ", ".join(str(d).removeprefix("torch.") for d in _DTYPES)
        raise LoweringError(f"dtype {dt} is not supported ({names})") from None


# ---------------------------------------------------------------------------
# Symbolic sizes
# ---------------------------------------------------------------------------


def sympy_to_dim(expr: Any) -> Any:
    """A sympy size expression (from a SymInt) as a graph size."""
    import sympy

    if isinstance(expr, (int, sympy.Integer)):
        return int(expr)
    if isinstance(expr, sympy.Symbol):
        return Sym(str(expr))
    name = type(expr).__name__
    args = [sympy_to_dim(a) for a in expr.args]
    if isinstance(expr, sympy.Add):
        out = args[0]
        for a in args[1:]:
            out = dim_op("add", out, a)
        return out
    if isinstance(expr, sympy.Mul):
        out = args[0]
        for a in args[1:]:
            out = dim_op("mul", out, a)
        return out
    if name in ("FloorDiv", "IntTrueDiv") and len(args) == 2:
        return dim_op("floordiv", args[0], args[1])
    if name in ("Mod", "PythonMod") and len(args) == 2:
        return dim_op("mod", args[0], args[1])
    if name in ("Max", "Min"):
        out = args[0]
        for a in args[1:]:
            out = dim_op(name.lower(), out, a)
        return out
    raise LoweringError(f"unsupported symbolic size {expr}")


def to_dim(v: Any) -> Any:
    """An int or SymInt as a graph size."""
    if isinstance(v, torch.SymInt):
        return sympy_to_dim(v.node.expr)
    if isinstance(v, bool):
        raise LoweringError("expected a size, got a bool")
    return int(v)


def _shape(val: Any) -> tuple:
    return tuple(to_dim(d) for d in val.shape)


# ---------------------------------------------------------------------------
# Lowering context
# ---------------------------------------------------------------------------


class _Seeds:
    """The random ops of one graph: a seed, a graph input drawn from
    PyTorch's generator before every call (:func:`draw_seed`), and a stream
    per op."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.node: Node | None = None
        self.streams = 0

    def stream(self, width: int = 1) -> tuple[Node, int]:
        """The seed and the first of ``width`` streams of a random op."""
        if self.node is None:
            self.node = self.g.input("llvmaccel_seed", (), DType.i64)
        first = self.streams
        self.streams += width
        return self.node, first


def draw_seed() -> torch.Tensor:
    """A call's seed for the graph's random ops, from PyTorch's default CPU
    generator: ``torch.manual_seed`` makes compiled runs repeat (not eager's
    numbers: the generator is llvmaccel's own)."""
    return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)


def _random(node: torch.fx.Node) -> bool:
    """Whether ``node`` draws random numbers (never folded at compile time)."""
    t = node.target
    return isinstance(t, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in t.tags


class _Ctx:
    def __init__(self, g: Graph, node: torch.fx.Node, seeds: _Seeds | None = None) -> None:
        self.g = g
        self.node = node
        self.seeds = seeds
        val = node.meta.get("val")
        self.val = val
        self.out_dtype = _dtype(val.dtype) if isinstance(val, torch.Tensor) else None

    def t(self, v: Any, dtype: DType | None = None) -> Node:
        """A tensor operand (scalars become 0-d constants)."""
        if isinstance(v, Node):
            return v if dtype is None else self.g.cast(v, dtype)
        if isinstance(v, (bool, int, float, complex)):
            dt = dtype or (DType.bool if isinstance(v, bool) else
                           DType.i64 if isinstance(v, int) else
                           DType.c64 if isinstance(v, complex) else DType.f32)
            return self.g.scalar(v, dt)
        raise LoweringError(f"expected a tensor or number, got {type(v).__name__}")

    def finish(self, out: Node) -> Node:
        """Casts to the dtype FX says the node has and checks the rank."""
        if self.out_dtype is not None:
            out = self.g.cast(out, self.out_dtype)
        if isinstance(self.val, torch.Tensor):
            want = _shape(self.val)
            if len(want) != out.rank:
                raise LoweringError(f"internal: rank {out.rank} vs {len(want)}")
            if tuple(out.shape) != want:
                out = _retag(self.g, out, want)
        return out


def _retag(g: Graph, x: Node, shape: tuple) -> Node:
    """Gives ``x`` the sizes FX computed (same values, better-known form)."""
    for a, b in zip(x.shape, shape, strict=False):
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise LoweringError(f"internal: shape {x.shape} vs {shape}")
    return g.reshape(x, shape)


def _axes(dims: Any, rank: int) -> tuple[int, ...]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return tuple(sorted({d % max(rank, 1) for d in dims}))


# ---------------------------------------------------------------------------
# Op table
# ---------------------------------------------------------------------------

_LOWER: dict[str, Callable[..., Any]] = {}


def _op(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            _LOWER[n] = fn
        return fn
    return deco


_UNARY = {
    "neg": "neg", "abs": "abs", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
    "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
    "sigmoid": "sigmoid", "relu": "relu", "silu": "silu", "erf": "erf", "erfc": "erfc",
    "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil", "round": "round",
    "trunc": "trunc",
    "reciprocal": "reciprocal", "sign": "sign", "logical_not": "not", "bitwise_not": "not",
}
_FLOAT_UNARY = {"exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh",
                "sigmoid", "silu", "erf", "erfc", "sin", "cos", "reciprocal"}


def _lower_unary(name: str) -> Callable[..., Any]:
    fn = _UNARY[name]

    def lower(c: _Ctx, x: Any) -> Node:
        x = c.t(x)
        if name in ("floor", "ceil", "round", "trunc") and not x.dtype.is_float:
            return c.finish(x)
        if name in _FLOAT_UNARY:
            x = c.g.cast(x, c.out_dtype or x.dtype)
        if name == "bitwise_not" and x.dtype.is_int:  # the bits flipped
            return c.finish(c.g.binary("xor", x, c.g.scalar(-1, x.dtype)))
        if fn == "not":
            x = c.g.cast(x, DType.bool)
        return c.finish(c.g.unary(fn, x))
    return lower


for _name in _UNARY:
    _LOWER[_name] = _lower_unary(_name)


_round_half_even = _LOWER["round"]


@_op("round")
def _round(c: _Ctx, x: Any, decimals: int = 0) -> Node:
    """``torch.round(x, decimals=d)`` as PyTorch computes it: to nearest,
    ties to even, of ``x * 10**d`` divided back (``x / 10**-d`` multiplied
    back for negative ``d``), in the op math type (float for half types)."""
    if not decimals:
        return _round_half_even(c, x)
    x = c.t(x)
    if not x.dtype.is_float:
        return c.finish(x)
    dt = c.out_dtype or x.dtype
    op_dt = DType.f32 if dt in (DType.f16, DType.bf16) else dt
    v = c.g.cast(x, op_dt)
    scale = c.g.scalar(float(10.0 ** abs(decimals)), op_dt)
    if decimals > 0:
        r = c.g.binary("div", c.g.unary("round", c.g.binary("mul", v, scale)), scale)
    else:
        r = c.g.binary("mul", c.g.unary("round", c.g.binary("div", v, scale)), scale)
    return c.finish(c.g.cast(r, dt))


def _lower_composite(name: str) -> Callable[..., Any]:
    """Hyperbolic and inverse trigonometric functions (:mod:`llvmaccel.composite`);
    integer operands are computed in the result's float type."""
    def lower(c: _Ctx, x: Any) -> Node:
        x = c.t(x)
        return c.finish(composite.unary(c.g, name, c.g.cast(x, c.out_dtype or x.dtype)))
    return lower


for _name in ("sinh", "cosh", "tan", "atan", "asin", "acos", "asinh", "acosh", "atanh"):
    _LOWER[_name] = _lower_composite(_name)


@_op("isfinite")
def _isfinite(c: _Ctx, x: Node) -> Node:
    return c.finish(composite.is_finite(c.g, x))


@_op("gelu")
def _gelu(c: _Ctx, x: Node, approximate: str = "none") -> Node:
    return c.finish(c.g.unary("gelu_tanh" if approximate == "tanh" else "gelu", x))


def _binary(fn: str) -> Callable[..., Any]:
    def lower(c: _Ctx, a: Any, b: Any, alpha: Any = 1) -> Node:
        dt = c.out_dtype
        a, b = c.t(a, dt), c.t(b, dt)
        if alpha != 1:
            b = c.g.binary("mul", b, c.g.scalar(alpha, b.dtype))
        # >> of an unsigned tensor shifts in zeros (PyTorch's, as C's).
        op = "lshr" if fn == "ashr" and dt is not None and dt.is_unsigned else fn
        return c.finish(c.g.binary(op, a, b))
    return lower


for _name, _fn in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("maximum", "maximum"),
                   ("minimum", "minimum"), ("fmod", "rem"), ("bitwise_and", "and"),
                   ("bitwise_or", "or"), ("bitwise_xor", "xor"), ("logical_xor", "xor"),
                   ("atan2", "atan2"), ("hypot", "hypot"), ("bitwise_left_shift", "shl"),
                   ("bitwise_right_shift", "ashr"), ("__lshift__", "shl"),
                   ("__rshift__", "ashr")):
    _LOWER[_name] = _binary(_fn)


@_op("rsub")
def _rsub(c: _Ctx, a: Any, b: Any, alpha: Any = 1) -> Node:
    dt = c.out_dtype
    a, b = c.t(a, dt), c.t(b, dt)
    if alpha != 1:
        a = c.g.binary("mul", a, c.g.scalar(alpha, dt))
    return c.finish(c.g.binary("sub", b, a))


@_op("logical_and", "logical_or")
def _logical(c: _Ctx, a: Any, b: Any) -> Node:
    fn = "and" if c.node.target.__name__.startswith("logical_and") else "or"
    return c.finish(c.g.binary(fn, c.t(a, DType.bool), c.t(b, DType.bool)))


@_op("div")
def _div(c: _Ctx, a: Any, b: Any, rounding_mode: str | None = None) -> Node:
    dt = c.out_dtype
    if rounding_mode is None:
        return c.finish(c.g.binary("div", c.t(a, dt), c.t(b, dt)))
    a, b = c.t(a, dt), c.t(b, dt)
    if rounding_mode == "trunc":
        q = c.g.binary("div", a, b)
        return c.finish(c.g.unary("trunc", q) if dt.is_float else q)
    return c.finish(c.g.binary("floordiv", a, b))


@_op("remainder")
def _remainder(c: _Ctx, a: Any, b: Any) -> Node:
    dt = c.out_dtype
    a, b = c.t(a, dt), c.t(b, dt)
    if dt.is_float:  # a - floor(a / b) * b
        q = c.g.unary("floor", c.g.binary("div", a, b))
        return c.finish(c.g.binary("sub", a, c.g.binary("mul", q, b)))
    q = c.g.binary("floordiv", a, b)
    return c.finish(c.g.binary("sub", a, c.g.binary("mul", q, b)))


@_op("pow")
def _pow(c: _Ctx, a: Any, b: Any) -> Node:
    dt = c.out_dtype
    if isinstance(b, (int, float)) and not isinstance(b, bool) and float(b) == int(b) \
            and 0 <= b <= 4:
        x = c.t(a, dt)
        out = c.g.scalar(1, dt)
        for _ in range(int(b)):
            out = x if out.op == "scalar" else c.g.binary("mul", out, x)
        return c.finish(c.g.broadcast_to(out, x.shape) if out.op == "scalar" else out)
    if isinstance(b, float) and b == 0.5 and dt.is_float:
        return c.finish(c.g.unary("sqrt", c.t(a, dt)))
    if not dt.is_float:
        raise LoweringError("integer pow with a non-constant exponent")
    return c.finish(c.g.binary("pow", c.t(a, dt), c.t(b, dt)))


def _compare(fn: str) -> Callable[..., Any]:
    def lower(c: _Ctx, a: Any, b: Any) -> Node:
        a = c.t(a)
        b = c.t(b, a.dtype if not isinstance(b, Node) else None)
        if isinstance(b, Node) and b.op == "scalar" and a.dtype.is_int and \
                isinstance(c.node.args[1], float):
            a = c.g.cast(a, DType.f32)
            b = c.g.scalar(c.node.args[1], DType.f32)
        return c.finish(c.g.binary(fn, a, b))
    return lower


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _LOWER[_name] = _compare(_name)


@_op("where")
def _where(c: _Ctx, cond: Node, a: Any, b: Any) -> Node:
    dt = c.out_dtype
    return c.finish(c.g.where(c.t(cond, DType.bool), c.t(a, dt), c.t(b, dt)))


@_op("clamp", "clamp_min", "clamp_max", "hardtanh")
def _clamp(c: _Ctx, x: Node, lo: Any = None, hi: Any = None) -> Node:
    name = c.node.target.__name__
    if name.startswith("clamp_max"):
        lo, hi = None, lo
    if name.startswith("hardtanh"):
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    dt = c.out_dtype
    out = c.t(x, dt)
    if lo is not None:
        out = c.g.binary("maximum", out, c.t(lo, dt))
    if hi is not None:
        out = c.g.binary("minimum", out, c.t(hi, dt))
    return c.finish(out)


@_op("leaky_relu")
def _leaky_relu(c: _Ctx, x: Node, slope: float = 0.01) -> Node:
    pos = c.g.binary("gt", x, c.g.scalar(0, x.dtype))
    return c.finish(c.g.where(pos, x, c.g.binary("mul", x, c.g.scalar(slope, x.dtype))))


@_op("isnan")
def _isnan(c: _Ctx, x: Node) -> Node:
    return c.finish(c.g.binary("ne", x, x))


@_op("_to_copy", "clone", "alias", "lift_fresh_copy", "contiguous", "detach",
     "resolve_conj", "resolve_neg")
def _copy(c: _Ctx, x: Node, *args: Any, **kwargs: Any) -> Node:
    return c.finish(x)


@_op("copy")
def _copy_from(c: _Ctx, dst: Node, src: Any, non_blocking: bool = False) -> Node:
    """``aten.copy(dst, src)``: ``src`` in ``dst``'s dtype, broadcast to its
    shape (functionalized ``dst.copy_(src)``)."""
    src = c.t(src, c.out_dtype)
    if tuple(src.shape) != tuple(dst.shape):
        src = c.g.broadcast_to(src, tuple(dst.shape))
    return c.finish(src)


# -- complex numbers -------------------------------------------------------


@_op("view_as_complex")
def _view_as_complex(c: _Ctx, x: Node) -> Node:
    # With dynamic shapes the pair dim may be a size expression that torch's
    # guards know to be 2 (``s // (s // 2)``): the result's shape says so.
    x = c.g.reshape(x, (*_shape(c.val), 2))
    return c.finish(c.g.view_as_complex(x))


@_op("view_as_real")
def _view_as_real(c: _Ctx, x: Node) -> Node:
    return c.finish(c.g.view_as_real(x))


@_op("complex")
def _complex(c: _Ctx, re: Node, im: Node) -> Node:
    return c.finish(c.g.complex(re, im))


@_op("polar")
def _polar(c: _Ctx, abs: Node, angle: Node) -> Node:  # noqa: A002 - torch's name
    return c.finish(c.g.polar(abs, angle))


@_op("_conj", "conj_physical", "_conj_physical")
def _conj(c: _Ctx, x: Node) -> Node:
    return c.finish(c.g.unary("conj", x))


@_op("real", "imag")
def _real_imag(c: _Ctx, x: Node) -> Node:
    fn = "imag" if c.node.target.__name__.startswith("imag") else "real"
    if not x.dtype.is_complex and fn == "real":
        return c.finish(x)
    return c.finish(c.g.unary(fn, x))


@_op("angle")
def _angle(c: _Ctx, x: Node) -> Node:
    g = c.g
    if x.dtype.is_complex:
        return c.finish(g.unary("angle", x))
    x = g.cast(x, c.out_dtype)  # a real x: pi below zero, else 0; NaN stays NaN
    zero = g.scalar(0.0, x.dtype)
    pi = g.where(g.binary("lt", x, zero), g.scalar(3.141592653589793, x.dtype), zero)
    return c.finish(g.where(g.binary("ne", x, x), x, pi))


@_op("scalar_tensor", "full", "full_like", "zeros", "ones", "zeros_like", "ones_like",
     "empty", "empty_like", "new_zeros", "new_ones", "new_full", "new_empty")
def _full(c: _Ctx, *args: Any, **kwargs: Any) -> Node:
    name = c.node.target.__name__.split(".")[0]
    if name in ("scalar_tensor",):
        value = args[0]
    elif name in ("full", "new_full"):
        value = args[-1]
    elif name == "full_like":
        value = args[1]
    elif "ones" in name:
        value = 1
    else:
        value = 0
    s = c.g.scalar(value, c.out_dtype)
    return c.finish(c.g.broadcast_to(s, _shape(c.val)) if c.val.dim() else s)


@_op("arange")
def _arange(c: _Ctx, *args: Any, **kwargs: Any) -> Node:
    start, step = 0, 1
    if len(args) == 1:
        pass
    elif len(args) == 2:
        start = args[0]
    else:
        start, step = args[0], args[2]
    shape = _shape(c.val)
    dt = c.out_dtype
    out = c.g.iota(shape, 0, DType.i64 if not dt.is_float else dt)
    out = c.g.binary("add", c.g.binary("mul", out, c.t(step, out.dtype)),
                     c.t(to_dim_or_num(start), out.dtype))
    return c.finish(out)


def to_dim_or_num(v: Any) -> Any:
    if isinstance(v, SymExpr):
        raise LoweringError("arange with a symbolic start")
    return v


# -- reductions -----------------------------------------------------------


def _reduce(c: _Ctx, fn: str, x: Node, dims: Any, keepdim: bool) -> Node:
    if x.rank == 0:
        return c.finish(x)
    return c.finish(c.g.reduce(fn, x, _axes(dims, x.rank), keepdim,
                               dtype=c.out_dtype if fn in ("sum", "prod") else None))


@_op("sum")
def _sum(c: _Ctx, x: Node, dims: Any = None, keepdim: bool = False, dtype: Any = None) -> Node:
    return _reduce(c, "sum", x, dims, keepdim)


@_op("cummax", "cummin")
def _cummax(c: _Ctx, x: Node, dim: int) -> tuple:
    """``torch.cummax``/``cummin``: the running extreme, and the index of the
    last element that set it (ties move it on, as PyTorch's kernel does; so
    does a NaN, which the values then carry)."""
    g = c.g
    fn = "max" if _op_name(c.node.target) == "cummax" else "min"
    if x.rank == 0:
        return (x, g.scalar(0, DType.i64))
    dim %= x.rank
    values = g.cumulative(fn, x, dim)
    hit = g.binary("eq", x, values)
    if x.dtype.is_float:
        hit = g.binary("or", hit, g.binary("ne", x, x))
    pos = g.iota(tuple(x.shape), dim, DType.i64)
    marks = g.where(hit, pos, g.scalar(-1, DType.i64))
    return (values, g.cumulative("max", marks, dim))


@_op("cumsum", "cumprod", "logcumsumexp")
def _cumulative(c: _Ctx, x: Node, dim: int, dtype: Any = None) -> Node:
    fn = {"cumsum": "sum", "cumprod": "prod", "logcumsumexp": "logaddexp"}[
        _op_name(c.node.target)]
    return c.g.cumulative(fn, c.g.cast(x, c.out_dtype), dim)


@_op("prod")
def _prod(c: _Ctx, x: Node, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Node:
    return _reduce(c, "prod", x, dim, keepdim)


@_op("mean")
def _mean(c: _Ctx, x: Node, dims: Any = None, keepdim: bool = False, dtype: Any = None
          ) -> Node:
    x = c.g.cast(x, c.out_dtype.compute)  # half types: in f32, rounded once
    axes = _axes(dims, x.rank)
    s = c.g.reduce("sum", x, axes, keepdim) if x.rank else x
    return c.finish(c.g.binary("div", s, _count(c.g, x, axes)))


def _count(g: Graph, x: Node, axes: tuple[int, ...]) -> Node:
    """The number of elements over ``axes`` as a 0-d float (may be symbolic)."""
    n: Any = 1
    for a in axes:
        n = dim_op("mul", n, x.shape[a])
    if isinstance(n, int):
        return g.scalar(float(n), x.dtype)
    return g.cast(g.reduce("sum", g.broadcast_to(g.scalar(1, DType.i64),
                                                 tuple(x.shape[a] for a in axes)),
                           tuple(range(len(axes)))), x.dtype)


@_op("amax", "amin")
def _amax(c: _Ctx, x: Node, dims: Any = (), keepdim: bool = False) -> Node:
    fn = "max" if c.node.target.__name__.startswith("amax") else "min"
    return _reduce(c, fn, x, dims, keepdim)


@_op("max", "min")
def _max(c: _Ctx, x: Node, other: Any = None, keepdim: bool = False) -> Any:
    fn = "max" if c.node.target.__name__.startswith("max") else "min"
    if isinstance(other, Node):
        return c.finish(c.g.binary("maximum" if fn == "max" else "minimum", x, other))
    if other is None:
        return c.finish(c.g.reduce(fn, x, tuple(range(x.rank))))
    values = c.g.reduce(fn, x, (other,), keepdim)
    index = c.g.reduce("arg" + fn, x, (other,), keepdim)
    return (values, index)


@_op("argmax", "argmin")
def _argmax(c: _Ctx, x: Node, dim: int | None = None, keepdim: bool = False) -> Node:
    fn = "argmax" if c.node.target.__name__.startswith("argmax") else "argmin"
    if dim is None:
        flat = c.g.reshape(x, (_numel(x),))
        out = c.g.reduce(fn, flat, (0,))
        if keepdim:
            out = c.g.reshape(out, (1,) * x.rank)
        return c.finish(out)
    if x.rank == 0:
        return c.finish(c.g.scalar(0, DType.i64))
    return c.finish(c.g.reduce(fn, x, (dim,), keepdim))


@_op("sort")
def _sort(c: _Ctx, x: Node, dim: int = -1, descending: bool = False, stable: Any = None
          ) -> tuple[Node, Node]:
    """``torch.sort`` (values, int64 indices): stable always, NaN last
    (first when descending), as the CPU kernel sorts."""
    if x.rank == 0:
        return (x, c.g.scalar(0, DType.i64))
    idx = c.g.iota(tuple(x.shape), dim % x.rank, DType.i64)
    values, indices = c.g.sort([x, idx], dim, 1, bool(descending))
    return (values, indices)


@_op("argsort")
def _argsort(c: _Ctx, x: Node, dim: int = -1, descending: bool = False, stable: Any = None
             ) -> Node:
    return _sort(c, x, dim, descending)[1]


@_op("msort")
def _msort(c: _Ctx, x: Node) -> Node:
    return _sort(c, x, 0)[0]


@_op("topk")
def _topk(c: _Ctx, x: Node, k: Any, dim: int = -1, largest: bool = True, sorted: bool = True
          ) -> tuple[Node, Node]:
    """``torch.topk``: the first ``k`` of a stable sort (descending for
    ``largest``); ``sorted=False`` gives them sorted too (any order is
    allowed)."""
    values, indices = _sort(c, x, dim, bool(largest))
    if x.rank == 0:
        return (values, indices)
    d = dim % x.rank
    n = x.shape[d]
    if not isinstance(k, int) or (isinstance(n, int) and not 0 <= k <= n):
        raise LoweringError(f"topk: k={k} for a dim of size {n}")
    return (c.g.slice(values, d, 0, k, 1), c.g.slice(indices, d, 0, k, 1))


def _numel(x: Node) -> Any:
    n: Any = 1
    for d in x.shape:
        n = dim_op("mul", n, d)
    return n


@_op("any", "all")
def _any(c: _Ctx, x: Node, dim: Any = None, keepdim: bool = False) -> Node:
    fn = "any" if c.node.target.__name__.startswith("any") else "all"
    return _reduce(c, fn, x, dim, keepdim)


def _var_mean(c: _Ctx, x: Node, dims: Any, correction: Any, keepdim: bool
              ) -> tuple[Node, Node]:
    g = c.g
    x = g.cast(x, (c.out_dtype if c.out_dtype else x.dtype).compute)
    axes = _axes(dims, x.rank)
    n = _count(g, x, axes)
    mean = g.binary("div", g.reduce("sum", x, axes, True), n)
    d = g.binary("sub", x, mean)
    ss = g.reduce("sum", g.binary("mul", d, d), axes, keepdim)
    corr = 1 if correction is None else correction
    denom = g.binary("sub", n, g.scalar(float(corr), x.dtype))
    denom = g.binary("maximum", denom, g.scalar(0.0, x.dtype))
    var = g.binary("div", ss, denom)
    if not keepdim:
        mean = g.reshape(mean, var.shape)
    if c.out_dtype is not None:
        var, mean = g.cast(var, c.out_dtype), g.cast(mean, c.out_dtype)
    return var, mean


@_op("var", "var_mean", "std")
def _var(c: _Ctx, x: Node, dims: Any = None, *args: Any, correction: Any = None,
         keepdim: bool = False, unbiased: Any = None) -> Any:
    if args:  # var.dim(x, dim, unbiased, keepdim)
        unbiased = args[0]
        keepdim = args[1] if len(args) > 1 else keepdim
    if unbiased is not None:
        correction = 1 if unbiased else 0
    name = c.node.target.__name__
    if name.startswith("var_mean"):
        c.out_dtype = _dtype(c.val[0].dtype)
    var, mean = _var_mean(c, x, dims, correction, keepdim)
    if name.startswith("var_mean"):
        return (var, mean)
    if name.startswith("std"):
        return c.finish(c.g.unary("sqrt", var))
    return c.finish(var)


@_op("_softmax", "softmax")
def _softmax(c: _Ctx, x: Node, dim: int, half_to_float: Any = False) -> Node:
    g = c.g
    x = g.cast(x, c.out_dtype.compute)  # half types: in f32, rounded once
    if x.rank == 0:
        return c.finish(g.broadcast_to(g.scalar(1.0, x.dtype), ()))
    m = g.reduce("max", x, (dim,), True)
    e = g.unary("exp", g.binary("sub", x, m))
    return c.finish(g.binary("div", e, g.reduce("sum", e, (dim,), True)))


@_op("_log_softmax", "log_softmax")
def _log_softmax(c: _Ctx, x: Node, dim: int, half_to_float: Any = False) -> Node:
    g = c.g
    x = g.cast(x, c.out_dtype.compute)
    if x.rank == 0:
        return c.finish(g.binary("sub", x, x))
    m = g.reduce("max", x, (dim,), True)
    sh = g.binary("sub", x, m)
    lse = g.unary("log", g.reduce("sum", g.unary("exp", sh), (dim,), True))
    return c.finish(g.binary("sub", sh, lse))


@_op("native_layer_norm")
def _layer_norm(c: _Ctx, x: Node, shape: Any, weight: Node | None, bias: Node | None,
                eps: float) -> tuple[Node, Node, Node]:
    g = c.g
    k = len(shape)
    axes = tuple(range(x.rank - k, x.rank))
    dt = x.dtype
    x = g.cast(x, dt.compute)  # half types: in f32, as PyTorch's kernel
    weight = None if weight is None else g.cast(weight, dt.compute)
    bias = None if bias is None else g.cast(bias, dt.compute)
    n = _count(g, x, axes)
    mean = g.binary("div", g.reduce("sum", x, axes, True), n)
    d = g.binary("sub", x, mean)
    var = g.binary("div", g.reduce("sum", g.binary("mul", d, d), axes, True), n)
    rstd = g.unary("rsqrt", g.binary("add", var, g.scalar(eps, x.dtype)))
    out = g.binary("mul", d, rstd)
    if weight is not None:
        out = g.binary("mul", out, weight)
    if bias is not None:
        out = g.binary("add", out, bias)
    stats = [_dtype(v.dtype) if isinstance(v, torch.Tensor) else dt for v in c.val[1:3]]
    return (g.cast(out, dt), g.cast(mean, stats[0]), g.cast(rstd, stats[1]))


@_op("_fused_rms_norm")
def _rms_norm(c: _Ctx, x: Node, shape: Any, weight: Node | None, eps: float | None
              ) -> tuple[Node, Node]:
    g = c.g
    axes = tuple(range(x.rank - len(shape), x.rank))
    eps = float(torch.finfo(torch_dtype(x.dtype)).eps) if eps is None else eps
    dt = x.dtype
    x = g.cast(x, dt.compute)
    weight = None if weight is None else g.cast(weight, dt.compute)
    ms = g.binary("div", g.reduce("sum", g.binary("mul", x, x), axes, True),
                  _count(g, x, axes))
    r = g.unary("rsqrt", g.binary("add", ms, g.scalar(eps, x.dtype)))
    out = g.binary("mul", x, r)
    if weight is not None:
        out = g.binary("mul", out, weight)
    rdt = _dtype(c.val[1].dtype) if isinstance(c.val, (tuple, list)) else dt
    return (g.cast(out, dt), g.cast(r, rdt))


# -- matmul ---------------------------------------------------------------


@_op("mm", "bmm")
def _mm(c: _Ctx, a: Node, b: Node) -> Node:
    if a.dtype.is_complex or b.dtype.is_complex:
        return c.finish(_complex_matmul(c.g, a, b))
    return c.finish(c.g.matmul(a, b))


def _complex_matmul(g: Graph, a: Node, b: Node) -> Node:
    """``a @ b`` of complex matrices ``[..., M, K] @ [..., K, N]`` as the
    products summed over K: a dot product per output whose complex
    accumulator is carried in a ``phi { float, float }``."""
    a = g.reshape(a, (*a.shape, 1))
    b = g.reshape(b, (*b.shape[:-2], 1, *b.shape[-2:]))
    return g.reduce("sum", g.binary("mul", a, b), (a.rank - 2,))


@_op("addmm", "baddbmm")
def _addmm(c: _Ctx, bias: Node, a: Node, b: Node, beta: Any = 1, alpha: Any = 1) -> Node:
    g = c.g
    if a.dtype.is_half:  # the bias added to the f32 products, rounded once
        a, b = g.cast(a, DType.f32), g.cast(b, DType.f32)
    out = g.matmul(a, b)
    if alpha != 1:
        out = g.binary("mul", out, g.scalar(alpha, out.dtype))
    if beta != 0:
        bias = c.t(bias, out.dtype)
        if beta != 1:
            bias = g.binary("mul", bias, g.scalar(beta, out.dtype))
        out = g.binary("add", out, bias)
    return c.finish(out)


@_op("mv", "dot")
def _mv(c: _Ctx, a: Node, b: Node) -> Node:
    g = c.g
    if a.rank == 1:
        a = g.reshape(a, (1, a.shape[0]))
    return c.finish(g.reshape(g.matmul(a, g.reshape(b, (b.shape[0], 1))), _shape(c.val)))


# -- views ----------------------------------------------------------------


@_op("view", "_unsafe_view", "reshape", "view_copy", "_reshape_alias", "flatten",
     "unflatten")
def _view(c: _Ctx, x: Node, *args: Any) -> Node:
    if args and isinstance(args[0], torch.dtype):  # view(dtype): the same bits
        dt = _dtype(args[0])
        if dt.bits != x.dtype.bits or DType.bool in (x.dtype, dt) or x.dtype.is_complex \
                or dt.is_complex:
            raise LoweringError(f"view as {args[0]} of a {torch_dtype(x.dtype)} tensor "
                                "(only between dtypes of one width)")
        return c.finish(c.g.bitcast(x, dt))
    return c.finish(c.g.reshape(x, _shape(c.val)))


@_op("squeeze", "unsqueeze", "squeeze_copy", "unsqueeze_copy")
def _squeeze(c: _Ctx, x: Node, *args: Any) -> Node:
    return c.finish(c.g.reshape(x, _shape(c.val)))


@_op("permute", "permute_copy")
def _permute(c: _Ctx, x: Node, perm: Any) -> Node:
    return c.finish(c.g.permute(x, tuple(perm)))


@_op("diagonal", "diagonal_copy")
def _diagonal(c: _Ctx, x: Node, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Node:
    """``torch.diagonal`` (``trace``, ``diag`` decompose to it): the two dims
    moved last and merged, then a take of the diagonal's positions in them
    (``i * n2 + i + offset``, or ``(i - offset) * n2 + i`` below the main
    diagonal)."""
    g = c.g
    d1, d2 = dim1 % x.rank, dim2 % x.rank
    n1, n2 = x.shape[d1], x.shape[d2]
    if not (isinstance(n1, int) and isinstance(n2, int)):
        raise LoweringError("diagonal of dims with symbolic sizes")
    rest = [d for d in range(x.rank) if d not in (d1, d2)]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    i = np.arange(length)
    pos = (i + max(-offset, 0)) * n2 + i + max(offset, 0)  # (row, column) of the diagonal
    merged = g.reshape(g.permute(x, (*rest, d1, d2)), (*(x.shape[d] for d in rest), n1 * n2))
    return c.finish(g.take(merged, g.constant(pos, DType.i64), len(rest), "clip"))


@_op("transpose", "t", "numpy_T")
def _transpose(c: _Ctx, x: Node, d0: int = 0, d1: int = 1) -> Node:
    if x.rank < 2:
        return c.finish(x)
    perm = list(range(x.rank))
    d0, d1 = d0 % x.rank, d1 % x.rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.finish(c.g.permute(x, tuple(perm)))


@_op("expand", "expand_copy", "broadcast_to", "expand_as")
def _expand(c: _Ctx, x: Node, *args: Any) -> Node:
    return c.finish(c.g.broadcast_to(x, _shape(c.val)))


def _clamp_index(v: Any, size: Any) -> Any:
    if isinstance(v, int) and isinstance(size, int):
        if v < 0:
            v += size
        return min(max(v, 0), size)
    if isinstance(v, int) and v >= 0:
        if v >= (1 << 62):
            return size
        return v
    if isinstance(v, int) and v < 0:
        return dim_op("add", size, v)
    return v  # symbolic: FX guarantees it lies in range


@_op("slice", "slice_copy")
def _slice(c: _Ctx, x: Node, dim: int = 0, start: Any = None, end: Any = None,
           step: int = 1) -> Node:
    dim = dim % x.rank
    size = x.shape[dim]
    s = _clamp_index(0 if start is None else start, size)
    e = _clamp_index(size if end is None else end, size)
    return c.finish(c.g.slice(x, dim, s, e, step))


@_op("select", "select_copy")
def _select(c: _Ctx, x: Node, dim: int, index: Any) -> Node:
    dim = dim % x.rank
    if isinstance(index, int) and index < 0:
        index = dim_op("add", x.shape[dim], index)
    return c.finish(c.g.select(x, dim, index))


@_op("split_with_sizes", "split")
def _split(c: _Ctx, x: Node, sizes: Any, dim: int = 0) -> tuple[Node, ...]:
    dim = dim % x.rank
    outs = []
    start: Any = 0
    for v in c.val:
        n = to_dim(v.shape[dim])
        end = dim_op("add", start, n)
        outs.append(c.g.slice(x, dim, start, end, 1))
        start = end
    return tuple(outs)


@_op("unbind")
def _unbind(c: _Ctx, x: Node, dim: int = 0) -> tuple[Node, ...]:
    return tuple(c.g.select(x, dim, i) for i in range(len(c.val)))


@_op("cat", "concat")
def _cat(c: _Ctx, xs: list, dim: int = 0) -> Node:
    parts = [x for x in xs if not (x.rank == 1 and x.shape[0] == 0)]
    if not parts:
        return c.finish(c.g.broadcast_to(c.g.scalar(0, c.out_dtype), _shape(c.val)))
    parts = [c.g.cast(p, c.out_dtype) for p in parts]
    return c.finish(c.g.concat(parts, dim) if len(parts) > 1 else parts[0])


@_op("stack")
def _stack(c: _Ctx, xs: list, dim: int = 0) -> Node:
    rank = xs[0].rank + 1
    dim = dim % rank
    parts = [c.g.reshape(x, tuple(x.shape[:dim]) + (1,) + tuple(x.shape[dim:])) for x in xs]
    return c.finish(c.g.concat(parts, dim))


@_op("constant_pad_nd")
def _pad(c: _Ctx, x: Node, pad: Any, value: float = 0) -> Node:
    g = c.g
    pads = [[0, 0] for _ in range(x.rank)]
    for k in range(len(pad) // 2):
        d = x.rank - 1 - k
        pads[d] = [pad[2 * k], pad[2 * k + 1]]
    # Negative padding crops.
    for d, (lo, hi) in enumerate(pads):
        if (isinstance(lo, int) and lo < 0) or (isinstance(hi, int) and hi < 0):
            lo_c = -lo if isinstance(lo, int) and lo < 0 else 0
            hi_c = -hi if isinstance(hi, int) and hi < 0 else 0
            x = g.slice(x, d, lo_c, dim_op("add", x.shape[d], -hi_c), 1)
            pads[d] = [max(lo, 0) if isinstance(lo, int) else lo,
                       max(hi, 0) if isinstance(hi, int) else hi]
    return c.finish(g.pad(x, tuple((lo, hi) for lo, hi in pads), value))


# -- convolution ----------------------------------------------------------


@_op("convolution")
def _convolution(c: _Ctx, x: Node, w: Node, bias: Node | None, stride: list,
                 padding: list, dilation: list, transposed: bool, output_padding: list,
                 groups: int) -> Node:
    r = x.rank - 2
    expand = (lambda v: list(v) * r if len(v) == 1 else list(v))  # noqa: E731
    stride, padding, dilation = expand(stride), expand(padding), expand(dilation)
    if transposed:
        return c.finish(_conv_transpose(c.g, x, w, bias, stride, padding, dilation,
                                        expand(output_padding), int(groups)))
    return c.finish(c.g.conv(x, w, bias, tuple(stride), tuple(padding), tuple(dilation),
                             int(groups)))


def _conv_transpose(g: Graph, x: Node, w: Node, bias: Node | None, stride: list,
                    padding: list, dilation: list, output_padding: list, groups: int
                    ) -> Node:
    """A transposed convolution (``ConvTranspose``: the gradient of a
    convolution by its input), as PyTorch's CPU kernel computes it: per
    image and group, the GEMM ``cols = W_g^T @ x_g`` (``w``: ``[C, O / groups,
    *kernel]``; every input position times every tap), then ``col2im`` sums
    each product into the output position ``i * stride - padding + k *
    dilation`` it lands on; then the bias. (Its other form, a convolution of
    the stride-dilated input with the flipped kernel, computes the zeros
    between the input's elements too: 3-8x slower.)"""
    ksize = [int(k) for k in w.shape[2:]]
    r = len(ksize)
    cin, og = int(w.shape[0]), int(w.shape[1])
    cg, kv = cin // groups, math.prod(ksize)
    dt = x.dtype
    if dt.is_half:  # accumulated in f32, the result rounded
        x, w = g.cast(x, DType.f32), g.cast(w, DType.f32)
    spatial = tuple(x.shape[2:])
    iv = shape_numel(spatial)
    a = g.permute(g.reshape(w, (groups, cg, og * kv)), (0, 2, 1))  # [G, O/G * KV, C/G]
    b = g.reshape(x, (x.shape[0], groups, cg, iv))                 # [N, G, C/G, IV]
    cols = g.reshape(g.matmul(a, b), (x.shape[0], groups * og, *ksize, *spatial))
    out_spatial = tuple(
        dim_op("add", dim_op("mul", dim_op("add", i, -1), s), d * (k - 1) + op + 1 - 2 * p)
        for i, k, s, p, d, op in zip(spatial, ksize, stride, padding, dilation, output_padding,
                                     strict=True))
    y = g.col2im(cols, out_spatial, tuple(stride), tuple(padding), tuple(dilation))
    if bias is not None:
        y = g.binary("add", y, g.reshape(g.cast(bias, y.dtype), (groups * og,) + (1,) * r))
    return g.cast(y, dt) if y.dtype is not dt else y


@_op("rand", "rand_like", "randn", "randn_like")
def _rand(c: _Ctx, *args: Any, **kwargs: Any) -> Node:
    """Uniform ``[0, 1)`` (``rand``) or standard normal (``randn``) numbers
    of the node's shape and dtype, from the graph's seed
    (:func:`llvmaccel.composite.uniform`, :func:`~llvmaccel.composite.normal`)."""
    if c.seeds is None or not isinstance(c.val, torch.Tensor) or c.out_dtype is None:
        raise LoweringError("random numbers outside a lowered graph")
    normal = c.node.target.__name__.startswith("randn")
    seed, stream = c.seeds.stream(2 if normal else 1)
    shape = _shape(c.val)
    make = composite.normal if normal else composite.uniform
    return c.finish(make(c.g, shape, seed, stream, c.out_dtype))


def _as_batched(g: Graph, x: Node, batched_rank: int) -> tuple[Node, Callable[[Node], Node]]:
    """``x`` with a batch of one in front when its rank is one short of
    ``batched_rank`` (an unbatched ``[C, *spatial]`` operand of a pooling or
    im2col op), and the function that takes that batch off a result."""
    if x.rank != batched_rank - 1:
        return x, lambda y: y
    return g.reshape(x, (1, *x.shape)), lambda y: g.reshape(y, y.shape[1:])


@_op("im2col")
def _im2col(c: _Ctx, x: Node, kernel_size: list, dilation: list, padding: list,
            stride: list) -> Node:
    """``F.unfold``: ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C * KH *
    KW, L]``, the graph's im2col reshaped."""
    x, unbatch = _as_batched(c.g, x, 4)
    k, d, p, s = (tuple(int(v) for v in a) for a in (kernel_size, dilation, padding, stride))
    cols = c.g.im2col(x, k, s, p, d)
    out = (x.shape[0], dim_op("mul", x.shape[1], math.prod(k)), shape_numel(cols.shape[4:]))
    return c.finish(unbatch(c.g.reshape(cols, out)))


@_op("col2im")
def _col2im(c: _Ctx, cols: Node, output_size: list, kernel_size: list, dilation: list,
            padding: list, stride: list) -> Node:
    """``F.fold``: ``[N, C * KH * KW, L]`` (or unbatched) summed into ``[N, C,
    *output_size]`` by the graph's col2im, ``L`` the grid of windows that
    fits the output."""
    cols, unbatch = _as_batched(c.g, cols, 3)
    k, d, p, s = (tuple(int(v) for v in a) for a in (kernel_size, dilation, padding, stride))
    out = tuple(int(o) for o in output_size)
    grid = tuple((o + 2 * pp - dd * (kk - 1) - 1) // ss + 1
                 for o, kk, dd, pp, ss in zip(out, k, d, p, s, strict=True))
    if math.prod(grid) != cols.shape[2] or min(grid) < 1:
        raise LoweringError(f"col2im: {cols.shape[2]} blocks do not tile the output {out}")
    channels = dim_op("floordiv", cols.shape[1], math.prod(k))
    y = c.g.col2im(c.g.reshape(cols, (cols.shape[0], channels, *k, *grid)), out, s, p, d)
    return c.finish(unbatch(y))


@_op("flip")
def _flip(c: _Ctx, x: Node, dims: list) -> Node:
    return c.finish(c.g.flip(x, tuple(int(d) for d in dims)))


def _per_dim(v: Any, r: int, default: list | None = None) -> tuple[int, ...]:
    """A per-spatial-dim parameter of an ATen pooling op (one value for all
    dims, one per dim, or empty for ``default``)."""
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if not v:
        v = list(default or [])
    return tuple(int(a) for a in (v * r if len(v) == 1 else v))


@_op("max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(c: _Ctx, x: Node, kernel_size: list, stride: list | None = None,
              padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> tuple:
    r = len(kernel_size)
    kernel = _per_dim(kernel_size, r)
    x, unbatch = _as_batched(c.g, x, r + 2)
    out = c.g.pool(x, "max", kernel, _per_dim(stride or [], r, list(kernel)),
                   _per_dim(padding, r), _per_dim(dilation, r), bool(ceil_mode))
    return (unbatch(out), unbatch(c.g.pool_indices(x, out)))


def _adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive pooling windows of a dim of ``size`` pooled to
    ``out``: window ``i`` is ``[floor(i * size / out), ceil((i + 1) * size /
    out))``. Returns the position of every window's ``k``-th element,
    ``[K, out]`` for the longest window's length ``K``, the shorter windows'
    last position repeated, and the windows' lengths ``[out]``."""
    i = np.arange(out, dtype=np.int64)
    start = i * size // out
    end = ((i + 1) * size + out - 1) // out
    length = end - start
    k = np.arange(int(length.max()), dtype=np.int64)
    return np.minimum(start[None, :] + k[:, None], (end - 1)[None, :]), length


def _uniform_windows(size: int, out: int) -> tuple[int, int] | None:
    """(kernel, stride) when the adaptive windows of a dim (see
    :func:`_adaptive_windows`) are those of an ordinary pool, else None."""
    idx, length = _adaptive_windows(size, out)
    starts = idx[0]
    stride = int(starts[1] - starts[0]) if out > 1 else 1
    if (length == length[0]).all() and stride > 0 and \
            (starts == np.arange(out) * stride).all():
        return int(length[0]), stride
    return None


def _adaptive_pool(c: _Ctx, x: Node, output_size: list, fn: str) -> tuple[Node, Node | None]:
    """Adaptive average or max pooling of the last ``len(output_size)`` dims
    (of static sizes), one dim at a time: the windows along a dim are
    gathered as ``K`` takes of constant positions, ``K`` the longest window,
    and summed (the positions past a shorter window masked) or compared.
    The max keeps PyTorch's choice of position (its CPU kernel visits a
    window in row-major order and takes a value greater than the best so
    far, or a NaN): per dim the first greatest or the last NaN, which
    composed over the dims is the first greatest, or last NaN, of the
    window in row-major order. Returns the values and, for the max, the
    positions in the flattened pooled dims (as ``max_pool``'s indices)."""
    g = c.g
    out = tuple(int(o) for o in output_size)
    r = len(out)
    spatial = tuple(x.shape[x.rank - r:])
    if x.rank < r + 1 or not all(isinstance(d, int) and d > 0 for d in spatial) or \
            not all(o > 0 for o in out):
        raise LoweringError(f"adaptive {fn} pooling of {spatial} to {out}: needs static, "
                            "nonzero sizes")
    uniform = [_uniform_windows(d, o) for d, o in zip(spatial, out, strict=True)]
    if all(u is not None for u in uniform) and x.rank in (r + 1, r + 2):
        # Windows of one size at one stride in every dim (sizes that divide,
        # or 15 to 7: 3 wide, every 2): the pool node (its indices,
        # max_pool's).
        xb, unbatch = _as_batched(g, x, r + 2)
        kernel = tuple(u[0] for u in uniform)
        pooled = g.pool(xb, fn, kernel, tuple(u[1] for u in uniform), (0,) * r)
        if fn == "avg":
            return unbatch(pooled), None
        return unbatch(pooled), unbatch(g.pool_indices(xb, pooled))
    dt = x.dtype
    if not dt.is_float:
        raise LoweringError(f"adaptive {fn} pooling of {dt.numpy} tensors")
    cur = g.cast(x, DType.f32) if dt.is_half else x
    positions: list[Node] = []  # the chosen positions in the dims pooled so far, outer first
    # The average takes the outer dims first: the gathers along the last
    # dim (its window positions are not a stride) then read the fewest
    # elements. The max takes the inner ones first: that order composes
    # each dim's first greatest into the window's first in row-major order.
    for j in (range(r) if fn == "avg" else reversed(range(r))):
        axis = x.rank - r + j
        idx, length = _adaptive_windows(spatial[j], out[j])
        along = (out[j],) + (1,) * (x.rank - 1 - axis)  # broadcasts along axis

        def at(values: np.ndarray, dtype: DType, along: tuple = along) -> Node:
            return g.reshape(g.constant(values, dtype), along)

        best = best_pos = chosen = None
        best_carried: list[Node] = []
        for k in range(idx.shape[0]):
            where_k = g.constant(idx[k], DType.i64)
            v = g.take(cur, where_k, axis, "clip")
            if fn == "avg":
                inside = k < length
                if not inside.all():
                    v = g.where(at(inside, DType.bool), v, g.scalar(0, v.dtype))
                best = v if best is None else g.binary("add", best, v)
                continue
            # The values: a NaN-propagating maximum (what the choice below
            # gives, without its comparisons: at inference nobody reads the
            # positions, and Graph.pruned drops them and their values).
            carried = [g.take(p, where_k, axis, "clip") for p in positions]
            pos = at(idx[k], DType.i64)
            if best is None:
                best = chosen = v
                best_pos, best_carried = pos, carried
                continue
            best = g.binary("maximum", best, v)
            take_it = g.binary("or", g.binary("gt", v, chosen), g.binary("ne", v, v))
            chosen = g.where(take_it, v, chosen)
            best_pos = g.where(take_it, pos, best_pos)
            best_carried = [g.where(take_it, a, b)
                            for a, b in zip(carried, best_carried, strict=True)]
        if fn == "avg":
            best = g.binary("div", best, at(length.astype(np.float32), DType.f32))
        else:
            positions = [g.broadcast_to(best_pos, best.shape), *best_carried]
        cur = best
    values = g.cast(cur, dt) if dt.is_half else cur
    if fn == "avg":
        return values, None
    flat = None
    for j, p in enumerate(positions):  # outer dim first
        stride = math.prod(spatial[j + 1:])
        term = g.binary("mul", p, g.scalar(stride, DType.i64)) if stride != 1 else p
        flat = term if flat is None else g.binary("add", flat, term)
    return values, flat


@_op("adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_max_pool(c: _Ctx, x: Node, output_size: list) -> tuple:
    """Adaptive max pooling (:func:`_adaptive_pool`): the values and their
    positions in the input's pooled dims."""
    return _adaptive_pool(c, x, output_size, "max")


@_op("_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_avg_pool1d")
def _adaptive_avg_pool(c: _Ctx, x: Node, output_size: list) -> Node:
    """Adaptive average pooling (:func:`_adaptive_pool`)."""
    return c.finish(_adaptive_pool(c, x, output_size, "avg")[0])


@_op("avg_pool2d", "avg_pool3d")
def _avg_pool(c: _Ctx, x: Node, kernel_size: list, stride: list | None = None,
              padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
              divisor_override: int | None = None) -> Node:
    r = len(kernel_size)
    kernel = _per_dim(kernel_size, r)
    x, unbatch = _as_batched(c.g, x, r + 2)
    y = c.g.pool(x, "avg", kernel, _per_dim(stride or [], r, list(kernel)),
                 _per_dim(padding, r), None, bool(ceil_mode), bool(count_include_pad),
                 divisor_override)
    return c.finish(unbatch(y))


# -- indexing -------------------------------------------------------------


@_op("embedding")
def _embedding(c: _Ctx, weight: Node, indices: Node, padding_idx: int = -1, *args: Any
               ) -> Node:
    return c.finish(c.g.take(weight, indices, 0, "check"))


@_op("index_select")
def _index_select(c: _Ctx, x: Node, dim: int, index: Node) -> Node:
    if x.rank == 0:
        return c.finish(x)
    if index.rank == 0:
        index = c.g.reshape(index, (1,))
    return c.finish(c.g.take(x, index, dim, "check"))


def _scatter_along(c: _Ctx, x: Node, dim: int, index: Node, src: Node, reduce: str,
                   what: str) -> Node:
    """``torch.scatter`` family: ``out[... index[u] ...] (op)= src[u]`` along
    ``dim`` for every ``u`` of ``index``'s shape (``src`` may be larger)."""
    g = c.g
    dim %= max(x.rank, 1)
    if x.rank == 0 or index.rank != x.rank:
        raise LoweringError(f"{what}: index must have the rank of self")
    shape = tuple(index.shape)
    for d in range(x.rank):
        if d != dim and isinstance(shape[d], int) and isinstance(x.shape[d], int) \
                and shape[d] > x.shape[d]:
            raise LoweringError(f"{what}: index is larger than self in dim {d}")
    if src.rank == 0:
        src = g.broadcast_to(src, shape)
    else:
        for d in range(src.rank):
            if src.shape[d] != shape[d]:
                src = g.slice(src, d, 0, shape[d])
    dest = tuple(("index", 0) if d == dim else ("iter", d) for d in range(x.rank))
    # Eager's scatter kernels raise RuntimeError for an index out of range.
    return c.finish(g.scatter(x, src, [index], dest, reduce, "check", what, "RuntimeError"))


@_op("scatter")
def _scatter(c: _Ctx, x: Node, dim: int, index: Node, src: Any, reduce: str | None = None
             ) -> Node:
    if reduce is not None and reduce not in ("add", "multiply"):
        raise LoweringError(f"scatter reduce={reduce!r}")
    op = {"add": "add", "multiply": "mul"}.get(reduce or "", "set")
    return _scatter_along(c, x, dim, index, c.t(src, x.dtype), op, "scatter")


@_op("scatter_add")
def _scatter_add(c: _Ctx, x: Node, dim: int, index: Node, src: Node) -> Node:
    return _scatter_along(c, x, dim, index, src, "add", "scatter_add")


@_op("scatter_reduce")
def _scatter_reduce(c: _Ctx, x: Node, dim: int, index: Node, src: Node, reduce: str,
                    include_self: bool = True) -> Node:
    ops = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}
    if reduce not in ops:
        raise LoweringError(f"scatter_reduce {reduce!r}")
    if not include_self:
        raise LoweringError("scatter_reduce with include_self=False")
    return _scatter_along(c, x, dim, index, src, ops[reduce], "scatter_reduce")


@_op("index_put")
def _index_put(c: _Ctx, x: Node, indices: list, values: Node, accumulate: bool = False
               ) -> Node:
    """``x[indices] = values`` (or ``+=`` with ``accumulate``): index tensors
    over adjacent dims, broadcast together; values broadcast to the indexed
    shape; negative indices count from the end."""
    g = c.g
    pos = [k for k, i in enumerate(indices) if i is not None]
    if not pos or pos != list(range(pos[0], pos[-1] + 1)):
        raise LoweringError("index_put with non-adjacent index tensors")
    idx = [indices[k] for k in pos]
    if any(i.dtype is DType.bool for i in idx):
        raise LoweringError("index_put with a boolean mask (data-dependent positions)")
    first, k = pos[0], len(pos)
    batch = _broadcast_dims([tuple(i.shape) for i in idx])
    pre, post = tuple(x.shape[:first]), tuple(x.shape[first + k:])
    shape = pre + batch + post
    full = []
    for i in idx:
        i = g.reshape(i, (1,) * (len(pre) + len(batch) - i.rank) + tuple(i.shape)
                      + (1,) * len(post))
        full.append(g.broadcast_to(i, shape))
    values = c.t(values, x.dtype)
    if values.rank > len(shape):
        raise LoweringError("index_put: values have more dims than the indexed shape")
    values = g.broadcast_to(values, shape)
    dest = tuple(("iter", d) for d in range(first)) + \
        tuple(("index", j) for j in range(k)) + \
        tuple(("iter", len(pre) + len(batch) + j) for j in range(len(post)))
    return c.finish(g.scatter(x, values, full, dest, "add" if accumulate else "set", "wrap",
                              "index_put"))


def _broadcast_dims(shapes: list[tuple]) -> tuple:
    rank = max(len(s) for s in shapes)
    out = []
    for d in range(rank):
        sizes = {s[d - rank + len(s)] for s in shapes if d - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise LoweringError(f"index tensors of shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@_op("gather")
def _gather(c: _Ctx, x: Node, dim: int, index: Node, sparse_grad: bool = False) -> Node:
    return c.finish(c.g.gather(x, index, dim, "check"))


@_op("index")
def _index(c: _Ctx, x: Node, indices: list) -> Node:
    g = c.g
    pos = [k for k, i in enumerate(indices) if i is not None]
    if not pos or pos != list(range(pos[0], pos[-1] + 1)):
        raise LoweringError("index with non-adjacent index tensors")
    idx = [indices[k] for k in pos]
    for i in idx:
        if i.dtype is DType.bool:
            raise LoweringError("boolean mask indexing (data-dependent shape)")
    first = pos[0]
    if len(idx) == 1:
        i = g.cast(idx[0], DType.i64)
        return c.finish(g.take(x, i, first, "wrap"))
    # Several index tensors over adjacent dims: one linear index into the
    # merged dims, or -1 (an IndexError) when any of them is out of range.
    ok: Node | None = None
    lin: Node | None = None
    for k, i in zip(pos, idx, strict=False):
        n = g.scalar(x.shape[k], DType.i64) if isinstance(x.shape[k], int) else None
        if n is None:
            raise LoweringError("multi-tensor index over a symbolic dimension")
        i = g.cast(i, DType.i64)
        w = g.where(g.binary("lt", i, g.scalar(0, DType.i64)), g.binary("add", i, n), i)
        inb = g.binary("and", g.binary("ge", w, g.scalar(0, DType.i64)), g.binary("lt", w, n))
        ok = inb if ok is None else g.binary("and", ok, inb)
        lin = w if lin is None else g.binary("add", g.binary("mul", lin, n), w)
    assert lin is not None and ok is not None
    lin = g.where(ok, lin, g.scalar(-1, DType.i64))
    merged: Any = 1
    for k in pos:
        merged = dim_op("mul", merged, x.shape[k])
    xm = g.reshape(x, tuple(x.shape[:first]) + (merged,) + tuple(x.shape[pos[-1] + 1:]))
    return c.finish(g.take(xm, lin, first, "check"))


@_op("_embedding_bag", "embedding_bag", "_embedding_bag_forward_only")
def _embedding_bag(c: _Ctx, weight: Node, indices: Node, offsets: Node,
                   scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                   per_sample_weights: Node | None = None,
                   include_last_offset: bool = False, padding_idx: Any = None) -> tuple:
    g = c.g
    if mode not in (0, 1):
        raise LoweringError("embedding_bag mode 'max' is not supported")
    if indices.rank != 1:
        raise LoweringError("embedding_bag with 2-d indices (pass offsets)")
    if offsets.dtype is not indices.dtype:
        offsets = g.cast(offsets, indices.dtype)
    # ATen passes padding_idx already made non-negative, or -1/None for none.
    pidx = padding_idx if padding_idx is not None and padding_idx >= 0 else None
    out = g.embedding_bag(weight, indices, offsets, "sum" if mode == 0 else "mean",
                          include_last_offset, per_sample_weights, pidx)
    want = _shape(c.val[0])
    if tuple(out.shape) != want:
        out = g.reshape(out, want)
    aux: list[Node | None] = [None, None, None]
    if len(c.val) == 4:
        aux = list(_bag_aux(g, indices, offsets, mode, pidx, [_shape(v) for v in c.val[1:]]))
    return (out, *aux)


def _bag_aux(g: Graph, indices: Node, offsets: Node, mode: int, pidx: int | None,
             shapes: list[tuple]) -> tuple[Node, Node, Node]:
    """The outputs of ``_embedding_bag`` after the first, as ATen's CPU
    kernel computes them (its backward reads them back; aot_autograd saves
    them), in the ``shapes`` its meta function gives:

    * ``offset2bag``: the bag of each index position (the number of bag
      starts after the first at or before it), or empty where ATen's sum
      skips it;
    * ``bag_size``: a mean's count of indices per bag, those equal to
      ``padding_idx`` not counted (the last bag runs to the end of the
      indices, as ATen counts it); zeros for a sum;
    * ``max_indices``: a mean's ``bag_size`` again; zeros for a sum."""
    i64 = DType.i64
    n = indices.shape[0]
    o2b_shape, size_shape, max_shape = shapes
    zeros = {sh: g.broadcast_to(g.scalar(0, i64), sh) for sh in {o2b_shape, size_shape, max_shape}}
    need_bags = mode == 1 or o2b_shape != (0,)
    if not need_bags:
        return zeros[o2b_shape], zeros[size_shape], zeros[max_shape]
    nbags = size_shape[0]
    # A 1 at each bag start after the first (index_add of ones), summed up.
    starts = g.slice(g.cast(offsets, i64), 0, 1, nbags)
    marks = g.scatter(g.broadcast_to(g.scalar(0, i64), (dim_op("add", n, 1),)),
                      g.broadcast_to(g.scalar(1, i64), tuple(starts.shape)), [starts],
                      (("index", 0),), "add", what="embedding_bag offsets")
    bag_of = g.slice(g.cumulative("sum", marks, 0), 0, 0, n)
    offset2bag = bag_of if o2b_shape == tuple(bag_of.shape) else zeros[o2b_shape]
    if mode != 1:
        return offset2bag, zeros[size_shape], zeros[max_shape]
    counted = g.broadcast_to(g.scalar(1, i64), (n,)) if pidx is None else \
        g.cast(g.binary("ne", indices, g.scalar(pidx, indices.dtype)), i64)
    bag_size = g.scatter(zeros[size_shape], counted, [bag_of], (("index", 0),), "add",
                         what="embedding_bag offsets")
    return offset2bag, bag_size, bag_size if max_shape == size_shape else zeros[max_shape]


def _call_arg(node: torch.fx.Node, pos: int, name: str, default: Any = None) -> Any:
    """Argument ``name`` (position ``pos``) of an FX call, or ``default``."""
    return node.args[pos] if len(node.args) > pos else node.kwargs.get(name, default)


# ---------------------------------------------------------------------------
# Support and lowering of whole graphs
# ---------------------------------------------------------------------------

# Ops with several outputs whose outputs after the first need static sizes.
_STATIC_AUX_OUTPUTS = frozenset({"_embedding_bag", "embedding_bag", "_embedding_bag_forward_only"})

_SYM_OPS = {operator.mul, operator.add, operator.sub, operator.floordiv, operator.mod,
            operator.neg, operator.truediv}


def _op_name(target: Any) -> str:
    name = getattr(target, "__name__", str(target)).split(".")[0]
    namespace = getattr(target, "namespace", "aten")
    return name if namespace == "aten" else f"{namespace}::{name}"


def register_custom_op(op: Any) -> None:
    """Lowers ``torch.ops.<ns>.<name>`` calls of a
    :class:`~llvmaccel.custom_ops.CustomOp` inline (done when the op is
    registered with torch)."""

    def lower(c: _Ctx, *args: Any) -> Node:
        return op.lower(c.g, list(args))

    _LOWER[op.name] = lower


def node_support(node: torch.fx.Node, fallback_random: bool = False) -> str | None:
    """None if ``node`` can be lowered, else the reason it cannot
    (``fallback_random``: random ops are left to eager)."""
    if node.op != "call_function":
        return None
    if fallback_random and _random(node):
        return f"{node.target} runs eagerly (fallback_random)"
    t = node.target
    if t is operator.getitem:
        src = node.args[0]
        if isinstance(src, torch.fx.Node) and src.op == "call_function" and \
                _op_name(src.target) in _STATIC_AUX_OUTPUTS and node.args[1] != 0:
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor) or not _static(val):
                return f"{_op_name(src.target)}: an output of symbolic size after the first"
        return None
    val = node.meta.get("val")
    if t in _SYM_OPS or str(getattr(t, "__module__", "")).startswith("torch.fx.experimental"):
        return None if isinstance(val, (int, torch.SymInt)) else "symbolic non-int value"
    if t is torch.ops.aten.sym_size.int or t is torch.ops.aten.sym_numel.default:
        return None
    if not isinstance(t, torch._ops.OpOverload):
        return f"{t} is not an ATen operator"
    name = _op_name(t)
    if name not in _LOWER:
        if _foldable(node):
            return None
        return f"aten.{name} is not supported by llvmaccel"
    vals = val if isinstance(val, (tuple, list)) else [val]
    for v in vals:
        if isinstance(v, torch.Tensor):
            if v.dtype not in _DTYPES:
                return f"dtype {v.dtype} is not supported"
            if v.device.type != "cpu":
                return f"device {v.device} is not supported"
    for a in node.all_input_nodes:
        av = a.meta.get("val")
        if isinstance(av, torch.Tensor) and av.dtype not in _DTYPES:
            return f"input dtype {av.dtype} is not supported"
    if isinstance(val, torch.Tensor):
        for d in val.shape:
            if isinstance(d, torch.SymInt):
                try:
                    sympy_to_dim(d.node.expr)
                except LoweringError as e:
                    return str(e)
    return _special_support(name, node)


# ATen ops lowered for complex tensors (the others fall back to eager).
_COMPLEX_OPS = frozenset({
    "view_as_complex", "view_as_real", "complex", "polar", "_conj", "conj_physical",
    "_conj_physical", "real",
    "imag", "angle", "resolve_conj", "resolve_neg", "add", "sub", "rsub", "mul", "div", "neg",
    "abs", "exp", "reciprocal", "sum", "prod", "mean", "where", "eq", "ne", "_to_copy",
    "clone", "alias", "lift_fresh_copy", "contiguous", "detach", "scalar_tensor", "full",
    "full_like", "zeros", "ones", "zeros_like", "ones_like", "empty", "empty_like",
    "new_zeros", "new_ones", "new_full", "new_empty", "view", "_unsafe_view", "reshape",
    "view_copy", "_reshape_alias", "flatten", "unflatten", "squeeze", "unsqueeze",
    "squeeze_copy", "unsqueeze_copy", "permute", "permute_copy", "transpose", "t", "numpy_T",
    "expand", "expand_copy", "broadcast_to", "expand_as", "slice", "slice_copy", "select",
    "select_copy", "split_with_sizes", "split", "unbind", "cat", "concat", "stack",
    "constant_pad_nd", "index_select", "gather", "mm", "bmm",
})


def _complex_support(name: str, node: torch.fx.Node) -> str | None:
    """Why ``node`` cannot be lowered for its complex operands or result."""
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    flat = [v for x in vals for v in (x if isinstance(x, (tuple, list)) else [x])]
    if not any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in flat):
        return None
    if name not in _COMPLEX_OPS:
        return f"aten.{name} of complex tensors is not supported by llvmaccel"
    return None


def _special_support(name: str, node: torch.fx.Node) -> str | None:
    args = node.args
    reason = _complex_support(name, node)
    if reason is not None:
        return reason
    if name in ("_embedding_bag", "embedding_bag", "_embedding_bag_forward_only"):
        mode = _call_arg(node, 4, "mode", 0)
        if mode not in (0, 1):
            return "embedding_bag mode 'max' is not supported"
        if args[1].meta["val"].dim() != 1:
            return "embedding_bag with 2-d indices"
    if name == "convolution":
        if not node.meta["val"].dtype.is_floating_point:
            return "integer convolution is not supported"
        if any(isinstance(d, torch.SymInt) for d in args[1].meta["val"].shape):
            return "convolution with symbolic channels or kernel sizes"
    if name == "col2im" and any(isinstance(v, torch.SymInt) for v in args[1]):
        return "col2im (F.fold) to an output of symbolic size"
    if name == "flip" and any(isinstance(args[0].meta["val"].shape[d], torch.SymInt)
                              for d in args[1]):
        return "flip along a dim of symbolic size"
    if name == "index":
        idx = args[1]
        pos = [k for k, i in enumerate(idx) if i is not None]
        if not pos or pos != list(range(pos[0], pos[-1] + 1)):
            return "aten.index with non-adjacent index tensors"
        for i in idx:
            if i is not None and i.meta["val"].dtype is torch.bool:
                return "boolean mask indexing has a data-dependent shape"
    if name == "pow":
        b = args[1]
        if isinstance(b, torch.fx.Node) and not node.meta["val"].dtype.is_floating_point:
            return "integer pow with a tensor exponent"
        if not node.meta["val"].dtype.is_floating_point and not (
                isinstance(b, (int, float)) and float(b) == int(b) and 0 <= b <= 4):
            return "integer pow with a non-constant exponent"
    if name in ("mm", "bmm", "addmm", "baddbmm", "mv", "dot"):
        dt = node.meta["val"].dtype
        if not dt.is_floating_point and not (dt.is_complex and name in ("mm", "bmm")):
            return "integer matmul is not supported"
    if name == "arange" and any(isinstance(a, torch.fx.Node) for a in args[:1]) and \
            len(args) > 1:
        return "arange with a symbolic start"
    return None


@dataclass
class LoweredGraph:
    """A lowered FX graph and how to call it.

    Attributes:
        graph: The llvmaccel graph.
        tensor_args: Positions of the FX placeholders that are graph inputs.
        symbol_args: (symbol name, FX placeholder position) of SymInt inputs.
        outputs: Per FX output: ("tensor", graph output index), ("view",
            (base, ops)): an input (``base`` ("arg", FX placeholder
            position)) or a graph output (``base`` ("tensor", index)) with
            ``ops`` applied (ATen view ops with their other arguments,
            innermost first; none for an input returned as it is), the very
            tensor or a view of it as the FX graph returns it, not a copy;
            ("int", size expression) or ("none", None).
        single_output: The FX graph returns one value, not a tuple.
        ops: ATen op names lowered.
        seeded: The graph draws random numbers: its last input is a seed,
            a fresh :func:`draw_seed` for every call.
    """

    graph: Graph
    tensor_args: list[int]
    symbol_args: list[tuple[str, int]]
    outputs: list[tuple[str, Any]]
    single_output: bool = False
    ops: list[str] = field(default_factory=list)
    seeded: bool = False


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def source_line(node: torch.fx.Node) -> str:
    """``file.py:LINE (function)`` of the user code an FX node came from
    (the innermost frame of its ``stack_trace``), or "" if it has none."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    if not frames:
        return ""
    path, line, fn = frames[-1]
    return f"{os.path.basename(path)}:{line} ({fn})"


def lower(gm: torch.fx.GraphModule) -> LoweredGraph:
    """Lowers an ATen-level FX graph (every node must pass :func:`node_support`)."""
    g = Graph()
    env: dict[torch.fx.Node, Any] = {}
    tensor_args: list[int] = []
    symbol_args: list[tuple[str, int]] = []
    ops: list[str] = []
    seeds = _Seeds(g)
    pos = 0
    out_spec: Any = None
    arg_pos: dict[torch.fx.Node, int] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            arg_pos[node] = pos
            val = node.meta.get("val")
            if val is None:
                val = node.meta.get("example_value")
            if isinstance(val, torch.Tensor):
                env[node] = g.input(node.name, _shape(val), _dtype(val.dtype))
                tensor_args.append(pos)
            elif isinstance(val, torch.SymInt):
                d = to_dim(val)
                env[node] = d
                if isinstance(d, SymExpr) and d.op == "sym":
                    symbol_args.append((d.args[0], pos))
                    _assume_range(g, d.args[0], val)
            elif isinstance(val, int):
                env[node] = val
            else:
                raise LoweringError(f"placeholder {node.name}: unsupported value {val!r}")
            pos += 1
            continue
        if node.op == "output":
            out_spec = node.args[0]
            continue
        if node.op == "get_attr":
            env[node] = _attr_constant(g, gm, node)
            continue
        if node.op != "call_function":
            raise LoweringError(f"{node.op} nodes are not supported")
        reason = node_support(node)
        if reason is not None:
            raise LoweringError(f"{node.name}: {reason}")
        val = node.meta.get("val")
        t = node.target
        if t is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
            continue
        if isinstance(val, (int, torch.SymInt)) and not isinstance(val, bool):
            env[node] = to_dim(val)
            continue
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        kwargs = {k: v for k, v in kwargs.items()
                  if k not in ("dtype", "layout", "device", "pin_memory", "memory_format",
                               "non_blocking")}
        args = [to_dim(a) if isinstance(a, torch.SymInt) else a for a in args]
        name = _op_name(t)
        if name not in _LOWER or name not in ("full", "scalar_tensor", "arange") and not any(
                isinstance(a, Node) or (isinstance(a, (list, tuple)) and any(
                    isinstance(x, Node) for x in a)) for a in args) and \
                isinstance(val, torch.Tensor) and _static(val) and not _random(node):
            env[node] = _fold(g, node)
            ops.append(name)
            continue
        ctx = _Ctx(g, node, seeds)
        first = len(g.nodes)
        try:
            env[node] = _LOWER[name](ctx, *args, **kwargs)
        except (GraphError, TypeError, ValueError, KeyError, IndexError) as e:
            raise LoweringError(f"{node.name} ({t}): {e}") from e
        ops.append(name)
        g.note_source(node.name, source_line(node), first)
    outs_fx = out_spec if isinstance(out_spec, (tuple, list)) else [out_spec]
    outputs: list[tuple[str, Any]] = []
    graph_outs: list[Node] = []
    out_index: dict[int, int] = {}

    def graph_output(v: Node) -> int:
        if v.id not in out_index:
            out_index[v.id] = len(graph_outs)
            graph_outs.append(v)
        return out_index[v.id]

    for o in outs_fx:
        v = env[o] if isinstance(o, torch.fx.Node) else o
        base, views = _view_chain(o) if isinstance(o, torch.fx.Node) else (o, [])
        if base in arg_pos and isinstance(env[base], Node):
            # An input returned as it is (aot_autograd's forward graphs
            # return the weights the backward reads) or a view of one (the
            # per-table index rows select(indices, 0, t)): the caller's
            # tensor itself, or a view of it.
            outputs.append(("view", (("arg", arg_pos[base]), views)))
        elif views and isinstance(env.get(base), Node) and isinstance(v, Node):
            # A view of a computed value (a transpose of a matmul operand
            # saved for the backward): that value is an output, the view
            # is made of it, not copied by the kernel.
            outputs.append(("view", (("tensor", graph_output(env[base])), views)))
        elif isinstance(v, Node):
            outputs.append(("tensor", graph_output(v)))
        elif v is None:
            outputs.append(("none", None))
        elif isinstance(v, (int, SymExpr)):
            outputs.append(("int", v))
        else:
            raise LoweringError(f"unsupported graph output {v!r}")
    g.set_outputs(graph_outs)
    if seeds.node is not None and g.inputs[-1] is not seeds.node:
        raise LoweringError("internal: the seed is not the graph's last input")
    # Results of ATen ops that nothing reads (max pooling's indices, the
    # saved statistics of a batch norm at inference) are not computed.
    g = g.pruned()
    return LoweredGraph(g, tensor_args, symbol_args, outputs,
                        single_output=not isinstance(out_spec, (tuple, list)), ops=ops,
                        seeded=seeds.node is not None)


@functools.cache
def _view_targets() -> frozenset:
    aten = torch.ops.aten
    return frozenset({
        aten.view.default, aten._unsafe_view.default, aten.reshape.default,
        aten.permute.default, aten.t.default, aten.transpose.int, aten.select.int,
        aten.slice.Tensor, aten.expand.default, aten.alias.default, aten.unsqueeze.default,
        aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default})


def _view_chain(o: torch.fx.Node) -> tuple[torch.fx.Node, list[tuple[Any, tuple, dict]]]:
    """``o`` as ATen view ops (with static arguments) of another FX node:
    that node and the ops, innermost first (no ops: ``o`` is no such view)."""
    views = _view_targets()
    ops: list[tuple[Any, tuple, dict]] = []
    base = o
    while base.op == "call_function" and base.target in views and base.args and \
            isinstance(base.args[0], torch.fx.Node):
        rest, kwargs = tuple(base.args[1:]), dict(base.kwargs)
        leaves: list[Any] = []
        torch.fx.node.map_aggregate((rest, kwargs), leaves.append)
        if any(isinstance(a, (torch.fx.Node, torch.SymInt)) for a in leaves):
            break  # sizes known only at run time: left to the kernel
        ops.append((base.target, rest, kwargs))
        base = base.args[0]
    ops.reverse()
    return base, ops


def _assume_range(g: Graph, name: str, val: torch.SymInt) -> None:
    """The range dynamo's ShapeEnv knows for a size symbol (its guards,
    ``mark_dynamic(min=, max=)``, ``torch._check``) as a fact of the graph."""
    shape_env = getattr(val.node, "shape_env", None)
    rng = shape_env.var_to_range.get(val.node.expr) if shape_env is not None else None
    if rng is None:
        return

    def finite(bound: Any) -> int | None:
        """An int for a finite bound; None for sympy's and torch's infinities
        (whose int() raises TypeError or AttributeError)."""
        if getattr(bound, "is_finite", True) is not True:
            return None
        try:
            return int(bound)
        except (TypeError, ValueError, OverflowError, AttributeError):
            return None

    lo, hi = finite(rng.lower), finite(rng.upper)
    if lo is not None or hi is not None:
        g.assume_symbol(name, lo, hi)


def _attr_constant(g: Graph, gm: torch.fx.GraphModule, node: torch.fx.Node) -> Node:
    """A tensor attribute of the graph module (a lifted constant)."""
    value: Any = gm
    for part in str(node.target).split("."):
        value = getattr(value, part)
    if not isinstance(value, torch.Tensor):
        raise LoweringError(f"get_attr {node.target}: not a tensor")
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        dt = _dtype(value.dtype)
        value = value.detach().cpu().resolve_conj().contiguous()
        if value.dim() == 0:
            return g.scalar(value.item(), dt)
        arr = _numpy_of(value)
    return g.constant(arr, dt)


def _numpy_of(value: torch.Tensor) -> Any:
    """A copy of a CPU tensor's values as a numpy array (bfloat16 as an
    ml_dtypes array of the same bits)."""
    if value.dtype is torch.bfloat16:
        try:
            import ml_dtypes
        except ImportError:
            raise LoweringError("a bfloat16 constant needs the ml_dtypes package") from None
        return value.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return value.contiguous().numpy().copy()


def _foldable(node: torch.fx.Node) -> bool:
    """A node without tensor or symbolic operands and a small static result
    (e.g. tril_indices), evaluated at compile time."""
    val = node.meta.get("val")
    if node.all_input_nodes or not isinstance(val, torch.Tensor) or not _static(val) or \
            _random(node):
        return False
    return val.dtype in _DTYPES and not any(
        isinstance(a, torch.SymInt) for a in torch.fx.node.map_aggregate(
            (node.args, node.kwargs), lambda a: a) if not isinstance(a, (list, tuple)))


def _static(val: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in val.shape) and val.numel() <= (1 << 16)


def _fold(g: Graph, node: torch.fx.Node) -> Node:
    """Evaluates a node without tensor operands (e.g. tril_indices) now."""
    kwargs = dict(node.kwargs)
    kwargs["device"] = "cpu"
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        value = node.target(*node.args, **kwargs)
        if not isinstance(value, torch.Tensor):
            raise LoweringError(f"{node.name}: cannot fold {node.target}")
        dt = _dtype(value.dtype)
        if value.dim() == 0:
            return g.scalar(value.item(), dt)
        return g.constant(_numpy_of(value.resolve_conj()), dt)

