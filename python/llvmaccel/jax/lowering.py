"""jaxpr -> :class:`llvmaccel.graph.Graph`.

Nested ``jit``/``pjit``, ``closed_call``, ``remat``, ``custom_jvp_call`` and
``custom_vjp_call`` are inlined (the primal computation is kept). Every other
primitive is lowered by a rule of :data:`RULES`; an unknown primitive raises
:class:`UnsupportedPrimitive` naming it.

Shapes may be symbolic (jaxprs traced on :func:`jax.export.symbolic_shape`
dimensions): :func:`graph_dim` turns JAX's dimension expressions (sums and
products of dimension variables and constants, ``floordiv``, ``mod``,
``max``, ``min``, ``non_negative``) into graph sizes (:class:`SymExpr` over
symbols of the same names), which become run-time size arguments of the
kernel. ``dim_as_value`` (a dimension used as a number, as in ``mean`` over a
symbolic axis) is supported. A rule that needs a static size where the jaxpr
has a symbolic one raises :class:`UnsupportedPrimitive` saying which size is
symbolic.
"""

from __future__ import annotations

import ast
import functools
import operator
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import composite
from ..graph import (
    DTYPE_BY_NAME,
    Dim,
    DType,
    Graph,
    GraphError,
    Node,
    Sym,
    SymExpr,
    dim_op,
    promote,
)

__all__ = ["RULES", "UnsupportedPrimitive", "lower_jaxpr", "graph_dim", "graph_dtype",
           "is_symbolic"]


class UnsupportedPrimitive(GraphError):
    """A jaxpr uses a primitive (or a form of one) llvmaccel cannot lower.

    Attributes:
        primitive: The primitive's name.
    """

    def __init__(self, primitive: str, detail: str = "") -> None:
        self.primitive = primitive
        msg = f"JAX primitive {primitive!r} is not supported by llvmaccel"
        super().__init__(msg + (f": {detail}" if detail else ""))


_DTYPES = dict(DTYPE_BY_NAME)


def graph_dtype(dtype: Any, what: str = "value") -> DType:
    """The graph dtype of a numpy/JAX dtype (TypeError when unsupported); a
    PRNG key is its data (uint32 words, :func:`key_data_shape`)."""
    if is_key_dtype(dtype):
        return DType.u32
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    try:
        return _DTYPES[name]
    except KeyError:
        raise TypeError(f"{what}: dtype {name} is not supported by llvmaccel "
                        f"({', '.join(_DTYPES)})") from None


def is_key_dtype(dtype: Any) -> bool:
    """True for the dtype of typed PRNG keys (``jax.random.key``)."""
    import jax

    try:
        return bool(jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key))
    except TypeError:
        return False


def key_data_shape(aval: Any) -> tuple[int, ...]:
    """The shape of the data of a (typed) PRNG key array: the array's shape
    and the key's own (``(2,)`` for threefry)."""
    return tuple(aval.shape) + tuple(aval.dtype._impl.key_shape)


# ---------------------------------------------------------------------------
# Symbolic dimensions
# ---------------------------------------------------------------------------

_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_symbolic(d: Any) -> bool:
    """True when ``d`` (a JAX dimension or a graph size) is not a constant."""
    if isinstance(d, SymExpr):
        return True
    try:
        operator.index(d)
        return False
    except TypeError:
        return True


def graph_dim(d: Any) -> Dim:
    """A JAX dimension (an int or a symbolic dimension expression) as a graph
    size: an int, or a :class:`SymExpr` over symbols named like JAX's
    dimension variables.

    Symbolic expressions are read from their text (``str(d)``), the form
    :func:`jax.export.symbolic_shape` parses, so no private JAX structure is
    used. Raises ValueError for a form llvmaccel has no size operation for.
    """
    if isinstance(d, SymExpr):
        return d
    try:
        return operator.index(d)
    except TypeError:
        pass
    return _parse_dim(str(d))


def _shape(shape: Any) -> tuple[Dim, ...]:
    return tuple(graph_dim(d) for d in shape)


@functools.lru_cache(maxsize=4096)
def _parse_dim(text: str) -> Dim:
    # JAX writes powers as ``b^2``; ``**`` has the precedence the text means.
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot read the JAX dimension expression {text!r}") from None
    return _ast_dim(tree.body, text)


def _ast_dim(n: ast.AST, text: str) -> Dim:
    def sub(x: ast.AST) -> Dim:
        return _ast_dim(x, text)

    if isinstance(n, ast.Constant) and type(n.value) is int:
        return n.value
    if isinstance(n, ast.Name):
        if not _SYMBOL_NAME.match(n.id):
            raise ValueError(f"dimension variable {n.id!r} is not an ASCII identifier")
        return Sym(n.id)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        v = sub(n.operand)
        return dim_op("mul", v, -1) if isinstance(n.op, ast.USub) else v
    if isinstance(n, ast.BinOp):
        a = sub(n.left)
        if isinstance(n.op, ast.Pow):
            if not (isinstance(n.right, ast.Constant) and type(n.right.value) is int
                    and n.right.value >= 1):
                raise ValueError(f"unsupported power in the dimension expression {text!r}")
            out = a
            for _ in range(n.right.value - 1):
                out = dim_op("mul", out, a)
            return out
        b = sub(n.right)
        if isinstance(n.op, ast.Add):
            return dim_op("add", a, b)
        if isinstance(n.op, ast.Sub):
            return dim_op("add", a, dim_op("mul", b, -1))
        if isinstance(n.op, ast.Mult):
            return dim_op("mul", a, b)
        if isinstance(n.op, ast.FloorDiv):
            return dim_op("floordiv", a, b)
        if isinstance(n.op, ast.Mod):
            return dim_op("mod", a, b)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
        args = [sub(x) for x in n.args]
        if n.func.id in ("floordiv", "mod", "max", "min") and len(args) == 2:
            return dim_op(n.func.id, args[0], args[1])
        if n.func.id == "non_negative" and len(args) == 1:
            return dim_op("max", args[0], 0)
    raise ValueError(f"unsupported JAX dimension expression {text!r}")


