"""Math the graph has no primitive for, written in the ops it has.

:func:`uniform` and :func:`normal` are random numbers from a counter-based
generator (splitmix64 of a per-call seed, the op's stream and the element's
index): no state, any element computed by any thread, a fresh seed per call.

Both frontends lower these the same way (JAX's ``sinh``, ``is_finite``,
``reduce_precision``...; PyTorch's ``aten.sinh``, ``aten.isfinite``...). Each
form avoids the cancellation or overflow of its textbook formula where the
ops allow (``expm1`` near zero, ``log(x) + log(2)`` for large arguments), so
results stay within a few ulp of libm's in float32 and float64;
:func:`reduce_precision` is exact (XLA's bit-level rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .graph import Dim, DType, Graph, GraphError, Node, shape_numel

__all__ = ["COMPOSITE_UNARY", "is_finite", "normal", "reduce_precision", "total_order_key",
           "unary", "uniform"]

_LN2 = math.log(2.0)


def _s(g: Graph, x: Node, v: float) -> Node:
    return g.scalar(v, x.dtype)


def _float(x: Node, what: str) -> None:
    if not x.dtype.is_float or x.dtype.is_complex:
        raise GraphError(f"{what} needs a real floating-point operand")


def _half_wide(fn: Callable[[Graph, Node], Node]) -> Callable[[Graph, Node], Node]:
    """``fn`` computed in float32 for half types, the result rounded."""
    def wrapped(g: Graph, x: Node) -> Node:
        _float(x, fn.__name__.strip("_"))
        if x.dtype.is_half:
            return g.cast(fn(g, g.cast(x, DType.f32)), x.dtype)
        return fn(g, x)
    wrapped.__name__ = fn.__name__
    return wrapped


def _big(g: Graph, ax: Node) -> Node:
    """``|x|`` past which ``x * x`` may overflow (and ``x + 1 == x``)."""
    return g.binary("gt", ax, _s(g, ax, 1e18 if ax.dtype is DType.f32 else 1e150))


def _half_exp(g: Graph, ax: Node) -> Node:
    """``exp(|x|) / 2`` for ``ax = |x|``: exact to an ulp of exp while
    ``exp(|x|)`` is finite, then ``exp(|x| - ln 2)`` (finite as long as
    the half is; the rounding of ``|x| - ln 2`` costs a few ulp there)."""
    limit = math.log(3.4028234663852886e38 if ax.dtype is DType.f32 else 1.7976931348623157e308)
    return g.where(g.binary("lt", ax, _s(g, ax, limit)),
                   g.binary("mul", g.unary("exp", ax), _s(g, ax, 0.5)),
                   g.unary("exp", g.binary("sub", ax, _s(g, ax, _LN2))))


@_half_wide
def _sinh(g: Graph, x: Node) -> Node:
    # Near 0 the difference of expm1s keeps every digit; past 1, e^|x| / 2
    # less e^-|x| / 2.
    ax = g.unary("abs", x)
    small = g.binary("mul", g.binary("sub", g.unary("expm1", x),
                                     g.unary("expm1", g.unary("neg", x))), _s(g, x, 0.5))
    large = g.binary("sub", _half_exp(g, ax),
                     g.binary("mul", g.unary("exp", g.unary("neg", ax)), _s(g, x, 0.5)))
    return g.where(g.binary("lt", ax, _s(g, x, 1.0)), small,
                   g.binary("mul", g.unary("sign", x), large))


@_half_wide
def _cosh(g: Graph, x: Node) -> Node:
    ax = g.unary("abs", x)
    return g.binary("add", _half_exp(g, ax),
                    g.binary("mul", g.unary("exp", g.unary("neg", ax)), _s(g, x, 0.5)))


@_half_wide
def _tan(g: Graph, x: Node) -> Node:
    return g.binary("div", g.unary("sin", x), g.unary("cos", x))


@_half_wide
def _atan(g: Graph, x: Node) -> Node:
    return g.binary("atan2", x, _s(g, x, 1.0))


def _one_minus_square_root(g: Graph, x: Node) -> Node:
    """``sqrt((1 - x) * (1 + x))``: exact near +-1, where ``1 - x*x`` is not."""
    return g.unary("sqrt", g.binary("mul", g.binary("sub", _s(g, x, 1.0), x),
                                    g.binary("add", _s(g, x, 1.0), x)))


@_half_wide
def _asin(g: Graph, x: Node) -> Node:
    return g.binary("atan2", x, _one_minus_square_root(g, x))


@_half_wide
def _acos(g: Graph, x: Node) -> Node:
    return g.binary("atan2", _one_minus_square_root(g, x), x)


@_half_wide
def _asinh(g: Graph, x: Node) -> Node:
    # asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); log|x| + ln 2 where
    # x^2 would overflow.
    ax = g.unary("abs", x)
    sq = g.unary("square", ax)
    mid = g.unary("log1p", g.binary("add", ax, g.binary(
        "div", sq, g.binary("add", _s(g, x, 1.0),
                            g.unary("sqrt", g.binary("add", _s(g, x, 1.0), sq))))))
    far = g.binary("add", g.unary("log", ax), _s(g, x, _LN2))
    return g.binary("mul", g.unary("sign", x), g.where(_big(g, ax), far, mid))


@_half_wide
def _acosh(g: Graph, x: Node) -> Node:
    # acosh x = log1p(t + sqrt(t * (t + 2))), t = x - 1 (exact near 1);
    # log x + ln 2 where t * t would overflow; NaN below 1.
    t = g.binary("sub", x, _s(g, x, 1.0))
    mid = g.unary("log1p", g.binary("add", t, g.unary(
        "sqrt", g.binary("mul", t, g.binary("add", t, _s(g, x, 2.0))))))
    far = g.binary("add", g.unary("log", x), _s(g, x, _LN2))
    return g.where(g.binary("ge", x, _s(g, x, 1.0)), g.where(_big(g, x), far, mid),
                   _s(g, x, math.nan))


@_half_wide
def _atanh(g: Graph, x: Node) -> Node:
    # 0.5 * (log1p(x) - log1p(-x)): each term exact to an ulp of itself (1 - x
    # is exact near 1); +-inf at +-1, NaN beyond.
    return g.binary("mul", _s(g, x, 0.5), g.binary("sub", g.unary("log1p", x),
                                                    g.unary("log1p", g.unary("neg", x))))


@_half_wide
def _cbrt(g: Graph, x: Node) -> Node:
    ax = g.unary("abs", x)
    root = g.binary("pow", ax, _s(g, x, 1.0 / 3.0))
    # pow rounds cubes of small integers a little off: one Newton step.
    root = g.binary("sub", root, g.binary("div", g.binary(
        "sub", g.binary("mul", g.unary("square", root), root), ax),
        g.binary("mul", _s(g, x, 3.0), g.unary("square", root))))
    fixed = g.where(g.binary("gt", ax, _s(g, x, 0.0)), root, ax)  # 0 (and NaN, inf) as is
    fixed = g.where(g.binary("lt", ax, _s(g, x, math.inf)), fixed, ax)
    return g.binary("mul", g.unary("sign", x), fixed)


#: The unary math these functions add, by name (JAX's primitive names).
COMPOSITE_UNARY: dict[str, Callable[[Graph, Node], Node]] = {
    "sinh": _sinh, "cosh": _cosh, "tan": _tan, "atan": _atan, "asin": _asin, "acos": _acos,
    "asinh": _asinh, "acosh": _acosh, "atanh": _atanh, "cbrt": _cbrt,
}


def unary(g: Graph, op: str, x: Node) -> Node:
    """``op(x)`` for an op of :data:`COMPOSITE_UNARY`."""
    return COMPOSITE_UNARY[op](g, x)


def is_finite(g: Graph, x: Node) -> Node:
    """Neither infinite nor NaN (bool); integers are always finite."""
    if not x.dtype.is_float:
        return g.binary("eq", x, x)
    return g.binary("lt", g.unary("abs", x), g.scalar(math.inf, x.dtype))


def total_order_key(g: Graph, x: Node) -> Node:
    """An integer whose signed order is IEEE 754's total order of ``x``
    (``-NaN < -inf < ... < -0 < +0 < ... < inf < NaN``): the bits, with the
    magnitude bits of negative values flipped. Integers are their own key;
    half types go through float32 (exact, sign and NaN kept)."""
    if not x.dtype.is_float:
        return x
    if x.dtype.is_half:
        x = g.cast(x, DType.f32)
    it, ebits, mbits = _LAYOUT[x.dtype]
    width = 1 + ebits + mbits
    bits = g.bitcast(x, it)
    sign = g.binary("ashr", bits, g.scalar(width - 1, it))  # all ones for negatives
    return g.binary("xor", bits, g.binary("and", sign, g.scalar((1 << (width - 1)) - 1, it)))


_LAYOUT = {DType.f32: (DType.i32, 8, 23), DType.f64: (DType.i64, 11, 52)}


def reduce_precision(g: Graph, x: Node, exponent_bits: int, mantissa_bits: int) -> Node:
    """XLA's ``ReducePrecision``: ``x`` rounded to ``mantissa_bits`` of
    mantissa (to nearest, ties to even) and to the range of
    ``exponent_bits`` of exponent (overflow to +-inf, values at or below the
    smallest normal exponent to +-0), kept in ``x``'s type; NaN stays NaN.
    Half types are widened to float32 and rounded back
    (exact: the result has no more bits than they)."""
    _float(x, "reduce_precision")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise GraphError("reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0")
    if x.dtype.is_half:
        return g.cast(reduce_precision(g, g.cast(x, DType.f32), exponent_bits, mantissa_bits),
                      x.dtype)
    it, ebits, mbits = _LAYOUT[x.dtype]
    width = 1 + ebits + mbits

    def c(v: int) -> Node:
        v &= (1 << width) - 1  # the pattern, as the signed integer of that width
        return g.scalar(v - (1 << width) if v >> (width - 1) else v, it)

    bits = g.bitcast(x, it)
    out = bits
    if mantissa_bits < mbits:
        shift = mbits - mantissa_bits
        last = 1 << shift  # the lowest mantissa bit kept
        odd = g.binary("and", g.binary("lshr", out, c(shift)), c(1))
        bias = g.binary("add", odd, c((last >> 1) - 1))
        out = g.binary("and", g.binary("add", out, bias), c(~(last - 1)))
    if exponent_bits < ebits:
        bias = (1 << (ebits - 1)) - 1
        reduced = (1 << (exponent_bits - 1)) - 1
        exp_mask = ((1 << ebits) - 1) << mbits
        sign = g.binary("and", out, c(1 << (width - 1)))
        exponent = g.binary("and", out, c(exp_mask))
        # The exponent field is unsigned: compared as such through a shift
        # down to its low bits.
        field = g.binary("lshr", exponent, c(mbits))
        over = g.binary("gt", field, c(bias + reduced))
        under = g.binary("le", field, c(bias - reduced))
        out = g.where(over, g.binary("or", sign, c(exp_mask)), g.where(under, sign, out))
    # A NaN would lose its mantissa bits to the rounding: kept as it is.
    return g.where(g.binary("ne", x, x), x, g.bitcast(out, x.dtype))


# -- random numbers -----------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment
_STREAM = 0xD1B54A32D192ED03  # spreads the streams of one call's random ops


def _i64(v: int) -> int:
    """``v`` modulo 2**64, as a signed 64-bit value."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _random_bits(g: Graph, shape: tuple[Dim, ...], seed: Node, stream: int) -> Node:
    """64 random bits per element of ``shape``: splitmix64's output for the
    counter ``seed + stream * C + (index + 1) * golden`` (``index`` the
    element's row-major position; i64 arithmetic wraps)."""
    def c(v: int) -> Node:
        return g.scalar(_i64(v), DType.i64)

    index = g.reshape(g.iota((shape_numel(shape),), 0, DType.i64), shape)
    key = g.binary("add", g.cast(seed, DType.i64), c(stream * _STREAM))
    z = g.binary("add", key, g.binary("mul", g.binary("add", index, c(1)), c(_GOLDEN)))
    for shift, mul in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        z = g.binary("mul", g.binary("xor", z, g.binary("lshr", z, c(shift))), c(mul))
    return g.binary("xor", z, g.binary("lshr", z, c(31)))


