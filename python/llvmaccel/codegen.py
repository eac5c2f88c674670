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
   flat loop over a linear index. Math calls (exp, erf, tanh, ...) name
   their vector variants in the C library when it has them
   (:mod:`llvmaccel.vecmath`), so these loops vectorize too.
3. *Kernels* with their own loop shape: reductions (kept dims outer, reduced
   dims inner, f32 sums accumulated in f64, in partial sums: the
   accumulator's ``fadd`` is ``reassoc``, the only fast-math flag used),
   matmul (k-blocks of B packed
   into an L1-sized panel, register tiles of C of 8 rows x 2 vectors of the
   host's width held in vector registers across a k-block, explicit
   ``<W x float>`` IR; transposed operands such as ``linear``'s weight read
   in place; dot products vectorized along k for N = 1 and N < W, see
   ``_Emitter.mm_panels`` and ``_Emitter.mm_dot``), and embedding_bag as the
   counted loop nest accel-prefetch recognizes::

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

from . import vecmath
from .graph import DType, Graph, GraphError, Node, SymExpr, dim_op, shape_numel
from .target import TargetInfo
from .target import host as host_target

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
# Matmul tiling (see _Emitter.mm_panels): vectors of B per register tile (NR
# = this many vectors of the host's width), bytes of a packed KC x NR panel of
# B (L1/L2-resident), and rows x columns of C per tile of the dot-product kernel.
_MATMUL_NR_VECTORS = 2
_MATMUL_PANEL_BYTES = 32768
_MATMUL_DOT_TILE = (4, 2)
_BUFFERS = frozenset({"input", "constant"})
_LIBM = {
    "tanh": "tanh", "erf": "erf", "erfc": "erfc", "log1p": "log1p", "expm1": "expm1",
    "atan2": "atan2",
}
# Math functions with vector variants in a vector math library (vecmath).
_VECTOR_MATH = frozenset({"exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf", "erfc",
                          "log1p", "expm1", "atan2", "pow"})
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

    def __init__(self, graph: Graph, name: str, target: TargetInfo, host: bool) -> None:
        self.g = graph
        self.name = name
        self.target = target  # vector widths and math variants are sized for it
        self.host = host  # the code runs here: ask the loaded libraries
        self.allocas: list[str] = []
        self.prologue: list[str] = []
        self.body: list[str] = []
        self.decls: dict[str, str] = {}
        self.vector_variants: set[str] = set()  # vecmath symbols the calls name
        self.block = "entry"
        self.count = 0
        self.memo: dict[tuple, str] = {}
        self.dimvals: dict[str, str] = {}
        self.buffers: dict[int, Buffer] = {}
        self.errors: dict[int, tuple[str, str]] = {}
        self.bag_bounds: dict[int, Buffer] = {}  # embedding_bag without the last offset
        self.reduce_acc: dict[int, Buffer] = {}  # f64 rows of emit_reduce_rows
        self.mm_stack: dict[tuple[str, str, int], str] = {}  # matmul panels, shared
        self.zero_flag: str | None = None  # integer division by zero seen (an i1)
        self.zero_flag_used = False

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

    def call(self, fn: str, ret: str, args: list[tuple[str, str]], attrs: str = "",
             hint: str = "v") -> str:
        self.declare(fn, ret, [t for t, _ in args])
        call = f"call {ret} @{fn}({', '.join(f'{t} {v}' for t, v in args)})"
        return self.op(f"{call} {attrs}" if attrs else call, hint)

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
        return v, None  # check / wrap: validated before the loop nest (check_indices)

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
        """A call of libm's ``base`` (``libm``) or of the LLVM intrinsic, marked
        with its vector variant when the host's math library has one (see
        :mod:`llvmaccel.vecmath`), so that loops calling it vectorize."""
        t = dt.llvm
        if libm:
            name = base + ("f" if dt is DType.f32 else "")
        else:
            name = f"llvm.{base}.{'f32' if dt is DType.f32 else 'f64'}"
        # LLVM's own LIBMVEC table (on in the JIT's pipeline) covers some
        # callees at every width; the others get glibc's variants listed.
        covered = self.host and vecmath.covered_by_llvm(name)
        vecs = () if covered or base not in _VECTOR_MATH else \
            vecmath.variants(base, dt.itemsize * 8, len(args), self.target, self.host)
        if not vecs:
            return self.call(name, t, [(t, a) for a in args])
        for vec in vecs:
            vt = f"<{vec.lanes} x {t}>"
            self.declare(vec.symbol, vt, [vt] * len(args))
            self.vector_variants.add(vec.symbol)
        abi = ",".join(f"{vec.abi_prefix}{name}({vec.symbol})" for vec in vecs)
        return self.call(name, t, [(t, a) for a in args],
                         f'nounwind memory(none) "vector-function-abi-variant"="{abi}"')

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
            return self.binary(node.attrs["fn"], node.dtype, args[0], args[1],
                               node.attrs.get("zero_div", "error"))
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

    def binary(self, fn: str, dt: DType, a: str, b: str, zero_div: str = "error") -> str:
        """``fn(a, b)`` on scalars (or vectors) of ``dt``. Integer division by
        zero follows ``zero_div`` (see Graph.binary); it never traps."""
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
            # No traps: the divisor is made safe, INT_MIN / -1 wraps, and a
            # zero divisor gives XLA's values or sets the kernel's flag.
            zero = self.op(f"icmp eq {t} {b}, 0", "c")
            if zero_div == "error":
                self.flag_zero_division(zero)
            m1 = self.op(f"icmp eq {t} {b}, -1", "c")
            safe = self.op(f"select i1 {zero}, {t} 1, {t} {b}")
            safe = self.op(f"select i1 {m1}, {t} 1, {t} {safe}")
            if fn == "rem":
                r = self.op(f"srem {t} {a}, {safe}")
                r = self.op(f"select i1 {m1}, {t} 0, {t} {r}")
                return self.op(f"select i1 {zero}, {t} {a}, {t} {r}")  # XLA: the dividend
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
            return self.op(f"select i1 {zero}, {t} -1, {t} {q}")  # XLA: -1
        raise CodegenError(f"unsupported integer op {fn}")

    # -- index checks -------------------------------------------------------
    def check_indices(self, index: Node, size: object, what: str, wrap: bool = False) -> None:
        """A branch-free scan of ``index`` (a buffer): return an error code when
        any entry is outside ``[0, size)`` (``[-size, size)`` with ``wrap``,
        where a negative index counts from the end)."""
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
            if wrap:
                neg = self.op(f"icmp slt i64 {v}, 0", "c")
                v = self.op(f"select i1 {neg}, i64 {self.op(f'add i64 {v}, {bound}', 'i')}, "
                            f"i64 {v}", "i")
            bad = self.op(f"icmp uge i64 {v}, {bound}", "c")
            old = self.op(f"load i1, ptr {flag}", "c")
            self.line(f"store i1 {self.op(f'or i1 {old}, {bad}', 'c')}, ptr {flag}")
        self.fail_if(self.op(f"load i1, ptr {flag}", "c"), code)

    def flag_zero_division(self, zero: str) -> None:
        """Records an integer division by zero (``zero``, an i1) in a flag
        that :meth:`check_zero_division` tests after the loop nest: an or
        reduction, so the loop still vectorizes."""
        if self.zero_flag is None:
            self.zero_flag = self.alloca("i1")
            self.prologue.append(f"  store i1 false, ptr {self.zero_flag}")
        old = self.op(f"load i1, ptr {self.zero_flag}", "c")
        self.line(f"store i1 {self.op(f'or i1 {old}, {zero}', 'c')}, ptr {self.zero_flag}")
        self.zero_flag_used = True

    def check_zero_division(self) -> None:
        """Fails the kernel when a loop nest emitted since the last check
        divided an integer by zero."""
        if not self.zero_flag_used:
            return
        self.zero_flag_used = False
        code = next((c for c, (k, _) in self.errors.items() if k == "ZeroDivisionError"), 0)
        if not code:
            code = len(self.errors) + 1
            self.errors[code] = ("ZeroDivisionError", "ZeroDivisionError")
        self.fail_if(self.op(f"load i1, ptr {self.zero_flag}", "c"), code)

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
        if _rows_first(node):
            self.emit_reduce_rows(node, out, _row_acc_dtype(node))
            return
        at = acc_dt.llvm
        with self.nest(tuple(x.shape[k] for k in kept)) as kidx:
            acc = self.alloca(at)
            arg = self.alloca("i64") if fn in ("argmax", "argmin") else None
            self.line(f"store {at} {_reduce_identity(fn, acc_dt)}, ptr {acc}")
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
                if fn not in ("argmax", "argmin"):
                    # reassoc: partial sums, so the loop vectorizes
                    r = self.combine(fn, acc_dt, a, v, reassoc=True)
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

    def emit_reduce_rows(self, node: Node, out: Buffer, acc_dt: DType) -> None:
        """A reduction over leading axes (``sum(x, 0)`` of a matrix): the
        reduced axes outer, the kept ones inner, accumulating whole rows
        (in the output, or in an f64 temporary for f32 sums and products), so that
        ``x`` is read once in order and the inner loop vectorizes."""
        x = node.inputs[0]
        fn, axes = node.attrs["fn"], node.attrs["axes"]
        dt = x.dtype
        kshape = tuple(x.shape[len(axes):])
        acc = self.reduce_acc[node.id] if acc_dt is not node.dtype else out
        with self.nest(kshape) as kidx:
            self.store(acc, self.linear(kidx, kshape), _reduce_identity(fn, acc_dt))
        with self.nest(tuple(x.shape[:len(axes)])) as ridx:
            with self.nest(kshape) as kidx:
                lin = self.linear(kidx, kshape)
                v = self.convert(self.emit(x, ridx + kidx), dt, acc_dt)
                self.store(acc, lin, self.combine(fn, acc_dt, self.load(acc, lin), v))
        if acc is not out:
            with self.nest(kshape) as kidx:
                lin = self.linear(kidx, kshape)
                self.store(out, lin, self.convert(self.load(acc, lin), acc_dt, node.dtype))

    def combine(self, fn: str, dt: DType, a: str, v: str, reassoc: bool = False) -> str:
        """The accumulator ``a`` of a ``fn`` reduction (sum, prod, any, all,
        max, min) combined with ``v``; ``reassoc`` lets float sums be split
        into partial sums."""
        if fn in ("sum", "prod"):
            op = {"sum": "add", "prod": "mul"}[fn]
            if dt.is_float:
                op = "f" + op + (" reassoc" if reassoc and fn == "sum" else "")
            return self.op(f"{op} {dt.llvm} {a}, {v}")
        if fn in ("any", "all"):
            return self.op(f"{'or' if fn == 'any' else 'and'} i1 {a}, {v}")
        return self.binary("maximum" if fn == "max" else "minimum", dt, a, v)

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
        """``C = A @ B`` for every batch index, with one of two kernels (see
        :class:`_Matmul`): packed panels of B and an ``MR x NR`` register
        tile of C vectorized along ``j`` (:meth:`mm_panels`), or, when B is
        read along ``k`` and ``N`` is smaller than a vector, dot products
        vectorized along ``k`` (:meth:`mm_dot`)."""
        a, b = node.inputs
        src_a, ta = _matmul_source(a)
        src_b, tb = _matmul_source(b)
        ba, bb = self.buffer_of(src_a), self.buffer_of(src_b)
        assert ba is not None and bb is not None
        dt = node.dtype
        batch = node.shape[:-2]
        m, n, k = node.shape[-2], node.shape[-1], a.shape[-1]
        vw = _matmul_tiling(dt, 1, self.target)[0]
        small_n = isinstance(n, int) and n <= vw
        nrv = 1 if small_n else _MATMUL_NR_VECTORS
        _, mr, kc = _matmul_tiling(dt, nrv, self.target)
        # N == 1: B is a vector, contiguous along k whatever its layout.
        mm = _Matmul(ba=ba, bb=bb, out=out, dt=dt, vw=vw, ta=ta, tb=tb or n == 1,
                     dm=self.dim(m), dn=self.dim(n), dk=self.dim(k), nrv=nrv, mr=mr, kc=kc)
        dot = not ta and mm.tb and isinstance(n, int) and n < vw
        with self.nest(batch) as bidx:
            mm.oa = self.imul(self.linear(self.bcast_idx_shape(a.shape[:-2], batch, bidx),
                                          a.shape[:-2]), self.dim(dim_op("mul", m, k)))
            mm.ob = self.imul(self.linear(self.bcast_idx_shape(b.shape[:-2], batch, bidx),
                                          b.shape[:-2]), self.dim(dim_op("mul", k, n)))
            mm.oc = self.imul(self.linear(bidx, batch), self.dim(dim_op("mul", m, n)))
            if dot:
                self.mm_dot(mm)
            else:
                self.mm_panels(mm)

    # Small IR helpers of the matmul kernels.
    def imin(self, a: str, b: str) -> str:
        return self.call("llvm.smin.i64", "i64", [("i64", a), ("i64", b)], hint="i")

    def ceil_div(self, a: str, b: int) -> str:
        """``ceil(a / b)`` for a size ``a >= 0``."""
        return self.op(f"udiv i64 {self.iadd(a, str(b - 1))}, {b}", "i")

    def when(self, c: str, then_fn: object) -> None:
        """``if (c) then_fn()`` (no value)."""
        t, j = self.label("then"), self.label("endif")
        self.line(f"br i1 {c}, label %{t}, label %{j}")
        saved = dict(self.memo)
        self.start_block(t)
        then_fn()  # type: ignore[operator]
        self.br(j)
        self.memo = saved
        self.start_block(j)

    def ptr(self, base: str, ty: str, off: str) -> str:
        if off == "0":
            return base
        return self.op(f"getelementptr inbounds {ty}, ptr {base}, i64 {off}", "p")

    def vload(self, mm: _Matmul, base: str, off: str) -> str:
        p = self.ptr(base, mm.t, off)
        return self.op(f"load {mm.vt}, ptr {p}, align {mm.dt.itemsize}", "vl")

    def vstore(self, mm: _Matmul, base: str, off: str, v: str) -> None:
        p = self.ptr(base, mm.t, off)
        self.line(f"store {mm.vt} {v}, ptr {p}, align {mm.dt.itemsize}")

    def vfma(self, mm: _Matmul, a: str, b: str, c: str) -> str:
        fn = f"llvm.fmuladd.v{mm.vw}{mm.t.replace('float', 'f32').replace('double', 'f64')}"
        return self.call(fn, mm.vt, [(mm.vt, a), (mm.vt, b), (mm.vt, c)], hint="f")

    def fma(self, mm: _Matmul, a: str, b: str, c: str) -> str:
        fn = f"llvm.fmuladd.{'f32' if mm.dt is DType.f32 else 'f64'}"
        return self.call(fn, mm.t, [(mm.t, a), (mm.t, b), (mm.t, c)], hint="f")

    def splat(self, mm: _Matmul, s: str) -> str:
        v = self.op(f"insertelement {mm.vt} poison, {mm.t} {s}, i64 0", "s")
        return self.op(f"shufflevector {mm.vt} {v}, {mm.vt} poison, "
                       f"<{mm.vw} x i32> zeroinitializer", "s")

    def hsum(self, mm: _Matmul, v: str) -> str:
        """The sum of the lanes of ``v``, as a tree of halves."""
        w = mm.vw
        while w > 1:
            h = w // 2
            ty = f"<{w} x {mm.t}>"
            lo = ", ".join(f"i32 {q}" for q in range(h))
            hi = ", ".join(f"i32 {q}" for q in range(h, w))
            x = self.op(f"shufflevector {ty} {v}, {ty} poison, <{h} x i32> <{lo}>", "h")
            y = self.op(f"shufflevector {ty} {v}, {ty} poison, <{h} x i32> <{hi}>", "h")
            v = self.op(f"fadd <{h} x {mm.t}> {x}, {y}", "h")
            w = h
        return self.op(f"extractelement <1 x {mm.t}> {v}, i64 0", "h")

    def addr_a(self, mm: _Matmul, i: str, k: str) -> str:
        if mm.ta:  # A stored [K, M]
            return self.iadd(mm.oa, self.iadd(self.imul(k, mm.dm), i))
        return self.iadd(mm.oa, self.iadd(self.imul(i, mm.dk), k))

    def addr_b(self, mm: _Matmul, k: str, j: str) -> str:
        if mm.tb:  # B stored [N, K]
            return self.iadd(mm.ob, self.iadd(self.imul(j, mm.dk), k))
        return self.iadd(mm.ob, self.iadd(self.imul(k, mm.dn), j))

    def stack(self, mm: _Matmul, role: str, count: int) -> str:
        """An aligned stack array of ``count`` elements, one per role, type
        and size for the whole function (matmuls run one after another)."""
        key = (role, mm.t, count)
        if key not in self.mm_stack:
            self.mm_stack[key] = name = self.fresh("stk")
            self.allocas.append(f"  {name} = alloca [{count} x {mm.t}], align 64")
        return self.mm_stack[key]

    def mm_panels(self, mm: _Matmul) -> None:
        """The tiled matmul::

            for pc in [0, K) step KC:             # k-blocks (one if K == 0)
              for j0 in [0, N) step NR:
                panel[k, c] = B[pc + k, j0 + c]   # KC x NR, zero-padded columns
                for i0 in [0, M) step MR:         # then 4, 2, 1 leftover rows
                  C[i0:i0+MR, j0:j0+NR] (+)= A[i0:i0+MR, pc:pc+KC] @ panel

        The packed panel stays in L1 while every row tile of C uses it, and
        reads B once whatever its layout. A row tile keeps ``MR x NR`` of C in
        vector registers across the k-block; the first k-block starts from
        zero, the next ones from C. At the right edge (``N - j0 < NR``)
        the tile goes through a stack buffer, so that only valid columns of
        C are read and written."""
        nr = mm.nrv * mm.vw
        panel = self.stack(mm, "panel", mm.kc * nr)
        tile = self.stack(mm, "tile", mm.mr * nr)
        nkb = self.call("llvm.smax.i64", "i64",
                        [("i64", self.ceil_div(mm.dk, mm.kc)), ("i64", "1")], hint="i")
        njb = self.ceil_div(mm.dn, nr)
        mfull = self.op(f"udiv i64 {mm.dm}, {mm.mr}", "i")
        mrest = self.op(f"urem i64 {mm.dm}, {mm.mr}", "i")
        with self.loop(nkb, hint="kb") as kb:
            pc = self.imul(kb, str(mm.kc))
            kc = self.imin(str(mm.kc), self.op(f"sub nsw i64 {mm.dk}, {pc}", "i"))
            first = self.op(f"icmp eq i64 {kb}, 0", "c")
            with self.loop(njb, hint="jb") as jb:
                j0 = self.imul(jb, str(nr))
                cols = self.imin(str(nr), self.op(f"sub nsw i64 {mm.dn}, {j0}", "i"))
                self.mm_pack(mm, panel, pc, kc, j0, cols)
                # Full panel, or the right edge with as few vectors as cover it.
                done = self.label("cols")
                labels = [self.label("full")] + [self.label("edge") for _ in range(mm.nrv)]
                full = self.op(f"icmp eq i64 {cols}, {nr}", "c")
                self.line(f"br i1 {full}, label %{labels[0]}, label %{labels[1]}")
                for nv in range(mm.nrv + 1):
                    self.start_block(labels[nv])
                    if 0 < nv < mm.nrv:  # the edge needs nv vectors, or more
                        fits = self.op(f"icmp sle i64 {cols}, {nv * mm.vw}", "c")
                        more = self.label("edge")
                        self.line(f"br i1 {fits}, label %{more}, label %{labels[nv + 1]}")
                        self.start_block(more)
                    tile_args = (nv or mm.nrv, panel, tile if nv else None, pc, kc, j0, cols,
                                 first)
                    with self.loop(mfull, hint="ib") as ib:
                        self.mm_tile(mm, self.imul(ib, str(mm.mr)), mm.mr, *tile_args)
                    base = self.imul(mfull, str(mm.mr))
                    size = mm.mr // 2
                    while size >= 1:
                        has = self.op(f"icmp ne i64 {self.op(f'and i64 {mrest}, {size}', 'i')}, 0",
                                      "c")
                        i0 = self.iadd(base, self.op(f"and i64 {mrest}, {-2 * size}", "i"))
                        self.when(has, lambda i0=i0, size=size, args=tile_args: self.mm_tile(
                            mm, i0, size, *args))
                        size //= 2
                    self.br(done)
                self.start_block(done)

    def mm_pack(self, mm: _Matmul, panel: str, pc: str, kc: str, j0: str, cols: str) -> None:
        """``panel[k * NR + c] = B[pc + k, j0 + c]`` (0 for ``c >= cols``);
        the inner loop runs along B's contiguous dimension."""
        nr = mm.nrv * mm.vw
        if mm.tb:
            with self.loop(cols, hint="pc") as c:
                with self.loop(kc, hint="pk") as k:
                    v = self.load(mm.bb, self.addr_b(mm, self.iadd(pc, k), self.iadd(j0, c)))
                    p = self.ptr(panel, mm.t, self.iadd(self.imul(k, str(nr)), c))
                    self.line(f"store {mm.t} {v}, ptr {p}")
        else:
            with self.loop(kc, hint="pk") as k:
                row = self.addr_b(mm, self.iadd(pc, k), j0)
                with self.loop(cols, hint="pc") as c:
                    v = self.load(mm.bb, self.iadd(row, c))
                    p = self.ptr(panel, mm.t, self.iadd(self.imul(k, str(nr)), c))
                    self.line(f"store {mm.t} {v}, ptr {p}")
        zero = _const(0, mm.dt)
        with self.loop(kc, hint="pk") as k:
            with self.loop(str(nr), start=cols, hint="pc") as c:
                p = self.ptr(panel, mm.t, self.iadd(self.imul(k, str(nr)), c))
                self.line(f"store {mm.t} {zero}, ptr {p}")

    def mm_tile(self, mm: _Matmul, i0: str, rows: int, nv: int, panel: str, tile: str | None,
                pc: str, kc: str, j0: str, cols: str, first: str) -> None:
        """``C[i0:i0+rows, j0:j0+nv*W] (+)= A[i0:i0+rows, pc:pc+kc] @ panel``
        with ``rows x nv`` vector accumulators. ``tile`` (the right edge): C
        goes through that stack buffer, ``cols`` columns of it."""
        nr = mm.nrv * mm.vw
        crows = [self.iadd(mm.oc, self.imul(self.iadd(i0, str(r)), mm.dn)) for r in range(rows)]
        if tile is not None:
            for r in range(rows):
                with self.loop(cols, hint="tc") as c:
                    v = self.load(mm.out, self.iadd(crows[r], self.iadd(j0, c)))
                    p = self.ptr(tile, mm.t, self.iadd(str(r * nr), c))
                    self.line(f"store {mm.t} {v}, ptr {p}")

        def where(r: int, q: int) -> tuple[str, str]:
            if tile is not None:
                return tile, str(r * nr + q * mm.vw)
            return mm.out.param, self.iadd(crows[r], self.iadd(j0, str(q * mm.vw)))

        accs = [[self.alloca(mm.vt) for _ in range(nv)] for _ in range(rows)]
        for r in range(rows):
            for q in range(nv):
                old = self.vload(mm, *where(r, q))
                init = self.op(f"select i1 {first}, {mm.vt} zeroinitializer, {mm.vt} {old}")
                self.line(f"store {mm.vt} {init}, ptr {accs[r][q]}")
        with self.loop(kc, hint="k") as k:
            brow = self.imul(k, str(nr))
            bv = [self.vload(mm, panel, self.iadd(brow, str(q * mm.vw))) for q in range(nv)]
            kk = self.iadd(pc, k)
            for r in range(rows):
                av = self.splat(mm, self.load(mm.ba, self.addr_a(mm, self.iadd(i0, str(r)), kk)))
                for q in range(nv):
                    acc = self.op(f"load {mm.vt}, ptr {accs[r][q]}", "a")
                    self.line(f"store {mm.vt} {self.vfma(mm, av, bv[q], acc)}, ptr {accs[r][q]}")
        for r in range(rows):
            for q in range(nv):
                self.vstore(mm, *where(r, q), self.op(f"load {mm.vt}, ptr {accs[r][q]}", "a"))
        if tile is not None:
            for r in range(rows):
                with self.loop(cols, hint="tc") as c:
                    v = self.load(Buffer("temp", (), mm.dt, tile), self.iadd(str(r * nr), c))
                    self.store(mm.out, self.iadd(crows[r], self.iadd(j0, c)), v)

    def mm_dot(self, mm: _Matmul) -> None:
        """Dot products vectorized along ``k`` (A and B both contiguous
        along k; N small, e.g. a matrix-vector product)::

            for i0 in [0, M) step DR:              # then single rows
              for j0 in [0, N) step DC:            # then single columns
                acc[r][c] = sum over vectors of k of A[i0+r, k:k+W] * B[k:k+W, j0+c]
                C[i0+r, j0+c] = lanesum(acc[r][c]) + the last K % W products
        """
        kv = self.op(f"udiv i64 {mm.dk}, {mm.vw}", "i")
        kvw = self.imul(kv, str(mm.vw))
        dr, dc = _MATMUL_DOT_TILE
        mfull = self.op(f"udiv i64 {mm.dm}, {dr}", "i")
        nfull = self.op(f"udiv i64 {mm.dn}, {dc}", "i")

        def row_tiles(i0: str, rows: int) -> None:
            with self.loop(nfull, hint="jb") as jb:
                self.mm_dot_tile(mm, i0, rows, self.imul(jb, str(dc)), dc, kv, kvw)
            with self.loop(mm.dn, start=self.imul(nfull, str(dc)), hint="jr") as j:
                self.mm_dot_tile(mm, i0, rows, j, 1, kv, kvw)

        with self.loop(mfull, hint="ib") as ib:
            row_tiles(self.imul(ib, str(dr)), dr)
        with self.loop(mm.dm, start=self.imul(mfull, str(dr)), hint="ir") as i:
            row_tiles(i, 1)

    def mm_dot_tile(self, mm: _Matmul, i0: str, rows: int, j0: str, cols: int, kv: str,
                    kvw: str) -> None:
        """``rows x cols`` elements of C as dot products (see :meth:`mm_dot`)."""
        accs = [[self.alloca(mm.vt) for _ in range(cols)] for _ in range(rows)]
        for row in accs:
            for acc in row:
                self.line(f"store {mm.vt} zeroinitializer, ptr {acc}")
        ii = [self.iadd(i0, str(r)) for r in range(rows)]
        jj = [self.iadd(j0, str(c)) for c in range(cols)]
        with self.loop(kv, hint="kv") as q:
            k = self.imul(q, str(mm.vw))
            av = [self.vload(mm, mm.ba.param, self.addr_a(mm, i, k)) for i in ii]
            bv = [self.vload(mm, mm.bb.param, self.addr_b(mm, k, j)) for j in jj]
            for r in range(rows):
                for c in range(cols):
                    acc = self.op(f"load {mm.vt}, ptr {accs[r][c]}", "a")
                    self.line(f"store {mm.vt} {self.vfma(mm, av[r], bv[c], acc)}, "
                              f"ptr {accs[r][c]}")
        sums = [[self.alloca(mm.t) for _ in range(cols)] for _ in range(rows)]
        for r in range(rows):
            for c in range(cols):
                s = self.hsum(mm, self.op(f"load {mm.vt}, ptr {accs[r][c]}", "a"))
                self.line(f"store {mm.t} {s}, ptr {sums[r][c]}")
        with self.loop(mm.dk, start=kvw, hint="kt") as k:
            av = [self.load(mm.ba, self.addr_a(mm, i, k)) for i in ii]
            bv = [self.load(mm.bb, self.addr_b(mm, k, j)) for j in jj]
            for r in range(rows):
                for c in range(cols):
                    s = self.op(f"load {mm.t}, ptr {sums[r][c]}", "a")
                    self.line(f"store {mm.t} {self.fma(mm, av[r], bv[c], s)}, ptr {sums[r][c]}")
        for r in range(rows):
            for c in range(cols):
                off = self.iadd(mm.oc, self.iadd(self.imul(ii[r], mm.dn), jj[c]))
                self.store(mm.out, off, self.op(f"load {mm.t}, ptr {sums[r][c]}", "a"))

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
        self.check_bag_offsets(bo, offsets.dtype, noff, nidx)
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
                if node.attrs["last"]:
                    # As eager PyTorch counts it: the last bag's size runs to
                    # len(indices) even when the last offset stops short.
                    lastbag = self.op(f"icmp eq i64 {b1}, {bags}", "c")
                    end = self.op(f"select i1 {lastbag}, i64 {nidx}, i64 {end}", "i")
                cnt = self.op(f"sub nsw i64 {end}, {start}", "i")
                pos = self.op(f"icmp sgt i64 {cnt}, 0", "c")
                one = self.op(f"select i1 {pos}, i64 {cnt}, i64 1", "i")
                fc = self.op(f"sitofp i64 {one} to {t}")
                with self.loop(d) as k:
                    o = self.iadd(orow, k)
                    self.store(out, o, self.op(f"fdiv {t} {self.load(out, o)}, {fc}"))

    def check_bag_offsets(self, bo: Buffer, dt: DType, noff: str, nidx: str) -> None:
        """Fails the kernel, as eager PyTorch does, unless the bag offsets
        start at 0, never decrease, and end at most at len(indices)."""
        rules = [
            ("first", "offsets[0] has to be 0, i.e., the first sequence in the "
                      "mini-batch has to start from position 0"),
            ("last", "offsets[-1] can not be greater than input's length"),
            ("order", "offsets must be non-decreasing"),
        ]
        flags = {}
        for name, _ in rules:
            flags[name] = self.alloca("i1")
            self.line(f"store i1 false, ptr {flags[name]}")
        last = self.op(f"sub nsw i64 {noff}, 1", "i")
        with self.loop(noff) as i:
            v = self.to_i64(self.load(bo, i), dt)
            first = self.op(f"icmp eq i64 {i}, 0", "c")
            prev_i = self.op(f"select i1 {first}, i64 0, i64 {self.op(f'sub i64 {i}, 1', 'i')}",
                             "i")
            prev = self.to_i64(self.load(bo, prev_i), dt)
            is_last = self.op(f"icmp eq i64 {i}, {last}", "c")
            bad = {
                "first": self.op(f"and i1 {first}, {self.op(f'icmp ne i64 {v}, 0', 'c')}", "c"),
                "last": self.op(f"and i1 {is_last}, "
                                f"{self.op(f'icmp sgt i64 {v}, {nidx}', 'c')}", "c"),
                "order": self.op(f"icmp slt i64 {v}, {prev}", "c"),
            }
            for name, _ in rules:
                old = self.op(f"load i1, ptr {flags[name]}", "c")
                self.line(f"store i1 {self.op(f'or i1 {old}, {bad[name]}', 'c')}, "
                          f"ptr {flags[name]}")
        for name, message in rules:
            code = len(self.errors) + 1
            self.errors[code] = ("RuntimeError", f"embedding_bag: {message}")
            self.fail_if(self.op(f"load i1, ptr {flags[name]}", "c"), code)

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


def generate(graph: Graph, name: str = "llvmaccel_main",
             target: TargetInfo | None = None) -> Kernel:
    """LLVM IR for ``graph`` (see the module docstring for the function's
    parameters and the loop shapes), with vector widths and math variants
    for ``target`` (default: this machine, as LLVM sees it)."""
    e = _Emitter(graph, name, target or _default_target(), host=target is None)
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
                must.add(_root_for_buffer(_matmul_source(x)[0] if n.op == "matmul" else x))
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
    def scratch(shape: tuple, dtype: DType) -> Buffer:
        p = f"%tmp{len(temps)}"
        temps.append((shape, dtype))
        temp_params.append(_pointer_param(p, shape, dtype, readonly=False))
        return Buffer("temp", shape, dtype, p)

    for n in order:
        if isinstance(n, _Copy) or n.id in e.buffers:
            continue
        e.buffers[n.id] = scratch(n.shape, n.dtype)
    # embedding_bag without the last offset gets the bounds of its bags as
    # one array of len(offsets) + 1 (offsets, then len(indices)), so that a
    # bag's end is the next bag's start (the CSR shape accel-prefetch looks
    # ahead across).
    for n in graph.nodes:
        if n.op == "embedding_bag" and not n.attrs["last"]:
            e.bag_bounds[n.id] = scratch((dim_op("add", n.inputs[2].shape[0], 1),), DType.i64)
    # Row-wise f32 sums and products accumulate in an f64 row.
    for n in graph.nodes:
        if n.op == "reduce" and _rows_first(n) and _row_acc_dtype(n) is not n.dtype and \
                n.id in must:
            e.reduce_acc[n.id] = scratch(tuple(n.inputs[0].shape[len(n.attrs["axes"]):]),
                                         DType.f64)
    symbols = graph.symbols()
    params += out_params + temp_params + [f"i64 %sym.{s}" for s in symbols]

    # Index checks of graph inputs first; of computed indices after their nest.
    # Every index of a "check" or "wrap" take/gather is validated before it
    # is used: the loop nests themselves read x[index] unchecked.
    checks: dict[int, list[tuple[Node, object, str, bool]]] = {}
    for n in graph.nodes:
        if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap"):
            idx = n.inputs[1]
            size = n.inputs[0].shape[n.attrs["axis"] if n.op == "take" else n.attrs["dim"]]
            wrap = n.attrs["mode"] == "wrap"
            what = "gather" if n.op == "gather" else \
                "indexing/take" if wrap else "embedding/index_select"
            checks.setdefault(_root_for_buffer(idx), []).append((idx, size, what, wrap))
    for nid in list(checks):
        if nid in kinputs or nid in kconsts:
            for idx, size, what, wrap in checks.pop(nid):
                e.check_indices(idx, size, what, wrap)
    for n in order:
        if isinstance(n, _Copy):
            e.memo = {}
            with e.nest(n.node.shape) as idx:
                e.store(n.out, e.linear(idx, n.node.shape), e.emit(n.node, idx))
            e.check_zero_division()
            continue
        e.materialize(n, e.buffers[n.id])
        e.check_zero_division()
        for idx, size, what, wrap in checks.pop(n.id, []):
            e.check_indices(idx, size, what, wrap)
    if checks:  # an index that no loop nest materialized: never read unchecked
        raise CodegenError("index checks without a materialized index")
    e.line("ret i32 0")

    lines = [f"; llvmaccel graph {graph.fingerprint()}",
             f"define i32 @{name}({', '.join(params)}) nounwind {{", "entry:"]
    lines += e.allocas + e.prologue + e.body + ["}", ""]
    lines += sorted(e.decls.values())
    if e.vector_variants:  # kept until the loop vectorizer has seen them
        used = ", ".join(f"ptr @{v}" for v in sorted(e.vector_variants))
        lines.append(f"@llvm.compiler.used = appending global [{len(e.vector_variants)} x ptr] "
                     f'[{used}], section "llvm.metadata"')
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


def _reduce_identity(fn: str, dt: DType) -> str:
    """The initial accumulator of a ``fn`` reduction over ``dt``."""
    if fn in ("sum", "any"):
        return _const(False if fn == "any" else 0, dt)
    if fn in ("prod", "all"):
        return _const(True if fn == "all" else 1, dt)
    low = fn in ("max", "argmax")  # start from the lowest value
    if dt.is_float:
        return _fconst(float("-inf") if low else float("inf"), dt)
    if dt is DType.bool:
        return "false" if low else "true"
    bits = dt.itemsize * 8 - 1
    return str(-(1 << bits) if low else (1 << bits) - 1)


def _rows_first(node: Node) -> bool:
    """Whether a reduce node is emitted rows first (emit_reduce_rows): it
    reduces leading axes of its operand and keeps at least its last one."""
    axes = node.attrs["axes"]
    rank = node.inputs[0].rank
    return (node.attrs["fn"] in ("sum", "prod", "max", "min", "any", "all")
            and 0 < len(axes) < rank and tuple(sorted(axes)) == tuple(range(len(axes))))


def _row_acc_dtype(node: Node) -> DType:
    """The accumulator of emit_reduce_rows: f64 for f32 sums and products,
    else the result's dtype."""
    f32_sum = node.dtype is DType.f32 and node.attrs["fn"] in ("sum", "prod")
    return DType.f64 if f32_sum else node.dtype


def _root_for_buffer(node: Node) -> int:
    """The node to materialize so that ``node`` is a contiguous buffer."""
    while node.op == "reshape":
        node = node.inputs[0]
    return node.id


@dataclass
class _Matmul:
    """One matmul being emitted: operands, layouts, sizes and tiling.

    ``A`` is ``[M, K]`` (stored ``[K, M]`` when ``ta``), ``B`` is ``[K, N]``
    (stored ``[N, K]`` when ``tb``), ``C`` is ``[M, N]``; ``oa``/``ob``/``oc``
    are the element offsets of the current batch index. The register tile is
    ``mr`` rows by ``nrv`` vectors of ``vw`` elements; ``kc`` is the depth of
    a packed panel of B."""

    ba: Buffer
    bb: Buffer
    out: Buffer
    dt: DType
    vw: int
    ta: bool
    tb: bool
    dm: str
    dn: str
    dk: str
    nrv: int
    mr: int
    kc: int
    oa: str = "0"
    ob: str = "0"
    oc: str = "0"

    @property
    def t(self) -> str:
        return self.dt.llvm

    @property
    def vt(self) -> str:
        return f"<{self.vw} x {self.dt.llvm}>"


def _matmul_source(x: Node) -> tuple[Node, bool]:
    """The node a matmul operand is read from, and whether it is read
    transposed. An operand that swaps the last two dims of ``y`` (a
    ``permute``, maybe reshaped in its batch dims only) is read from ``y``'s
    buffer transposed, instead of being copied into a buffer of its own
    (``linear``'s weight, ``q @ k.transpose(-1, -2)``)."""
    y = x
    while y.op == "reshape":
        src = y.inputs[0]
        if src.rank < 2 or tuple(src.shape[-2:]) != tuple(y.shape[-2:]):
            return x, False
        y = src
    if y.op == "permute":
        r = y.rank
        if tuple(y.attrs["perm"]) == tuple(range(r - 2)) + (r - 1, r - 2):
            return y.inputs[0], True
    return x, False


def _matmul_tiling(dt: DType, nrv: int, target: TargetInfo | None = None
                   ) -> tuple[int, int, int]:
    """(vector width W, tile rows MR, panel depth KC) for register tiles of
    ``nrv`` vectors on ``target`` (default: the host). W: the vector register
    width LLVM's tuning uses (TTI); MR: the largest power of two (at most 8)
    whose accumulators leave 4 vector registers for B and a broadcast of A;
    KC: the depth of a _MATMUL_PANEL_BYTES panel."""
    target = target or _default_target()
    vw = max(1, target.vector_bytes // dt.itemsize)
    regs = max(8, target.vector_registers)
    mr = min(8, 1 << (((regs - 4) // nrv).bit_length() - 1))
    kc = max(vw, _MATMUL_PANEL_BYTES // (nrv * vw * dt.itemsize))
    return vw, mr, kc


def _default_target() -> TargetInfo:
    """The target kernels are generated for: this machine."""
    return host_target()
