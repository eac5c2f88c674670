"""A small tensor graph IR shared by the PyTorch and JAX frontends.

A :class:`Graph` is a DAG of :class:`Node` values in topological order. Every
node has a dtype (:class:`DType`) and a shape whose sizes are ints or symbolic
expressions (:class:`SymExpr`) over named size symbols. Symbolic sizes become
run-time arguments of the generated kernel, so a new batch size does not
recompile.

Views (reshape, permute, broadcast, slice, select, pad) are nodes like any
other: the code generator treats every node as a function from an output index
to a value and decides which nodes to materialize, so views never copy unless
they must.

Build graphs with the methods of :class:`Graph`::

    g = Graph()
    x = g.input("x", (Sym("n"), 4), DType.f32)
    y = g.unary("exp", x)
    g.set_outputs([g.reduce("sum", y, axes=(1,))])
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "DType",
    "Dim",
    "Graph",
    "GraphError",
    "Node",
    "Region",
    "Sym",
    "SymExpr",
    "UNARY_OPS",
    "BINARY_OPS",
    "COMPARE_OPS",
    "REDUCE_OPS",
    "DTYPE_BY_NAME",
    "dim_eval",
    "dim_str",
]


class GraphError(ValueError):
    """A graph is malformed: bad shapes, dtypes or arguments of an op."""


class DType(Enum):
    """Element types of the graph IR: (name, LLVM register type, bytes)."""

    f32 = ("f32", "float", 4)
    f64 = ("f64", "double", 8)
    # Half precision: stored narrow, computed in f32 (each elementwise op
    # rounds its result back, as PyTorch's and XLA's CPU kernels do;
    # reductions, matmul and convolution accumulate in f32).
    f16 = ("f16", "half", 2)
    bf16 = ("bf16", "bfloat", 2)
    i8 = ("i8", "i8", 1)
    i16 = ("i16", "i16", 2)
    i32 = ("i32", "i32", 4)
    i64 = ("i64", "i64", 8)
    # Unsigned integers: the LLVM type of the signed one of their width; the
    # operations that differ (division, comparison, extension, conversion,
    # min/max) read the dtype.
    u8 = ("u8", "i8", 1)
    u16 = ("u16", "i16", 2)
    u32 = ("u32", "i32", 4)
    u64 = ("u64", "i64", 8)
    bool = ("bool", "i1", 1)
    # Complex numbers: interleaved (real, imag) pairs in memory, as PyTorch
    # and numpy store them; a first-class struct in registers.
    c64 = ("c64", "{ float, float }", 8)
    c128 = ("c128", "{ double, double }", 16)

    @property
    def llvm(self) -> str:
        """LLVM type of a value in registers (``i1`` for bool)."""
        return self.value[1]

    @property
    def mem(self) -> str:
        """LLVM type of an element in memory (``i8`` for bool)."""
        return "i8" if self is DType.bool else self.value[1]

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory."""
        return self.value[2]

    @property
    def bits(self) -> int:
        """Bits of a value (1 for bool)."""
        return 1 if self is DType.bool else self.value[2] * 8

    @property
    def is_float(self) -> bool:
        """True for the real floating-point dtypes (f16, bf16, f32, f64)."""
        return self in (DType.f32, DType.f64, DType.f16, DType.bf16)

    @property
    def is_half(self) -> bool:
        """True for f16 and bf16 (computed in f32, stored narrow)."""
        return self in (DType.f16, DType.bf16)

    @property
    def compute(self) -> DType:
        """The dtype arithmetic on values of this dtype is done in: f32 for
        the half types, the dtype itself for the others."""
        return DType.f32 if self.is_half else self

    @property
    def is_complex(self) -> bool:
        """True for c64 and c128."""
        return self in (DType.c64, DType.c128)

    @property
    def real(self) -> DType:
        """The dtype of the real and imaginary parts of a complex dtype (the
        dtype itself for the others)."""
        return {DType.c64: DType.f32, DType.c128: DType.f64}.get(self, self)

    @property
    def complex(self) -> DType:
        """The complex dtype with parts of this float dtype (c64 for f32,
        c128 for f64; c64 for integers and bool, as in numpy's ``1j * x``
        for PyTorch's default complex dtype)."""
        if self.is_complex:
            return self
        return DType.c128 if self is DType.f64 else DType.c64

    def py(self, value: Any) -> Any:
        """``value`` as the Python number of this dtype (bool, int, float or
        complex)."""
        if self is DType.bool:
            return bool(value)
        if self.is_complex:
            return complex(value)
        # The real part of a complex number, as numpy's and PyTorch's casts.
        value = getattr(value, "real", value)
        return float(value) if self.is_float else int(value)

    @property
    def is_int(self) -> bool:
        """True for the integer dtypes, signed and unsigned (not bool)."""
        return self in _INT_DTYPES

    @property
    def is_unsigned(self) -> bool:
        """True for u8, u16, u32 and u64."""
        return self in (DType.u8, DType.u16, DType.u32, DType.u64)

    def wrap(self, value: int) -> int:
        """The integer ``value`` reduced modulo 2**bits into this integer
        dtype's range (two's complement wrap-around), as the integer of the
        LLVM literal (signed)."""
        bits = self.bits
        v = int(value) & ((1 << bits) - 1)
        return v - (1 << bits) if v >> (bits - 1) and bits > 1 else v

    @property
    def numpy(self) -> str:
        """The numpy (and torch) dtype name."""
        return _NUMPY_NAMES[self]

    @property
    def np_dtype(self) -> Any:
        """The numpy dtype (``ml_dtypes.bfloat16`` for bf16, which numpy
        lacks: a GraphError when ml_dtypes is not installed)."""
        import numpy as np

        if self is DType.bf16:
            try:
                import ml_dtypes
            except ImportError:
                raise GraphError("bfloat16 arrays need the ml_dtypes package (pip install "
                                 "ml_dtypes; JAX installs it)") from None
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.numpy)

    def __repr__(self) -> str:
        return f"DType.{self.value[0]}"


_INT_DTYPES = frozenset({DType.i8, DType.i16, DType.i32, DType.i64, DType.u8, DType.u16,
                         DType.u32, DType.u64})
_NUMPY_NAMES = {
    DType.f32: "float32", DType.f64: "float64", DType.f16: "float16", DType.bf16: "bfloat16",
    DType.i8: "int8", DType.i16: "int16", DType.i32: "int32", DType.i64: "int64",
    DType.u8: "uint8", DType.u16: "uint16", DType.u32: "uint32", DType.u64: "uint64",
    DType.bool: "bool",
    DType.c64: "complex64", DType.c128: "complex128",
}
DTYPE_BY_NAME: dict[str, DType] = {name: dt for dt, name in _NUMPY_NAMES.items()}


# ---------------------------------------------------------------------------
# Symbolic sizes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SymExpr:
    """A symbolic size: a symbol, or an operation over sizes.

    ``op`` is ``"sym"`` (``args`` = (name,)), or one of ``"add"``, ``"mul"``,
    ``"floordiv"``, ``"mod"``, ``"max"``, ``"min"`` over two :data:`Dim` args.
    Build them with :func:`Sym` and the arithmetic operators.
    """

    op: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        if self.op == "sym":
            return str(self.args[0])
        a, b = (dim_str(x) for x in self.args)
        sign = {"add": "+", "mul": "*", "floordiv": "//", "mod": "%"}.get(self.op)
        return f"({a}{sign}{b})" if sign else f"{self.op}({a},{b})"

    def __add__(self, other: Dim) -> Dim:
        return dim_op("add", self, other)

    __radd__ = __add__

    def __mul__(self, other: Dim) -> Dim:
        return dim_op("mul", self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other: Dim) -> Dim:
        return dim_op("floordiv", self, other)

    def symbols(self) -> set[str]:
        """Names of the symbols the expression uses."""
        if self.op == "sym":
            return {self.args[0]}
        out: set[str] = set()
        for a in self.args:
            if isinstance(a, SymExpr):
                out |= a.symbols()
        return out


Dim = int | SymExpr


def Sym(name: str) -> SymExpr:  # noqa: N802 - reads like a type
    """The size symbol ``name`` (a non-negative run-time integer)."""
    return SymExpr("sym", (name,))


