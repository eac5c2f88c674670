"""Elementwise values and reductions: every node as a function from an output
index to a value (views remap indices, padding and concat are guarded loads),
the scalar computations, and the reduction loop nests."""

from __future__ import annotations

from collections.abc import Callable

from .. import vecmath
from ..graph import DType, Node, dim_op, dim_str, shape_numel
from .common import Buffer, CodegenError, _const, _fconst
from .emitter import EmitterCore

_LIBM = {
    "tanh": "tanh", "erf": "erf", "erfc": "erfc", "log1p": "log1p", "expm1": "expm1",
    "atan2": "atan2", "hypot": "hypot",
}
# Math functions with vector variants in a vector math library (vecmath).
_VECTOR_MATH = frozenset({"exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf", "erfc",
                          "log1p", "expm1", "atan2", "pow", "hypot"})
# Unary and binary functions whose scalar form is a call of a math routine
# (libm, or an intrinsic that lowers to one): in a loop the vectorizer
# widens they become vector variants (vecmath); in straight-line code, such
# as a matmul tile's epilogue, they stay one scalar call per element.
_MATH_CALLS = _VECTOR_MATH | frozenset(_LIBM) | frozenset({"sigmoid", "silu", "gelu",
                                                           "gelu_tanh"})


def calls_math(node: Node) -> bool:
    """Whether ``node``'s value at one element calls a math routine (see
    ``_MATH_CALLS``)."""
    return node.op in ("unary", "binary") and node.dtype.is_float and \
        node.attrs.get("fn") in _MATH_CALLS


_INTRINSIC_UNARY = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt",
    "abs": "fabs", "floor": "floor", "ceil": "ceil", "round": "roundeven",
    "trunc": "trunc", "sin": "sin", "cos": "cos",
}


