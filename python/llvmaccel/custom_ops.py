"""Custom ops declared once, used from PyTorch and JAX.

A domain kernel (a sparse matrix-vector product, a segment reduction) is
declared once with :func:`custom_op`: a name, a typed signature whose sizes
relate the arguments, a body, and optionally a reference implementation for
checking. The declaration becomes

- a ``torch.library`` op (``torch.ops.<namespace>.<name>``) with a fake
  implementation: it runs the compiled body eagerly, is lowered inline by
  ``torch.compile(backend="llvmaccel")`` (its loops sit in the same module as
  their producers and consumers, where accel-prefetch and the other passes
  see them), and is an opaque call under inductor;
- a JAX primitive with abstract evaluation, lowered inline by
  :func:`llvmaccel.jax.jit` and through ``jax.ffi`` inside :func:`jax.jit`;
- a plain function of numpy arrays.

Signature
---------
``"(indptr: i64[m + 1], indices: i64[nnz], values: f32[nnz], x: f32[n]) -> f32[m]"``:
array parameters ``name: dtype[dims]`` (dtypes ``f32``, ``f64``, ``i32``,
``i64``, ``bool``), integer parameters ``name: int``, one array result.
Sizes are integers or expressions over size variables with ``+``, ``-``,
``*`` and ``//``. Each variable is bound, in order, by the first integer
parameter of its name or the first size that is the variable alone or a
linear ``k*v + c``; every other size is checked at each call, before any
native code runs (ValueError naming the argument and the dim). The result's
sizes may use any bound variable.

Body
----
One function with the C signature ``void f(const T0 *arg0, ..., T *out,
int64_t v0, int64_t v1, ...)``: a pointer per array parameter, in order,
then the result's pointer, then every size variable as ``int64_t``, in the
order they are bound. It writes the whole result. A body returning
``int32_t`` instead may refuse its arguments by returning nonzero (indices
out of range): the call raises ValueError with the op's ``error`` text. Bodies are LLVM IR text
(``language="ir"``), C compiled by the clang of the LLVM release llvmaccel
uses (``language="c"``), or a Python function building the result from the
graph IR's own ops (``language="graph"``: ``body(g, *inputs, **sizes) ->
Node``). IR and C bodies are parsed, checked against the signature and
verified when declared.

A body is trusted like a C extension: it must stay within the buffers the
signature gives it. Indices read from arguments are the body's to check;
:meth:`CustomOp.check` runs it against the reference implementation.
"""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import VerifyError
from .graph import DType, Graph, GraphError, Node, SymExpr, dim_op

__all__ = ["CustomOp", "Param", "custom_op", "get", "registered"]

_DTYPES = {"f32": DType.f32, "f64": DType.f64, "i32": DType.i32, "i64": DType.i64,
           "bool": DType.bool, "float32": DType.f32, "float64": DType.f64,
           "int32": DType.i32, "int64": DType.i64}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")
_PARAM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z0-9_]+)\s*(?:\[(.*)\])?\s*$")

# A size expression: an int, a variable name, or (op, a, b) with op in
# "+", "-", "*", "//".
SizeExpr = int | str | tuple


@dataclass(frozen=True)
class Param:
    """One parameter or the result of a custom op's signature.

    Attributes:
        name: The parameter's name.
        dtype: Element type of an array; None for an integer parameter.
        dims: Size expressions of an array (empty for an integer).
        text: The sizes as written.
    """

    name: str
    dtype: DType | None
    dims: tuple[SizeExpr, ...]
    text: str = ""

    @property
    def is_array(self) -> bool:
        """True for an array parameter, False for an integer."""
        return self.dtype is not None