def _static(primitive: str, d: Any, what: str) -> int:
    """``d`` as an int, or UnsupportedPrimitive saying that it is symbolic."""
    if is_symbolic(d):
        raise UnsupportedPrimitive(primitive, f"{what} is symbolic ({d}); this form needs a "
                                              "static size")
    return operator.index(d)


_INLINE = ("pjit", "jit", "closed_call", "core_call", "remat", "checkpoint",
           "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin")


def _inner_jaxpr(eqn: Any) -> tuple[Any, list[Any]]:
    """The jaxpr to inline for a call-like equation, and its constants."""
    p = eqn.params
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        if key in p:
            j = p[key]
            if hasattr(j, "jaxpr"):  # ClosedJaxpr
                return j.jaxpr, list(j.consts)
            return j, []
    raise UnsupportedPrimitive(eqn.primitive.name, "no inner jaxpr found")


def lower_jaxpr(closed: Any, g: Graph, args: list[Node]) -> list[Node]:
    """Lowers a ClosedJaxpr applied to ``args`` into ``g``; returns the outputs."""
    jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
    consts = list(getattr(closed, "consts", []))
    return _lower(jaxpr, consts, g, args)


def _lower(jaxpr: Any, consts: list[Any], g: Graph, args: list[Node]) -> list[Node]:
    from jax.extend.core import Literal

    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        if isinstance(v, Literal):
            return _literal(g, v.val, v.aval)
        return env[v]

    for v, c in zip(jaxpr.constvars, consts, strict=False):
        env[v] = _const(g, c)
    if len(args) != len(jaxpr.invars):
        raise GraphError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, a in zip(jaxpr.invars, args, strict=False):
        env[v] = a
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        ins = [read(v) for v in eqn.invars]
        if name in _INLINE:
            inner, inner_consts = _inner_jaxpr(eqn)
            n_const = eqn.params.get("num_consts", 0) if name.startswith("custom_vjp") else 0
            outs = _lower(inner, inner_consts, g, ins[n_const:] if len(ins) > len(
                inner.invars) else ins)
        else:
            rule = RULES.get(name)
            if rule is None:
                raise UnsupportedPrimitive(name)
            first = len(g.nodes)
            for ov in eqn.outvars:
                graph_dtype(ov.aval.dtype, f"result of {name}")
            try:
                out = rule(g, ins, eqn)
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                outs = [_fix(g, o, ov.aval) for o, ov in zip(outs, eqn.outvars, strict=False)]
            except UnsupportedPrimitive:
                raise
            except (GraphError, TypeError, ValueError, IndexError) as e:
                raise UnsupportedPrimitive(name, str(e)) from e
            g.note_source(name, source_line(eqn), first)
        for v, o in zip(eqn.outvars, outs, strict=False):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def source_line(eqn: Any) -> str:
    """``file.py:LINE (function)`` of the user code a jaxpr equation came
    from (JAX's innermost user frame), or "" where JAX keeps none."""
    try:
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info.traceback)
    except (ImportError, AttributeError, TypeError):
        return ""
    if frame is None:
        return ""
    return f"{os.path.basename(frame.file_name)}:{frame.start_line} ({frame.function_name})"


def register_custom_op(op: Any) -> None:
    """Lowers the JAX primitive of a :class:`~llvmaccel.custom_ops.CustomOp`
    inline (done when its primitive is made)."""

    def rule(g: Graph, ins: list[Node], eqn: Any) -> Node:
        it = iter(ins)
        return op.lower(g, [next(it) if p.is_array else int(eqn.params[p.name])
                            for p in op.params])

    RULES[op.name] = rule


def _fix(g: Graph, node: Node, aval: Any) -> Node:
    """Casts/reshapes a rule's result to the equation's abstract value."""
    node = g.cast(node, graph_dtype(aval.dtype), saturate=True)  # XLA's conversions
    shape = key_data_shape(aval) if is_key_dtype(aval.dtype) else _shape(aval.shape)
    if tuple(node.shape) != shape:
        if node.op == "scalar" or node.rank == 0 and len(shape) > 0:
            return g.broadcast_to(node, shape)
        node = g.reshape(node, shape)
    return node


def _literal(g: Graph, val: Any, aval: Any) -> Node:
    dt = graph_dtype(aval.dtype, "literal")
    arr = np.asarray(val)
    if arr.ndim == 0:
        return g.scalar(arr.item(), dt)
    return g.constant(arr, dt)


def _const(g: Graph, c: Any) -> Node:
    arr = np.asarray(c)
    dt = graph_dtype(arr.dtype, "constant")
    if arr.ndim == 0:
        return g.scalar(arr.item(), dt)
    return g.constant(arr, dt)


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

Rule = Callable[[Graph, list, Any], Any]
RULES: dict[str, Rule] = {}


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn
    return deco


_UNARY = {
    "neg": "neg", "abs": "abs", "exp": "exp", "exp2": "exp2", "log": "log", "log1p": "log1p",
    "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "logistic": "sigmoid",
    "erf": "erf", "erfc": "erfc", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
    "sign": "sign", "square": "square", "real": "real", "imag": "imag", "conj": "conj",
}

for _p, _fn in _UNARY.items():
    RULES[_p] = (lambda fn: lambda g, ins, eqn: g.unary(fn, ins[0]))(_fn)


@_rule("complex")
def _complex(g: Graph, ins: list, eqn: Any) -> Node:
    return g.complex(ins[0], ins[1])


@_rule("not")
def _not(g: Graph, ins: list, eqn: Any) -> Node:
    x = ins[0]
    if x.dtype is DType.bool:
        return g.unary("not", x)
    return g.binary("xor", x, g.scalar(-1, x.dtype))


@_rule("round")
def _round(g: Graph, ins: list, eqn: Any) -> Node:
    method = int(eqn.params.get("rounding_method", 0))
    x = ins[0]
    if method == 1:
        return g.unary("round", x)
    # Away from zero: trunc(x + copysign(0.5, x)) == sign(x) * floor(|x| + 0.5)
    a = g.unary("floor", g.binary("add", g.unary("abs", x), g.scalar(0.5, x.dtype)))
    return g.where(g.binary("lt", x, g.scalar(0, x.dtype)), g.unary("neg", a), a)