class ElementwiseEmitter(EmitterCore):
    """Elementwise emission, scalar math and reductions."""

    # -- elemental emission -------------------------------------------------
    def flat_ok(self, node: Node) -> bool:
        """True when ``node`` can be computed from a linear index alone."""
        if node.id in self.buffers or node.op == "scalar":
            return True
        if node.op in ("reshape", "view_as_complex"):
            return self.flat_ok(node.inputs[0])
        if node.op in ("unary", "binary", "compare", "where", "cast", "bitcast"):
            return all((i.op == "scalar" or tuple(i.shape) == tuple(node.shape))
                       and self.flat_ok(i) for i in node.inputs)
        return False

    def emit_lin(self, node: Node, lin: str) -> str:
        """Value of ``node`` at linear (row-major) position ``lin``."""
        key = (node.id, "lin", lin)
        if key in self.memo:
            return self.memo[key]
        if node.op == "scalar":
            # Before its buffer: a scalar that is also a graph output (a
            # saved scalar_tensor) has a one-element buffer, and the
            # linear index is the reader's, broadcast from it (flat_ok).
            return _const(node.attrs["value"], node.dtype)
        if node.id in self.produced:  # the element this iteration computed
            return self.produced[node.id]
        buf = self.buffers.get(node.id)
        if buf is not None:
            assert not buf.row_local, "a row-local buffer read by a linear index"
            v = self.load(buf, lin)
        elif node.op == "reshape" and self.flat_ok(node.inputs[0]):
            v = self.emit_lin(node.inputs[0], lin)
        elif node.op == "view_as_complex" and self.flat_ok(node.inputs[0]):
            x, lin2 = node.inputs[0], self.imul(lin, "2")
            v = self.cpack(node.dtype, self.emit_lin(x, lin2),
                           self.emit_lin(x, self.iadd(lin2, "1")))
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
        if node.id in self.produced:  # the element this iteration computed
            return self.produced[node.id]
        buf = self.buffers.get(node.id)
        if buf is not None:
            return self.load(buf, self.buffer_offset(buf, idx, node.shape))
        op = node.op
        if op == "scalar":
            return _const(node.attrs["value"], node.dtype)
        if op == "iota":
            i = idx[node.attrs["dim"]]
            return self.convert(i, DType.i64, node.dtype)
        if op in ("unary", "binary", "compare", "where", "cast", "bitcast"):
            args = [self.emit(i, self.bcast_idx(i, node.shape, idx)) for i in node.inputs]
            return self.compute(node, args)
        if op == "broadcast":
            x = node.inputs[0]
            return self.emit(x, self.bcast_idx(x, node.shape, idx))
        if op == "reshape":
            x = node.inputs[0]
            groups = _reshape_groups(tuple(node.shape), tuple(x.shape))
            if groups is not None and len(groups) > 1 and not self.flat_ok(x):
                # The reshape merges or splits runs of dims ([B*H, L, D] of
                # a [B, H, L, D] permute, [B, L, H, D] of [B, L, H*D]): map
                # each run's index alone (a division only where a run is
                # split, and outside the loops of the dims it does not
                # touch), not the whole linear index per element.
                src: list[str] = []
                for (o0, o1), (s0, s1) in groups:
                    lin = self.linear(idx[o0:o1], tuple(node.shape[o0:o1]))
                    src += self.delinearize(lin, tuple(x.shape[s0:s1]))
                return self.emit(x, src)
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
        if op == "view_as_complex":
            x = node.inputs[0]
            return self.cpack(node.dtype, self.emit(x, idx + ["0"]), self.emit(x, idx + ["1"]))
        if op == "view_as_real":
            re, im = self.cparts(node.inputs[0].dtype, self.emit(node.inputs[0], idx[:-1]))
            if idx[-1] in ("0", "1"):
                return re if idx[-1] == "0" else im
            c = self.op(f"icmp eq i64 {idx[-1]}, 0", "c")
            return self.op(f"select i1 {c}, {node.dtype.llvm} {re}, {node.dtype.llvm} {im}")
        if op == "concat":
            return self.emit_concat(node, idx)
        if op == "take":
            return self.emit_take(node, idx)
        if op == "gather":
            return self.emit_gather(node, idx)
        raise CodegenError(f"cannot emit {op} elementwise")

    def emit_pad(self, node: Node, idx: list[str]) -> str:
        """``x`` at ``idx - lo`` where that is inside ``x`` (and, with interior
        padding ``q``, a multiple of ``q + 1``: the element ``/ (q + 1)``),
        else the padding value."""
        x = node.inputs[0]
        inner = node.attrs.get("interior", (0,) * x.rank)
        src, checks = [], []
        for k, lo in enumerate(node.attrs["lo"]):
            if lo == 0 and x.shape[k] == node.shape[k]:
                src.append(idx[k])
                continue
            s = self.op(f"sub nsw i64 {idx[k]}, {self.dim(lo)}", "i")
            n = self.dim(x.shape[k])
            if inner[k]:
                step = inner[k] + 1
                span = self.op(f"sub nsw i64 {self.op(f'mul nsw i64 {n}, {step}', 'i')}, "
                               f"{inner[k]}", "i")
                checks.append(self.op(f"icmp ult i64 {s}, {span}", "c"))
                checks.append(self.op(f"icmp eq i64 {self.op(f'urem i64 {s}, {step}', 'i')}, 0",
                                      "c"))
                s = self.op(f"udiv i64 {s}, {step}", "i")
            else:
                checks.append(self.op(f"icmp ult i64 {s}, {n}", "c"))
            src.append(s)
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

    def complex_pairs_source(self, node: Node) -> Node | None:
        """The complex ``z`` when ``node`` is ``view_as_real(z)`` (through
        reshapes that are not buffers): materialized as complex values stored
        in place of their (real, imaginary) pairs."""
        while node.op == "reshape" and node.inputs[0].id not in self.buffers:
            node = node.inputs[0]
        if node.op == "view_as_real":
            return node.inputs[0]
        return None

    def emit_complex_pairs(self, z: Node, out: Buffer) -> None:
        """``out`` (a float buffer, row-major, any shape of 2 * numel(z)
        elements) filled with the pairs of ``z``: one loop nest over ``z``,
        storing a complex value per iteration."""
        pairs = Buffer(out.kind, z.shape, z.dtype, out.param, out.node)
        if self.flat_ok(z) and z.rank > 1:
            with self.loop(self.dim(shape_numel(z.shape))) as i:
                self.store(pairs, i, self.emit_lin(z, i))
        else:
            with self.nest(z.shape) as idx:
                self.store(pairs, self.linear(idx, z.shape), self.emit(z, idx))

    # -- scalar computations ------------------------------------------------
    def convert(self, v: str, src: DType, dst: DType, saturate: bool = False) -> str:
        """``v`` of ``src`` converted to ``dst`` (Graph.cast's rules;
        ``saturate``: floats clamp to an integer dtype's range)."""
        if src is dst:
            return v
        if dst.is_complex:  # a real value gets a zero imaginary part
            if src.is_complex:
                re, im = self.cparts(src, v)
                return self.cpack(dst, self.convert(re, src.real, dst.real),
                                  self.convert(im, src.real, dst.real))
            return self.cpack(dst, self.convert(v, src, dst.real), _fconst(0.0, dst.real))
        if src.is_complex:  # the real part, as numpy and PyTorch convert
            re, im = self.cparts(src, v)
            if dst is DType.bool:
                a = self.op(f"fcmp une {src.real.llvm} {re}, 0.0", "b")
                b = self.op(f"fcmp une {src.real.llvm} {im}, 0.0", "b")
                return self.op(f"or i1 {a}, {b}", "b")
            return self.convert(re, src.real, dst, saturate)
        s, d = src.llvm, dst.llvm
        if src.is_half and dst is not DType.f32:  # exactly, through f32
            return self.convert(self.convert(v, src, DType.f32), DType.f32, dst, saturate)
        if dst.is_half and src is not DType.f32:
            # Through f32, as PyTorch's c10::Half and c10::BFloat16 convert
            # (they are built from a float): one rounding to f32, one to half.
            return self.convert(self.convert(v, src, DType.f32), DType.f32, dst)
        if dst is DType.bool:
            if src.is_float:
                return self.op(f"fcmp une {s} {v}, 0.0", "b")
            return self.op(f"icmp ne {s} {v}, 0", "b")
        if src is DType.bool:
            if dst.is_float:
                return self.op(f"uitofp i1 {v} to {d}")
            return self.op(f"zext i1 {v} to {d}")
        if src is DType.f32 and dst is DType.bf16:
            return self.round_to_bf16(v)
        if src is DType.bf16 and dst is DType.f32:
            return self.widen_bf16(v)
        if src.is_float and dst.is_float:
            return self.op(f"{'fpext' if dst.bits > src.bits else 'fptrunc'} {s} {v} to {d}")
        if src.is_float:
            # Saturating (NaN gives 0): never poison. Narrow and unsigned
            # results convert to a wider signed integer first and wrap, as
            # a C cast through int does on x86 and ARM for values in range
            # of that wider type (-1.0 to uint8 gives 255, like PyTorch).
            sfx = "f32" if src is DType.f32 else "f64"
            if saturate:
                sign = "u" if dst.is_unsigned else "s"
                return self.call(f"llvm.fpto{sign}i.sat.{d}.{sfx}", d, [(s, v)])
            if dst is DType.u64:  # no wider integer: as C's cast on x86 (-1.0 gives 2**64 - 1)
                return self.float_to_u64(v, s, sfx)
            wide = "i64" if dst.bits >= 32 and dst is not DType.i32 else "i32"
            r = self.call(f"llvm.fptosi.sat.{wide}.{sfx}", wide, [(s, v)])
            return r if wide == d else self.op(f"trunc {wide} {r} to {d}")
        if dst.is_float:
            return self.op(f"{'uitofp' if src.is_unsigned else 'sitofp'} {s} {v} to {d}")
        if src.bits < dst.bits:
            return self.op(f"{'zext' if src.is_unsigned else 'sext'} {s} {v} to {d}")
        if src.bits == dst.bits:  # i8 <-> u8: the same bits
            return v
        return self.op(f"trunc {s} {v} to {d}")

    def float_to_u64(self, v: str, s: str, sfx: str) -> str:
        """Float ``v`` (LLVM type ``s``) to uint64 without saturating, as a C
        cast compiles on x86-64: below 2**63 through int64 (negative values
        wrap, -1.0 gives 2**64 - 1), from 2**63 on ``v - 2**63`` with the top
        bit set; NaN gives 0. Never poison."""
        big = _fconst(2.0 ** 63, DType.f32 if s == "float" else DType.f64)
        low = self.call(f"llvm.fptosi.sat.i64.{sfx}", "i64", [(s, v)])
        high = self.call(f"llvm.fptosi.sat.i64.{sfx}", "i64",
                         [(s, self.op(f"fsub {s} {v}, {big}"))])
        high = self.op(f"xor i64 {high}, {-(1 << 63)}", "i")
        return self.op(f"select i1 {self.op(f'fcmp oge {s} {v}, {big}', 'c')}, i64 {high}, "
                       f"i64 {low}")

    def widen_bf16(self, v: str) -> str:
        """bf16 ``v`` as f32, exactly (its bits in the top half, as
        c10::BFloat16 converts, NaN payloads kept), in integer ops: not
        ``fpext bfloat``, which x86's cost model prices so high at wide
        vectors that the loop vectorizer chose 4 lanes for loops full of
        them (on AVX-512)."""
        b = self.op(f"zext i16 {self.op(f'bitcast bfloat {v} to i16', 'b')} to i32", "b")
        return self.op(f"bitcast i32 {self.op(f'shl i32 {b}, 16', 'b')} to float")

    def round_to_bf16(self, v: str) -> str:
        """f32 ``v`` rounded to the nearest bf16, ties to even, NaN to the
        quiet NaN 0x7FC0 (PyTorch's c10::BFloat16 rounding), in integer ops:
        they vectorize on every target. Not LLVM's ``fptrunc``: X86 selects
        AVX512-BF16's ``vcvtneps2bf16`` for it, which reads f32 subnormals
        as zero (eager PyTorch keeps them), and without that extension calls
        compiler-rt's ``__truncsfbf2`` per element, which libgcc before GCC
        13 lacks (the JIT could not resolve it)."""
        b = self.op(f"bitcast float {v} to i32", "b")
        odd = self.op(f"and i32 {self.op(f'lshr i32 {b}, 16', 'b')}, 1", "b")
        r = self.op(f"add i32 {b}, {self.op(f'add i32 {odd}, 32767', 'b')}", "b")
        hi = self.op(f"trunc i32 {self.op(f'lshr i32 {r}, 16', 'b')} to i16", "b")
        nan = self.op(f"fcmp uno float {v}, 0.0", "c")
        bits = self.op(f"select i1 {nan}, i16 {0x7FC0}, i16 {hi}", "b")
        return self.op(f"bitcast i16 {bits} to bfloat")

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
        # callees at some widths; the others get glibc's variants listed.
        vecs = () if base not in _VECTOR_MATH else \
            vecmath.variants(base, dt.itemsize * 8, len(args), self.target, self.host)
        if self.host:
            vecs = tuple(v for v in vecs if not vecmath.covered_by_llvm(name, v.lanes))
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
        if op in ("unary", "binary", "compare") and any(
                i.dtype.is_half for i in node.inputs):
            return self.compute_half(node, args)
        if op == "cast":
            return self.convert(args[0], node.inputs[0].dtype, node.dtype,
                                node.attrs.get("saturate", False))
        if op == "bitcast":
            return self.op(f"bitcast {node.inputs[0].dtype.llvm} {args[0]} to {node.dtype.llvm}")
        if op == "where":
            return self.op(f"select i1 {args[0]}, {node.dtype.llvm} {args[1]}, "
                           f"{node.dtype.llvm} {args[2]}")
        if op == "compare":
            return self.compare(node.attrs["fn"], node.inputs[0].dtype, args[0], args[1])
        if op == "unary":
            if node.inputs[0].dtype.is_complex:
                return self.cunary(node.attrs["fn"], node.inputs[0].dtype, args[0])
            return self.unary(node.attrs["fn"], node.dtype, args[0])
        if op == "binary":
            fn = node.attrs["fn"]
            if fn in ("complex", "polar"):
                return self.cmake(fn, node.dtype, args[0], args[1])
            if node.dtype.is_complex:
                return self.cbinary(fn, node.dtype, args[0], args[1])
            return self.binary(fn, node.dtype, args[0], args[1],
                               node.attrs.get("zero_div", "error"))
        raise CodegenError(f"not an elementwise op: {op}")

    def compute_half(self, node: Node, args: list[str]) -> str:
        """An elementwise op over f16 or bf16 operands: computed in f32 and
        rounded back to the half type (PyTorch's and XLA's CPU semantics).
        A scalar operand enters at f32 precision, as PyTorch passes a
        Python number to its kernels. InstCombine narrows ``fptrunc(fadd(
        fpext a, fpext b))`` to ``fadd half`` where that is exact, and the
        backend picks native half instructions when the target has them."""
        wide = [_const(i.attrs["value"], DType.f32) if i.op == "scalar" and i.dtype.is_half
                else self.convert(a, i.dtype, i.dtype.compute)
                for i, a in zip(node.inputs, args, strict=True)]
        in_dt = node.inputs[0].dtype.compute
        if node.op == "compare":
            return self.compare(node.attrs["fn"], in_dt, wide[0], wide[1])
        out_dt = node.dtype.compute
        if node.op == "unary":
            r = self.unary(node.attrs["fn"], out_dt, wide[0])
        else:
            r = self.binary(node.attrs["fn"], out_dt, wide[0], wide[1],
                            node.attrs.get("zero_div", "error"))
        return self.convert(r, out_dt, node.dtype)

    def compare(self, fn: str, dt: DType, a: str, b: str) -> str:
        t = dt.llvm
        if dt.is_complex:  # eq, ne: both parts
            (ar, ai), (br, bi) = self.cparts(dt, a), self.cparts(dt, b)
            r = self.compare(fn, dt.real, ar, br)
            i = self.compare(fn, dt.real, ai, bi)
            return self.op(f"{'and' if fn == 'eq' else 'or'} i1 {r}, {i}", "b")
        if dt.is_float:
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt",
                    "ge": "oge"}[fn]
            return self.op(f"fcmp {pred} {t} {a}, {b}", "b")
        sign = "u" if dt is DType.bool or dt.is_unsigned else "s"
        pred = {"eq": "eq", "ne": "ne", "lt": f"{sign}lt", "le": f"{sign}le",
                "gt": f"{sign}gt", "ge": f"{sign}ge"}[fn]
        return self.op(f"icmp {pred} {t} {a}, {b}", "b")

    # -- complex arithmetic: the formulas of PyTorch's c10::complex and numpy
    def cmake(self, fn: str, dt: DType, a: str, b: str) -> str:
        """``complex(a, b)`` = a + ib, or ``polar(a, b)`` = a (cos b + i sin b)."""
        if fn == "complex":
            return self.cpack(dt, a, b)
        p, pt = dt.real, dt.real.llvm
        re = self.op(f"fmul {pt} {a}, {self.fcall('cos', p, [b])}")
        im = self.op(f"fmul {pt} {a}, {self.fcall('sin', p, [b])}")
        return self.cpack(dt, re, im)

    def cunary(self, fn: str, dt: DType, z: str) -> str:
        """``fn(z)`` for a complex ``z`` (abs, real, imag and angle are real)."""
        p, pt = dt.real, dt.real.llvm
        re, im = self.cparts(dt, z)
        if fn == "real":
            return re
        if fn == "imag":
            return im
        if fn == "abs":  # hypot: no overflow for large parts
            return self.fcall("hypot", p, [re, im], libm=True)
        if fn == "angle":
            return self.fcall("atan2", p, [im, re], libm=True)
        if fn == "neg":
            return self.cpack(dt, self.op(f"fneg {pt} {re}"), self.op(f"fneg {pt} {im}"))
        if fn == "conj":
            return self.cpack(dt, re, self.op(f"fneg {pt} {im}"))
        if fn == "exp":  # e^re (cos im + i sin im)
            e = self.fcall("exp", p, [re])
            return self.cpack(dt, self.op(f"fmul {pt} {e}, {self.fcall('cos', p, [im])}"),
                              self.op(f"fmul {pt} {e}, {self.fcall('sin', p, [im])}"))
        if fn == "square":
            return self.cbinary("mul", dt, z, z)
        if fn == "reciprocal":
            return self.cbinary("div", dt, _const(1, dt), z)
        raise CodegenError(f"{fn} of a complex value")

    def cbinary(self, fn: str, dt: DType, a: str, b: str) -> str:
        """``fn(a, b)`` for complex values: add, sub, mul (the textbook
        formula, as PyTorch, numpy and XLA compute it), div (Smith's
        algorithm with numpy's and c10::complex's special case for a zero
        divisor)."""
        pt = dt.real.llvm
        (ar, ai), (br, bi) = self.cparts(dt, a), self.cparts(dt, b)

        def f(op: str, x: str, y: str) -> str:
            return self.op(f"{op} {pt} {x}, {y}")

        if fn in ("add", "sub"):
            return self.cpack(dt, f("f" + fn, ar, br), f("f" + fn, ai, bi))
        if fn == "mul":
            return self.cpack(dt, f("fsub", f("fmul", ar, br), f("fmul", ai, bi)),
                              f("fadd", f("fmul", ar, bi), f("fmul", ai, br)))
        if fn != "div":
            raise CodegenError(f"{fn} of complex values")
        one = _fconst(1.0, dt.real)
        ac, ad = self.fcall("fabs", dt.real, [br]), self.fcall("fabs", dt.real, [bi])
        # |c| >= |d|: rat = d / c, scl = 1 / (c + d rat),
        #             ((a + b rat) scl, (b - a rat) scl)
        rat = f("fdiv", bi, br)
        scl = f("fdiv", one, f("fadd", br, f("fmul", bi, rat)))
        re1 = f("fmul", f("fadd", ar, f("fmul", ai, rat)), scl)
        im1 = f("fmul", f("fsub", ai, f("fmul", ar, rat)), scl)
        # else:       rat = c / d, scl = 1 / (d + c rat),
        #             ((a rat + b) scl, (b rat - a) scl)
        rat2 = f("fdiv", br, bi)
        scl2 = f("fdiv", one, f("fadd", bi, f("fmul", br, rat2)))
        re2 = f("fmul", f("fadd", f("fmul", ar, rat2), ai), scl2)
        im2 = f("fmul", f("fsub", f("fmul", ai, rat2), ar), scl2)
        # c = d = 0: (a / |c|, b / |d|), an infinity or NaN
        zero = self.op(f"fcmp oeq {pt} {ac}, {_fconst(0.0, dt.real)}", "c")
        zd = self.op(f"fcmp oeq {pt} {ad}, {_fconst(0.0, dt.real)}", "c")
        zero = self.op(f"and i1 {zero}, {zd}", "c")
        re1 = self.op(f"select i1 {zero}, {pt} {f('fdiv', ar, ac)}, {pt} {re1}")
        im1 = self.op(f"select i1 {zero}, {pt} {f('fdiv', ai, ad)}, {pt} {im1}")
        ge = self.op(f"fcmp oge {pt} {ac}, {ad}", "c")
        return self.cpack(dt, self.op(f"select i1 {ge}, {pt} {re1}, {pt} {re2}"),
                          self.op(f"select i1 {ge}, {pt} {im1}, {pt} {im2}"))

    def unary(self, fn: str, dt: DType, x: str) -> str:
        t = dt.llvm
        if not dt.is_float:
            if fn == "not":
                return self.op(f"xor i1 {x}, true")
            if fn == "neg":
                return self.op(f"sub {t} 0, {x}")
            if fn in ("abs", "relu") and dt.is_unsigned:
                return x
            if fn == "abs":
                return self.call(f"llvm.abs.{t}", t, [(t, x), ("i1", "false")])
            if fn == "relu":
                return self.call(f"llvm.smax.{t}", t, [(t, x), (t, "0")])
            if fn == "square":
                return self.op(f"mul {t} {x}, {x}")
            if fn == "sign" and dt.is_unsigned:
                return self.op(f"zext i1 {self.op(f'icmp ne {t} {x}, 0', 'c')} to {t}")
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
            if fn in ("atan2", "hypot"):
                return self.fcall(fn, dt, [a, b], libm=True)
            if fn == "floordiv":
                return self.fcall("floor", dt, [self.op(f"fdiv {t} {a}, {b}")])
            raise CodegenError(f"unsupported float op {fn}")
        if fn in ("add", "sub", "mul", "and", "or", "xor"):
            return self.op(f"{fn} {t} {a}, {b}")
        if fn in ("shl", "lshr", "ashr"):
            # A shift by the width or more (negative: a huge unsigned) is
            # poison in LLVM; XLA and PyTorch give 0, or the sign for ashr.
            bits = dt.itemsize * 8
            big = self.op(f"icmp uge {t} {b}, {bits}", "c")
            amount = self.op(f"select i1 {big}, {t} {bits - 1}, {t} {b}")
            r = self.op(f"{fn} {t} {a}, {amount}")
            return r if fn == "ashr" else self.op(f"select i1 {big}, {t} 0, {t} {r}")
        if fn in ("maximum", "minimum"):
            if dt is DType.bool:
                return self.op(f"{'or' if fn == 'maximum' else 'and'} i1 {a}, {b}")
            sign = "u" if dt.is_unsigned else "s"
            return self.call(f"llvm.{sign}{fn[:3]}.{t}", t, [(t, a), (t, b)])
        if fn in ("div", "rem", "floordiv") and dt.is_unsigned:
            # Unsigned: no -1 divisor and no rounding to mend; a zero divisor
            # as for the signed ones (the flag, or XLA's all-ones and dividend).
            zero = self.op(f"icmp eq {t} {b}, 0", "c")
            if zero_div == "error":
                self.flag_zero_division(zero)
            safe = self.op(f"select i1 {zero}, {t} 1, {t} {b}")
            if fn == "rem":
                r = self.op(f"urem {t} {a}, {safe}")
                return self.op(f"select i1 {zero}, {t} {a}, {t} {r}")
            q = self.op(f"udiv {t} {a}, {safe}")
            return self.op(f"select i1 {zero}, {t} -1, {t} {q}")
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

    def emit_reduce(self, node: Node, out: Buffer, prefix: list[str] | None = None) -> None:
        """A reduction: kept dims outer, reduced dims inner. ``prefix``: the
        indices of the leading kept dims, fixed by an enclosing row loop
        (:meth:`RowEmitter.materialize_rows`); only the others get loops."""
        x = node.inputs[0]
        fn, axes = node.attrs["fn"], node.attrs["axes"]
        kept = [k for k in range(x.rank) if k not in axes]
        dt = x.dtype
        acc_dt = accumulator_dtype(dt, fn, x.shape[axes[0]] if len(axes) == 1 else None)
        prefix = prefix or []
        if prefix:
            assert not _rows_first(node) and not dt.is_complex
            assert kept[:len(prefix)] == list(range(len(prefix)))
        elif _rows_first(node):
            self.emit_reduce_rows(node, out, _row_acc_dtype(node))
            return
        if dt.is_complex:
            self.emit_reduce_carried(node, out)
            return
        at = acc_dt.llvm
        outer = tuple(x.shape[k] for k in kept[len(prefix):])
        # Each kept element is reduced by one thread alone: the same order
        # of operations with any thread count.
        with self.nest(outer, work=None if prefix else shape_numel(x.shape)) as inner:
            kidx = prefix + inner
            if fn in ("argmax", "argmin") and _two_pass_arg(dt):
                res = self.emit_arg_extreme(node, kidx, kept)
                self.store_at(out, _kept_index(node, kidx), node.shape, res)
            elif fn == "sum" and acc_dt is DType.f32 and len(axes) == 1:
                res = self.emit_sum_lanes(x, kidx, kept, axes[0])
                self.store_at(out, _kept_index(node, kidx), node.shape, res)
            else:
                acc = self.alloca(at)
                arg = self.alloca("i64") if fn in ("argmax", "argmin") else None
                self.line(f"store {at} {_reduce_identity(fn, acc_dt)}, ptr {acc}")
                if arg is not None:
                    self.line(f"store i64 0, ptr {arg}")
                with self.nest(tuple(x.shape[k] for k in axes)) as ridx:
                    v = self.convert(self.emit(x, _full_index(x.rank, kept, kidx, axes, ridx)), dt,
                                     acc_dt)
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
                self.store_at(out, _kept_index(node, kidx), node.shape, res)

    def emit_sum_lanes(self, x: Node, kidx: list[str], kept: list[int], axis: int) -> str:
        """The f32 sum of ``x`` along ``axis`` at the kept index ``kidx``,
        in :data:`SUM_LANES` partial sums whose order the IR fixes (element
        ``j`` goes to lane ``j % SUM_LANES``, the last ``n % SUM_LANES``
        elements to the first lanes, then the lanes are added as a tree of
        halves): no ``reassoc``, so however the loops are vectorized,
        unrolled or inlined (a thread's part, an inter-op branch), the
        result is the same bits; the lane loop vectorizes as it is."""
        return self.sum_lanes(self.dim(x.shape[axis]), lambda r: self.convert(
            self.emit(x, _full_index(x.rank, kept, kidx, (axis,), [r])), x.dtype, DType.f32))

    def sum_lanes(self, n: str, value: Callable[[str], str]) -> str:
        """The f32 sum of ``value(r)`` for ``r`` in ``[0, n)`` in the fixed
        order of :meth:`emit_sum_lanes` (``value`` emits the element, and may
        store it too, inside the loop)."""
        lanes = SUM_LANES
        vt = f"<{lanes} x float>"
        acc = self.alloca(vt)
        self.line(f"store {vt} zeroinitializer, ptr {acc}")
        full = self.op(f"udiv i64 {n}, {lanes}", "i")

        def add(lane: str, r: str) -> None:
            v = value(r)
            p = self.op(f"getelementptr inbounds float, ptr {acc}, i64 {lane}", "p")
            a = self.op(f"load float, ptr {p}", "a")
            self.line(f"store float {self.op(f'fadd float {a}, {v}', 'v')}, ptr {p}")

        with self.loop(full, hint="q") as q:
            base = self.op(f"mul nsw i64 {q}, {lanes}", "i")
            with self.loop(str(lanes), hint="l") as lane:
                add(lane, self.op(f"add nsw i64 {base}, {lane}", "i"))
        tail = self.op(f"mul nsw i64 {full}, {lanes}", "i")
        with self.loop(n, start=tail, hint="t") as r:
            add(self.op(f"sub nsw i64 {r}, {tail}", "i"), r)
        v = self.op(f"load {vt}, ptr {acc}", "a")
        w = lanes
        while w > 1:
            h = w // 2
            ty = f"<{w} x float>"
            lo = self.op(f"shufflevector {ty} {v}, {ty} poison, <{h} x i32> "
                         f"<{', '.join(f'i32 {i}' for i in range(h))}>", "h")
            hi = self.op(f"shufflevector {ty} {v}, {ty} poison, <{h} x i32> "
                         f"<{', '.join(f'i32 {i}' for i in range(h, w))}>", "h")
            v = self.op(f"fadd <{h} x float> {lo}, {hi}", "h")
            w = h
        return self.op(f"extractelement <1 x float> {v}, i64 0", "h")

    def emit_arg_extreme(self, node: Node, kidx: list[str], kept: list[int]) -> str:
        """argmax/argmin of one kept element in two passes that vectorize
        (one pass with the position carried beside the best value is a
        chain of compares and selects the loop vectorizer does not take):
        the extreme ``m`` (``llvm.maximum``/``minimum``: NaN if any element
        is NaN), then the first position holding ``m`` (NaN: the first NaN),
        as an unsigned-min reduction of ``match ? pos : count``. The result
        is the one-pass rule's: the first occurrence of the largest (or
        smallest) value, NaN above every value, and -0.0 equal to 0.0."""
        x = node.inputs[0]
        fn, axes = node.attrs["fn"], node.attrs["axes"]
        dt = x.dtype
        t = dt.llvm
        rshape = tuple(x.shape[k] for k in axes)
        ext = "max" if fn == "argmax" else "min"
        best = self.alloca(t)
        self.line(f"store {t} {_reduce_identity(ext, dt)}, ptr {best}")
        with self.nest(rshape) as ridx:
            v = self.emit(x, _full_index(x.rank, kept, kidx, axes, ridx))
            a = self.op(f"load {t}, ptr {best}", "a")
            self.line(f"store {t} {self.combine(ext, dt, a, v)}, ptr {best}")
        m = self.op(f"load {t}, ptr {best}", "a")
        count = self.dim(shape_numel(rshape))
        first = self.alloca("i64")
        self.line(f"store i64 {count}, ptr {first}")
        if dt.is_float:
            m_nan = self.op(f"fcmp uno {t} {m}, {m}", "c")
        with self.nest(rshape) as ridx:
            v = self.emit(x, _full_index(x.rank, kept, kidx, axes, ridx))
            if dt.is_float:
                same = self.op(f"fcmp oeq {t} {v}, {m}", "c")
                v_nan = self.op(f"fcmp uno {t} {v}, {v}", "c")
                both_nan = self.op(f"and i1 {v_nan}, {m_nan}", "c")
                match = self.op(f"or i1 {same}, {both_nan}", "c")
            else:
                match = self.op(f"icmp eq {t} {v}, {m}", "c")
            pos = self.linear(ridx, rshape)
            cand = self.op(f"select i1 {match}, i64 {pos}, i64 {count}", "i")
            old = self.op(f"load i64, ptr {first}", "a")
            low = self.call("llvm.umin.i64", "i64", [("i64", old), ("i64", cand)])
            self.line(f"store i64 {low}, ptr {first}")
        found = self.op(f"load i64, ptr {first}", "a")
        none = self.op(f"icmp eq i64 {found}, {count}", "c")  # no element: 0, as one pass
        return self.op(f"select i1 {none}, i64 0, i64 {found}", "i")

    def emit_reduce_carried(self, node: Node, out: Buffer) -> None:
        """A reduction whose accumulator is carried through the reduced loops
        in SSA (a ``phi`` per loop header), not in memory: complex sums and
        products, whose ``phi { float, float }`` accel-phi-decompose splits
        into a phi per part (the loop vectorizer takes no aggregate phi)."""
        x = node.inputs[0]
        fn, axes = node.attrs["fn"], node.attrs["axes"]
        kept = [k for k in range(x.rank) if k not in axes]
        dt = node.dtype

        def step(ridx: list[str], acc: str) -> str:
            full = [""] * x.rank
            for k, i in zip(kept, kidx, strict=False):
                full[k] = i
            for k, i in zip(axes, ridx, strict=False):
                full[k] = i
            v = self.convert(self.emit(x, full), x.dtype, dt)
            return self.combine(fn, dt, acc, v, reassoc=True)

        with self.nest(tuple(x.shape[k] for k in kept)) as kidx:
            res = self.carried_nest(tuple(x.shape[k] for k in axes),
                                    _reduce_identity(fn, dt), dt.llvm, step)
            self.store(out, self.linear(_kept_index(node, kidx), node.shape), res)

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
        if dt.is_half:  # in f32, rounded back (a scatter's updates, one by one)
            r = self.combine(fn, DType.f32, self.convert(a, dt, DType.f32),
                             self.convert(v, dt, DType.f32), reassoc)
            return self.convert(r, DType.f32, dt)
        if dt.is_complex:
            if fn == "prod":
                return self.cbinary("mul", dt, a, v)
            if fn != "sum":
                raise CodegenError(f"{fn} of complex values")
            (ar, ai), (vr, vi) = self.cparts(dt, a), self.cparts(dt, v)
            add = "fadd reassoc" if reassoc else "fadd"
            return self.cpack(dt, self.op(f"{add} {dt.real.llvm} {ar}, {vr}"),
                              self.op(f"{add} {dt.real.llvm} {ai}, {vi}"))
        if fn in ("sum", "prod"):
            op = {"sum": "add", "prod": "mul"}[fn]
            if dt.is_float:
                op = "f" + op + (" reassoc" if reassoc and fn == "sum" else "")
            return self.op(f"{op} {dt.llvm} {a}, {v}")
        if fn in ("any", "all"):
            return self.op(f"{'or' if fn == 'any' else 'and'} i1 {a}, {v}")
        if dt.is_float:
            # Which of two equal elements a reduction keeps is unspecified
            # (PyTorch's vectorized max and XLA's reduce alike): nsz spares
            # the backend ordering -0.0 below +0.0 on every element (on
            # x86, a max, an unordered compare and a masked move per vector
            # remain); a NaN still propagates.
            t = dt.llvm
            name = f"llvm.{'maximum' if fn == 'max' else 'minimum'}.{dt.value[0]}"
            self.declare(name, t, [t, t])
            return self.op(f"call nsz {t} @{name}({t} {a}, {t} {v})", "v")
        return self.binary("maximum" if fn == "max" else "minimum", dt, a, v)

    def argbetter(self, fn: str, dt: DType, v: str, best: str) -> str:
        """Whether ``v`` replaces ``best`` (first occurrence wins; NaN is the
        largest and the smallest value, like in PyTorch)."""
        t = dt.llvm
        if dt is DType.bool:
            pred = "ugt" if fn == "argmax" else "ult"
            return self.op(f"icmp {pred} i1 {v}, {best}", "c")
        if not dt.is_float:
            sign = "u" if dt.is_unsigned else "s"
            return self.op(f"icmp {sign}{'gt' if fn == 'argmax' else 'lt'} {t} {v}, {best}", "c")
        better = self.op(f"fcmp {'ogt' if fn == 'argmax' else 'olt'} {t} {v}, {best}", "c")
        vnan = self.op(f"fcmp uno {t} {v}, {v}", "c")
        bok = self.op(f"fcmp ord {t} {best}, {best}", "c")
        return self.op(f"or i1 {better}, {self.op(f'and i1 {vnan}, {bok}', 'c')}", "c")