def _size_expr(text: str, where: str) -> SizeExpr:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"{where}: cannot parse size {text.strip()!r}") from None

    def conv(n: ast.AST) -> SizeExpr:
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and \
                not isinstance(n.value, bool) and n.value >= 0:
            return n.value
        if isinstance(n, ast.Name):
            return n.id
        if isinstance(n, ast.BinOp):
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}.get(type(n.op))
            if op is not None:
                return (op, conv(n.left), conv(n.right))
        raise ValueError(f"{where}: size {text.strip()!r}: only integers, names, "
                         "+, -, * and // are allowed")

    return conv(tree)


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _param(text: str, where: str) -> Param:
    m = _PARAM.match(text)
    if m is None:
        raise ValueError(f"{where}: expected 'name: dtype[sizes]' or 'name: int', "
                         f"got {text.strip()!r}")
    name, ty, dims = m.group(1), m.group(2), m.group(3)
    if ty == "int":
        if dims is not None:
            raise ValueError(f"{where}: an int parameter has no sizes")
        return Param(name, None, (), text.strip())
    if ty not in _DTYPES:
        raise ValueError(f"{where}: unknown dtype {ty!r} (one of f32, f64, i32, i64, bool)")
    exprs = tuple(_size_expr(d, f"{where} {name}") for d in _split_top(dims or ""))
    return Param(name, _DTYPES[ty], exprs, text.strip())


def parse_signature(sig: str) -> tuple[list[Param], Param]:
    """The parameters and result of a signature string (see the module doc).

    Raises:
        ValueError: The signature is malformed.
    """
    m = re.match(r"^\s*\((.*)\)\s*->\s*(.+?)\s*$", sig, re.S)
    if m is None:
        raise ValueError(f"signature must be '(params) -> result', got {sig!r}")
    params = [_param(p, "signature") for p in _split_top(m.group(1))]
    result = _param("out: " + m.group(2), "result")
    if not result.is_array:
        raise ValueError("the result must be an array")
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"signature: a parameter name is repeated ({', '.join(names)})")
    if not any(p.is_array for p in params):
        raise ValueError("signature: at least one array parameter is needed")
    return params, result


def _vars(e: SizeExpr) -> list[str]:
    if isinstance(e, str):
        return [e]
    if isinstance(e, tuple):
        return _vars(e[1]) + [v for v in _vars(e[2]) if v not in _vars(e[1])]
    return []


def _linear(e: SizeExpr) -> tuple[str, int, int] | None:
    """``e`` as ``k*v + c`` (k >= 1) over one variable, or None."""
    if isinstance(e, str):
        return e, 1, 0
    if not isinstance(e, tuple):
        return None
    op, a, b = e
    if op in ("+", "-") and isinstance(b, int):
        inner = _linear(a)
        if inner is not None:
            return inner[0], inner[1], inner[2] + (b if op == "+" else -b)
    if op == "+" and isinstance(a, int):
        inner = _linear(b)
        if inner is not None:
            return inner[0], inner[1], inner[2] + a
    if op == "*":
        for k, other in ((a, b), (b, a)):
            inner = _linear(other)
            if isinstance(k, int) and k >= 1 and inner is not None:
                return inner[0], inner[1] * k, inner[2] * k
    return None


class _Ints:
    """Size arithmetic on Python ints (and torch SymInts)."""

    @staticmethod
    def op(op: str, a: Any, b: Any) -> Any:
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "//": lambda: a // b}[op]()

    @staticmethod
    def same(a: Any, b: Any) -> bool:
        return bool(a == b)


class _Dims:
    """Size arithmetic on graph sizes (ints and SymExprs). Sizes it cannot
    prove equal are collected in ``checks``, for the kernel to compare at
    run time."""

    def __init__(self) -> None:
        self.checks: list[tuple[Any, Any]] = []

    @staticmethod
    def op(op: str, a: Any, b: Any) -> Any:
        if op == "-":
            if isinstance(b, int):
                op, b = "+", -b
            else:
                return dim_op("add", a, dim_op("mul", b, -1))
        if op == "+" and isinstance(b, int) and isinstance(a, SymExpr) and a.op == "add" \
                and isinstance(a.args[1], int):  # (x + c1) + c2
            return dim_op("add", a.args[0], a.args[1] + b)
        if op == "//" and isinstance(b, int) and isinstance(a, SymExpr) and a.op == "mul" \
                and a.args[1] == b:  # (x * k) // k
            return a.args[0]
        return dim_op({"+": "add", "*": "mul", "//": "floordiv"}[op], a, b)

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if str(a) != str(b):
            self.checks.append((a, b))
        return True