_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "maximum",
    "min": "minimum", "pow": "pow", "rem": "rem", "and": "and", "or": "or", "xor": "xor",
    "atan2": "atan2", "add_any": "add", "shift_left": "shl", "shift_right_logical": "lshr",
    "shift_right_arithmetic": "ashr",
}
# Integer division by zero gives XLA's values (div: -1, rem: the dividend).
for _p, _fn in _BINARY.items():
    RULES[_p] = (lambda fn: lambda g, ins, eqn: g.binary(fn, ins[0], ins[1],
                                                       int_zero_div="xla"))(_fn)
for _p in ("eq", "ne", "lt", "le", "gt", "ge"):
    RULES[_p] = (lambda fn: lambda g, ins, eqn: g.binary(fn, ins[0], ins[1]))(_p)


@_rule("integer_pow")
def _integer_pow(g: Graph, ins: list, eqn: Any) -> Node:
    x, y = ins[0], int(eqn.params["y"])
    if y == 0:
        return g.broadcast_to(g.scalar(1, x.dtype), x.shape)
    out, base, n = None, x, abs(y)
    while n:  # square and multiply
        if n & 1:
            out = base if out is None else g.binary("mul", out, base)
        n >>= 1
        if n:
            base = g.binary("mul", base, base)
    assert out is not None
    if y < 0:
        out = g.unary("reciprocal", out)
    return out


@_rule("convert_element_type", "copy", "copy_p", "optimization_barrier")
def _convert(g: Graph, ins: list, eqn: Any) -> Any:
    if eqn.primitive.name == "optimization_barrier":
        return ins
    return ins[0]  # the cast is made by _fix from the result's aval


@_rule("reduce_precision")
def _reduce_precision(g: Graph, ins: list, eqn: Any) -> Node:
    return composite.reduce_precision(g, ins[0], int(eqn.params["exponent_bits"]),
                                      int(eqn.params["mantissa_bits"]))


@_rule("lt_to", "le_to", "eq_to")
def _total_order_compare(g: Graph, ins: list, eqn: Any) -> Node:
    """Comparisons in IEEE 754's total order (``jnp.searchsorted``'s), on
    integer keys of the values (:func:`composite.total_order_key`)."""
    op = {"lt_to": "lt", "le_to": "le", "eq_to": "eq"}[eqn.primitive.name]
    a, b = ins
    dt = promote(a.dtype, b.dtype)
    return g.binary(op, composite.total_order_key(g, g.cast(a, dt)),
                    composite.total_order_key(g, g.cast(b, dt)))


@_rule("is_finite")
def _is_finite(g: Graph, ins: list, eqn: Any) -> Node:
    return composite.is_finite(g, ins[0])


for _p in composite.COMPOSITE_UNARY:
    RULES[_p] = (lambda op: lambda g, ins, eqn: composite.unary(g, op, ins[0]))(_p)


@_rule("bitcast_convert_type")
def _bitcast(g: Graph, ins: list, eqn: Any) -> Node:
    return g.bitcast(ins[0], graph_dtype(eqn.params["new_dtype"]))


@_rule("erf_inv")
def _erf_inv(g: Graph, ins: list, eqn: Any) -> Node:
    """XLA's ErfInv: Giles' polynomial approximations in ``w = -log1p(-x*x)``
    (two ranges), +-inf at +-1 (so ``jax.random.normal`` draws match)."""
    x = ins[0]
    if not x.dtype.is_float:
        raise GraphError("erf_inv needs a floating-point operand")
    if x.dtype is DType.f64:
        raise UnsupportedPrimitive("erf_inv", "float64 (only the float32 form is lowered)")
    dt = x.dtype
    x = g.cast(x, DType.f32)
    small = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
    large = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
    f32 = DType.f32
    w = g.unary("neg", g.unary("log1p", g.unary("neg", g.binary("mul", x, x))))
    lt = g.binary("lt", w, g.scalar(5.0, f32))
    w = g.where(lt, g.binary("sub", w, g.scalar(2.5, f32)),
                g.binary("sub", g.unary("sqrt", w), g.scalar(3.0, f32)))

    def coef(i: int) -> Node:
        return g.where(lt, g.scalar(small[i], f32), g.scalar(large[i], f32))

    p = coef(0)
    for i in range(1, len(small)):
        p = g.binary("add", coef(i), g.binary("mul", p, w))
    inf = g.binary("mul", x, g.scalar(float(np.finfo(np.float32).max), f32))
    out = g.where(g.binary("eq", g.unary("abs", x), g.scalar(1.0, f32)), inf,
                  g.binary("mul", p, x))
    return g.cast(out, dt)


# -- PRNG keys: a key is its uint32 data; the key primitives inline the
# implementation's own functions (seed, bits, split, fold_in), traced to
# jaxprs over that data, as JAX's lowering of them does.
def _prng_module() -> Any:
    try:
        from jax._src.random import prng
    except ImportError:  # older JAX
        from jax._src import prng  # type: ignore[no-redef]
    return prng


def _inline(g: Graph, fn: Callable[..., Any], ins: list[Node], name: str) -> list[Node]:
    """``fn`` traced over arrays like ``ins`` and lowered inline."""
    import jax

    specs = []
    for x in ins:
        if not all(isinstance(d, int) for d in x.shape):
            raise UnsupportedPrimitive(name, "keys and draws of symbolic shape")
        specs.append(jax.ShapeDtypeStruct(tuple(x.shape), x.dtype.np_dtype))
    closed = jax.make_jaxpr(fn)(*specs)
    return _lower(closed.jaxpr, list(closed.consts), g, ins)


def _key_impl(eqn: Any) -> Any:
    return eqn.invars[0].aval.dtype._impl


@_rule("random_wrap", "random_unwrap")
def _random_wrap(g: Graph, ins: list, eqn: Any) -> Node:
    return ins[0]


@_rule("random_seed")
def _random_seed(g: Graph, ins: list, eqn: Any) -> list[Node]:
    prng = _prng_module()
    impl = eqn.params["impl"]
    return _inline(g, prng.iterated_vmap_unary(ins[0].rank, impl.seed), ins, "random_seed")