def uniform(g: Graph, shape: tuple[Dim, ...], seed: Node, stream: int, dtype: DType) -> Node:
    """Uniform in ``[0, 1)`` with as many random bits as ``dtype`` holds
    exactly (24 for float32, 53 for float64, 11 and 8 for float16 and
    bfloat16: never rounded up to 1)."""
    if not dtype.is_float or dtype.is_complex:
        raise GraphError(f"uniform random numbers of {dtype} are not supported")
    bits = {DType.f64: 53, DType.f16: 11, DType.bf16: 8}.get(dtype, 24)
    wide = DType.f64 if dtype is DType.f64 else DType.f32
    top = g.binary("lshr", _random_bits(g, shape, seed, stream),
                   g.scalar(64 - bits, DType.i64))
    u = g.binary("mul", g.cast(top, wide), g.scalar(2.0 ** -bits, wide))
    return g.cast(u, dtype)


def normal(g: Graph, shape: tuple[Dim, ...], seed: Node, stream: int, dtype: DType) -> Node:
    """Standard normal: Box-Muller of two uniforms of streams ``stream`` and
    ``stream + 1``, ``sqrt(-2 log(1 - u)) * cos(2 pi v)`` (``1 - u`` in
    ``(0, 1]``: no log of zero), in float32 for the half types."""
    wide = DType.f64 if dtype is DType.f64 else DType.f32
    u = uniform(g, shape, seed, stream, wide)
    v = uniform(g, shape, seed, stream + 1, wide)
    radius = g.unary("sqrt", g.binary("mul", g.unary("log", g.binary("sub", _s(g, u, 1.0), u)),
                                      _s(g, u, -2.0)))
    angle = g.binary("mul", v, _s(g, v, 2.0 * math.pi))
    return g.cast(g.binary("mul", radius, g.unary("cos", angle)), dtype)