def _two_pass_arg(dt: DType) -> bool:
    """Whether argmax/argmin of ``dt`` takes :meth:`ElementwiseEmitter.
    emit_arg_extreme` (32- and 64-bit floats and integers)."""
    return dt.itemsize >= 4 and not dt.is_complex and dt is not DType.bool


def _full_index(rank: int, kept: list[int], kidx: list[str], axes: tuple,
                ridx: list[str]) -> list[str]:
    """The index of an element of a reduction's operand from its kept and
    reduced parts."""
    full = [""] * rank
    for k, i in zip(kept, kidx, strict=False):
        full[k] = i
    for k, i in zip(axes, ridx, strict=False):
        full[k] = i
    return full


def _reshape_groups(out: tuple, src: tuple
                    ) -> list[tuple[tuple[int, int], tuple[int, int]]] | None:
    """The runs of dims a reshape of ``src`` to ``out`` maps onto each other
    (``((out start, out end), (src start, src end))``: each run of ``out``
    holds the elements of its run of ``src``), or None where they cannot be
    told apart (a symbolic size in a merged or split run)."""
    groups = []
    i = j = 0
    while i < len(out) or j < len(src):
        if i < len(out) and j < len(src) and dim_str(out[i]) == dim_str(src[j]):
            groups.append(((i, i + 1), (j, j + 1)))
            i, j = i + 1, j + 1
            continue
        i0, j0, po, ps = i, j, 1, 1
        while True:
            if po <= ps and i < len(out):
                if not isinstance(out[i], int):
                    return None
                po *= out[i]
                i += 1
            elif j < len(src):
                if not isinstance(src[j], int):
                    return None
                ps *= src[j]
                j += 1
            else:
                break
            if po == ps and i > i0 and j > j0:
                break
        if po != ps:
            return None
        groups.append(((i0, i), (j0, j)))
    return groups