def _eval(e: SizeExpr, env: dict[str, Any], arith: Any) -> Any:
    if isinstance(e, int):
        return e
    if isinstance(e, str):
        return env[e]
    return arith.op(e[0], _eval(e[1], env, arith), _eval(e[2], env, arith))


@dataclass
class _Body:
    language: str
    function: str
    ir: str = ""
    build: Callable[..., Node] | None = None


_registry: dict[str, CustomOp] = {}
_registry_lock = threading.RLock()


class CustomOp:
    """A custom op: callable on numpy arrays, torch tensors and JAX arrays.

    Made by :func:`custom_op`. ``op(*args)`` runs the compiled body eagerly
    on numpy arrays, dispatches to ``torch.ops.<ns>.<name>`` for torch
    tensors and binds the JAX primitive for JAX arrays and tracers.

    Attributes:
        name: ``namespace::name``.
        params: The parameters, in order.
        result: The result.
        sizes: The size variables, in the order the body receives them.
        reference: The reference implementation (numpy), or None.
        error: The ValueError's text when a body returning i32 returns
            nonzero.
        language: The body's language (``"ir"``, ``"c"`` or ``"graph"``).
    """

    def __init__(self, name: str, signature: str, body: str | Callable[..., Node],
                 language: str, function: str | None,
                 reference: Callable[..., Any] | None,
                 error: str = "the body rejected its arguments") -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"custom op name must be 'namespace::name', got {name!r}")
        self.name = name
        self.namespace, self.opname = name.split("::")
        self.params, self.result = parse_signature(signature)
        self.signature = signature
        self.reference = reference
        self.error = error
        self._returns_status = False
        self.language = language
        self.sizes = self._size_order()
        self._binders = self._binding_plan()
        for v in _vars_of(self.result):
            if v not in self.sizes:
                raise ValueError(f"{name}: result size variable {v!r} is not bound by any "
                                 "parameter")
        self._body = self._make_body(body, language, function)
        self._lock = threading.RLock()
        self._compiled: dict[tuple, Any] = {}
        self._torch_lib: Any = None
        self._jax_primitive: Any = None
        self._vjp: Callable[..., Sequence[Any]] | None = None
        self._jax_vjps: dict[tuple, Callable[..., Any]] = {}

    def __repr__(self) -> str:
        return f"<llvmaccel.CustomOp {self.name}{self.signature[self.signature.index('('):]}>"

    # -- signature ----------------------------------------------------------
    def _size_order(self) -> list[str]:
        order: list[str] = []
        for p in self.params:
            for v in ([p.name] if not p.is_array else [v for d in p.dims for v in _vars(d)]):
                if v not in order:
                    order.append(v)
        return order

    def _binding_plan(self) -> list[tuple[str, int | None, int, int, int]]:
        """For each size variable: (var, param index, dim or -1 for an int
        parameter, k, c) of what binds it."""
        plan = []
        for v in self.sizes:
            found = None
            for i, p in enumerate(self.params):
                if not p.is_array and p.name == v:
                    found = (v, i, -1, 1, 0)
                    break
                for d, e in enumerate(p.dims):
                    lin = _linear(e)
                    if lin is not None and lin[0] == v:
                        found = (v, i, d, lin[1], lin[2])
                        break
                if found:
                    break
            if found is None:
                raise ValueError(f"{self.name}: size variable {v!r} appears only in "
                                 "expressions that cannot bind it (use it alone, or as "
                                 "k*v + c, in some size)")
            plan.append(found)
        return plan

    def bind(self, shapes: Sequence[Sequence[Any] | None], ints: Sequence[Any],
             arith: Any = _Ints) -> dict[str, Any]:
        """The size variables' values from the arrays' shapes (None for int
        parameters) and the int parameters' values (None for arrays).

        Raises:
            ValueError: A size does not fit the signature.
        """
        env: dict[str, Any] = {}
        for i, p in enumerate(self.params):
            shape = shapes[i]
            if p.is_array:
                if shape is None or len(shape) != len(p.dims):
                    raise ValueError(f"{self.name}: argument {p.name!r} must have rank "
                                     f"{len(p.dims)} ({p.text}), got shape "
                                     f"{tuple(shape) if shape is not None else None}")
        for v, i, d, k, c in self._binders:
            if d < 0:
                value = ints[i]
            else:
                actual = shapes[i][d]  # type: ignore[index]
                value = arith.op("//", arith.op("-", actual, c), k) if (k, c) != (1, 0) \
                    else actual
            env[v] = value
            if isinstance(value, int) and value < 0:
                what = f"argument {self.params[i].name!r}" + (f" dim {d}" if d >= 0 else "")
                raise ValueError(f"{self.name}: size {v} = {value} (from {what}) is negative")
        for i, p in enumerate(self.params):
            if not p.is_array:
                continue
            for d, e in enumerate(p.dims):
                want = _eval(e, env, arith)
                got = shapes[i][d]  # type: ignore[index]
                if not arith.same(want, got):
                    raise ValueError(f"{self.name}: argument {p.name!r} dim {d} is {got}, but "
                                     f"the signature says {_expr_text(e)} = {want} "
                                     f"({', '.join(f'{k}={env[k]}' for k in env)})")
        return env

    def out_shape(self, env: dict[str, Any], arith: Any = _Ints) -> tuple:
        """The result's shape for bound size variables."""
        return tuple(_eval(e, env, arith) for e in self.result.dims)

    # -- body ---------------------------------------------------------------
    def _make_body(self, body: str | Callable[..., Node], language: str,
                   function: str | None) -> _Body:
        if language == "graph":
            if not callable(body):
                raise TypeError(f"{self.name}: a graph body is a function (g, *inputs, "
                                "**sizes) -> Node")
            return _Body("graph", "", build=body)
        if not isinstance(body, str):
            raise TypeError(f"{self.name}: an {language} body is source text, got "
                            f"{type(body).__name__}")
        if language == "c":
            ir = _compile_c(body, self.name)
        elif language == "ir":
            ir = body
        else:
            raise ValueError(f"{self.name}: language must be 'ir', 'c' or 'graph', "
                             f"got {language!r}")
        text, symbol = self._checked_ir(ir, function)
        return _Body(language, symbol, text)

    def _checked_ir(self, ir: str, function: str | None) -> tuple[str, str]:
        """The body renamed to its unique symbol, after checking it parses,
        verifies and has the signature's ABI."""
        from .ir import parse_ir

        module = parse_ir(ir, name=f"{self.name} body")
        module.verify()
        defined = [f for f in module.functions if not f.is_declaration]
        if function is None:
            named = [f for f in defined if f.name == self.opname]
            if len(named) == 1:
                fn = named[0]
            elif len(defined) == 1:
                fn = defined[0]
            else:
                raise TypeError(f"{self.name}: the body defines {len(defined)} functions; "
                                "name the op's with function=")
        else:
            match = [f for f in defined if f.name == function]
            if not match:
                raise TypeError(f"{self.name}: the body defines no function {function!r}")
            fn = match[0]
        n_arrays = sum(p.is_array for p in self.params)
        want = ["ptr"] * (n_arrays + 1) + ["i64"] * len(self.sizes)
        got = list(fn.param_types)
        if fn.return_type not in ("void", "i32") or got != want:
            raise TypeError(
                f"{self.name}: body @{fn.name} is {fn.return_type}({', '.join(got)}); the "
                f"signature needs void({', '.join(want)}): a pointer per array parameter, "
                f"the result's pointer, then the sizes {', '.join(self.sizes) or '(none)'} "
                "as i64 (or i32(...), returning nonzero to reject its arguments)")
        self._returns_status = fn.return_type == "i32"
        digest = hashlib.sha256(ir.encode()).hexdigest()[:12]
        symbol = f"llvmaccel.custom.{self.namespace}.{self.opname}.{digest}"
        pattern = re.compile(r'@(?:"' + re.escape(fn.name) + r'"|' + re.escape(fn.name) +
                             r")(?![A-Za-z0-9_.$-])")
        return pattern.sub(f"@{symbol}", ir), symbol

    def body_module(self) -> Any:
        """The body as a :class:`~llvmaccel.Module` (IR and C bodies)."""
        from .ir import parse_ir

        if self._body.language == "graph":
            raise TypeError(f"{self.name}: a graph body has no module of its own")
        return parse_ir(self._body.ir, name=f"{self.name} body")

    # -- graph --------------------------------------------------------------
    def lower(self, g: Graph, args: Sequence[Any]) -> Node:
        """Adds the op to graph ``g``: ``args`` are graph nodes for the array
        parameters and sizes (ints or symbolic) for the integer ones.

        Raises:
            GraphError: An operand's dtype or size does not fit the signature.
        """
        if len(args) != len(self.params):
            raise GraphError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        shapes, ints = [], []
        for p, a in zip(self.params, args, strict=True):
            if p.is_array:
                if not isinstance(a, Node):
                    raise GraphError(f"{self.name}: argument {p.name!r} must be an array")
                if a.dtype is not p.dtype:
                    raise GraphError(f"{self.name}: argument {p.name!r} must be "
                                     f"{p.dtype.value[0]}, got {a.dtype.value[0]}")
                shapes.append(tuple(a.shape))
                ints.append(None)
            else:
                if isinstance(a, Node):
                    raise GraphError(f"{self.name}: argument {p.name!r} must be an integer")
                shapes.append(None)
                ints.append(a)
        arith = _Dims()
        try:
            env = self.bind(shapes, ints, arith)
        except ValueError as e:
            raise GraphError(str(e)) from None
        shape = self.out_shape(env, arith)
        arrays = [a for a in args if isinstance(a, Node)]
        if self._body.language == "graph":
            assert self._body.build is not None
            out = self._body.build(g, *arrays, **env)
            if not isinstance(out, Node) or out.dtype is not self.result.dtype or \
                    [str(d) for d in out.shape] != [str(d) for d in shape]:
                raise GraphError(f"{self.name}: the graph body returned "
                                 f"{out!r}; the signature says {self.result.text}")
            return out
        return g.custom(self.name, self._body.function, arrays, shape,
                        self.result.dtype, tuple(env[v] for v in self.sizes),  # type: ignore[arg-type]
                        self.error if self._returns_status else None, tuple(arith.checks))

    def _compiled_graph(self, dtypes_key: tuple = ()) -> Any:
        """The op alone, compiled once with symbolic sizes."""
        from .compiler import compile_graph
        from .graph import Sym

        with self._lock:
            hit = self._compiled.get(dtypes_key)
            if hit is not None:
                return hit
            g = Graph()
            env = {v: Sym(f"s_{v}") for v in self.sizes}
            args: list[Any] = []
            for p in self.params:
                if p.is_array:
                    args.append(g.input(p.name, tuple(_eval(e, env, _Dims()) for e in p.dims),
                                        p.dtype))  # type: ignore[arg-type]
                else:
                    args.append(env[p.name])
            g.set_outputs([self.lower(g, args)])
            g.sources = [(self.name, "")]
            compiled = compile_graph(g)
            self._compiled[dtypes_key] = compiled
            return compiled

    # -- running --------------------------------------------------------------
    def _split(self, args: Sequence[Any], what: str) -> tuple[list[Any], list[Any], list[Any]]:
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments "
                            f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        arrays, shapes, ints = [], [], []
        for p, a in zip(self.params, args, strict=True):
            if p.is_array:
                if not hasattr(a, "shape") or not hasattr(a, "dtype"):
                    raise TypeError(f"{self.name}: argument {p.name!r} must be an array, got "
                                    f"{type(a).__name__}")
                dt = str(a.dtype).replace("torch.", "")
                if dt != p.dtype.numpy:  # type: ignore[union-attr]
                    raise TypeError(f"{self.name}: argument {p.name!r} must be "
                                    f"{p.dtype.numpy} ({what}), got {dt}")  # type: ignore[union-attr]
                arrays.append(a)
                shapes.append(tuple(a.shape))
                ints.append(None)
            else:
                if isinstance(a, bool) or not isinstance(a, (int, np.integer)) and \
                        type(a).__name__ != "SymInt":
                    raise TypeError(f"{self.name}: argument {p.name!r} must be an int, got "
                                    f"{type(a).__name__}")
                shapes.append(None)
                ints.append(a)
        return arrays, shapes, ints

    def run(self, *args: Any) -> Any:
        """Runs the compiled body on numpy arrays or CPU torch tensors (and
        ints), returning one of the same kind. Shapes and dtypes are checked
        first."""
        arrays, shapes, ints = self._split(args, "as declared")
        env = self.bind(shapes, ints)
        compiled = self._compiled_graph()
        symbols = {f"s_{v}": int(env[v]) for v in self.sizes}
        used = set(compiled.kernel.symbols)
        return compiled(*arrays, symbols={k: v for k, v in symbols.items() if k in used})[0]

    def check(self, *args: Any, rtol: float = 1e-5, atol: float = 1e-6) -> np.ndarray:
        """Runs the body and the reference on the same numpy arguments and
        returns the body's result.

        Raises:
            ValueError: The op has no reference implementation.
            AssertionError: The results differ beyond the tolerances.
        """
        if self.reference is None:
            raise ValueError(f"{self.name} has no reference implementation")
        got = np.asarray(self.run(*args))
        want = np.asarray(self.reference(*args))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"{self.name}: body and reference differ")
        return got

    def __call__(self, *args: Any) -> Any:
        mods = {type(a).__module__.split(".")[0] for a in args if hasattr(a, "shape")}
        if "torch" in mods:
            import torch

            self.register_torch()
            return getattr(getattr(torch.ops, self.namespace), self.opname)(*args)
        if "jax" in mods or "jaxlib" in mods:
            return self.jax_call(*args)
        return self.run(*args)

    # -- PyTorch ------------------------------------------------------------
    def register_torch(self) -> None:
        """Defines ``torch.ops.<namespace>.<name>`` (done on first use, and
        for every declared op when :mod:`llvmaccel.torch` is imported)."""
        with self._lock:
            if self._torch_lib is not None:
                return
            import torch

            lib = torch.library.Library(self.namespace, "FRAGMENT")
            params = ", ".join(f"Tensor {p.name}" if p.is_array else f"SymInt {p.name}"
                               for p in self.params)
            lib.define(f"{self.opname}({params}) -> Tensor")

            def eager(*args: Any) -> Any:
                return self.run(*[a.contiguous() if isinstance(a, torch.Tensor) else a
                                  for a in args])

            def fake(*args: Any) -> Any:
                arrays, shapes, ints = self._split(args, "as declared")
                env = self.bind(shapes, ints)
                dt = getattr(torch, self.result.dtype.numpy)  # type: ignore[union-attr]
                return arrays[0].new_empty(self.out_shape(env), dtype=dt)

            lib.impl(self.opname, eager, "CPU")
            torch.library.register_fake(self.name, fake, lib=lib)
            self._torch_lib = lib
            if self._vjp is not None:
                self._register_torch_autograd()
            # Importing llvmaccel.torch registers every declared op: this one
            # is registered by now.
            from .torch import lowering

            lowering.register_custom_op(self)

    # -- JAX ----------------------------------------------------------------
    @property
    def jax_primitive(self) -> Any:
        """The JAX primitive (made on first use)."""
        with self._lock:
            if self._jax_primitive is None:
                self._jax_primitive = _make_jax_primitive(self)
            return self._jax_primitive

    def jax_call(self, *args: Any) -> Any:
        """Binds the JAX primitive: arrays are operands, ints static (through
        a :func:`jax.custom_vjp` when the op has a VJP)."""
        import jax.numpy as jnp

        arrays, shapes, ints = self._split(args, "as declared")
        self.bind(shapes, ints)
        statics = {p.name: int(v) for p, v in zip(self.params, ints, strict=True)
                   if not p.is_array}
        operands = [jnp.asarray(a) for a in arrays]
        if self._vjp is None:
            return self.jax_primitive.bind(*operands, **statics)
        return self._jax_differentiable(tuple(sorted(statics.items())))(*operands)

    # -- gradients ------------------------------------------------------------
    def def_vjp(self, backward: Callable[..., Sequence[Any]]) -> Callable[..., Sequence[Any]]:
        """Gives the op a vector-Jacobian product, for ``loss.backward()`` in
        PyTorch and ``jax.grad`` in JAX (usable as a decorator).

        ``backward(*args, out, grad)`` receives the op's arguments, its result
        and the result's cotangent, and returns one cotangent per parameter
        (None for integer parameters and arguments without a gradient). It
        runs in the framework of the call: write it with custom ops (their
        calls dispatch on the array type) or with that framework's ops.
        """
        if not callable(backward):
            raise TypeError(f"{self.name}: the VJP must be a function")
        with self._lock:
            if self._vjp is not None:
                raise ValueError(f"{self.name} already has a VJP")
            self._vjp = backward
            if self._torch_lib is not None:
                self._register_torch_autograd()
        return backward

    def _register_torch_autograd(self) -> None:
        import torch

        def setup(ctx: Any, inputs: tuple, output: Any) -> None:
            ctx.args = inputs
            ctx.out = output

        def backward(ctx: Any, grad: Any) -> tuple:
            grads = tuple(self._vjp(*ctx.args, ctx.out, grad))  # type: ignore[misc]
            if len(grads) != len(self.params):
                raise ValueError(f"{self.name}: the VJP returned {len(grads)} cotangents for "
                                 f"{len(self.params)} parameters")
            return tuple(g if isinstance(g, torch.Tensor) else None for g in grads)

        torch.library.register_autograd(self.name, backward, setup_context=setup,
                                        lib=self._torch_lib)

    def _jax_differentiable(self, statics: tuple) -> Callable[..., Any]:
        import jax
        import jax.numpy as jnp

        with self._lock:
            hit = self._jax_vjps.get(statics)
            if hit is not None:
                return hit
        kw = dict(statics)
        prim = self.jax_primitive

        @jax.custom_vjp
        def call(*arrays: Any) -> Any:
            return prim.bind(*arrays, **kw)

        def full(arrays: Sequence[Any]) -> list[Any]:
            it = iter(arrays)
            return [next(it) if p.is_array else kw[p.name] for p in self.params]

        def fwd(*arrays: Any) -> tuple[Any, tuple]:
            out = call(*arrays)
            return out, (arrays, out)

        def bwd(res: tuple, grad: Any) -> tuple:
            arrays, out = res
            grads = list(self._vjp(*full(arrays), out, grad))  # type: ignore[misc]
            if len(grads) != len(self.params):
                raise ValueError(f"{self.name}: the VJP returned {len(grads)} cotangents for "
                                 f"{len(self.params)} parameters")
            arr_grads = [g for p, g in zip(self.params, grads, strict=True) if p.is_array]
            cts = []
            for a, g in zip(arrays, arr_grads, strict=True):
                if not jnp.issubdtype(a.dtype, jnp.inexact):
                    cts.append(np.zeros(a.shape, jax.dtypes.float0))
                elif g is None:
                    cts.append(jnp.zeros(a.shape, a.dtype))
                else:
                    cts.append(g)
            return tuple(cts)

        call.defvjp(fwd, bwd)
        with self._lock:
            self._jax_vjps[statics] = call
        return call


