"""Matmul of bfloat16 operands with the target's bf16 dot-product instruction.

The graph states a bf16 matmul as PyTorch and XLA compute it: both operands
cast to f32, an f32 matmul (products accumulated in f32), the result rounded
back (:meth:`llvmaccel.graph.Graph.matmul`). The graph is the same for every
target; here, where the target is known, a matmul whose two operands are
such casts of bf16 values reads the bf16 values themselves when the target
has an instruction that multiplies pairs of bf16 exactly and adds them to
f32 lanes (:func:`bf16_dot`): half the memory traffic of the f32 operands and
no f32 copy of them, two products per f32 lane per instruction. The result
is the f32 matmul node's own (the cast back to bf16 stays where it was).

Both instructions compute, for every f32 lane ``i``::

    acc[i] += a[2i] * b[2i] + a[2i+1] * b[2i+1]

so the kernel is the panel kernel of :mod:`.matmul` with a packed panel of
B in pairs along ``k`` (for each pair of k-rows, ``NR`` columns of two bf16
each) and A's pair ``(A[i, k], A[i, k+1])`` broadcast to every 32-bit lane.
An odd ``K`` ends with a pair whose second half is zero in both operands (B's
panel is zero-padded, A's second element is not read).

The instructions flush bf16 denormals to zero (x86 ``vdpbf16ps``; AArch64
``BFDOT`` with FPCR.EBF clear): products of values below 2**-126 differ from
the f32 path, within bf16's tolerance."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..graph import DType, Node
from ..target import TargetInfo
from .emitter import EmitterCore

if TYPE_CHECKING:
    from .matmul import _Matmul

# Bytes of a packed KC x NR panel of B in bf16 (L1-resident, as the f32 one).
_BF16_PANEL_BYTES = 32768


def bf16_dot(target: TargetInfo, lanes: int) -> str | None:
    """The LLVM intrinsic of ``target``'s bf16 pair dot product into ``lanes``
    f32 lanes, or None when the target has none of that width. The features
    are LLVM's (``TargetInfo.features``): x86 ``avx512bf16`` (and
    ``avx512vl`` below 512 bits), AArch64 ``bf16`` (NEON ``BFDOT``, 128
    bits). LLVM 19 and 22 name and type these intrinsics alike (``<N x
    bfloat>`` operands; releases before 17 took ``<N x i32>``).
    ``LLVMACCEL_BF16_DOT=off`` turns it off (every bf16 matmul in f32: the
    comparison the benchmarks make)."""
    if not enabled():
        return None
    f = target.features
    if target.arch == "x86_64" and "avx512bf16" in f:
        if lanes == 16:
            return "llvm.x86.avx512bf16.dpbf16ps.512"
        if lanes in (4, 8) and "avx512vl" in f:
            return f"llvm.x86.avx512bf16.dpbf16ps.{lanes * 32}"
    if target.arch in ("aarch64", "arm64") and "bf16" in f and lanes == 4:
        return "llvm.aarch64.neon.bfdot.v4f32.v8bf16"
    return None


def enabled() -> bool:
    """False when ``LLVMACCEL_BF16_DOT=off`` (part of the compiled-graph
    cache's key)."""
    return os.environ.get("LLVMACCEL_BF16_DOT", "").lower() != "off"


def bf16_operand(x: Node) -> Node | None:
    """The bf16 value an f32 matmul operand is the cast of, if it is one."""
    if x.op == "cast" and x.dtype is DType.f32 and x.inputs[0].dtype is DType.bf16:
        return x.inputs[0]
    return None


def half_operand(x: Node) -> Node | None:
    """The bf16 or f16 value an f32 matmul operand is the cast of, if it is
    one (the dot-product kernel reads it as it is, widening on load)."""
    if x.op == "cast" and x.dtype is DType.f32 and x.inputs[0].dtype.is_half:
        return x.inputs[0]
    return None


class Bf16MatmulEmitter(EmitterCore):
    """The bf16 dot-product pieces of the panel kernel (a base of
    :class:`.matmul.MatmulEmitter`, whose operand addressing they use;
    ``mm.dot2`` names the intrinsic)."""

    def mm_bf16_pack(self, mm: _Matmul, panel: str, pc: str, kc: str, j0: str,
                     cols: str) -> None:
        """``panel[(k/2) * 2NR + 2c + k%2] = B[pc + k, j0 + c]`` (bf16), 0
        for ``c >= cols`` and for the second half of a last, odd pair. Each
        pair is one 32-bit word (low half: the even k): read as one word
        when B is stored ``[N, K]`` (a linear layer's weight), else built
        from two rows in a loop along them that the loop vectorizer
        widens."""
        nr = mm.nrv * mm.vw
        pairs = self.op(f"lshr i64 {kc}, 1", "i")

        def word_at(p: str, c: str) -> str:
            return self.ptr(panel, "i32", self.iadd(self.imul(p, str(nr)), c))

        def bits(v: str) -> str:
            h = self.op(f"bitcast bfloat {v} to i16", "i")
            return self.op(f"zext i16 {h} to i32", "i")

        if mm.tb:
            with self.loop(cols, hint="pc") as c:
                with self.loop(pairs, hint="pk") as p:
                    k = self.iadd(pc, self.imul(p, "2"))
                    src = self.ptr(mm.bb.param, "bfloat", self.addr_b(mm, k, self.iadd(j0, c)))
                    w = self.op(f"load i32, ptr {src}, align 2", "ld")
                    self.line(f"store i32 {w}, ptr {word_at(p, c)}")
        else:
            with self.loop(pairs, hint="pk") as p:
                k = self.iadd(pc, self.imul(p, "2"))
                row0 = self.addr_b(mm, k, j0)
                row1 = self.addr_b(mm, self.iadd(k, "1"), j0)
                with self.loop(cols, hint="pc") as c:
                    lo = bits(self.load(mm.bb, self.iadd(row0, c)))
                    hi = bits(self.load(mm.bb, self.iadd(row1, c)))
                    w = self.op(f"or i32 {lo}, {self.op(f'shl i32 {hi}, 16', 'i')}", "i")
                    self.line(f"store i32 {w}, ptr {word_at(p, c)}")
        odd = self.op(f"icmp ne i64 {self.op(f'and i64 {kc}, 1', 'i')}, 0", "c")

        def last() -> None:  # (B[pc + kc - 1, j0 + c], 0)
            k = self.iadd(pc, self.imul(pairs, "2"))
            with self.loop(cols, hint="pc") as c:
                w = bits(self.load(mm.bb, self.addr_b(mm, k, self.iadd(j0, c))))
                self.line(f"store i32 {w}, ptr {word_at(pairs, c)}")
        self.when(odd, last)
        with self.loop(self.iadd(pairs, self.op(f"and i64 {kc}, 1", "i")), hint="pk") as p:
            with self.loop(str(nr), start=cols, hint="pc") as c:
                self.line(f"store i32 0, ptr {word_at(p, c)}")

    def mm_bf16_pair(self, mm: _Matmul, i: str, k: str, last: bool) -> str:
        """``(A[i, k], A[i, k+1])`` (``last``: ``(A[i, k], 0)``) in every
        32-bit lane of a ``<2W x bfloat>``."""
        if not mm.ta and not last:  # contiguous along k: one 32-bit load
            p = self.ptr(mm.ba.param, "bfloat", self.addr_a(mm, i, k))
            word = self.op(f"load i32, ptr {p}, align 2", "ld")
        else:
            lo = self.load(mm.ba, self.addr_a(mm, i, k))
            hi = "0xR0000" if last else self.load(mm.ba, self.addr_a(mm, i, self.iadd(k, "1")))
            v = self.op(f"insertelement <2 x bfloat> poison, bfloat {lo}, i64 0", "s")
            v = self.op(f"insertelement <2 x bfloat> {v}, bfloat {hi}, i64 1", "s")
            word = self.op(f"bitcast <2 x bfloat> {v} to i32", "s")
        w = mm.vw
        v = self.op(f"insertelement <{w} x i32> poison, i32 {word}, i64 0", "s")
        v = self.op(f"shufflevector <{w} x i32> {v}, <{w} x i32> poison, "
                    f"<{w} x i32> zeroinitializer", "s")
        return self.op(f"bitcast <{w} x i32> {v} to <{2 * w} x bfloat>", "s")

    def mm_bf16_steps(self, mm: _Matmul, accs: list[list[str]], panel: str, i0: str,
                      rows: int, nv: int, p: str, k: str, last: bool) -> None:
        """One pair of k (panel pair ``p``, A's column ``k``) into the
        accumulators ``accs[r][q]``."""
        nr = mm.nrv * mm.vw
        bt = f"<{2 * mm.vw} x bfloat>"
        prow = self.imul(p, str(2 * nr))
        ptrs = [self.ptr(panel, "bfloat", self.iadd(prow, str(2 * q * mm.vw))) for q in range(nv)]
        bv = [self.op(f"load {bt}, ptr {q}, align 4", "vl") for q in ptrs]
        assert mm.dot2 is not None
        for r in range(rows):
            av = self.mm_bf16_pair(mm, self.iadd(i0, str(r)), k, last)
            for q in range(nv):
                acc = self.op(f"load {mm.vt}, ptr {accs[r][q]}", "a")
                s = self.call(mm.dot2, mm.vt, [(mm.vt, acc), (bt, av), (bt, bv[q])], hint="f")
                self.line(f"store {mm.vt} {s}, ptr {accs[r][q]}")

    def mm_bf16_k(self, mm: _Matmul, accs: list[list[str]], panel: str, i0: str, rows: int,
                  nv: int, pc: str, kc: str) -> None:
        """The k-block ``[pc, pc + kc)``: its full pairs, then an odd last k."""
        pairs = self.op(f"lshr i64 {kc}, 1", "i")
        with self.loop(pairs, hint="kp") as p:
            k = self.iadd(pc, self.imul(p, "2"))
            self.mm_bf16_steps(mm, accs, panel, i0, rows, nv, p, k, last=False)
        odd = self.op(f"icmp ne i64 {self.op(f'and i64 {kc}, 1', 'i')}, 0", "c")
        k = self.iadd(pc, self.imul(pairs, "2"))
        self.when(odd, lambda: self.mm_bf16_steps(mm, accs, panel, i0, rows, nv, pairs, k,
                                               last=True))


def bf16_panel_depth(vw: int, nrv: int) -> int:
    """KC of a bf16 panel of ``nrv`` vectors of ``vw`` f32 lanes (two bf16
    per lane): a _BF16_PANEL_BYTES panel, an even number of rows."""
    kc = max(2 * vw, _BF16_PANEL_BYTES // (nrv * vw * 2))
    return kc - kc % 2