def _reduce_identity(fn: str, dt: DType) -> str:
    """The initial accumulator of a ``fn`` reduction over ``dt``."""
    if fn in ("sum", "any"):
        return _const(False if fn == "any" else 0, dt)
    if fn in ("prod", "all"):
        return _const(True if fn == "all" else 1, dt)
    if dt.is_complex:
        raise CodegenError(f"{fn} of complex values")
    low = fn in ("max", "argmax")  # start from the lowest value
    if dt.is_float:
        return _fconst(float("-inf") if low else float("inf"), dt)
    if dt is DType.bool:
        return "false" if low else "true"
    if dt.is_unsigned:
        return "0" if low else "-1"
    bits = dt.itemsize * 8 - 1
    return str(-(1 << bits) if low else (1 << bits) - 1)


def _rows_first(node: Node) -> bool:
    """Whether a reduce node is emitted rows first (emit_reduce_rows): it
    reduces leading axes of its operand and keeps at least its last one."""
    axes = node.attrs["axes"]
    rank = node.inputs[0].rank
    return (node.attrs["fn"] in ("sum", "prod", "max", "min", "any", "all")
            and 0 < len(axes) < rank and tuple(sorted(axes)) == tuple(range(len(axes))))


# f32 sums of at most F32_ACCUMULATION_MAX elements per result along one
# axis accumulate in f32, as PyTorch's and XLA's CPU reduction kernels do,
# in SUM_LANES partial sums of a fixed order; longer ones, lengths known only
# at run time and sums over several axes in f64, whose rounding error does
# not grow with the length. On the Zen 4 EPYC, f64 accumulators made a
# layer norm over 8192 rows of 256 floats 1.65x slower (836 us against
# 505 us; eager 770 us).
F32_ACCUMULATION_MAX = 4096
# The partial sums of an f32 sum accumulated in f32 (ElementwiseEmitter.
# emit_sum_lanes): a fixed number, not the target's vector width, so a
# sum's additions come in the same order on every host.
SUM_LANES = 32


def accumulator_dtype(dt: DType, fn: str, length: object) -> DType:
    """The accumulator of a ``fn`` reduction of ``length`` elements of
    ``dt`` per result (see :data:`F32_ACCUMULATION_MAX`; products stay in
    f64)."""
    if dt is not DType.f32 or fn not in ("sum", "prod"):
        return dt
    if fn == "prod":
        return DType.f64
    short = isinstance(length, int) and length <= F32_ACCUMULATION_MAX
    return DType.f32 if short else DType.f64


def _row_acc_dtype(node: Node) -> DType:
    """The accumulator of emit_reduce_rows: f64 for f32 sums and products,
    else the result's dtype."""
    f32_sum = node.dtype is DType.f32 and node.attrs["fn"] in ("sum", "prod")
    return DType.f64 if f32_sum else node.dtype


def _kept_index(node: Node, kidx: list[str]) -> list[str]:
    """The output index of a reduce node at kept-dims index ``kidx`` (0 in
    the reduced dims with ``keepdim``)."""
    if not node.attrs["keepdim"]:
        return kidx
    it = iter(kidx)
    return ["0" if k in node.attrs["axes"] else next(it) for k in range(node.inputs[0].rank)]