@_rule("random_bits")
def _random_bits(g: Graph, ins: list, eqn: Any) -> list[Node]:
    prng, impl = _prng_module(), _key_impl(eqn)
    bw, shape = int(eqn.params["bit_width"]), tuple(eqn.params["shape"])
    fn = prng.iterated_vmap_unary(eqn.invars[0].aval.ndim,
                                  lambda k: impl.random_bits(k, bw, shape))
    return _inline(g, fn, ins, "random_bits")


@_rule("random_split")
def _random_split(g: Graph, ins: list, eqn: Any) -> list[Node]:
    prng, impl = _prng_module(), _key_impl(eqn)
    shape = tuple(eqn.params["shape"])
    fn = prng.iterated_vmap_unary(eqn.invars[0].aval.ndim, lambda k: impl.split(k, shape))
    return _inline(g, fn, ins, "random_split")


@_rule("random_fold_in")
def _random_fold_in(g: Graph, ins: list, eqn: Any) -> list[Node]:
    prng, impl = _prng_module(), _key_impl(eqn)
    fn = prng.iterated_vmap_binary_bcast(tuple(eqn.invars[0].aval.shape),
                                         tuple(eqn.invars[1].aval.shape), impl.fold_in)
    return _inline(g, fn, ins, "random_fold_in")


@_rule("iota_2x32_shape")
def _iota_2x32_shape(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """The row-major position in ``shape`` as a uint64, in two uint32
    arrays: the high words, then the low words (PRNG counters)."""
    shape = tuple(_static("iota_2x32_shape", d, "the shape") for d in eqn.params["shape"])
    i64 = DType.i64
    lin = g.broadcast_to(g.scalar(0, i64), shape)
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        term = g.iota(shape, k, i64)
        lin = g.binary("add", lin, term if stride == 1 else
                       g.binary("mul", term, g.scalar(stride, i64)))
        stride *= shape[k]
    hi = g.cast(g.binary("lshr", lin, g.scalar(32, i64)), DType.u32)
    return [hi, g.cast(lin, DType.u32)]


@_rule("threefry2x32")
def _threefry2x32(g: Graph, ins: list, eqn: Any) -> list[Node]:
    """The Threefry-2x32 hash as JAX lowers it: uint32 adds, xors and
    rotates, its rounds unrolled (a few hundred elementwise ops, fused)."""
    try:
        from jax._src.random import threefry2x32 as tf
    except ImportError:  # older JAX
        from jax._src import prng as tf  # type: ignore[no-redef]
    shape = _broadcast_static(ins)
    ins = [g.broadcast_to(x, shape) for x in ins]
    fn = functools.partial(tf._threefry2x32_lowering, use_rolled_loops=False)
    return _inline(g, fn, ins, "threefry2x32")


def _broadcast_static(ins: list[Node]) -> tuple:
    rank = max(x.rank for x in ins)
    shape = [1] * rank
    for x in ins:
        for k, d in enumerate(x.shape):
            j = rank - x.rank + k
            if d != 1:
                shape[j] = d
    return tuple(shape)


@_rule("select_n")
def _select_n(g: Graph, ins: list, eqn: Any) -> Node:
    pred, cases = ins[0], ins[1:]
    if pred.dtype is DType.bool:
        return g.where(pred, cases[1], cases[0]) if len(cases) == 2 else cases[0]
    out = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        out = g.where(g.binary("eq", pred, g.scalar(k, pred.dtype)), cases[k], out)
    return out


@_rule("clamp")
def _clamp(g: Graph, ins: list, eqn: Any) -> Node:
    lo, x, hi = ins
    return g.binary("minimum", g.binary("maximum", x, lo), hi)


@_rule("stop_gradient")
def _identity(g: Graph, ins: list, eqn: Any) -> Node:
    return ins[0]


def _key_tail(eqn: Any) -> tuple[int, ...]:
    """The trailing data dims of a PRNG key operand (``(2,)`` for threefry
    keys; ``()`` for other arrays): structural ops on key arrays act on the
    leading dims of the data."""
    aval = eqn.invars[0].aval
    return tuple(aval.dtype._impl.key_shape) if is_key_dtype(aval.dtype) else ()


@_rule("broadcast_in_dim")
def _broadcast_in_dim(g: Graph, ins: list, eqn: Any) -> Node:
    x = ins[0]
    tail = _key_tail(eqn)
    shape = _shape(eqn.params["shape"]) + tail
    dims = tuple(eqn.params["broadcast_dimensions"])
    dims += tuple(len(shape) - len(tail) + k for k in range(len(tail)))
    if list(dims) != sorted(dims):
        order = sorted(range(len(dims)), key=lambda k: dims[k])
        x = g.permute(x, tuple(order))
        dims = tuple(sorted(dims))
    full = [1] * len(shape)
    for k, d in enumerate(dims):
        full[d] = x.shape[k]
    return g.broadcast_to(g.reshape(x, tuple(full)), shape)


@_rule("reshape")
def _reshape(g: Graph, ins: list, eqn: Any) -> Node:
    if eqn.params.get("dimensions") is not None:
        ins[0] = g.permute(ins[0], tuple(eqn.params["dimensions"]) + tuple(
            range(len(eqn.params["dimensions"]), ins[0].rank)))
    return g.reshape(ins[0], _shape(eqn.params["new_sizes"]) + _key_tail(eqn))


@_rule("squeeze", "expand_dims")
def _squeeze(g: Graph, ins: list, eqn: Any) -> Node:
    return g.reshape(ins[0], _shape(eqn.outvars[0].aval.shape) + _key_tail(eqn))


@_rule("transpose")
def _transpose(g: Graph, ins: list, eqn: Any) -> Node:
    perm = tuple(eqn.params["permutation"])
    return g.permute(ins[0], perm + tuple(range(len(perm), ins[0].rank)))


@_rule("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
def _cumulative(g: Graph, ins: list, eqn: Any) -> Node:
    fn = {"cumlogsumexp": "logaddexp"}.get(eqn.primitive.name, eqn.primitive.name[3:])
    return g.cumulative(fn, ins[0], int(eqn.params["axis"]), bool(eqn.params["reverse"]))


@_rule("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
       "argmax", "argmin")
def _reduce(g: Graph, ins: list, eqn: Any) -> Node:
    name = eqn.primitive.name
    fn = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
          "reduce_prod": "prod", "reduce_and": "all", "reduce_or": "any",
          "argmax": "argmax", "argmin": "argmin"}[name]
    x = ins[0]
    axes = tuple(eqn.params["axes"])
    if not axes:
        return x
    dt = graph_dtype(eqn.outvars[0].aval.dtype)
    if fn in ("sum", "prod"):
        return g.reduce(fn, x, axes, dtype=dt)
    if fn in ("max", "min") and x.dtype is DType.bool:
        fn = "any" if fn == "max" else "all"
    return g.reduce(fn, x, axes)


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    return tuple(inv)


def _permute(g: Graph, x: Node, perm: tuple[int, ...]) -> Node:
    return x if perm == tuple(range(len(perm))) else g.permute(x, perm)


@_rule("conv_general_dilated")
def _conv_general_dilated(g: Graph, ins: list, eqn: Any) -> Node:
    """Convolution in any layout: operands permuted to [N, C, *spatial] and
    [O, I, *kernel], the result permuted back to the output's layout; an
    ``lhs_dilation`` (``lax.conv_transpose``) is the graph's own."""
    p = eqn.params
    if p["batch_group_count"] != 1:
        raise GraphError("conv_general_dilated with batch_group_count is not supported")
    dn = p["dimension_numbers"]
    x = _permute(g, ins[0], tuple(dn.lhs_spec))
    w = _permute(g, ins[1], tuple(dn.rhs_spec))
    y = g.conv(x, w, None, tuple(p["window_strides"]),
               tuple((int(lo), int(hi)) for lo, hi in p["padding"]),
               tuple(p["rhs_dilation"]), int(p["feature_group_count"]),
               lhs_dilation=tuple(int(d) for d in p["lhs_dilation"]))
    y = _permute(g, y, _inverse(tuple(dn.out_spec)))
    dt = graph_dtype(eqn.outvars[0].aval.dtype)
    return y if y.dtype is dt else g.cast(y, dt)


@_rule("reduce_window_max", "reduce_window_sum")
def _reduce_window(g: Graph, ins: list, eqn: Any) -> Node:
    """Max or sum over sliding windows: the windowed dims become the spatial
    dims of a pooling over [the other dims merged, 1, *windowed dims]."""
    p = eqn.params
    x = ins[0]
    if any(d != 1 for d in p["base_dilation"]):
        raise GraphError("reduce_window with base_dilation is not supported")
    wd, ws, wdil = p["window_dimensions"], p["window_strides"], p["window_dilation"]
    pads = [tuple(int(v) for v in q) for q in p["padding"]]
    spatial = [d for d in range(x.rank)
               if (wd[d], ws[d], wdil[d], pads[d]) != (1, 1, 1, (0, 0))]
    if not spatial:
        return x
    batch = [d for d in range(x.rank) if d not in spatial]
    perm = tuple(batch + spatial)
    merged: Any = 1
    for d in batch:
        merged = dim_op("mul", merged, x.shape[d])
    xr = g.reshape(_permute(g, x, perm), (merged, 1, *(x.shape[d] for d in spatial)))
    is_max = eqn.primitive.name == "reduce_window_max"
    y = g.pool(xr, "max" if is_max else "avg", tuple(wd[d] for d in spatial),
               tuple(ws[d] for d in spatial), tuple(pads[d] for d in spatial),
               tuple(wdil[d] for d in spatial), divisor=None if is_max else 1)
    y = g.reshape(y, tuple(x.shape[d] for d in batch) + tuple(y.shape[2:]))
    return _permute(g, y, _inverse(perm))


@_rule("dot_general")
def _dot_general(g: Graph, ins: list, eqn: Any) -> Node:
    lhs, rhs = ins
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out_dt = graph_dtype(eqn.outvars[0].aval.dtype)
    if not out_dt.is_float:
        # Integer and complex dots: multiply and sum (a complex sum carries
        # its accumulator in a phi of a struct, which accel-phi-decompose
        # splits so that the loop vectorizes).
        return _int_dot(g, lhs, rhs, lc, rc, lb, rb, out_dt)
    lhs, rhs = g.cast(lhs, out_dt), g.cast(rhs, out_dt)
    lf = [d for d in range(lhs.rank) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.rank) if d not in rc and d not in rb]
    bshape = [lhs.shape[d] for d in lb]
    m = _prod([lhs.shape[d] for d in lf])
    n = _prod([rhs.shape[d] for d in rf])
    k = _prod([lhs.shape[d] for d in lc])
    a = g.reshape(g.permute(lhs, tuple(lb) + tuple(lf) + tuple(lc)), (*bshape, m, k))
    b = g.reshape(g.permute(rhs, tuple(rb) + tuple(rc) + tuple(rf)), (*bshape, k, n))
    if not bshape:
        a, b = g.reshape(a, (m, k)), g.reshape(b, (k, n))
    out = g.matmul(a, b)
    return g.reshape(out, (*bshape, *[lhs.shape[d] for d in lf], *[rhs.shape[d] for d in rf]))