def dim_op(op: str, a: Dim, b: Dim) -> Dim:
    """``a op b`` with constant folding and the obvious identities."""
    if isinstance(a, int) and isinstance(b, int):
        return {
            "add": a + b,
            "mul": a * b,
            "floordiv": a // b if b else 0,
            "mod": a % b if b else 0,
            "max": max(a, b),
            "min": min(a, b),
        }[op]
    if op == "add":
        if a == 0:
            return b
        if b == 0:
            return a
    if op == "mul":
        if a == 1:
            return b
        if b == 1:
            return a
        if a == 0 or b == 0:
            return 0
    if op == "floordiv" and b == 1:
        return a
    if op in ("add", "mul") and isinstance(a, int):  # canonical: constant last
        a, b = b, a
    return SymExpr(op, (a, b))


def dim_eval(d: Dim, env: dict[str, int]) -> int:
    """The value of ``d`` with the symbols bound by ``env``."""
    if isinstance(d, int):
        return d
    if d.op == "sym":
        try:
            return int(env[d.args[0]])
        except KeyError:
            raise GraphError(f"size symbol {d.args[0]!r} is not bound") from None
    a, b = (dim_eval(x, env) for x in d.args)
    return dim_op(d.op, a, b)  # type: ignore[return-value]


def dim_str(d: Dim) -> str:
    """Text of a size (for fingerprints and messages)."""
    return str(d)


def shape_numel(shape: tuple[Dim, ...]) -> Dim:
    """Product of the sizes of ``shape``."""
    n: Dim = 1
    for d in shape:
        n = dim_op("mul", n, d)
    return n


# ---------------------------------------------------------------------------
# Nodes and graphs
# ---------------------------------------------------------------------------

UNARY_OPS = frozenset({
    "neg", "abs", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh",
    "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "erf", "erfc", "sin", "cos", "floor", "ceil",
    "round", "trunc", "reciprocal", "not", "sign", "square", "conj", "real", "imag", "angle",
})
# What complex operands support: these unary ops (abs, real, imag and angle
# give the real dtype), these binary ops, these comparisons and reductions.
COMPLEX_UNARY_OPS = frozenset({"neg", "conj", "exp", "abs", "real", "imag", "angle",
                               "square", "reciprocal"})
COMPLEX_BINARY_OPS = frozenset({"add", "sub", "mul", "div"})
COMPLEX_REDUCE_OPS = frozenset({"sum", "prod"})
BINARY_OPS = frozenset({
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "and", "or", "xor",
    "rem", "floordiv", "atan2", "hypot", "shl", "lshr", "ashr",
})
# Shifts by at least the width (or by a negative amount, taken as unsigned)
# give 0 (shl, lshr) or the sign (ashr), as in XLA and PyTorch.
SHIFT_OPS = ("shl", "lshr", "ashr")
COMPARE_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
REDUCE_OPS = frozenset({"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"})
# Integer forms of these divide: a zero divisor needs a rule (Graph.binary).
INT_DIVISION_OPS = ("div", "rem", "floordiv")


@dataclass(eq=False)
class Node:
    """One value of a graph.

    Attributes:
        op: Operation name (see the builder methods of :class:`Graph`).
        inputs: Operand nodes.
        shape: Sizes (ints or :class:`SymExpr`).
        dtype: Element type.
        attrs: Op parameters (hashable values only).
        id: Position in the graph (set by the graph).
    """

    op: str
    inputs: tuple[Node, ...]
    shape: tuple[Dim, ...]
    dtype: DType
    attrs: dict[str, Any] = field(default_factory=dict)
    id: int = -1

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def __repr__(self) -> str:
        shape = ",".join(dim_str(d) for d in self.shape)
        args = ", ".join(f"%{i.id}" for i in self.inputs)
        attrs = "".join(f" {k}={v!r}" for k, v in sorted(self.attrs.items()))
        return f"%{self.id} = {self.op}({args}){attrs} : {self.dtype.value[0]}[{shape}]"


def _broadcast_shapes(*shapes: tuple[Dim, ...]) -> tuple[Dim, ...]:
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for i in range(rank):
        dim: Dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif isinstance(dim, int) and isinstance(d, int) and dim != d:
                raise GraphError(f"shapes {shapes} do not broadcast")
            elif isinstance(dim, SymExpr) and isinstance(d, int):
                dim = d  # the constant is the better-known size of the two
        out.append(dim)
    return tuple(out)


