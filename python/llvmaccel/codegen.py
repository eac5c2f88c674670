"""Graph -> LLVM IR text.

One LLVM function per graph::

    i32 @<name>(ptr inputs..., ptr constants..., ptr outputs..., ptr temps...,
                i64 size-symbols...)

returns 0, or the number of the index check that failed (see
:attr:`Kernel.errors`). Every pointer is ``noalias``: inputs and constants are
only read; outputs and temporaries are freshly allocated by the caller.

Stages inside :func:`generate`:

1. *Fusion.* Nodes are split into materialized nodes (graph inputs/constants,
   outputs, reductions, matmuls, embedding bags, operands that must be
   buffers, and elementwise values used more than once or broadcast) and
   fused nodes. Each materialized node gets one loop nest; fused nodes are
   computed inside the loop nests of their consumers.
2. *Elemental emission* (in the manner of XLA's elemental IR emitter): every
   node is a function from an output index to a value; views (reshape,
   permute, broadcast, slice, select) only remap indices, padding and
   ``concat`` are bounds-checked loads, gathers load through an index.
   Same-shape elementwise chains over contiguous buffers are emitted as one
   flat loop over a linear index.
3. *Kernels* with their own loop shape: reductions (kept dims outer, reduced
   dims inner, f32 sums accumulated in f64), matmul (i-k-j order: the
   innermost loop runs over contiguous rows of B and C and vectorizes), and
   embedding_bag as the counted loop nest accel-prefetch recognizes::

       bounds = offsets (include_last_offset), else a temporary
                holding offsets followed by len(indices)
       for b in [0, bags):                      # i64 induction variables
         start = bounds[b]; end = bounds[b+1]   # CSR: tiles of the indices
         out[b, :] = 0
         for j in [start, end):                 # counted, no early exit
           row = indices[j]                     # T[f(B[j])]
           for k in [0, D): out[b, k] += table[row * D + k]

Index inputs in ``check`` mode are validated by a branch-free loop before the
loop nests that use them, so the hot loops have no early exits and never read
out of bounds.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .graph import DType, Graph, GraphError, Node, SymExpr, dim_op, shape_numel

__all__ = ["Kernel", "generate", "CodegenError"]


class CodegenError(GraphError):
    """The graph cannot be turned into LLVM IR (an unsupported construct)."""


@dataclass
class Buffer:
    """A tensor the kernel reads or writes through a pointer parameter."""

    kind: str  # "input", "constant", "output", "temp"
    shape: tuple
    dtype: DType
    param: str  # LLVM parameter name
    node: int | None = None  # graph node id (inputs, constants)


@dataclass
class Kernel:
    """Generated code for a graph, and how to call it.

    Attributes:
        ir: The LLVM module as text.
        name: The entry function.
        inputs: Node ids of the graph inputs, in parameter order.
        constants: Node ids of the tensor constants, in parameter order.
        outputs: (shape, dtype) of every output buffer.
        temps: (shape, dtype) of every temporary buffer.
        symbols: Size symbols, in parameter order (after the pointers).
        errors: Return code -> (exception name, message).
        output_map: For graph output k, the output buffer index it is in.
    """

    ir: str
    name: str
    inputs: list[int]
    constants: list[int]
    outputs: list[tuple]
    temps: list[tuple]
    symbols: list[str]
    errors: dict[int, tuple[str, str]] = field(default_factory=dict)
    output_map: list[int] = field(default_factory=list)


_VIEWS = frozenset({"broadcast", "reshape", "permute", "slice", "select", "pad"})
_KERNELS = frozenset({"reduce", "matmul", "embedding_bag"})
# Register blocking of matmul: rows of C and steps of k per pass over a row.
_MATMUL_ROWS = 4
_MATMUL_DEPTH = 4
_BUFFERS = frozenset({"input", "constant"})
_LIBM = {
    "tanh": "tanh", "erf": "erf", "erfc": "erfc", "log1p": "log1p", "expm1": "expm1",
    "atan2": "atan2",
}
_INTRINSIC_UNARY = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt",
    "abs": "fabs", "floor": "floor", "ceil": "ceil", "round": "roundeven",
    "trunc": "trunc", "sin": "sin", "cos": "cos",
}


def _fconst(value: float, dtype: DType) -> str:
    """An LLVM floating-point literal (hex, exact)."""
    if dtype is DType.f32:
        with np.errstate(over="ignore"):
            value = float(np.float32(value))
    return "0x{:016X}".format(struct.unpack("<Q", struct.pack("<d", float(value)))[0])


def _const(value: object, dtype: DType) -> str:
    if dtype.is_float:
        return _fconst(float(value), dtype)  # type: ignore[arg-type]
    if dtype is DType.bool:
        return "true" if value else "false"
    return str(int(value))  # type: ignore[call-overload]


def _strides(shape: tuple) -> list:
    out: list = []
    acc: object = 1
    for d in reversed(shape):
        out.append(acc)
        acc = dim_op("mul", acc, d)  # type: ignore[arg-type]
    return out[::-1]


class _Emitter:
    """Builds the body of the entry function."""

    def __init__(self, graph: Graph, name: str) -> None:
        self.g = graph
        self.name = name
        self.allocas: list[str] = []
        self.prologue: list[str] = []
        self.body: list[str] = []
        self.decls: dict[str, str] = {}
        self.block = "entry"
        self.count = 0
        self.memo: dict[tuple, str] = {}
        self.dimvals: dict[str, str] = {}
        self.buffers: dict[int, Buffer] = {}
        self.errors: dict[int, tuple[str, str]] = {}
        self.bag_bounds: dict[int, Buffer] = {}  # embedding_bag without the last offset

    # -- low-level --------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def label(self, hint: str) -> str:
        self.count += 1
        return f"{hint}{self.count}"

    def line(self, text: str) -> None:
        self.body.append("  " + text)

    def op(self, text: str, hint: str = "v") -> str:
        name = self.fresh(hint)
        self.line(f"{name} = {text}")
        return name

    def start_block(self, label: str) -> None:
        self.body.append(f"{label}:")
        self.block = label

    def br(self, label: str) -> None:
        self.line(f"br label %{label}")

    def declare(self, name: str, ret: str, args: list[str]) -> None:
        self.decls[name] = f"declare {ret} @{name}({', '.join(args)})"

    def call(self, fn: str, ret: str, args: list[tuple[str, str]]) -> str:
        self.declare(fn, ret, [t for t, _ in args])
        return self.op(f"call {ret} @{fn}({', '.join(f'{t} {v}' for t, v in args)})")

    def alloca(self, ty: str) -> str:
        name = self.fresh("acc")
        self.allocas.append(f"  {name} = alloca {ty}")
        return name

    # -- sizes ------------------------------------------------------------
    def dim(self, d: object) -> str:
        """An i64 value for a size (computed once, in the entry block)."""
        if isinstance(d, int):
            return str(d)
        assert isinstance(d, SymExpr)
        key = str(d)
        if key in self.dimvals:
            return self.dimvals[key]
        if d.op == "sym":
            val = f"%sym.{d.args[0]}"
        else:
            a, b = (self.dim(x) for x in d.args)
            name = f"%d{len(self.dimvals)}"
            if d.op in ("add", "mul"):
                self.prologue.append(f"  {name} = {d.op} i64 {a}, {b}")
            elif d.op in ("floordiv", "mod"):
                # Sizes are non-negative; guard division by zero.
                nz = f"{name}.nz"
                self.prologue.append(f"  {name}.z = icmp eq i64 {b}, 0")
                self.prologue.append(f"  {nz} = select i1 {name}.z, i64 1, i64 {b}")
                fn = "sdiv" if d.op == "floordiv" else "srem"
                self.prologue.append(f"  {name} = {fn} i64 {a}, {nz}")
            elif d.op in ("max", "min"):
                self.prologue.append(
                    f"  {name} = call i64 @llvm.s{d.op}.i64(i64 {a}, i64 {b})")
                self.declare(f"llvm.s{d.op}.i64", "i64", ["i64", "i64"])
            else:
                raise CodegenError(f"unsupported size expression {d}")
            val = name
        self.dimvals[key] = val
        return val

    def iadd(self, a: str, b: str) -> str:
        if a == "0":
            return b
        if b == "0":
            return a
        return self.op(f"add nsw i64 {a}, {b}", "i")

    def imul(self, a: str, b: str) -> str:
        if a == "1":
            return b
        if b == "1":
            return a
        if a == "0" or b == "0":
            return "0"
        return self.op(f"mul nsw i64 {a}, {b}", "i")

    def linear(self, idx: list[str], shape: tuple) -> str:
        """Row-major linear offset of ``idx`` in ``shape``."""
        off = "0"
        for i, d in zip(idx, shape, strict=False):
            off = self.iadd(self.imul(off, self.dim(d)), i)
        return off

    def delinearize(self, lin: str, shape: tuple) -> list[str]:
        out = []
        strides = _strides(shape)
        for k, d in enumerate(shape):
            if d == 1:
                out.append("0")
                continue
            q = lin if k == 0 else lin
            if strides[k] != 1:
                q = self.op(f"udiv i64 {q}, {self.dim(strides[k])}", "i")
            if k > 0:
                q = self.op(f"urem i64 {q}, {self.dim(d)}", "i")
            out.append(q)
        return out

    # -- loops ------------------------------------------------------------
    @contextmanager
    def loop(self, end: str, start: str = "0", hint: str = "i") -> Iterator[str]:
        """``for (i = start; i < end; ++i)`` with an i64 induction variable."""
        pre = self.block
        head, body, done = self.label("loop"), self.label("body"), self.label("exit")
        self.br(head)
        self.start_block(head)
        i = self.fresh(hint)
        pos = len(self.body)
        self.line("<phi>")
        c = self.op(f"icmp slt i64 {i}, {end}", "c")
        self.line(f"br i1 {c}, label %{body}, label %{done}")
        self.start_block(body)
        saved = dict(self.memo)
        yield i
        latch = self.block
        nxt = self.op(f"add nsw i64 {i}, 1", "i")
        self.br(head)
        self.body[pos] = f"  {i} = phi i64 [ {start}, %{pre} ], [ {nxt}, %{latch} ]"
        self.start_block(done)
        self.memo = saved

    @contextmanager
    def nest(self, shape: tuple) -> Iterator[list[str]]:
        """Nested loops over ``shape`` (outermost first)."""
        idx: list[str] = []
        stack = []
        for d in shape:
            cm = self.loop(self.dim(d))
            idx.append(cm.__enter__())
            stack.append(cm)
        yield idx
        for cm in reversed(stack):
            cm.__exit__(None, None, None)

    def cond(self, c: str, then_fn: object, else_fn: object, ty: str) -> str:
        """``c ? then_fn() : else_fn()`` with real branches (the untaken side
        is not evaluated)."""
        t, e, j = self.label("then"), self.label("else"), self.label("join")
        self.line(f"br i1 {c}, label %{t}, label %{e}")
        saved = dict(self.memo)
        self.start_block(t)
        tv = then_fn()  # type: ignore[operator]
        tb = self.block
        self.br(j)
        self.memo = dict(saved)
        self.start_block(e)
        ev = else_fn()  # type: ignore[operator]
        eb = self.block
        self.br(j)
        self.memo = saved
        self.start_block(j)
        return self.op(f"phi {ty} [ {tv}, %{tb} ], [ {ev}, %{eb} ]")

    # -- memory -----------------------------------------------------------
    def gep(self, buf: Buffer, off: str) -> str:
        if off == "0":
            return buf.param
        return self.op(f"getelementptr inbounds {buf.dtype.mem}, ptr {buf.param}, i64 {off}",
                       "p")

    def load(self, buf: Buffer, off: str) -> str:
        p = self.gep(buf, off)
        v = self.op(f"load {buf.dtype.mem}, ptr {p}", "ld")
        if buf.dtype is DType.bool:
            v = self.op(f"icmp ne i8 {v}, 0", "b")
        return v

    def store(self, buf: Buffer, off: str, value: str) -> None:
        p = self.gep(buf, off)
        if buf.dtype is DType.bool:
            value = self.op(f"zext i1 {value} to i8", "b")
        self.line(f"store {buf.dtype.mem} {value}, ptr {p}")

    def buffer_of(self, node: Node) -> Buffer | None:
        """The buffer holding ``node`` contiguously, through reshapes."""
        while node.id not in self.buffers and node.op == "reshape":
            node = node.inputs[0]
        return self.buffers.get(node.id)

    # -- elemental emission -------------------------------------------------
    def flat_ok(self, node: Node) -> bool:
        """True when ``node`` can be computed from a linear index alone."""
        if node.id in self.buffers or node.op == "scalar":
            return True
        if node.op == "reshape":
            return self.flat_ok(node.inputs[0])
        if node.op in ("unary", "binary", "compare", "where", "cast"):
            return all((i.op == "scalar" or tuple(i.shape) == tuple(node.shape))
                       and self.flat_ok(i) for i in node.inputs)
        return False

    def emit_lin(self, node: Node, lin: str) -> str:
        """Value of ``node`` at linear (row-major) position ``lin``."""
        key = (node.id, "lin", lin)
        if key in self.memo:
            return self.memo[key]
        buf = self.buffers.get(node.id)
        if buf is not None:
            v = self.load(buf, lin)
        elif node.op == "scalar":
            return _const(node.attrs["value"], node.dtype)
        elif node.op == "reshape" and self.flat_ok(node.inputs[0]):
            v = self.emit_lin(node.inputs[0], lin)
        elif self.flat_ok(node) and node.op != "reshape":
            args = [self.emit_lin(i, lin) for i in node.inputs]
            v = self.compute(node, args)
        else:
            v = self.emit(node, self.delinearize(lin, node.shape))
        self.memo[key] = v
        return v

    def emit(self, node: Node, idx: list[str]) -> str:
        """Value of ``node`` at multi-index ``idx``."""
        key = (node.id, tuple(idx))
        if key in self.memo:
            return self.memo[key]
        v = self._emit(node, idx)
        self.memo[key] = v
        return v

    def bcast_idx(self, operand: Node, shape: tuple, idx: list[str]) -> list[str]:
        off = len(shape) - operand.rank
        return ["0" if d == 1 and shape[off + k] != 1 else idx[off + k]
                for k, d in enumerate(operand.shape)]

    def _emit(self, node: Node, idx: list[str]) -> str:
        buf = self.buffers.get(node.id)
        if buf is not None:
            return self.load(buf, self.linear(idx, node.shape))
        op = node.op
        if op == "scalar":
            return _const(node.attrs["value"], node.dtype)
        if op == "iota":
            i = idx[node.attrs["dim"]]
            return self.convert(i, DType.i64, node.dtype)
        if op in ("unary", "binary", "compare", "where", "cast"):
            args = [self.emit(i, self.bcast_idx(i, node.shape, idx)) for i in node.inputs]
            return self.compute(node, args)
        if op == "broadcast":
            x = node.inputs[0]
            return self.emit(x, self.bcast_idx(x, node.shape, idx))
        if op == "reshape":
            x = node.inputs[0]
            return self.emit_lin(x, self.linear(idx, node.shape))
        if op == "permute":
            x = node.inputs[0]
            src = [""] * x.rank
            for k, p in enumerate(node.attrs["perm"]):
                src[p] = idx[k]
            return self.emit(x, src)
        if op == "slice":
            x = node.inputs[0]
            d = node.attrs["dim"]
            src = list(idx)
            i = self.imul(idx[d], str(node.attrs["step"]))
            src[d] = self.iadd(i, self.dim(node.attrs["start"]))
            return self.emit(x, src)
        if op == "select":
            x = node.inputs[0]
            d = node.attrs["dim"]
            i = self.dim(node.attrs["index"])
            return self.emit(x, idx[:d] + [i] + idx[d:])
        if op == "pad":
            return self.emit_pad(node, idx)
        if op == "concat":
            return self.emit_concat(node, idx)
        if op == "take":
            return self.emit_take(node, idx)
        if op == "gather":
            return self.emit_gather(node, idx)
        raise CodegenError(f"cannot emit {op} elementwise")

    def emit_pad(self, node: Node, idx: list[str]) -> str:
        x = node.inputs[0]
        src, checks = [], []
        for k, lo in enumerate(node.attrs["lo"]):
            if lo == 0 and x.shape[k] == node.shape[k]:
                src.append(idx[k])
                continue
            s = self.op(f"sub nsw i64 {idx[k]}, {self.dim(lo)}", "i")
            src.append(s)
            checks.append(self.op(f"icmp ult i64 {s}, {self.dim(x.shape[k])}", "c"))
        fill = _const(node.attrs["value"], node.dtype)
        if not checks:
            return self.emit(x, src)
        ok = checks[0]
        for c in checks[1:]:
            ok = self.op(f"and i1 {ok}, {c}", "c")
        return self.cond(ok, lambda: self.emit(x, src), lambda: fill, node.dtype.llvm)

    def emit_concat(self, node: Node, idx: list[str]) -> str:
        d = node.attrs["dim"]
        parts = list(node.inputs)

        def part(k: int, start: object) -> str:
            x = parts[k]
            src = list(idx)
            src[d] = self.op(f"sub nsw i64 {idx[d]}, {self.dim(start)}", "i") \
                if start != 0 else idx[d]
            if k == len(parts) - 1:
                return self.emit(x, src)
            end = dim_op("add", start, x.shape[d])  # type: ignore[arg-type]
            c = self.op(f"icmp slt i64 {idx[d]}, {self.dim(end)}", "c")
            return self.cond(c, lambda: self.emit(x, src), lambda: part(k + 1, end),
                             node.dtype.llvm)

        return part(0, 0)

    def index_value(self, index: Node, idx: list[str], size: object, mode: str
                    ) -> tuple[str, str | None]:
        """The i64 index to use, and for ``fill`` the in-range flag."""
        v = self.emit(index, idx)
        if index.dtype is DType.i32:
            v = self.op(f"sext i32 {v} to i64", "i")
        n = self.dim(size)
        if mode == "wrap":
            neg = self.op(f"icmp slt i64 {v}, 0", "c")
            w = self.op(f"add i64 {v}, {n}", "i")
            v = self.op(f"select i1 {neg}, i64 {w}, i64 {v}", "i")
        if mode == "clip":
            hi = self.op(f"sub i64 {n}, 1", "i")
            v = self.call("llvm.smin.i64", "i64", [("i64", v), ("i64", hi)])
            v = self.call("llvm.smax.i64", "i64", [("i64", v), ("i64", "0")])
            return v, None
        if mode == "fill":
            return v, self.op(f"icmp ult i64 {v}, {n}", "c")
        return v, None  # check / wrap: validated before the loop nest

    def emit_take(self, node: Node, idx: list[str]) -> str:
        x, index = node.inputs
        axis, mode = node.attrs["axis"], node.attrs["mode"]
        r = index.rank
        i, ok = self.index_value(index, idx[axis:axis + r], x.shape[axis], mode)
        src = idx[:axis] + [i] + idx[axis + r:]
        if ok is None:
            return self.emit(x, src)
        fill = _const(node.attrs["fill"], node.dtype)
        return self.cond(ok, lambda: self.emit(x, src), lambda: fill, node.dtype.llvm)

    def emit_gather(self, node: Node, idx: list[str]) -> str:
        x, index = node.inputs
        d, mode = node.attrs["dim"], node.attrs["mode"]
        i, ok = self.index_value(index, idx, x.shape[d], mode)
        src = list(idx)
        src[d] = i
        if ok is None:
            return self.emit(x, src)
        return self.cond(ok, lambda: self.emit(x, src), lambda: _const(0, node.dtype),
                         node.dtype.llvm)

    # -- scalar computations ------------------------------------------------
    def convert(self, v: str, src: DType, dst: DType) -> str:
        if src is dst:
            return v
        s, d = src.llvm, dst.llvm
        if dst is DType.bool:
            if src.is_float:
                return self.op(f"fcmp une {s} {v}, 0.0", "b")
            return self.op(f"icmp ne {s} {v}, 0", "b")
        if src is DType.bool:
            if dst.is_float:
                return self.op(f"uitofp i1 {v} to {d}")
            return self.op(f"zext i1 {v} to {d}")
        if src.is_float and dst.is_float:
            return self.op(f"{'fpext' if dst is DType.f64 else 'fptrunc'} {s} {v} to {d}")
        if src.is_float:
            sfx = "f32" if src is DType.f32 else "f64"
            return self.call(f"llvm.fptosi.sat.{d}.{sfx}", d, [(s, v)])
        if dst.is_float:
            return self.op(f"sitofp {s} {v} to {d}")
        if src.itemsize < dst.itemsize:
            return self.op(f"sext {s} {v} to {d}")
        return self.op(f"trunc {s} {v} to {d}")

    def fcall(self, base: str, dt: DType, args: list[str], libm: bool = False) -> str:
        t = dt.llvm
        if libm:
            name = base + ("f" if dt is DType.f32 else "")
        else:
            name = f"llvm.{base}.{'f32' if dt is DType.f32 else 'f64'}"
        return self.call(name, t, [(t, a) for a in args])

    def compute(self, node: Node, args: list[str]) -> str:
        op = node.op
        if op == "cast":
            return self.convert(args[0], node.inputs[0].dtype, node.dtype)
        if op == "where":
            return self.op(f"select i1 {args[0]}, {node.dtype.llvm} {args[1]}, "
                           f"{node.dtype.llvm} {args[2]}")
        if op == "compare":
            return self.compare(node.attrs["fn"], node.inputs[0].dtype, args[0], args[1])
        if op == "unary":
            return self.unary(node.attrs["fn"], node.dtype, args[0])
        if op == "binary":
            return self.binary(node.attrs["fn"], node.dtype, args[0], args[1])
        raise CodegenError(f"not an elementwise op: {op}")

    def compare(self, fn: str, dt: DType, a: str, b: str) -> str:
        t = dt.llvm
        if dt.is_float:
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt",
                    "ge": "oge"}[fn]
            return self.op(f"fcmp {pred} {t} {a}, {b}", "b")
        sign = "u" if dt is DType.bool else "s"
        pred = {"eq": "eq", "ne": "ne", "lt": f"{sign}lt", "le": f"{sign}le",
                "gt": f"{sign}gt", "ge": f"{sign}ge"}[fn]
        return self.op(f"icmp {pred} {t} {a}, {b}", "b")

    def unary(self, fn: str, dt: DType, x: str) -> str:
        t = dt.llvm
        if not dt.is_float:
            if fn == "not":
                return self.op(f"xor i1 {x}, true")
            if fn == "neg":
                return self.op(f"sub {t} 0, {x}")
            if fn == "abs":
                return self.call(f"llvm.abs.{t}", t, [(t, x), ("i1", "false")])
            if fn == "relu":
                return self.call(f"llvm.smax.{t}", t, [(t, x), (t, "0")])
            if fn == "square":
                return self.op(f"mul {t} {x}, {x}")
            if fn == "sign":
                p = self.op(f"icmp sgt {t} {x}, 0", "c")
                n = self.op(f"icmp slt {t} {x}, 0", "c")
                pz = self.op(f"zext i1 {p} to {t}")
                nz = self.op(f"zext i1 {n} to {t}")
                return self.op(f"sub {t} {pz}, {nz}")
            raise CodegenError(f"{fn} of {dt.value[0]}")
        one, zero = _fconst(1.0, dt), _fconst(0.0, dt)
        if fn in _INTRINSIC_UNARY:
            return self.fcall(_INTRINSIC_UNARY[fn], dt, [x])
        if fn in _LIBM:
            return self.fcall(_LIBM[fn], dt, [x], libm=True)
        if fn == "neg":
            return self.op(f"fneg {t} {x}")
        if fn == "rsqrt":
            return self.op(f"fdiv {t} {one}, {self.fcall('sqrt', dt, [x])}")
        if fn == "reciprocal":
            return self.op(f"fdiv {t} {one}, {x}")
        if fn == "square":
            return self.op(f"fmul {t} {x}, {x}")
        if fn == "relu":
            c = self.op(f"fcmp olt {t} {x}, {zero}", "c")
            return self.op(f"select i1 {c}, {t} {zero}, {t} {x}")
        if fn in ("sigmoid", "silu"):
            e = self.fcall("exp", dt, [self.op(f"fneg {t} {x}")])
            s = self.op(f"fdiv {t} {one}, {self.op(f'fadd {t} {one}, {e}')}")
            return s if fn == "sigmoid" else self.op(f"fmul {t} {x}, {s}")
        if fn == "gelu":
            h = self.op(f"fmul {t} {x}, {_fconst(0.7071067811865476, dt)}")
            e = self.fcall("erf", dt, [h], libm=True)
            y = self.op(f"fmul {t} {x}, {_fconst(0.5, dt)}")
            return self.op(f"fmul {t} {y}, {self.op(f'fadd {t} {one}, {e}')}")
        if fn == "gelu_tanh":
            x3 = self.op(f"fmul {t} {self.op(f'fmul {t} {x}, {x}')}, {x}")
            inner = self.op(f"fadd {t} {x}, {self.op(f'fmul {t} {x3}, {_fconst(0.044715, dt)}')}")
            k = self.op(f"fmul {t} {inner}, {_fconst(0.7978845608028654, dt)}")
            th = self.fcall("tanh", dt, [k], libm=True)
            y = self.op(f"fmul {t} {x}, {_fconst(0.5, dt)}")
            return self.op(f"fmul {t} {y}, {self.op(f'fadd {t} {one}, {th}')}")
        if fn == "sign":
            p = self.op(f"fcmp ogt {t} {x}, {zero}", "c")
            n = self.op(f"fcmp olt {t} {x}, {zero}", "c")
            v = self.op(f"select i1 {n}, {t} {_fconst(-1.0, dt)}, {t} {x}")
            return self.op(f"select i1 {p}, {t} {one}, {t} {v}")
        raise CodegenError(f"unsupported unary op {fn}")

    def binary(self, fn: str, dt: DType, a: str, b: str) -> str:
        t = dt.llvm
        if dt.is_float:
            simple = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv",
                      "rem": "frem"}
            if fn in simple:
                return self.op(f"{simple[fn]} {t} {a}, {b}")
            if fn == "maximum":
                return self.fcall("maximum", dt, [a, b])
            if fn == "minimum":
                return self.fcall("minimum", dt, [a, b])
            if fn == "pow":
                return self.fcall("pow", dt, [a, b])
            if fn == "atan2":
                return self.fcall("atan2", dt, [a, b], libm=True)
            if fn == "floordiv":
                return self.fcall("floor", dt, [self.op(f"fdiv {t} {a}, {b}")])
            raise CodegenError(f"unsupported float op {fn}")
        if fn in ("add", "sub", "mul", "and", "or", "xor"):
            return self.op(f"{fn} {t} {a}, {b}")
        if fn in ("maximum", "minimum"):
            if dt is DType.bool:
                return self.op(f"{'or' if fn == 'maximum' else 'and'} i1 {a}, {b}")
            return self.call(f"llvm.s{fn[:3]}.{t}", t, [(t, a), (t, b)])
        if fn in ("div", "rem", "floordiv"):
            # No traps: x / 0 gives 0, INT_MIN / -1 wraps.
            zero = self.op(f"icmp eq {t} {b}, 0", "c")
            m1 = self.op(f"icmp eq {t} {b}, -1", "c")
            safe = self.op(f"select i1 {zero}, {t} 1, {t} {b}")
            safe = self.op(f"select i1 {m1}, {t} 1, {t} {safe}")
            if fn == "rem":
                r = self.op(f"srem {t} {a}, {safe}")
                r = self.op(f"select i1 {m1}, {t} 0, {t} {r}")
                return self.op(f"select i1 {zero}, {t} 0, {t} {r}")
            q = self.op(f"sdiv {t} {a}, {safe}")
            q = self.op(f"select i1 {m1}, {t} {self.op(f'sub {t} 0, {a}')}, {t} {q}")
            if fn == "floordiv":
                r = self.op(f"srem {t} {a}, {safe}")
                nz = self.op(f"icmp ne {t} {r}, 0", "c")
                sx = self.op(f"xor {t} {r}, {b}")
                neg = self.op(f"icmp slt {t} {sx}, 0", "c")
                adj = self.op(f"and i1 {nz}, {neg}", "c")
                adj = self.op(f"and i1 {adj}, {self.op(f'xor i1 {m1}, true', 'c')}", "c")
                q = self.op(f"sub {t} {q}, {self.op(f'zext i1 {adj} to {t}')}")
            return self.op(f"select i1 {zero}, {t} 0, {t} {q}")
        raise CodegenError(f"unsupported integer op {fn}")

    # -- index checks -------------------------------------------------------
    def check_indices(self, index: Node, size: object, what: str) -> None:
        """A branch-free scan of ``index`` (a buffer): return an error code when
        any entry is outside ``[0, size)``."""
        buf = self.buffer_of(index)
        if buf is None:
            raise CodegenError("index operand is not materialized")
        code = len(self.errors) + 1
        self.errors[code] = ("IndexError", f"index out of range in {what}")
        flag = self.alloca("i1")
        self.line(f"store i1 false, ptr {flag}")
        n = self.dim(shape_numel(index.shape))
        bound = self.dim(size)
        with self.loop(n) as i:
            v = self.load(buf, i)
            if index.dtype is DType.i32:
                v = self.op(f"sext i32 {v} to i64", "i")
            bad = self.op(f"icmp uge i64 {v}, {bound}", "c")
            old = self.op(f"load i1, ptr {flag}", "c")
            self.line(f"store i1 {self.op(f'or i1 {old}, {bad}', 'c')}, ptr {flag}")
        self.fail_if(self.op(f"load i1, ptr {flag}", "c"), code)

    def fail_if(self, bad: str, code: int) -> None:
        err, ok = self.label("fail"), self.label("ok")
        self.line(f"br i1 {bad}, label %{err}, label %{ok}")
        self.start_block(err)
        self.line(f"ret i32 {code}")
        self.start_block(ok)

    # -- loop nests ---------------------------------------------------------
    def materialize(self, node: Node, out: Buffer) -> None:
        self.memo = {}
        own = self.buffers.pop(node.id, None)  # compute the node, do not load it
        try:
            self._materialize(node, out)
        finally:
            if own is not None:
                self.buffers[node.id] = own
            self.memo = {}

    def _materialize(self, node: Node, out: Buffer) -> None:
        if node.op == "reduce":
            self.emit_reduce(node, out)
        elif node.op == "matmul":
            self.emit_matmul(node, out)
        elif node.op == "embedding_bag":
            self.emit_embedding_bag(node, out)
        elif self.flat_ok(node) and node.rank > 1:
            with self.loop(self.dim(shape_numel(node.shape))) as i:
                self.store(out, i, self.emit_lin(node, i))
        else:
            with self.nest(node.shape) as idx:
                self.store(out, self.linear(idx, node.shape), self.emit(node, idx))

    def emit_reduce(self, node: Node, out: Buffer) -> None:
        x = node.inputs[0]
        fn, axes = node.attrs["fn"], node.attrs["axes"]
        kept = [k for k in range(x.rank) if k not in axes]
        dt = x.dtype
        acc_dt = DType.f64 if (dt is DType.f32 and fn in ("sum", "prod")) else dt
        at = acc_dt.llvm
        with self.nest(tuple(x.shape[k] for k in kept)) as kidx:
            acc = self.alloca(at)
            arg = self.alloca("i64") if fn in ("argmax", "argmin") else None
            if fn in ("sum", "any"):
                init = _const(False if fn == "any" else 0, acc_dt)
            elif fn in ("prod", "all"):
                init = _const(True if fn == "all" else 1, acc_dt)
            elif fn in ("max", "argmax"):
                init = _fconst(float("-inf"), dt) if dt.is_float else (
                    "false" if dt is DType.bool else str(-(1 << (dt.itemsize * 8 - 1))))
            else:
                init = _fconst(float("inf"), dt) if dt.is_float else (
                    "true" if dt is DType.bool else str((1 << (dt.itemsize * 8 - 1)) - 1))
            self.line(f"store {at} {init}, ptr {acc}")
            if arg is not None:
                self.line(f"store i64 0, ptr {arg}")
            with self.nest(tuple(x.shape[k] for k in axes)) as ridx:
                full = [""] * x.rank
                for k, i in zip(kept, kidx, strict=False):
                    full[k] = i
                for k, i in zip(axes, ridx, strict=False):
                    full[k] = i
                v = self.convert(self.emit(x, full), dt, acc_dt)
                a = self.op(f"load {at}, ptr {acc}", "a")
                if fn == "sum":
                    r = self.op(f"{'fadd' if acc_dt.is_float else 'add'} {at} {a}, {v}")
                elif fn == "prod":
                    r = self.op(f"{'fmul' if acc_dt.is_float else 'mul'} {at} {a}, {v}")
                elif fn in ("any", "all"):
                    r = self.op(f"{'or' if fn == 'any' else 'and'} i1 {a}, {v}")
                elif fn in ("max", "min"):
                    r = self.binary("maximum" if fn == "max" else "minimum", dt, a, v)
                else:
                    r = self.argbetter(fn, dt, v, a)
                    pos = self.linear(ridx, tuple(x.shape[k] for k in axes))
                    old = self.op(f"load i64, ptr {arg}", "a")
                    self.line(f"store i64 {self.op(f'select i1 {r}, i64 {pos}, i64 {old}')}, "
                              f"ptr {arg}")
                    r = self.op(f"select i1 {r}, {at} {v}, {at} {a}")
                self.line(f"store {at} {r}, ptr {acc}")
            if arg is not None:
                res = self.op(f"load i64, ptr {arg}", "a")
            else:
                res = self.convert(self.op(f"load {at}, ptr {acc}", "a"), acc_dt, node.dtype)
            oidx = kidx
            if node.attrs["keepdim"]:
                oidx, it = [], iter(kidx)
                for k in range(x.rank):
                    oidx.append("0" if k in axes else next(it))
            self.store(out, self.linear(oidx, node.shape), res)

    def argbetter(self, fn: str, dt: DType, v: str, best: str) -> str:
        """Whether ``v`` replaces ``best`` (first occurrence wins; NaN is the
        largest and the smallest value, like in PyTorch)."""
        t = dt.llvm
        if dt is DType.bool:
            pred = "ugt" if fn == "argmax" else "ult"
            return self.op(f"icmp {pred} i1 {v}, {best}", "c")
        if not dt.is_float:
            return self.op(f"icmp {'sgt' if fn == 'argmax' else 'slt'} {t} {v}, {best}", "c")
        better = self.op(f"fcmp {'ogt' if fn == 'argmax' else 'olt'} {t} {v}, {best}", "c")
        vnan = self.op(f"fcmp uno {t} {v}, {v}", "c")
        bok = self.op(f"fcmp ord {t} {best}, {best}", "c")
        return self.op(f"or i1 {better}, {self.op(f'and i1 {vnan}, {bok}', 'c')}", "c")

    def emit_matmul(self, node: Node, out: Buffer) -> None:
        a, b = node.inputs
        ba, bb = self.buffer_of(a), self.buffer_of(b)
        assert ba is not None and bb is not None
        t = node.dtype.llvm
        batch = node.shape[:-2]
        m, n, k = node.shape[-2], node.shape[-1], a.shape[-1]
        dm, dn, dk = self.dim(m), self.dim(n), self.dim(k)
        fma = f"llvm.fmuladd.{'f32' if node.dtype is DType.f32 else 'f64'}"
        self.declare(fma, t, [t, t, t])
        zero = _const(0, node.dtype)
        with self.nest(batch) as bidx:
            oa = self.imul(self.linear(self.bcast_idx_shape(a.shape[:-2], batch, bidx),
                                       a.shape[:-2]), self.dim(dim_op("mul", m, k)))
            ob = self.imul(self.linear(self.bcast_idx_shape(b.shape[:-2], batch, bidx),
                                       b.shape[:-2]), self.dim(dim_op("mul", k, n)))
            oc = self.imul(self.linear(bidx, batch), self.dim(dim_op("mul", m, n)))
            with self.loop(dm) as i:
                crow = self.iadd(oc, self.imul(i, dn))
                with self.loop(dn) as j:
                    self.store(out, self.iadd(crow, j), zero)
            # Blocks of MB rows of C: each row of B loaded once serves MB
            # rows, and KB steps of k accumulate in a register before C is
            # stored, so the vectorized j loop does 2 loads and 1 store of C
            # per KB * MB multiply-adds instead of per one.
            mb = self.op(f"sdiv i64 {dm}, {_MATMUL_ROWS}", "i")
            kb = self.op(f"sdiv i64 {dk}, {_MATMUL_DEPTH}", "i")
            with self.loop(mb, hint="ib") as ib:
                i0 = self.imul(ib, str(_MATMUL_ROWS))
                rows = [self.iadd(i0, str(r)) for r in range(_MATMUL_ROWS)]
                self.emit_matmul_rows(ba, bb, out, rows, oa, ob, oc, dn, dk, kb, fma, t)
            with self.loop(dm, start=self.imul(mb, str(_MATMUL_ROWS)), hint="ir") as i:
                self.emit_matmul_rows(ba, bb, out, [i], oa, ob, oc, dn, dk, kb, fma, t)

    def emit_matmul_rows(self, ba: Buffer, bb: Buffer, out: Buffer, rows: list[str],
                         oa: str, ob: str, oc: str, dn: str, dk: str, kb: str,
                         fma: str, t: str) -> None:
        """C[rows, :] += A[rows, :] @ B: k in blocks of _MATMUL_DEPTH, then the
        remaining k one at a time."""
        crows = [self.iadd(oc, self.imul(r, dn)) for r in rows]
        arows = [self.iadd(oa, self.imul(r, dk)) for r in rows]

        def step(ks: list[str]) -> None:
            avs = [[self.load(ba, self.iadd(arow, kk)) for kk in ks] for arow in arows]
            brows = [self.iadd(ob, self.imul(kk, dn)) for kk in ks]
            with self.loop(dn) as j:
                bvs = [self.load(bb, self.iadd(brow, j)) for brow in brows]
                for crow, av in zip(crows, avs, strict=True):
                    co = self.iadd(crow, j)
                    cv = self.load(out, co)
                    for a_k, b_k in zip(av, bvs, strict=True):
                        cv = self.op(f"call {t} @{fma}({t} {a_k}, {t} {b_k}, {t} {cv})")
                    self.store(out, co, cv)

        with self.loop(kb, hint="kb") as kbi:
            k0 = self.imul(kbi, str(_MATMUL_DEPTH))
            step([self.iadd(k0, str(q)) for q in range(_MATMUL_DEPTH)])
        with self.loop(dk, start=self.imul(kb, str(_MATMUL_DEPTH)), hint="kr") as kk:
            step([kk])

    @staticmethod
    def bcast_idx_shape(shape: tuple, full: tuple, idx: list[str]) -> list[str]:
        off = len(full) - len(shape)
        return ["0" if d == 1 and full[off + k] != 1 else idx[off + k]
                for k, d in enumerate(shape)]

    def emit_embedding_bag(self, node: Node, out: Buffer) -> None:
        table, indices, offsets = node.inputs[:3]
        weights = node.inputs[3] if len(node.inputs) > 3 else None
        bt, bi, bo = (self.buffer_of(x) for x in (table, indices, offsets))
        bw = self.buffer_of(weights) if weights is not None else None
        assert bt is not None and bi is not None and bo is not None
        t = node.dtype.llvm
        nidx = self.dim(indices.shape[0])
        noff = self.dim(offsets.shape[0])
        d = self.dim(table.shape[1])
        # offsets must lie in [0, len(indices)].
        code = len(self.errors) + 1
        self.errors[code] = ("IndexError", "embedding_bag: offsets out of range "
                                           "(must lie in [0, len(indices)])")
        flag = self.alloca("i1")
        self.line(f"store i1 false, ptr {flag}")
        lim = self.op(f"add nsw i64 {nidx}, 1", "i")
        with self.loop(noff) as i:
            v = self.to_i64(self.load(bo, i), offsets.dtype)
            bad = self.op(f"icmp uge i64 {v}, {lim}", "c")
            old = self.op(f"load i1, ptr {flag}", "c")
            self.line(f"store i1 {self.op(f'or i1 {old}, {bad}', 'c')}, ptr {flag}")
        self.fail_if(self.op(f"load i1, ptr {flag}", "c"), code)
        self.check_indices(indices, table.shape[0], "embedding_bag")

        bags = self.dim(node.shape[0])
        zero = _const(0, node.dtype)
        bounds, bdt = bo, offsets.dtype
        if not node.attrs["last"]:  # bounds = offsets + [len(indices)]
            bounds, bdt = self.bag_bounds[node.id], DType.i64
            with self.loop(noff) as i:
                self.store(bounds, i, self.to_i64(self.load(bo, i), offsets.dtype))
            self.store(bounds, noff, nidx)
        with self.loop(bags, hint="bag") as b:
            start = self.to_i64(self.load(bounds, b), bdt)
            b1 = self.op(f"add nsw i64 {b}, 1", "i")
            end = self.to_i64(self.load(bounds, b1), bdt)
            orow = self.imul(b, d)
            with self.loop(d) as k:
                self.store(out, self.iadd(orow, k), zero)
            with self.loop(end, start=start, hint="j") as j:
                row = self.to_i64(self.load(bi, j), indices.dtype)
                trow = self.imul(row, d)
                w = self.load(bw, j) if bw is not None else None
                with self.loop(d) as k:
                    v = self.load(bt, self.iadd(trow, k))
                    if w is not None:
                        v = self.op(f"fmul {t} {v}, {w}")
                    o = self.iadd(orow, k)
                    self.store(out, o, self.op(f"fadd {t} {self.load(out, o)}, {v}"))
            if node.attrs["mode"] == "mean":
                cnt = self.op(f"sub nsw i64 {end}, {start}", "i")
                pos = self.op(f"icmp sgt i64 {cnt}, 0", "c")
                one = self.op(f"select i1 {pos}, i64 {cnt}, i64 1", "i")
                fc = self.op(f"sitofp i64 {one} to {t}")
                with self.loop(d) as k:
                    o = self.iadd(orow, k)
                    self.store(out, o, self.op(f"fdiv {t} {self.load(out, o)}, {fc}"))

    def to_i64(self, v: str, dt: DType) -> str:
        return self.op(f"sext i32 {v} to i64", "i") if dt is DType.i32 else v


def _uses(graph: Graph) -> tuple[dict[int, int], dict[int, bool]]:
    """Effective use counts (through views) and whether a node is broadcast."""
    users: dict[int, list[Node]] = {n.id: [] for n in graph.nodes}
    for n in graph.nodes:
        for i in n.inputs:
            users[i.id].append(n)
    outs = [o.id for o in graph.outputs]
    eff: dict[int, int] = {}
    expanded: dict[int, bool] = {}
    for n in reversed(graph.nodes):
        count = outs.count(n.id)
        exp = False
        for u in users[n.id]:
            if u.op in _VIEWS:
                count += eff[u.id]
                exp = exp or expanded[u.id] or u.op == "broadcast"
            else:
                count += 1
                # A broadcasting elementwise consumer reads each value many times.
                if u.op in ("unary", "binary", "compare", "where", "cast") and \
                        tuple(n.shape) != tuple(u.shape):
                    exp = True
        eff[n.id] = count
        expanded[n.id] = exp
    return eff, expanded


def _pointer_param(name: str, shape: tuple, dtype: DType, readonly: bool) -> str:
    """A buffer parameter. With a static shape it says its size in bytes
    (``dereferenceable``), which lets LLVM speculate loads from it and tells
    accel-prefetch when a gathered-from buffer is small enough to stay in cache."""
    attrs = "noalias readonly" if readonly else "noalias"
    if all(isinstance(d, int) for d in shape):
        nbytes = shape_numel(shape) * dtype.itemsize
        if nbytes > 0:
            attrs += f" dereferenceable({nbytes})"
    return f"ptr {attrs} {name}"


def generate(graph: Graph, name: str = "llvmaccel_main") -> Kernel:
    """LLVM IR for ``graph`` (see the module docstring for the function's
    parameters and the loop shapes)."""
    e = _Emitter(graph, name)
    eff, expanded = _uses(graph)
    params: list[str] = []
    kinputs = [n.id for n in graph.inputs]
    kconsts = sorted(graph.constants)
    for n in graph.inputs:
        p = f"%in{len(params)}"
        params.append(_pointer_param(p, n.shape, n.dtype, readonly=True))
        e.buffers[n.id] = Buffer("input", n.shape, n.dtype, p, n.id)
    for nid in kconsts:
        n = graph.nodes[nid]
        p = f"%const{nid}"
        params.append(_pointer_param(p, n.shape, n.dtype, readonly=True))
        e.buffers[nid] = Buffer("constant", n.shape, n.dtype, p, nid)

    # Which nodes get their own loop nest.
    must: set[int] = set()
    for n in graph.nodes:
        if n.op in _KERNELS:
            must.add(n.id)
        if n.op == "matmul" or n.op == "embedding_bag":
            for x in n.inputs:
                must.add(_root_for_buffer(x))
        if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap"):
            must.add(_root_for_buffer(n.inputs[1]))
        cheap = n.op in ("scalar", "iota", "cast") or n.op in _VIEWS or n.op in _BUFFERS
        if not cheap and (eff[n.id] > 1 or expanded[n.id]):
            must.add(n.id)
    for o in graph.outputs:
        must.add(o.id)

    outputs: list[tuple] = []
    temps: list[tuple] = []
    out_params: list[str] = []
    temp_params: list[str] = []
    output_map: list[int] = []
    order = [n for n in graph.nodes if n.id in must and n.id not in e.buffers]
    out_buf_of: dict[int, int] = {}
    for o in graph.outputs:
        if o.id in out_buf_of:
            output_map.append(out_buf_of[o.id])
            continue
        p = f"%out{len(outputs)}"
        out_buf_of[o.id] = len(outputs)
        output_map.append(len(outputs))
        outputs.append((o.shape, o.dtype))
        out_params.append(_pointer_param(p, o.shape, o.dtype, readonly=False))
        if o.id not in e.buffers:
            e.buffers[o.id] = Buffer("output", o.shape, o.dtype, p)
        else:  # an input or constant returned as is: copy it
            order.append(_Copy(o, Buffer("output", o.shape, o.dtype, p)))  # type: ignore[arg-type]
    for n in order:
        if isinstance(n, _Copy) or n.id in e.buffers:
            continue
        p = f"%tmp{len(temps)}"
        temps.append((n.shape, n.dtype))
        temp_params.append(_pointer_param(p, n.shape, n.dtype, readonly=False))
        e.buffers[n.id] = Buffer("temp", n.shape, n.dtype, p)
    # embedding_bag without the last offset gets the bounds of its bags as
    # one array of len(offsets) + 1 (offsets, then len(indices)), so that a
    # bag's end is the next bag's start (the CSR shape accel-prefetch looks
    # ahead across).
    for n in graph.nodes:
        if n.op == "embedding_bag" and not n.attrs["last"]:
            shape = (dim_op("add", n.inputs[2].shape[0], 1),)
            p = f"%tmp{len(temps)}"
            temps.append((shape, DType.i64))
            temp_params.append(_pointer_param(p, shape, DType.i64, readonly=False))
            e.bag_bounds[n.id] = Buffer("temp", shape, DType.i64, p)
    symbols = graph.symbols()
    params += out_params + temp_params + [f"i64 %sym.{s}" for s in symbols]

    # Index checks of graph inputs first; of computed indices after their nest.
    checks: dict[int, list[tuple[Node, object, str]]] = {}
    for n in graph.nodes:
        if n.op in ("take", "gather") and n.attrs["mode"] == "check":
            idx = n.inputs[1]
            size = n.inputs[0].shape[n.attrs["axis"] if n.op == "take" else n.attrs["dim"]]
            what = "embedding/index_select" if n.op == "take" else "gather"
            checks.setdefault(_root_for_buffer(idx), []).append((idx, size, what))
    for nid in list(checks):
        if nid in kinputs or nid in kconsts:
            for idx, size, what in checks.pop(nid):
                e.check_indices(idx, size, what)
    for n in order:
        if isinstance(n, _Copy):
            e.memo = {}
            with e.nest(n.node.shape) as idx:
                e.store(n.out, e.linear(idx, n.node.shape), e.emit(n.node, idx))
            continue
        e.materialize(n, e.buffers[n.id])
        for idx, size, what in checks.pop(n.id, []):
            e.check_indices(idx, size, what)
    e.line("ret i32 0")

    lines = [f"; llvmaccel graph {graph.fingerprint()}",
             f"define i32 @{name}({', '.join(params)}) nounwind {{", "entry:"]
    lines += e.allocas + e.prologue + e.body + ["}", ""]
    lines += sorted(e.decls.values())
    return Kernel(ir="\n".join(lines) + "\n", name=name, inputs=kinputs, constants=kconsts,
                  outputs=outputs, temps=temps, symbols=symbols, errors=e.errors,
                  output_map=output_map)


@dataclass
class _Copy:
    node: Node
    out: Buffer

    @property
    def id(self) -> int:
        return -1


def _root_for_buffer(node: Node) -> int:
    """The node to materialize so that ``node`` is a contiguous buffer."""
    while node.op == "reshape":
        node = node.inputs[0]
    return node.id