def _int_dot(g: Graph, lhs: Node, rhs: Node, lc: Any, rc: Any, lb: Any, rb: Any,
             dt: DType) -> Node:
    lf = [d for d in range(lhs.rank) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.rank) if d not in rc and d not in rb]
    nb, nl, nr, nk = len(lb), len(lf), len(rf), len(lc)
    # Both as [batch..., lfree..., rfree..., contract...] then multiply and sum.
    a = g.permute(g.cast(lhs, dt), tuple(lb) + tuple(lf) + tuple(lc))
    a = g.reshape(a, tuple(a.shape[:nb + nl]) + (1,) * nr + tuple(a.shape[nb + nl:]))
    b = g.permute(g.cast(rhs, dt), tuple(rb) + tuple(rf) + tuple(rc))
    b = g.reshape(b, tuple(b.shape[:nb]) + (1,) * nl + tuple(b.shape[nb:]))
    prod = g.binary("mul", a, b)
    return g.reduce("sum", prod, tuple(range(nb + nl + nr, nb + nl + nr + nk)), dtype=dt)


def _prod(dims: list) -> Any:
    out: Any = 1
    for d in dims:
        out = dim_op("mul", out, d)
    return out


@_rule("iota")
def _iota(g: Graph, ins: list, eqn: Any) -> Node:
    shape = _shape(eqn.params["shape"])
    return g.iota(shape, int(eqn.params["dimension"]), graph_dtype(eqn.params["dtype"]))