def _vars_of(p: Param) -> list[str]:
    return [v for d in p.dims for v in _vars(d)]


def _expr_text(e: SizeExpr) -> str:
    if isinstance(e, tuple):
        return f"{_expr_text(e[1])} {e[0]} {_expr_text(e[2])}"
    return str(e)


def _compile_c(source: str, name: str) -> str:
    from .reduce import find_llvm_tool

    clang = find_llvm_tool("clang")
    proc = subprocess.run(
        [clang, "-x", "c", "-std=c11", "-O2", "-Xclang", "-disable-llvm-passes",
         "-emit-llvm", "-S", "-o", "-", "-"],
        input=source, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise VerifyError(f"{name}: the C body does not compile:\n{proc.stderr.strip()}")
    return proc.stdout


def _make_jax_primitive(op: CustomOp) -> Any:
    import jax
    from jax.extend.core import Primitive
    from jax.interpreters import mlir

    prim = Primitive(op.name)
    arrays_idx = [i for i, p in enumerate(op.params) if p.is_array]

    def split(arrays: Sequence[Any], statics: dict[str, int]) -> tuple[list, list]:
        shapes: list[Any] = [None] * len(op.params)
        ints: list[Any] = [None] * len(op.params)
        for i, a in zip(arrays_idx, arrays, strict=True):
            shapes[i] = tuple(a.shape)
        for i, p in enumerate(op.params):
            if not p.is_array:
                ints[i] = statics[p.name]
        return shapes, ints

    def full_args(arrays: Sequence[Any], statics: dict[str, int]) -> list[Any]:
        it = iter(arrays)
        return [next(it) if p.is_array else statics[p.name] for p in op.params]

    def abstract(*avals: Any, **statics: int) -> Any:
        shapes, ints = split(avals, statics)
        env = op.bind(shapes, ints)
        return jax.core.ShapedArray(op.out_shape(env), np.dtype(op.result.dtype.numpy))  # type: ignore[union-attr]

    def impl(*arrays: Any, **statics: int) -> Any:
        out = op.run(*full_args([np.asarray(a) for a in arrays], statics))
        return jax.device_put(out)

    def ffi_lowered(*arrays: Any, **statics: int) -> Any:
        from .jax.ffi import ffi_kernel

        shapes, ints = split(arrays, statics)
        env = op.bind(shapes, ints)
        compiled = op._compiled_graph()  # noqa: SLF001
        used = set(compiled.kernel.symbols)
        symbols = {f"s_{v}": int(env[v]) for v in op.sizes if f"s_{v}" in used}
        return ffi_kernel(compiled, *arrays, symbols=symbols)(*arrays)[0]

    prim.def_abstract_eval(abstract)
    prim.def_impl(impl)
    mlir.register_lowering(prim, mlir.lower_fun(ffi_lowered, multiple_results=False),
                           platform="cpu")
    from .jax import lowering

    lowering.register_custom_op(op)
    return prim


def custom_op(name: str, signature: str, body: str | Callable[..., Node], *,
              language: str = "ir", function: str | None = None,
              reference: Callable[..., Any] | None = None,
              error: str = "the body rejected its arguments") -> CustomOp:
    """Declares a custom op (see the module documentation).

    Args:
        name: ``"namespace::name"`` (the torch op is ``torch.ops.namespace.name``).
        signature: ``"(a: f32[n, d], idx: i64[m], k: int) -> f32[m, d]"``.
        body: LLVM IR text, C source, or a graph-building function.
        language: ``"ir"``, ``"c"`` or ``"graph"``.
        function: The body's function (default: the op's name, or the only
            function the body defines).
        reference: A numpy implementation, for :meth:`CustomOp.check`.
        error: What a ValueError says when a body of C type ``int32_t``
            (IR ``i32``) returns nonzero (an index out of range, say): such a
            body checks its arguments and refuses them instead of reading
            out of bounds.

    Returns:
        The :class:`CustomOp`, also registered under ``name`` (:func:`get`).

    Raises:
        ValueError: A malformed name or signature, or ``name`` declared before.
        TypeError: The body's function does not have the signature's ABI.
        IRParseError: IR text that does not parse.
        VerifyError: A body that does not verify, or C that does not compile.
    """
    with _registry_lock:
        if name in _registry:
            raise ValueError(f"custom op {name} is already declared")
        op = CustomOp(name, signature, body, language, function, reference, error)
        _registry[name] = op
    if "torch" in sys.modules:
        op.register_torch()
    return op


def get(name: str) -> CustomOp:
    """The declared custom op ``name``.

    Raises:
        KeyError: No op of that name is declared.
    """
    with _registry_lock:
        if name not in _registry:
            raise KeyError(f"no custom op {name!r} is declared")
        return _registry[name]


def registered() -> list[CustomOp]:
    """Every declared custom op."""
    with _registry_lock:
        return list(_registry.values())


def link_bodies(module: Any, links: Sequence[tuple[str, str]]) -> None:
    """Links the bodies a kernel calls (:attr:`Kernel.links`) into ``module``,
    internal and always-inline."""
    for function, name in links:
        op = get(name)
        if op._body.function != function:  # noqa: SLF001
            raise VerifyError(f"kernel calls @{function}, but {name}'s body is "
                              f"@{op._body.function}")  # noqa: SLF001
        module.link(op.body_module(), inline=[function])