def _padding_pairs(padding: tuple, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(lo, hi) padding per spatial dim, from ``p`` or ``(lo, hi)`` entries."""
    if len(padding) != rank:
        raise GraphError(f"padding needs one entry per spatial dim ({rank})")
    pairs = [(int(p), int(p)) if isinstance(p, int) else (int(p[0]), int(p[1])) for p in padding]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _int_range(dt: DType) -> tuple[int, int]:
    """The lowest and highest value of an integer dtype."""
    if dt.is_unsigned:
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def promote(a: DType, b: DType) -> DType:
    """The dtype of an arithmetic op over ``a`` and ``b``: the smallest that
    holds both (PyTorch's and JAX's lattice: bool below every number; a
    signed and an unsigned integer give a signed one wider than the unsigned,
    u8 with i8 gives i16, u32 with i32 gives i64, and u64 with any signed
    integer, which no integer holds, gives f64 as in JAX (PyTorch refuses to
    promote it); integers below floats; f16 with bf16 gives f32); a complex
    operand makes the result complex, with parts of the promoted dtype of
    both operands' parts (c64 with f64 gives c128)."""
    if a.is_complex or b.is_complex:
        return promote(a.real, b.real).complex
    if a is b:
        return a
    if a is DType.bool or b is DType.bool:
        return b if a is DType.bool else a
    if a.is_float or b.is_float:
        if not (a.is_float and b.is_float):
            return a if a.is_float else b
        if a.is_half and b.is_half:
            return DType.f32
        return a if a.itemsize >= b.itemsize else b
    if a.is_unsigned == b.is_unsigned:
        return a if a.itemsize >= b.itemsize else b
    s, u = (b, a) if a.is_unsigned else (a, b)
    if s.itemsize > u.itemsize:
        return s
    return {1: DType.i16, 2: DType.i32, 4: DType.i64}.get(u.itemsize, DType.f64)


def _part_of(x: Node) -> tuple[Node, int] | None:
    """``(z, 0)`` when ``x`` is the real part of the complex ``z`` with a
    unit dim appended, ``(z, 1)`` for the imaginary part, else None."""
    if x.rank < 1 or x.shape[-1] != 1:
        return None
    inner = x.inputs[0] if x.op == "reshape" else None
    if inner is not None and tuple(inner.shape) == tuple(x.shape[:-1]):
        if inner.op == "unary" and inner.attrs["fn"] in ("real", "imag"):
            return inner.inputs[0], int(inner.attrs["fn"] == "imag")
        if inner.op == "select" and inner.inputs[0].op == "view_as_real" and \
                inner.attrs["dim"] == inner.inputs[0].rank - 1 and \
                inner.attrs["index"] in (0, 1):
            return inner.inputs[0].inputs[0], inner.attrs["index"]
    if x.op == "slice" and x.inputs[0].op == "view_as_real" and x.attrs["dim"] == x.rank - 1 \
            and x.attrs["start"] in (0, 1):
        return x.inputs[0].inputs[0], x.attrs["start"]
    return None


def _complex_parts(xs: list[Node], dim: int) -> Node | None:
    """The complex ``z`` when ``concat(xs, dim)`` puts its real and its
    imaginary part side by side in a new last dim (``view_as_real(z)``)."""
    if len(xs) != 2 or dim != xs[0].rank - 1:
        return None
    a, b = _part_of(xs[0]), _part_of(xs[1])
    if a is None or b is None or not _same_value(a[0], b[0]) or (a[1], b[1]) != (0, 1):
        return None
    return a[0]


def _same_value(x: Node, y: Node) -> bool:
    """True when ``x`` and ``y`` compute the same value: the same node, or
    the same elementwise op or view of the same values (as in ``(a * b).real``
    and ``(a * b).imag`` from a graph without common subexpressions)."""
    if x is y:
        return True
    if x.op in ("input", "constant", "reduce", "matmul", "conv", "pool", "embedding_bag",
                "scatter", "col2im", "im2col") \
            or x.op != y.op or x.dtype is not y.dtype or tuple(x.shape) != tuple(y.shape) \
            or x.attrs != y.attrs or len(x.inputs) != len(y.inputs):
        return False
    return all(_same_value(a, b) for a, b in zip(x.inputs, y.inputs, strict=True))


class Region:
    """A sub-graph that a control-flow node runs: the body of a loop, its
    condition, or a branch of a ``switch``. Its inputs are the values the
    node passes in (in the node's order), its outputs what it gives back.
    Tensor constants of the sub-graph are lifted into operands of the node
    when it is built (:meth:`Graph.scan`), so a region holds no constant
    data; its text (``repr``) is part of the outer graph's fingerprint."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def __repr__(self) -> str:
        return "{" + "; ".join(str(self.graph).splitlines()) + "}"


class Graph:
    """A tensor graph: inputs, nodes in topological order, outputs.

    Attributes:
        inputs: The ``input`` nodes, in argument order.
        nodes: Every node, in topological order.
        outputs: The result nodes, in result order.
        constants: Values of ``constant`` tensors (node id -> numpy array).
        sources: The frontend ops lowered into the graph, as (op, source
            line) pairs (FX node and its ``stack_trace``, jaxpr equation and
            its user frame), for profiles; they do not change the code.
        node_source: For the nodes a frontend op was lowered to, the index
            of that op in ``sources``.
    """

    def __init__(self) -> None:
        self.inputs: list[Node] = []
        self.nodes: list[Node] = []
        self.outputs: list[Node] = []
        self.constants: dict[int, Any] = {}
        # Known facts of size symbols: name -> (lowest, highest, multiple of);
        # the code generator states them at kernel entry (shape anchors).
        self.symbol_facts: dict[str, tuple[int | None, int | None, int]] = {}
        # The frontend ops lowered into the graph, (op, source line or ""):
        # names for profiles (llvmaccel.profiling); not part of the code.
        self.sources: list[tuple[str, str]] = []
        # Node id -> index in sources of the frontend op that made it.
        self.node_source: dict[int, int] = {}

    # -- bookkeeping ------------------------------------------------------
    def _add(self, node: Node) -> Node:
        for i in node.inputs:
            if i.id < 0 or i.id >= len(self.nodes) or self.nodes[i.id] is not i:
                raise GraphError(f"operand {i!r} of {node.op} is not a node of this graph")
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    def note_source(self, op: str, source: str, first_node: int) -> None:
        """Records that frontend ``op`` (from ``source``) was lowered to the
        nodes from id ``first_node`` on (:attr:`sources`, :attr:`node_source`)."""
        self.sources.append((op, source))
        for nid in range(first_node, len(self.nodes)):
            self.node_source.setdefault(nid, len(self.sources) - 1)

    def set_outputs(self, outputs: list[Node]) -> None:
        """Sets the graph's results."""
        self.outputs = list(outputs)

    def symbols(self) -> list[str]:
        """Every size symbol the graph uses, sorted by name."""
        names: set[str] = set()
        for n in self.nodes:
            for d in n.shape:
                if isinstance(d, SymExpr):
                    names |= d.symbols()
            for v in n.attrs.values():
                for d in v if isinstance(v, tuple) else (v,):
                    if isinstance(d, SymExpr):
                        names |= d.symbols()
                    elif isinstance(d, Region):  # sizes inside loop bodies and branches
                        names |= set(d.graph.symbols())
        return sorted(names)

    def __str__(self) -> str:
        lines = [repr(n) for n in self.nodes]
        lines.append("return " + ", ".join(f"%{o.id}" for o in self.outputs))
        lines += [f"assume {name} in [{lo}, {hi}] multiple of {m}"
                  for name, (lo, hi, m) in sorted(self.symbol_facts.items())]
        return "\n".join(lines)

    def assume_symbol(self, name: str, lowest: int | None = None, highest: int | None = None,
                      multiple_of: int = 1) -> None:
        """States what is known of size symbol ``name`` at every call: a
        range and a divisor. Combined with earlier facts; a call whose sizes
        break them is refused before the kernel runs (CompiledGraph.bind)."""
        lo, hi, m = self.symbol_facts.get(name, (None, None, 1))
        if lowest is not None:
            lo = lowest if lo is None else max(lo, lowest)
        if highest is not None:
            hi = highest if hi is None else min(hi, highest)
        if multiple_of < 1:
            raise GraphError("multiple_of must be at least 1")
        m = m * multiple_of // math.gcd(m, multiple_of)
        if lo is not None and hi is not None and lo > hi:
            raise GraphError(f"size {name}: no value lies in [{lo}, {hi}]")
        self.symbol_facts[name] = (lo, hi, m)

    def pruned(self) -> Graph:
        """This graph without the nodes no output needs (a frontend op's
        second result nobody reads, such as max pooling's indices at
        inference): a new graph, or this one when every node is needed.
        Inputs are kept (they are the kernel's signature), and so are
        custom ops (foreign code)."""
        live: set[int] = set()
        stack = [*self.outputs, *self.inputs,
                 *(n for n in self.nodes if n.op == "custom")]
        while stack:
            n = stack.pop()
            if n.id not in live:
                live.add(n.id)
                stack.extend(n.inputs)
        # A multi-valued node (sort, a loop) writes every result: all stay.
        live |= {n.id for n in self.nodes if n.op == "result" and n.inputs[0].id in live}
        if len(live) == len(self.nodes):
            return self
        g = Graph()
        g.symbol_facts = dict(self.symbol_facts)
        g.sources = list(self.sources)
        new: dict[int, Node] = {}
        for n in self.nodes:
            if n.id not in live:
                continue
            m = g._add(Node(n.op, tuple(new[i.id] for i in n.inputs), n.shape, n.dtype,
                            dict(n.attrs)))
            new[n.id] = m
            if n.id in self.constants:
                g.constants[m.id] = self.constants[n.id]
            if n.id in self.node_source:
                g.node_source[m.id] = self.node_source[n.id]
        g.inputs = [new[n.id] for n in self.inputs]
        g.outputs = [new[n.id] for n in self.outputs]
        return g

    def walk(self) -> Iterator[Node]:
        """The nodes of the graph and of its regions (loop bodies,
        conditions, branches), at any depth, each before its regions'."""
        for n in self.nodes:
            yield n
            for value in n.attrs.values():
                for r in value if isinstance(value, tuple) else (value,):
                    if isinstance(r, Region):
                        yield from r.graph.walk()

    def fingerprint(self) -> str:
        """A hash of the graph's structure (constants included)."""
        h = hashlib.sha256(str(self).encode())
        for k in sorted(self.constants):
            arr = self.constants[k]
            h.update(f"{k}:{arr.dtype}:{arr.shape}".encode())
            h.update(arr.tobytes())
        return h.hexdigest()[:32]

    # -- leaves -----------------------------------------------------------
    def input(self, name: str, shape: tuple[Dim, ...], dtype: DType) -> Node:
        """A graph argument ``name`` (a contiguous tensor at run time)."""
        n = self._add(Node("input", (), tuple(shape), dtype, {"name": name}))
        self.inputs.append(n)
        return n

    def constant(self, value: Any, dtype: DType) -> Node:
        """A tensor constant (a numpy array, baked into the compiled code's
        arguments, or a scalar folded into the IR)."""
        import numpy as np

        arr = np.asarray(value)
        if arr.ndim == 0:
            return self._add(Node("scalar", (), (), dtype, {"value": dtype.py(arr.item())}))
        arr = np.ascontiguousarray(arr.astype(dtype.np_dtype))
        n = self._add(Node("constant", (), tuple(int(d) for d in arr.shape), dtype, {}))
        self.constants[n.id] = arr
        return n

    def scalar(self, value: int | float | bool, dtype: DType) -> Node:
        """A 0-d constant."""
        return self.constant(value, dtype)

    def iota(self, shape: tuple[Dim, ...], dim: int, dtype: DType) -> Node:
        """``out[i] = i[dim]``."""
        return self._add(Node("iota", (), tuple(shape), dtype, {"dim": dim}))

    # -- elementwise ------------------------------------------------------
    def unary(self, op: str, x: Node) -> Node:
        """Elementwise ``op(x)`` (see :data:`UNARY_OPS`)."""
        if op not in UNARY_OPS:
            raise GraphError(f"unknown unary op {op!r}")
        dtype = x.dtype
        if x.dtype.is_complex:
            if op not in COMPLEX_UNARY_OPS:
                raise GraphError(f"{op} of a complex tensor is not supported")
            if op in ("abs", "real", "imag", "angle"):
                dtype = x.dtype.real
            return self._add(Node("unary", (x,), x.shape, dtype, {"fn": op}))
        if op == "conj":
            return x  # of a real tensor: itself
        if op in ("real", "imag", "angle"):
            raise GraphError(f"{op} needs a complex operand")
        if op == "not":
            if x.dtype is not DType.bool:
                raise GraphError("'not' takes a bool tensor")
        elif op in ("relu", "neg", "abs", "sign", "square"):
            if x.dtype is DType.bool:
                raise GraphError(f"{op} does not take bool")
        elif not x.dtype.is_float:
            raise GraphError(f"{op} needs a floating-point operand, got {x.dtype.value[0]}")
        return self._add(Node("unary", (x,), x.shape, dtype, {"fn": op}))

    def binary(self, op: str, a: Node, b: Node, int_zero_div: str = "error") -> Node:
        """Elementwise ``op(a, b)`` with broadcasting; operands are cast to
        their promoted dtype.

        ``int_zero_div`` says what integer ``div``, ``rem`` and ``floordiv``
        give for a zero divisor: ``"error"`` (the kernel fails with a
        ZeroDivisionError, as eager PyTorch does) or ``"xla"`` (``div`` gives
        -1 and ``rem`` the dividend, as XLA and so JAX do)."""
        if op in COMPARE_OPS:
            dt = promote(a.dtype, b.dtype)
            if dt.is_complex and op not in ("eq", "ne"):
                raise GraphError(f"{op} of complex tensors (complex numbers are unordered)")
            a, b = self.cast(a, dt), self.cast(b, dt)
            return self._add(Node("compare", (a, b), _broadcast_shapes(a.shape, b.shape),
                                  DType.bool, {"fn": op}))
        if op not in BINARY_OPS:
            raise GraphError(f"unknown binary op {op!r}")
        dt = promote(a.dtype, b.dtype)
        if dt.is_complex and op not in COMPLEX_BINARY_OPS:
            raise GraphError(f"{op} of complex tensors is not supported")
        if op in ("and", "or", "xor") and dt.is_float:
            raise GraphError(f"{op} needs integer or bool operands")
        if op in SHIFT_OPS and not dt.is_int:
            raise GraphError(f"{op} needs integer operands")
        if op in ("pow", "atan2", "hypot") and not dt.is_float:
            raise GraphError(f"{op} needs floating-point operands")
        if dt is DType.bool and op not in ("and", "or", "xor", "maximum", "minimum"):
            dt = DType.i64 if op != "div" else DType.f32
        a, b = self.cast(a, dt), self.cast(b, dt)
        attrs: dict[str, Any] = {"fn": op}
        if op in INT_DIVISION_OPS and not dt.is_float:
            if int_zero_div not in ("error", "xla"):
                raise GraphError(f"unknown int_zero_div {int_zero_div!r}")
            attrs["zero_div"] = int_zero_div
        return self._add(Node("binary", (a, b), _broadcast_shapes(a.shape, b.shape), dt,
                              attrs))

    def where(self, cond: Node, a: Node, b: Node) -> Node:
        """``cond ? a : b`` elementwise, with broadcasting."""
        if cond.dtype is not DType.bool:
            cond = self.binary("ne", cond, self.scalar(0, cond.dtype))
        dt = promote(a.dtype, b.dtype)
        a, b = self.cast(a, dt), self.cast(b, dt)
        return self._add(Node("where", (cond, a, b),
                              _broadcast_shapes(cond.shape, a.shape, b.shape), dt, {}))

    def cast(self, x: Node, dtype: DType, saturate: bool = False) -> Node:
        """Elementwise conversion (C semantics: floats truncate toward zero;
        to bool means ``!= 0``; a real value becomes a complex one with a zero
        imaginary part; a complex one converts its real part, as numpy and
        PyTorch do). Integers wrap around (two's complement). A float out of
        an integer dtype's range converts to a wider integer first and wraps
        (PyTorch's CPU casts: -1.0 to uint8 gives 255), or with ``saturate``
        clamps to the range, NaN giving 0 (XLA's)."""
        if x.dtype is dtype:
            return x
        saturate = saturate and dtype.is_int and (x.dtype.is_float or x.dtype.is_complex)
        if x.op == "scalar":
            value = x.attrs["value"]
            if saturate:
                value = getattr(value, "real", value)
                lo, hi = _int_range(dtype)
                value = 0 if math.isnan(value) else min(max(value, lo), hi)
            elif dtype.is_int and isinstance(value, float) and not math.isfinite(value):
                value = 0  # defined, as the kernel's saturating conversion
            return self._add(Node("scalar", (), (), dtype, {"value": dtype.py(value)}))
        return self._add(Node("cast", (x,), x.shape, dtype,
                              {"saturate": True} if saturate else {}))

    def bitcast(self, x: Node, dtype: DType) -> Node:
        """Elementwise reinterpretation of the bits of ``x`` as ``dtype``, of
        the same width (``lax.bitcast_convert_type``, ``Tensor.view(dtype)``)."""
        if x.dtype is dtype:
            return x
        if x.dtype.is_complex or dtype.is_complex or DType.bool in (x.dtype, dtype) or \
                x.dtype.bits != dtype.bits:
            raise GraphError(f"bitcast from {x.dtype.value[0]} to {dtype.value[0]}: only between "
                             "real dtypes of one width")
        return self._add(Node("bitcast", (x,), x.shape, dtype, {}))

    # -- complex numbers ----------------------------------------------------
    def complex(self, re: Node, im: Node) -> Node:
        """``re + i * im`` elementwise, with broadcasting (float operands;
        integers become f32 first)."""
        dt = promote(re.dtype, im.dtype)
        if dt.is_complex:
            raise GraphError("complex needs real operands")
        if not dt.is_float:
            dt = DType.f32
        re, im = self.cast(re, dt), self.cast(im, dt)
        return self._add(Node("binary", (re, im), _broadcast_shapes(re.shape, im.shape),
                              dt.complex, {"fn": "complex"}))

    def polar(self, abs: Node, angle: Node) -> Node:  # noqa: A002 - torch's name
        """``abs * (cos(angle) + i * sin(angle))`` elementwise, with
        broadcasting (float operands)."""
        dt = promote(abs.dtype, angle.dtype)
        if not dt.is_float:
            raise GraphError("polar needs floating-point operands")
        abs, angle = self.cast(abs, dt), self.cast(angle, dt)
        return self._add(Node("binary", (abs, angle), _broadcast_shapes(abs.shape, angle.shape),
                              dt.complex, {"fn": "polar"}))

    def view_as_complex(self, x: Node) -> Node:
        """A float tensor ``[..., 2]`` read as a complex tensor ``[...]``
        (element ``k`` of the last dim is the real, ``1`` the imaginary part):
        a view, like ``torch.view_as_complex``."""
        if not x.dtype.is_float or x.rank < 1 or x.shape[-1] != 2:
            raise GraphError("view_as_complex needs a float tensor whose last dim is 2, got "
                             f"{x.dtype.value[0]}{list(x.shape)}")
        if x.op == "view_as_real":
            return x.inputs[0]
        return self._add(Node("view_as_complex", (x,), tuple(x.shape[:-1]), x.dtype.complex, {}))

    def view_as_real(self, x: Node) -> Node:
        """A complex tensor ``[...]`` read as a float tensor ``[..., 2]`` of
        (real, imaginary) pairs: a view, like ``torch.view_as_real``."""
        if not x.dtype.is_complex:
            raise GraphError("view_as_real needs a complex tensor")
        if x.op == "view_as_complex":
            return x.inputs[0]
        return self._add(Node("view_as_real", (x,), tuple(x.shape) + (2,), x.dtype.real, {}))

    # -- views ------------------------------------------------------------
    def broadcast_to(self, x: Node, shape: tuple[Dim, ...]) -> Node:
        """``x`` broadcast (numpy rules: leading dims added, size-1 dims
        stretched) to ``shape``."""
        shape = tuple(shape)
        if tuple(x.shape) == shape:
            return x
        if len(shape) < x.rank:
            raise GraphError(f"cannot broadcast {x.shape} to {shape}")
        off = len(shape) - x.rank
        for i, d in enumerate(x.shape):
            if d != 1 and d != shape[off + i] and not (
                    isinstance(d, SymExpr) or isinstance(shape[off + i], SymExpr)):
                raise GraphError(f"cannot broadcast {x.shape} to {shape}")
        return self._add(Node("broadcast", (x,), shape, x.dtype, {}))

    def reshape(self, x: Node, shape: tuple[Dim, ...]) -> Node:
        """``x`` viewed with a new shape of the same number of elements."""
        shape = tuple(shape)
        if shape == tuple(x.shape):
            return x
        a, b = shape_numel(shape), shape_numel(x.shape)
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise GraphError(f"cannot reshape {x.shape} to {shape}")
        return self._add(Node("reshape", (x,), shape, x.dtype, {}))

    def permute(self, x: Node, perm: tuple[int, ...]) -> Node:
        """``out[i] = x[j]`` with ``j[perm[k]] = i[k]``."""
        perm = tuple(int(p) % max(x.rank, 1) for p in perm)
        if sorted(perm) != list(range(x.rank)):
            raise GraphError(f"bad permutation {perm} of rank {x.rank}")
        if perm == tuple(range(x.rank)):
            return x
        if x.op == "permute" and tuple(x.attrs["perm"][p] for p in perm) == tuple(range(x.rank)):
            # A permute undoing a permute is its source: aot_autograd's
            # backward graphs are full of t(t(W)), which a transposing copy
            # of W used to compute (0.9 ms of an MLP's 5 ms backward on a
            # BLAS operand). Other pairs stay two nodes: a transposed read
            # of a permuted buffer (K^T of an attention head) is a form the
            # kernels know.
            return x.inputs[0]
        shape = tuple(x.shape[p] for p in perm)
        return self._add(Node("permute", (x,), shape, x.dtype, {"perm": perm}))

    def slice(self, x: Node, dim: int, start: Dim, stop: Dim, step: int = 1) -> Node:
        """Elements ``start, start+step, ... < stop`` along ``dim``
        (start/stop already clamped to ``[0, size]``)."""
        dim = dim % x.rank
        if step < 1:
            raise GraphError("slice step must be positive")
        length = dim_op("floordiv", dim_op("add", dim_op("add", stop, dim_op("mul", start, -1)),
                                           step - 1), step)
        if isinstance(length, int):
            length = max(length, 0)
        if start == 0 and step == 1 and length == x.shape[dim]:
            return x
        shape = list(x.shape)
        shape[dim] = length
        return self._add(Node("slice", (x,), tuple(shape), x.dtype,
                              {"dim": dim, "start": start, "step": step}))

    def select(self, x: Node, dim: int, index: Dim) -> Node:
        """``x`` at ``index`` along ``dim`` (the dim is removed)."""
        dim = dim % x.rank
        shape = x.shape[:dim] + x.shape[dim + 1:]
        return self._add(Node("select", (x,), shape, x.dtype, {"dim": dim, "index": index}))

    def pad(self, x: Node, pads: tuple[tuple[Dim, Dim], ...], value: float,
            interior: tuple[int, ...] | None = None) -> Node:
        """Constant padding: ``pads[d] = (before, after)`` elements (>= 0) for
        every dim, and ``interior[d]`` between each two elements (XLA's
        interior padding); bounds-checked loads, no copy."""
        if len(pads) != x.rank:
            raise GraphError("pad needs (before, after) for every dimension")
        inner = tuple(int(v) for v in (interior or (0,) * x.rank))
        if len(inner) != x.rank or min(inner, default=0) < 0:
            raise GraphError("pad: interior padding needs one value >= 0 per dimension")
        shape = tuple(dim_op("add", dim_op("add", dim_op("add", d, lo), hi),
                             dim_op("mul", dim_op("max", dim_op("add", d, -1), 0), q))
                      for d, (lo, hi), q in zip(x.shape, pads, inner, strict=True))
        attrs: dict[str, Any] = {"lo": tuple(p[0] for p in pads), "value": value}
        if any(inner):
            attrs["interior"] = inner
        return self._add(Node("pad", (x,), shape, x.dtype, attrs))

    def conv(self, x: Node, w: Node, bias: Node | None, stride: tuple[int, ...],
             padding: tuple, dilation: tuple[int, ...], groups: int = 1,
             lhs_dilation: tuple[int, ...] | None = None) -> Node:
        """Convolution (cross-correlation, as PyTorch's ``convolution``) of
        ``x`` ``[N, C, *spatial]`` with ``w`` ``[O, C / groups, *kernel]`` and
        an optional ``bias`` ``[O]``; zero ``padding`` per spatial dim, ``p``
        on both sides or ``(lo, hi)`` (negative: cropped). ``lhs_dilation``
        (XLA's): the input with ``l - 1`` zeros between its elements along
        each spatial dim, the form of a transposed convolution (PyTorch's
        ``ConvTranspose``: stride as ``lhs_dilation``, the kernel flipped).
        Kernel sizes, channels, strides, padding and dilations are static;
        batch and spatial sizes may be symbolic."""
        r = x.rank - 2
        lo, hi = _padding_pairs(padding, r)
        ld = tuple(int(v) for v in (lhs_dilation or (1,) * r))
        if len(ld) != r or min(ld) < 1:
            raise GraphError("conv: lhs_dilation needs one value >= 1 per spatial dim")
        if r < 1 or w.rank != x.rank:
            raise GraphError("conv needs x [N, C, *spatial] and w [O, C/groups, *kernel]")
        if not x.dtype.is_float:
            raise GraphError("conv needs floating-point operands")
        if not (len(stride) == len(dilation) == r):
            raise GraphError("conv: stride, padding and dilation need one value per spatial dim")
        if min(stride) < 1 or min(dilation) < 1 or groups < 1:
            raise GraphError("conv: bad stride, dilation or groups")
        o, cg = w.shape[0], w.shape[1]
        ksize = w.shape[2:]
        if not all(isinstance(d, int) for d in (o, cg, x.shape[1], *ksize)):
            raise GraphError("conv: channels and kernel sizes must be static")
        if x.shape[1] != cg * groups or o % groups:  # type: ignore[operator]
            raise GraphError(f"conv: {x.shape[1]} input channels do not match weight "
                             f"{w.shape} with groups={groups}")
        dt = promote(x.dtype, w.dtype)
        if dt.is_half:  # accumulated in f32, the result rounded
            wide = self.conv(self.cast(x, DType.f32), self.cast(w, DType.f32),
                             None if bias is None else self.cast(bias, DType.f32),
                             stride, padding, dilation, groups, ld)
            return self.cast(wide, dt)
        x, w = self.cast(x, dt), self.cast(w, dt)
        inputs: tuple[Node, ...] = (x, w)
        if bias is not None:
            if bias.shape != (o,):
                raise GraphError(f"conv: bias of shape {bias.shape}, expected ({o},)")
            inputs += (self.cast(bias, dt),)
        spatial = []
        for d, k, s, pl, ph, dl, li in zip(x.shape[2:], ksize, stride, lo, hi, dilation, ld,
                                          strict=True):
            span = dl * (k - 1) + 1  # type: ignore[operator]
            if li > 1:  # the dilated input: (d - 1) * li + 1 elements
                d = dim_op("add", dim_op("mul", d, li), 1 - li)
            size = dim_op("add", dim_op("floordiv", dim_op("add", d, pl + ph - span), s), 1)
            if isinstance(size, int) and size < 1:
                raise GraphError("conv: the kernel is larger than the padded input")
            spatial.append(size)
        shape = (x.shape[0], o, *spatial)
        attrs = {"stride": tuple(stride), "padding": lo, "padding_hi": hi,
                 "dilation": tuple(dilation), "groups": groups, "kernel": tuple(ksize)}
        if max(ld) > 1:
            attrs["lhs_dilation"] = ld
        return self._add(Node("conv", inputs, shape, dt, attrs))

    def im2col(self, x: Node, kernel: tuple[int, ...], stride: tuple[int, ...],
               padding: tuple[int, ...], dilation: tuple[int, ...]) -> Node:
        """The windows of a convolution's input, one column per output
        position (``F.unfold``; the GEMM form of a convolution's gradient by
        its weights): ``x`` ``[N, C, *in]`` gives ``cols`` ``[N, C, *kernel,
        *out]`` with ``cols[n, c, k, o] = x[n, c, o * stride - padding + k *
        dilation]`` per spatial dim, 0 in the padding; ``out`` as a
        convolution's. The adjoint of :meth:`col2im`."""
        r = x.rank - 2
        if r < 1 or not x.dtype.is_float:
            raise GraphError("im2col needs float x [N, C, *spatial]")
        if not len(kernel) == len(stride) == len(padding) == len(dilation) == r:
            raise GraphError("im2col: one kernel size, stride, padding and dilation per "
                             "spatial dim")
        if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
            raise GraphError("im2col: bad kernel, stride, padding or dilation")
        out = tuple(dim_op("add", dim_op("floordiv", dim_op("add", i, 2 * p - d * (k - 1) - 1),
                                         s), 1)
                    for i, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation,
                                             strict=True))
        if any(isinstance(o, int) and o < 1 for o in out):
            raise GraphError(f"im2col: the windows do not fit the input {x.shape[2:]}")
        return self._add(Node("im2col", (x,), (x.shape[0], x.shape[1], *kernel, *out), x.dtype,
                              {"stride": tuple(stride), "padding": tuple(padding),
                               "dilation": tuple(dilation), "kernel": tuple(kernel)}))

    def col2im(self, cols: Node, out_spatial: tuple[Dim, ...], stride: tuple[int, ...],
               padding: tuple[int, ...], dilation: tuple[int, ...]) -> Node:
        """The second half of a transposed convolution's GEMM form: ``cols``
        ``[N, C, *kernel, *in]`` (the products of every input position with
        every tap) summed into ``out`` ``[N, C, *out_spatial]``:
        ``out[n, c, y] = sum of cols[n, c, k, i] over i * stride - padding +
        k * dilation == y`` per spatial dim (taps that land outside the
        output add nothing)."""
        r = len(out_spatial)
        if cols.rank != 2 + 2 * r or not cols.dtype.is_float:
            raise GraphError("col2im needs float cols [N, C, *kernel, *in]")
        if not len(stride) == len(padding) == len(dilation) == r:
            raise GraphError("col2im: one stride, padding and dilation per spatial dim")
        if not all(isinstance(k, int) for k in cols.shape[2:2 + r]):
            raise GraphError("col2im: kernel sizes must be static")
        return self._add(Node("col2im", (cols,), (cols.shape[0], cols.shape[1], *out_spatial),
                              cols.dtype, {"stride": tuple(stride), "padding": tuple(padding),
                                           "dilation": tuple(dilation),
                                           "kernel": tuple(cols.shape[2:2 + r])}))

    def flip(self, x: Node, dims: tuple[int, ...]) -> Node:
        """``x`` reversed along each of ``dims`` (``torch.flip``); those dims'
        sizes must be static."""
        import numpy as np

        for d in sorted({int(d) % max(x.rank, 1) for d in dims}):
            size = x.shape[d]
            if not isinstance(size, int):
                raise GraphError(f"flip: dim {d} has a symbolic size")
            if size > 1:
                x = self.take(x, self.constant(np.arange(size - 1, -1, -1), DType.i64), d,
                              "clip")
        return x

    def pool(self, x: Node, fn: str, kernel: tuple[int, ...], stride: tuple[int, ...],
             padding: tuple, dilation: tuple[int, ...] | None = None,
             ceil_mode: bool = False, count_include_pad: bool = True,
             divisor: int | None = None) -> Node:
        """Max or average pooling of ``x`` ``[N, C, *spatial]`` with PyTorch's
        rules: ``padding`` (``p`` or ``(lo, hi)`` per dim) reads as -inf (max)
        or 0 (avg); the average divides by ``divisor``, else by the window
        clipped to the padded input (``count_include_pad``) or to the input.
        ``ceil_mode`` needs static spatial sizes."""
        r = x.rank - 2
        dilation = dilation or (1,) * r
        lo, hi = _padding_pairs(padding, r)
        if fn not in ("max", "avg"):
            raise GraphError(f"unknown pooling {fn!r}")
        if r < 1 or not (len(kernel) == len(stride) == len(dilation) == r):
            raise GraphError("pool needs x [N, C, *spatial] and one value per spatial dim")
        if not x.dtype.is_float:
            raise GraphError("pool needs floating-point input")
        if x.dtype.is_half:  # in f32 (the average's sum), the result rounded
            wide = self.pool(self.cast(x, DType.f32), fn, kernel, stride, padding, dilation,
                             ceil_mode, count_include_pad, divisor)
            return self.cast(wide, x.dtype)
        if fn == "avg" and dilation != (1,) * r:
            raise GraphError("average pooling has no dilation")
        for k, s, pl, ph, dl in zip(kernel, stride, lo, hi, dilation, strict=True):
            if k < 1 or s < 1 or dl < 1 or pl < 0 or ph < 0:
                raise GraphError("pool: bad kernel, stride, dilation or padding")
        spatial = []
        for d, k, s, pl, ph, dl in zip(x.shape[2:], kernel, stride, lo, hi, dilation,
                                       strict=True):
            span = dl * (k - 1) + 1
            if ceil_mode:
                if not isinstance(d, int):
                    raise GraphError("pool: ceil_mode needs static sizes")
                size = -(-(d + pl + ph - span) // s) + 1
                if (size - 1) * s >= d + pl:  # the last window starts in the padding
                    size -= 1
            else:
                size = dim_op("add", dim_op("floordiv", dim_op("add", d, pl + ph - span), s), 1)
            if isinstance(size, int) and size < 1:
                raise GraphError("pool: the window is larger than the padded input")
            spatial.append(size)
        return self._add(Node("pool", (x,), (x.shape[0], x.shape[1], *spatial), x.dtype,
                              {"fn": fn, "kernel": tuple(kernel), "stride": tuple(stride),
                               "padding": lo, "padding_hi": hi, "dilation": tuple(dilation),
                               "count_include_pad": bool(count_include_pad),
                               "divisor": int(divisor or 0)}))

    def pool_indices(self, x: Node, pooled: Node) -> Node:
        """The second output of PyTorch's ``max_pool*_with_indices``: for every
        window of the max pool ``pooled`` of ``x``, the position of its maximum
        in ``x``'s flattened spatial dims (int64), chosen as PyTorch's CPU
        kernel does: the first position holding the maximum, or the last NaN."""
        if pooled.op == "cast" and x.dtype.is_half:  # the f32 pool of a half x
            pooled = pooled.inputs[0]
            x = pooled.inputs[0] if pooled.op == "pool" else x
        if pooled.op != "pool" or pooled.attrs["fn"] != "max" or pooled.inputs[0] is not x:
            raise GraphError("pool_indices needs a max pool of x")
        return self._add(Node("pool", (x, pooled), pooled.shape, DType.i64,
                              {**pooled.attrs, "fn": "argmax"}))

    def concat(self, xs: list[Node], dim: int) -> Node:
        """Concatenation along ``dim``."""
        if not xs:
            raise GraphError("concat of nothing")
        dim = dim % xs[0].rank
        pairs = _complex_parts(xs, dim)
        if pairs is not None:  # stack([z.real, z.imag], -1): a view of z
            return self.reshape(self.view_as_real(pairs), (*xs[0].shape[:-1], 2))
        dt = xs[0].dtype
        for x in xs[1:]:
            dt = promote(dt, x.dtype)
        xs = [self.cast(x, dt) for x in xs]
        size: Dim = 0
        for x in xs:
            size = dim_op("add", size, x.shape[dim])
        shape = list(xs[0].shape)
        shape[dim] = size
        return self._add(Node("concat", tuple(xs), tuple(shape), dt, {"dim": dim}))

    # -- reductions and contractions --------------------------------------
    def reduce(self, op: str, x: Node, axes: tuple[int, ...], keepdim: bool = False,
               dtype: DType | None = None) -> Node:
        """Reduction over ``axes`` (sum, prod, max, min, argmax, argmin, any,
        all). argmax/argmin take one axis and give i64 (first occurrence; NaN
        wins like in PyTorch)."""
        if op not in REDUCE_OPS:
            raise GraphError(f"unknown reduction {op!r}")
        if (x.dtype.is_complex or (dtype is not None and dtype.is_complex)) and \
                op not in COMPLEX_REDUCE_OPS:
            raise GraphError(f"{op} of a complex tensor is not supported")
        axes = tuple(sorted({a % max(x.rank, 1) for a in axes})) if x.rank else ()
        if op in ("argmax", "argmin") and len(axes) != 1 and x.rank:
            raise GraphError(f"{op} reduces exactly one axis")
        if op in ("any", "all"):
            x = self.cast(x, DType.bool)
            out_dt = DType.bool
        elif op in ("argmax", "argmin"):
            out_dt = DType.i64
        else:
            # Integer sums and products default to i64 (PyTorch's rule).
            small_int = x.dtype is DType.bool or (x.dtype.is_int and x.dtype is not DType.i64)
            out_dt = dtype or (DType.i64 if small_int and op in ("sum", "prod") else x.dtype)
            if out_dt.is_half or (x.dtype.is_half and op not in ("sum", "prod")):
                # Half types reduce in f32 (PyTorch's and XLA's accumulator;
                # exact for max, min and the arg reductions), then round.
                wide = self.reduce(op, self.cast(x, DType.f32), axes, keepdim,
                                   DType.f32 if op in ("sum", "prod") else None)
                return self.cast(wide, out_dt) if op not in ("argmax", "argmin") else wide
            x = self.cast(x, out_dt)
        shape = tuple((1 if keepdim else None) if i in axes else d
                      for i, d in enumerate(x.shape))
        shape = tuple(d for d in shape if d is not None)
        return self._add(Node("reduce", (x,), shape, out_dt,
                              {"fn": op, "axes": axes, "keepdim": keepdim}))

    def matmul(self, a: Node, b: Node) -> Node:
        """``a @ b`` for ``a: [..., M, K]``, ``b: [..., K, N]`` (batch dims
        broadcast; both of rank >= 2)."""
        if a.rank < 2 or b.rank < 2:
            raise GraphError("matmul operands need rank >= 2")
        if a.dtype is not b.dtype or not a.dtype.is_float:
            raise GraphError("matmul needs two floating-point operands of one dtype")
        if a.dtype.is_half:  # products accumulated in f32, the result rounded
            wide = self.matmul(self.cast(a, DType.f32), self.cast(b, DType.f32))
            return self.cast(wide, a.dtype)
        ka, kb = a.shape[-1], b.shape[-2]
        if isinstance(ka, int) and isinstance(kb, int) and ka != kb:
            raise GraphError(f"matmul: inner sizes differ ({ka} vs {kb})")
        batch = _broadcast_shapes(a.shape[:-2], b.shape[:-2])
        shape = batch + (a.shape[-2], b.shape[-1])
        return self._add(Node("matmul", (a, b), shape, a.dtype, {}))

    def cumulative(self, fn: str, x: Node, axis: int, reverse: bool = False) -> Node:
        """Running ``fn`` (``"sum"``, ``"prod"``, ``"max"``, ``"min"``,
        ``"logaddexp"``) of ``x`` along ``axis`` (from the last element with
        ``reverse``): cumsum, cumprod, cummax, cummin, logcumsumexp."""
        if fn not in ("sum", "prod", "max", "min", "logaddexp"):
            raise GraphError(f"cumulative: unknown function {fn!r}")
        if fn == "logaddexp" and not x.dtype.is_float:
            raise GraphError("cumulative logaddexp needs a floating-point operand")
        if x.dtype.is_complex or x.dtype is DType.bool:
            raise GraphError(f"cumulative {fn} of {x.dtype.value[0]} is not supported")
        if not -x.rank <= axis < max(x.rank, 1):
            raise GraphError(f"cumulative: axis {axis} out of range for rank {x.rank}")
        if x.rank == 0:
            return x
        if x.dtype.is_half:  # accumulated in f32, each result rounded
            return self.cast(self.cumulative(fn, self.cast(x, DType.f32), axis, reverse),
                             x.dtype)
        return self._add(Node("cumulative", (x,), tuple(x.shape), x.dtype,
                              {"fn": fn, "axis": axis % x.rank, "reverse": bool(reverse)}))

    def custom(self, op: str, function: str, inputs: list[Node], shape: tuple[Dim, ...],
               dtype: DType, sizes: tuple[Dim, ...], error: str | None = None,
               checks: tuple[tuple[Dim, Dim], ...] = ()) -> Node:
        """A call of custom op ``op`` (:mod:`llvmaccel.custom_ops`): its body
        ``function`` reads ``inputs`` (each contiguous, of its own shape) and
        the sizes ``sizes`` (i64, in the op's order) and writes the result, of
        ``shape`` and ``dtype``, whole. With ``error``, the body returns i32,
        nonzero when it rejects its arguments (a ValueError with that text).
        ``checks`` are pairs of sizes the signature says are equal, compared
        before the call (a ValueError when they differ)."""
        if not inputs:
            raise GraphError(f"custom op {op}: no operands")
        return self._add(Node("custom", tuple(inputs), tuple(shape), dtype,
                              {"op": op, "function": function, "sizes": tuple(sizes),
                               "error": error, "checks": tuple(checks)}))

    # -- indexing ---------------------------------------------------------
    def take(self, x: Node, index: Node, axis: int, mode: str = "check",
             fill: int | float = 0) -> Node:
        """``out[p, i, q] = x[p, index[i], q]`` along ``axis`` (embedding,
        index_select). ``mode``: ``"check"`` (out-of-range index is an
        IndexError; negative indices wrap when ``wrap``), ``"clip"``,
        ``"fill"`` (out-of-range gives ``fill``)."""
        if index.dtype not in (DType.i32, DType.i64):
            raise GraphError("indices must be int32 or int64")
        if mode not in ("check", "clip", "fill", "wrap"):
            raise GraphError(f"unknown index mode {mode!r}")
        axis = axis % x.rank
        shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
        return self._add(Node("take", (x, index), shape, x.dtype,
                              {"axis": axis, "mode": mode, "fill": fill}))

    def scatter(self, x: Node, updates: Node, indices: list[Node], dest: tuple,
                reduce: str = "set", mode: str = "check", what: str = "scatter",
                error: str = "IndexError") -> Node:
        """``x`` with ``updates`` written (or combined) at computed positions:
        for every index ``u`` of ``updates``, the position in ``x`` has, per
        dim ``d`` of ``x``, ``u[a]`` where ``dest[d]`` is ``("iter", a)``, or
        ``indices[j][u]`` where it is ``("index", j)`` (each index tensor has
        ``updates``' shape). Positions are visited in row-major order of
        ``updates``, so with ``reduce="set"`` the last duplicate wins;
        ``"add"``, ``"mul"``, ``"max"``, ``"min"`` combine with what is there.
        ``mode``: ``"check"`` (an out-of-range index is an IndexError),
        ``"wrap"`` (negative indices count from the end, then checked),
        ``"drop"`` (out-of-range updates are skipped, as JAX's default).
        ``error`` names the exception an out-of-range index raises (PyTorch's
        ``scatter`` raises RuntimeError where ``index_put`` raises IndexError)."""
        if reduce not in ("set", "add", "mul", "max", "min"):
            raise GraphError(f"unknown scatter reduction {reduce!r}")
        if mode not in ("check", "wrap", "drop"):
            raise GraphError(f"unknown scatter mode {mode!r}")
        if len(dest) != x.rank:
            raise GraphError("scatter: one destination rule per dim of x")
        for i in indices:
            if i.dtype not in (DType.i32, DType.i64):
                raise GraphError("indices must be int32 or int64")
            if tuple(i.shape) != tuple(updates.shape):
                raise GraphError("scatter: index tensors take the updates' shape")
        for kind, a in dest:
            if kind == "iter" and not 0 <= a < updates.rank or \
                    kind == "index" and not 0 <= a < len(indices) or \
                    kind not in ("iter", "index"):
                raise GraphError(f"scatter: bad destination rule {(kind, a)!r}")
        if updates.dtype is not x.dtype:
            updates = self.cast(updates, x.dtype)
        return self._add(Node("scatter", (x, updates, *indices), x.shape, x.dtype,
                              {"dest": tuple(dest), "reduce": reduce, "mode": mode,
                               "what": what, "error": error}))

    def gather(self, x: Node, index: Node, dim: int, mode: str = "check") -> Node:
        """``torch.gather``: ``out[i] = x[i with i[dim] := index[i]]``."""
        if index.dtype not in (DType.i32, DType.i64):
            raise GraphError("indices must be int32 or int64")
        if index.rank != x.rank:
            raise GraphError("gather: index and input need the same rank")
        dim = dim % x.rank
        return self._add(Node("gather", (x, index), index.shape, x.dtype,
                              {"dim": dim, "mode": mode}))

    def embedding_bag(self, table: Node, indices: Node, offsets: Node, mode: str = "sum",
                      include_last_offset: bool = False,
                      per_sample_weights: Node | None = None,
                      padding_idx: int | None = None) -> Node:
        """``out[b] = reduce over j in [offsets[b], offsets[b+1]) of
        table[indices[j]]`` (the last bag ends at ``len(indices)``, or
        ``offsets`` has one entry more with ``include_last_offset``).
        ``mode`` is ``"sum"`` or ``"mean"``; empty bags give zeros. Entries
        equal to ``padding_idx`` (a row of the table) are left out, and a
        mean counts only the others."""
        if mode not in ("sum", "mean"):
            raise GraphError(f"embedding_bag mode {mode!r} is not supported (sum, mean)")
        if table.rank != 2 or indices.rank != 1 or offsets.rank != 1:
            raise GraphError("embedding_bag takes a 2-d table and 1-d indices and offsets")
        if not table.dtype.is_float:
            raise GraphError("embedding_bag needs a floating-point table")
        if table.dtype.is_half:  # summed in f32, the result rounded
            wide = self.embedding_bag(self.cast(table, DType.f32), indices, offsets, mode,
                                      include_last_offset, per_sample_weights, padding_idx)
            return self.cast(wide, table.dtype)
        bags = offsets.shape[0]
        if include_last_offset:
            bags = dim_op("add", bags, -1)
        ins = (table, indices, offsets)
        if per_sample_weights is not None:
            ins = ins + (self.cast(per_sample_weights, table.dtype),)
        if padding_idx is not None and not (
                0 <= padding_idx and (not isinstance(table.shape[0], int)
                                      or padding_idx < table.shape[0])):
            raise GraphError(f"embedding_bag: padding_idx {padding_idx} is not a row of the table")
        return self._add(Node("embedding_bag", ins, (bags, table.shape[1]), table.dtype,
                              {"mode": mode, "last": include_last_offset,
                               "padding_idx": -1 if padding_idx is None else padding_idx}))

    # -- control flow and sorting -------------------------------------------
    def _results(self, node: Node, outs: list[tuple[tuple[Dim, ...], DType]]) -> list[Node]:
        """One ``result`` node per value of the multi-valued ``node``."""
        return [self._add(Node("result", (node,), tuple(shape), dt, {"index": k}))
                for k, (shape, dt) in enumerate(outs)]

    def _lift(self, body: Graph) -> list[Node]:
        """Turns the tensor constants of ``body`` into trailing inputs of it
        and returns the constants of this graph that feed them."""
        lifted = []
        for nid in sorted(body.constants):
            n = body.nodes[nid]
            n.op, n.attrs = "input", {"name": f"const{nid}"}
            body.inputs.append(n)
            lifted.append(self.constant(body.constants[nid], n.dtype))
        body.constants = {}
        return lifted

    @staticmethod
    def _check_region(what: str, body: Graph, ins: list[tuple], outs: list[tuple]) -> None:
        got_in = [(tuple(n.shape), n.dtype) for n in body.inputs]
        got_out = [(tuple(n.shape), n.dtype) for n in body.outputs]
        if got_in != [(tuple(s), d) for s, d in ins]:
            raise GraphError(f"{what}: the region takes {got_in}, the operands are {ins}")
        if outs and got_out != [(tuple(s), d) for s, d in outs]:
            raise GraphError(f"{what}: the region gives {got_out}, expected {outs}")

    def scan(self, body: Graph, consts: list[Node], init: list[Node], xs: list[Node],
             length: Dim, reverse: bool = False) -> list[Node]:
        """``lax.scan`` as one counted loop: ``length`` iterations of ``body``
        (inputs: ``consts``, the carries, one slice ``x[t]`` of each of ``xs``
        along its first dim; outputs: the new carries, then the slices
        ``y[t]``), ``t`` from the last slice down with ``reverse``. Gives the
        final carries, then the stacked ``ys`` (``[length, *y.shape]``). The
        body's loop nests and temporaries are emitted once, inside the loop."""
        for x in xs:  # every slice x[t] is read in place: the sizes must agree
            if x.rank < 1 or x.shape[0] != length:
                raise GraphError(f"scan: xs of shape {x.shape} for {length} iterations")
        sig = lambda ns: [(tuple(n.shape), n.dtype) for n in ns]  # noqa: E731
        carries = sig(init)
        self._check_region("scan", body, sig(consts) + carries +
                           [(tuple(x.shape[1:]), x.dtype) for x in xs], [])
        nys = len(body.outputs) - len(init)
        if nys < 0 or sig(body.outputs[:len(init)]) != carries:
            raise GraphError("scan: the body's first outputs must be the new carries, "
                             f"{carries}")
        lifted = self._lift(body)
        node = self._add(Node("scan", (*consts, *init, *xs, *lifted), (), DType.bool,
                              {"body": Region(body), "length": length, "reverse": bool(reverse),
                               "n_consts": len(consts), "n_carry": len(init), "n_xs": len(xs)}))
        ys = [((length, *o.shape), o.dtype) for o in body.outputs[len(init):]]
        return self._results(node, carries + ys)

    def while_loop(self, cond: Graph, body: Graph, cond_consts: list[Node],
                   body_consts: list[Node], init: list[Node]) -> list[Node]:
        """``lax.while_loop``: while ``cond(cond_consts, carries)`` (a bool
        scalar) holds, ``carries = body(body_consts, carries)``; a loop whose
        trip count the data decides. Gives the final carries."""
        sig = lambda ns: [(tuple(n.shape), n.dtype) for n in ns]  # noqa: E731
        carries = sig(init)
        self._check_region("while_loop cond", cond, sig(cond_consts) + carries,
                           [((), DType.bool)])
        self._check_region("while_loop body", body, sig(body_consts) + carries, carries)
        clift, blift = self._lift(cond), self._lift(body)
        node = self._add(Node("while", (*cond_consts, *body_consts, *init, *clift, *blift), (),
                              DType.bool,
                              {"cond": Region(cond), "body": Region(body),
                               "n_cconsts": len(cond_consts), "n_bconsts": len(body_consts),
                               "n_carry": len(init), "n_clift": len(clift)}))
        return self._results(node, carries)

    def switch(self, index: Node, branches: list[Graph], operands: list[Node]) -> list[Node]:
        """``lax.switch``/``lax.cond``: runs only ``branches[index]`` (an
        integer scalar, clamped to ``[0, len(branches) - 1]`` as XLA does) on
        ``operands``, with real branches. Every branch gives the same
        shapes and dtypes."""
        if index.rank != 0 or not (index.dtype.is_int or index.dtype is DType.bool):
            raise GraphError("switch needs an integer scalar index")
        if not branches:
            raise GraphError("switch without branches")
        sig = lambda ns: [(tuple(n.shape), n.dtype) for n in ns]  # noqa: E731
        outs = sig(branches[0].outputs)
        for b in branches:
            self._check_region("switch", b, sig(operands), outs)
        lifts = [self._lift(b) for b in branches]
        node = self._add(Node("switch", (self.cast(index, DType.i64), *operands,
                                         *[x for lift in lifts for x in lift]), (), DType.bool,
                              {"branches": tuple(Region(b) for b in branches),
                               "n_ops": len(operands),
                               "n_lifts": tuple(len(lift) for lift in lifts)}))
        return self._results(node, outs)

    def sort(self, operands: list[Node], dim: int, num_keys: int = 1,
             descending: bool = False, total_order: bool = False) -> list[Node]:
        """Sorts ``operands`` (one shape) together along ``dim``, ordered by
        the first ``num_keys`` of them (lexicographically), stably (equal keys
        keep their order). Floats order as numpy, PyTorch and JAX sort: NaN
        after everything (before everything with ``descending``), -0.0 equal
        to 0.0; with ``total_order``, IEEE 754's total order instead (-NaN
        first, -0.0 before 0.0, NaN last: ``lax.top_k``). Gives the sorted
        operands (``lax.sort``; ``torch.sort`` is ``sort([x, iota])``)."""
        if not operands or not 1 <= num_keys <= len(operands):
            raise GraphError(f"sort: {num_keys} keys of {len(operands)} operands")
        shape = tuple(operands[0].shape)
        if any(tuple(x.shape) != shape for x in operands):
            raise GraphError("sort: the operands need one shape")
        if not shape:
            return list(operands)
        if any(x.dtype.is_complex for x in operands[:num_keys]):
            raise GraphError("sort of complex keys is not supported")
        dim = dim % len(shape)
        node = self._add(Node("sort", tuple(operands), (), DType.bool,
                              {"dim": dim, "num_keys": int(num_keys),
                               "descending": bool(descending),
                               "total_order": bool(total_order)}))
        return self._results(node, [(shape, x.dtype) for x in operands])