@_rule("split")
def _split(g: Graph, ins: list, eqn: Any) -> list:
    x, axis = ins[0], int(eqn.params["axis"])
    outs: list[Node] = []
    start: Dim = 0
    for size in eqn.params["sizes"]:
        stop = dim_op("add", start, graph_dim(size))
        outs.append(g.slice(x, axis, start, stop, 1))
        start = stop
    return outs


@_rule("stack")
def _stack(g: Graph, ins: list, eqn: Any) -> Node:
    axis = int(eqn.params["axis"])
    parts = [g.reshape(x, tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:])) for x in ins]
    return g.concat(parts, axis) if len(parts) > 1 else parts[0]


@_rule("concatenate")
def _concatenate(g: Graph, ins: list, eqn: Any) -> Node:
    return g.concat(list(ins), int(eqn.params["dimension"]))


@_rule("slice")
def _slice(g: Graph, ins: list, eqn: Any) -> Node:
    x = ins[0]
    starts, limits = eqn.params["start_indices"], eqn.params["limit_indices"]
    strides = eqn.params.get("strides") or (1,) * len(starts)
    for d in range(len(starts)):  # a key's data dims are whole
        x = g.slice(x, d, graph_dim(starts[d]), graph_dim(limits[d]),
                    _static("slice", strides[d], f"the stride of dim {d}"))
    return x


@_rule("dynamic_slice")
def _dynamic_slice(g: Graph, ins: list, eqn: Any) -> Node:
    x, starts = ins[0], ins[1:]
    in_shape = eqn.invars[0].aval.shape
    for d, (s, jsize) in enumerate(zip(starts, eqn.params["slice_sizes"], strict=False)):
        # The largest valid start, computed by JAX (``b - b`` is 0 there).
        room = graph_dim(in_shape[d] - jsize)
        size = graph_dim(jsize)
        if s.op == "scalar":
            lo = _clamp_start(int(s.attrs["value"]), room)
            x = g.slice(x, d, lo, dim_op("add", size, lo), 1)
            continue
        # Clamp the start like XLA, then gather the window along d.
        s = start_index(g, s)
        s = g.binary("minimum", g.binary("maximum", s, g.scalar(0, DType.i64)),
                     _dim_value(g, room))
        idx = g.binary("add", g.iota((size,), 0, DType.i64), s)
        x = g.take(x, idx, d, "clip")
    return x


@_rule("pad")
def _pad(g: Graph, ins: list, eqn: Any) -> Node:
    x, value = ins
    if value.op != "scalar":
        raise UnsupportedPrimitive("pad", "the padding value must be a constant")
    config = eqn.params["padding_config"]
    pads, inner = [], []
    for d, (lo, hi, interior) in enumerate(config):
        inner.append(_static("pad", interior, f"the interior padding of dim {d}"))
        pads.append((_static("pad", lo, f"the low padding of dim {d}"),
                     _static("pad", hi, f"the high padding of dim {d}")))
    # Interior padding first (lax.associative_scan's), then the edges; a
    # negative edge crops the padded result.
    x = g.pad(x, tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads), value.attrs["value"],
              tuple(inner))
    for d, (lo, hi) in enumerate(pads):
        if lo < 0 or hi < 0:
            x = g.slice(x, d, max(-lo, 0), dim_op("add", x.shape[d], -max(-hi, 0)), 1)
    return x


def _index_mode(p: dict) -> str:
    """A gather's or scatter's ``GatherScatterMode`` as its upper-case name."""
    return str(p.get("mode")).rsplit(".", 1)[-1].upper()


def _fill_value(p: dict, x: Node) -> Any:
    """What a FILL_OR_DROP gather gives out of range: its ``fill_value``,
    else NaN for inexact types, True for bool, the lowest integer."""
    fill = p.get("fill_value")
    if fill is not None:
        return fill
    if x.dtype.is_float or x.dtype.is_complex:
        return float("nan")
    return True if x.dtype is DType.bool else -(1 << (x.dtype.itemsize * 8 - 1))


@_rule("gather")
def _gather(g: Graph, ins: list, eqn: Any) -> Node:
    x, idx = ins
    p = eqn.params
    dn = p["dimension_numbers"]
    if getattr(dn, "operand_batching_dims", ()) or getattr(dn, "start_indices_batching_dims", ()):
        return _gather_along_axis(g, x, idx, eqn)
    sim = tuple(dn.start_index_map)
    collapsed = tuple(dn.collapsed_slice_dims)
    offset_dims = tuple(dn.offset_dims)
    sizes = _shape(p["slice_sizes"])
    mode = _index_mode(p)
    if idx.rank == 1 and idx.shape[0] == len(sim) and not collapsed and \
            offset_dims == tuple(range(x.rank)) and "FILL" not in mode:
        # One window (what slicing with symbolic bounds gives: x[1:], x[3:4]).
        return _gather_window(g, x, idx, sim, eqn)
    # Indexed dims of slice size 1 kept as offset dims of size 1 (the gather
    # jnp.searchsorted and jnp.interp make: x[i] with a trailing 1): gathered
    # as if collapsed, the 1s put back by a reshape.
    kept = tuple(d for d in sim if d not in collapsed)
    full_shape = None
    if kept and set(collapsed) <= set(sim) and all(sizes[d] == 1 for d in sim):
        operand_offsets = [d for d in range(x.rank) if d not in collapsed]
        dropped = [offset_dims[k] for k, d in enumerate(operand_offsets) if d in kept]
        offset_dims = tuple(q - sum(1 for r in dropped if r < q)
                            for k, q in enumerate(offset_dims) if operand_offsets[k] not in kept)
        collapsed = tuple(sorted(sim))
        full_shape = _shape(eqn.outvars[0].aval.shape)
    if idx.dtype not in (DType.i32, DType.i64):  # unsigned or narrow indices: as i64
        idx = g.cast(idx, DType.i64)
    whole = all(sizes[d] == x.shape[d] for d in range(x.rank) if d not in sim)
    if not sim or collapsed != sim or any(sizes[d] != 1 for d in sim) or not whole or \
            list(sim) != list(range(sim[0], sim[0] + len(sim))):
        sym = [f"dim {d} ({s})" for d, s in enumerate(p["slice_sizes"]) if is_symbolic(s)]
        raise UnsupportedPrimitive(
            "gather", "only gathers of whole slices along adjacent axes (x[idx], x[i, j], "
                      "take) are supported" + (f"; the slice sizes of {', '.join(sym)} are "
                                               "symbolic" if sym else ""))
    if idx.rank == 0 or _static("gather", idx.shape[-1], "the index vector dim") != len(sim):
        raise UnsupportedPrimitive("gather", "the index vector dim must be the last one")
    fill: Any = 0
    if "FILL" in mode:
        m = "fill"
        fill = _fill_value(p, x)
    else:  # CLIP, PROMISE_IN_BOUNDS (clamped like XLA on CPU)
        m = "clip"
    batch = tuple(idx.shape[:-1])
    axis = sim[0]
    if len(sim) == 1:
        ind = g.reshape(idx, batch)
    else:  # x[i, j]: one index into the merged axes
        i64 = DType.i64
        lin: Any = None
        ok: Any = None
        for t, d in enumerate(sim):
            n = _static("gather", x.shape[d], f"dim {d} of the operand, indexed by x[i, j],")
            comp = g.cast(g.reshape(g.slice(idx, idx.rank - 1, t, t + 1, 1), batch), i64)
            if m == "clip":
                comp = g.binary("minimum", g.binary("maximum", comp, g.scalar(0, i64)),
                                g.scalar(n - 1, i64))
            else:
                inb = g.binary("and", g.binary("ge", comp, g.scalar(0, i64)),
                               g.binary("lt", comp, g.scalar(n, i64)))
                ok = inb if ok is None else g.binary("and", ok, inb)
            lin = comp if lin is None else g.binary("add", g.binary("mul", lin, g.scalar(n, i64)),
                                                    comp)
        if ok is not None:
            lin = g.where(ok, lin, g.scalar(-1, i64))
        ind = lin
        merged = 1
        for d in sim:
            merged *= _static("gather", x.shape[d], f"dim {d} of the operand")
        x = g.reshape(x, tuple(x.shape[:axis]) + (merged,) + tuple(x.shape[sim[-1] + 1:]))
    out = g.take(x, ind, axis, m, fill)
    # take gives x.shape[:axis] + batch + x.shape[axis+1:]; JAX puts the
    # offset (slice) dims at offset_dims and the batch dims elsewhere in order.
    nb = ind.rank
    cur = list(range(axis)) + [None] * nb + list(range(axis + 1, x.rank))
    out_rank = nb + len(offset_dims)
    perm: list[int] = []
    off_src = [k for k, c in enumerate(cur) if c is not None]
    bat_src = [k for k, c in enumerate(cur) if c is None]
    oi = bi = 0
    for d in range(out_rank):
        if d in offset_dims:
            perm.append(off_src[oi])
            oi += 1
        else:
            perm.append(bat_src[bi])
            bi += 1
    out = g.permute(out, tuple(perm))
    return out if full_shape is None else g.reshape(out, full_shape)


def _gather_along_axis(g: Graph, x: Node, idx: Node, eqn: Any) -> Node:
    """A gather whose batching dims are every operand dim but one axis, in
    the index's own positions (``jnp.take_along_axis``): ``torch.gather``
    along that axis, out-of-range indices clamped (CLIP) or giving the fill
    value (FILL_OR_DROP)."""
    p = eqn.params
    dn = p["dimension_numbers"]
    sim, r = tuple(dn.start_index_map), x.rank
    axis = sim[0] if len(sim) == 1 else -1
    others = tuple(d for d in range(r) if d != axis)
    if not (len(sim) == 1 and tuple(dn.collapsed_slice_dims) == sim and not dn.offset_dims
            and tuple(dn.operand_batching_dims) == others
            and tuple(dn.start_indices_batching_dims) == others and idx.rank == r + 1
            and idx.shape[-1] == 1 and all(int(s) == 1 for s in p["slice_sizes"])):
        raise UnsupportedPrimitive("gather", "batching dims other than take_along_axis's")
    ind = g.reshape(idx, tuple(idx.shape[:-1]))
    mode = _index_mode(p)
    out = g.gather(x, ind, axis, "clip")
    if "FILL" not in mode:
        return out
    n = _static("gather", x.shape[axis], f"dim {axis} of the operand")
    inside = g.binary("and", g.binary("ge", ind, g.scalar(0, ind.dtype)),
                      g.binary("lt", ind, g.scalar(n, ind.dtype)))
    return g.where(inside, out, g.scalar(_fill_value(p, x), x.dtype))


_SCATTER = {"scatter": "set", "scatter-add": "add", "scatter-mul": "mul",
            "scatter-min": "min", "scatter-max": "max"}


@_rule(*_SCATTER)
def _scatter(g: Graph, ins: list, eqn: Any) -> Node:
    """XLA's scatter (``x.at[...].set/add/multiply/min/max``): for every
    element ``u`` of the updates, the operand position is the scatter index
    vector ``S`` of ``u``'s scatter dims plus ``u``'s window offset, per
    operand dim. Out-of-bounds windows are skipped (FILL_OR_DROP, and
    PROMISE_IN_BOUNDS, where XLA skips them too) or clamped into the operand
    (CLIP), a whole window at a time as XLA does."""
    x, idx, upd = ins
    name = eqn.primitive.name
    p = eqn.params
    dn = p["dimension_numbers"]
    # Batching dims (vmap of a scatter, the gradient of take_along_axis or
    # top_k): operand dim obd[k] is the position along the indices' dim
    # sbd[k], element for element.
    obd = tuple(getattr(dn, "operand_batching_dims", ()))
    sbd = tuple(getattr(dn, "scatter_indices_batching_dims", ()))
    windows = tuple(dn.update_window_dims)
    inserted = tuple(dn.inserted_window_dims)
    sdims = tuple(dn.scatter_dims_to_operand_dims)
    mode = _index_mode(p)
    i64 = DType.i64
    ushape = tuple(upd.shape)
    # The index vector dim is the last one (jnp always puts it there).
    nvec = _static(name, idx.shape[-1], "the index vector dim") if idx.rank else 0
    if nvec != len(sdims):
        raise UnsupportedPrimitive(name, "the index vector dim must be the last one")
    batch = tuple(idx.shape[:-1])
    scatter_pos = [d for d in range(upd.rank) if d not in windows]
    if len(scatter_pos) != len(batch):
        raise UnsupportedPrimitive(name, "updates and indices disagree on the scatter dims")
    if any(b >= len(batch) for b in sbd):
        raise UnsupportedPrimitive(name, "a batching dim that is the index vector dim")
    # Operand dims that take a window offset, paired with the updates' window dims.
    window_of = dict(zip([d for d in range(x.rank) if d not in inserted and d not in obd],
                         windows, strict=True))

    def spread(node: Node) -> Node:
        """A node over the indices' batch dims, as one over the updates' shape."""
        shape = [1] * upd.rank
        for k, d in enumerate(scatter_pos):
            shape[d] = batch[k]
        return g.broadcast_to(g.reshape(node, tuple(shape)), ushape)

    starts: dict[int, Node] = {}
    fits: Node | None = None
    for k, d in enumerate(sdims):
        s = g.cast(g.reshape(g.slice(idx, idx.rank - 1, k, k + 1, 1), batch), i64)
        wsize = _static(name, ushape[window_of[d]], f"the window size of dim {d}") \
            if d in window_of else 1
        room = _dim_value(g, dim_op("add", x.shape[d], -wsize))  # the largest start
        if mode == "CLIP":
            s = g.binary("minimum", g.binary("maximum", s, g.scalar(0, i64)), room)
        else:
            ok = g.binary("and", g.binary("ge", s, g.scalar(0, i64)), g.binary("le", s, room))
            fits = ok if fits is None else g.binary("and", fits, ok)
        starts[d] = s
    indices: list[Node] = []
    dest: list[tuple[str, int]] = []
    for d in range(x.rank):
        if d in obd:
            dest.append(("index", len(indices)))
            indices.append(spread(g.iota(batch, sbd[obd.index(d)], i64)))
            continue
        if d not in starts:
            if d in window_of:
                dest.append(("iter", window_of[d]))
                continue
            pos = g.broadcast_to(g.scalar(0, i64), ushape)
        else:
            s = starts[d] if fits is None else g.where(fits, starts[d], _dim_value(g, x.shape[d]))
            pos = spread(s)
            if d in window_of:
                pos = g.binary("add", pos, g.iota(ushape, window_of[d], i64))
        dest.append(("index", len(indices)))
        indices.append(pos)
    return g.scatter(x, upd, indices, tuple(dest), _SCATTER[name],
                     "check" if mode == "CLIP" else "drop", name)


def _constant_value(g: Graph, node: Node) -> np.ndarray | None:
    """The value of a node made of constants only (a constant, or a scalar
    broadcast or reshaped to a static shape), else None."""
    if node.op == "constant":
        return g.constants[node.id]
    if node.op == "scalar":
        return np.asarray(node.attrs["value"])
    if node.op in ("broadcast", "reshape", "cast") and \
            all(isinstance(d, int) for d in node.shape):
        inner = _constant_value(g, node.inputs[0])
        if inner is None:
            return None
        if node.op == "broadcast":
            return np.broadcast_to(inner, node.shape)
        return inner.reshape(node.shape)
    return None


def _gather_window(g: Graph, x: Node, idx: Node, sim: tuple, eqn: Any) -> Node:
    """A gather of one window (one start index per dim of ``sim``, no
    collapsed dims): a slice per dim, or for a computed start a take of an
    iota. Starts are clamped like XLA, to ``[0, size - slice size]`` (a
    difference JAX computes, so ``b - (b - 1)`` is 1)."""
    in_shape = eqn.invars[0].aval.shape
    jsizes = eqn.params["slice_sizes"]
    consts = _constant_value(g, idx)
    i64 = DType.i64
    for d in range(x.rank):
        size = graph_dim(jsizes[d])
        room = graph_dim(in_shape[d] - jsizes[d])
        if d not in sim:
            x = g.slice(x, d, 0, size, 1)
            continue
        t = sim.index(d)
        if consts is not None:
            lo = _clamp_start(int(consts[t]), room)
            x = g.slice(x, d, lo, dim_op("add", size, lo), 1)
            continue
        s = start_index(g, g.reshape(g.slice(idx, 0, t, t + 1, 1), ()))
        s = g.binary("minimum", g.binary("maximum", s, g.scalar(0, i64)), _dim_value(g, room))
        x = g.take(x, g.binary("add", g.iota((size,), 0, i64), s), d, "clip")
    return x


def start_index(g: Graph, s: Node) -> Node:
    """A window start as an i64 scalar for clamping: a uint64 start beyond
    int64's range saturates to its largest value (XLA clamps starts as
    unsigned values; a plain cast would make them negative)."""
    if s.dtype is DType.u64:
        s = g.binary("minimum", s, g.scalar((1 << 63) - 1, DType.u64))
    return g.cast(s, DType.i64)


def _clamp_start(start: int, room: Dim) -> Dim:
    """A constant window start clamped to ``[0, room]`` like XLA (``room``,
    the operand size minus the window size, is >= 0 by JAX's checks)."""
    start = max(start, 0)
    if isinstance(room, int):
        return min(start, room)
    return 0 if start == 0 else dim_op("min", start, room)


def _dim_value(g: Graph, d: Dim) -> Node:
    """A size as an i64 scalar node: a constant, or for a symbolic size the
    count of a broadcast one (one small loop, computed once)."""
    if isinstance(d, int):
        return g.scalar(d, DType.i64)
    ones = g.broadcast_to(g.scalar(1, DType.i64), (d,))
    return g.reduce("sum", ones, (0,), dtype=DType.i64)


@_rule("dim_as_value")
def _dim_as_value(g: Graph, ins: list, eqn: Any) -> Node:
    return _dim_value(g, graph_dim(eqn.params["dim"]))


# Control flow and sorting (scan, while, cond, sort, top_k, rev) register
# their rules from their own module.
from . import control as _control  # noqa: E402,F401
