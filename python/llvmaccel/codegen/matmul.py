"""Matmul: k-blocks of B packed into an L1-sized panel, register tiles of C of
up to 8 rows x 2 vectors of the target's width (6 x 2 with 16 registers, 4 x
4 on AVX-512-sized targets, :func:`tile_vectors`, :func:`_matmul_tiling`)
held in vector registers
across a k-block (explicit ``<W x float>`` IR with ``llvm.fmuladd``),
transposed operands read in place, a dot-product kernel vectorized along
k for N = 1 and N < W, and for a few rows of A times a large B contiguous
along j a kernel streaming B row by row (:meth:`MatmulEmitter.mm_rows`);
or, for the shape classes where a tuned BLAS wins
(:func:`llvmaccel.blas.choose`), a call of the library's GEMM per batch
index (sizes known only at run time: both, chosen by a branch on the
sizes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import blas
from ..graph import DType, Node, dim_op, shape_numel
from ..target import TargetInfo
from . import common
from .common import Buffer, _const
from .emitter import EmitterCore
from .matmul_amx import AMX_NR, AmxMatmulEmitter, amx_reason
from .matmul_bf16 import Bf16MatmulEmitter, bf16_dot, bf16_panel_depth, enabled, half_operand
from .parallel import product_work

# Matmul tiling (see _Emitter.mm_panels): vectors of B per register tile (NR
# = this many vectors of the host's width), bytes of a packed KC x NR panel of
# B (L1/L2-resident), and rows x columns of C per tile of the dot-product kernel.
_MATMUL_NR_VECTORS = 2
# On targets with 32 vector registers of 512 bits (AVX-512) a tile is this
# many vectors wide when N is wider than two vectors: 4 x 64 floats, 16
# accumulators as in 8 x 32, but A (read in place) is streamed once per 64
# columns instead of per 32. On the Emerald Rapids Xeon, one thread, against
# torch.mm: 512x768x256 (B^T) 0.86x -> 1.02x, attention's 32x256x256x64
# 0.81x -> 1.25x and 32x256x64x256 0.91x -> 1.05x, 256^3 0.85x -> 1.02x;
# for N of 32 or less it loses (4096x32x256 0.77x -> 0.72x), so narrow
# products keep two vectors.
_MATMUL_WIDE_NR_VECTORS = 4
_MATMUL_PANEL_BYTES = 32768
# Accumulators of a register tile at most: more gained nothing where
# measured (Zen 5, one and two threads: 6 x 4 against 4 x 4 tiles of 16
# floats, 0.96-1.05x, the large products behind).
_MATMUL_MAX_ACCUMULATORS = 16
_MATMUL_DOT_TILE = (4, 2)
# The streaming kernel of few-row products (see _Emitter.mm_rows): at most
# this many rows of A, B larger than this many bytes (smaller ones stay in
# cache for the tiled kernel), bytes of the block of C kept in L1, and
# vector registers for the broadcasts of A.
_MATMUL_STREAM_ROWS = 4
_MATMUL_STREAM_MIN_B = 1 << 16
_MATMUL_STREAM_BLOCK_BYTES = 16384
_MATMUL_STREAM_REGS = 8


class MatmulEmitter(AmxMatmulEmitter, Bf16MatmulEmitter, EmitterCore):
    """Cache-blocked matmul loop nests."""

    def emit_matmul(self, node: Node, out: Buffer) -> None:
        """``C = A @ B`` for every batch index, with one of two kernels (see
        :class:`_Matmul`): packed panels of B and an ``MR x NR`` register
        tile of C vectorized along ``j`` (:meth:`mm_panels`), or, when B is
        read along ``k`` and ``N`` is smaller than a vector, dot products
        vectorized along ``k`` (:meth:`mm_dot`)."""
        a, b = node.inputs
        (src_a, ta), (src_b, tb), dot2 = matmul_operands(node, self.target,
                                                         through_broadcast=True)
        # The operands as read (the half values under f32 casts), and the
        # batch shapes their buffers are indexed by.
        ba, bb = self.buffer_of(src_a), self.buffer_of(src_b)
        assert ba is not None and bb is not None
        dt = node.dtype
        narrow = ba.dtype is not dt
        if narrow:
            a, b = half_operand(a) or a, half_operand(b) or b
        a_batch, b_batch = operand_batch(a, True), operand_batch(b, True)
        batch = node.shape[:-2]
        m, n, k = node.shape[-2], node.shape[-1], a.shape[-1]
        mm, dot = self.mm_plan(ba, bb, out, dt, self.dim(m), n, self.dim(k), ta, tb, dot2)
        choice = self.mm_choose(node, m, n, k, dot, dot2, narrow and not dot2,
                                amx_ok=not ta and mm.nrv * mm.vw == AMX_NR)
        epilogue = self.mm_epilogues.get(node.id)
        if epilogue is not None and choice.kernel in ("own", "amx") and not dot and \
                not _streams_b(mm, m if isinstance(m, int) else None):
            # The panel kernel computes C's only reader itself.
            mm.final, mm.node_id = epilogue, node.id
            self.epilogue_done.add(epilogue[0].id)
            nid, kind, why = self.matmul_choices[-1]
            self.matmul_choices[-1] = (nid, kind, f"{why}; its reader ({epilogue[0].op}) "
                                                  "computed in the kernel")
        if choice.kernel == "blas" and batch and blas.has_batched() and \
                _strided_batch(a_batch, b_batch, batch, m, n, k):
            # One call for the whole batch: the library spreads it over its
            # threads in one parallel region (not one per batch index).
            self.mm_blas(mm, count=shape_numel(batch))
            return
        # The batch indices of llvmaccel's kernel are independent (each
        # writes its own C, panels and tiles are per-thread stack arrays): a
        # parallel kernel splits them between its threads. Library calls stay
        # on one thread (the library has threads of its own).
        own = choice.kernel in ("own", "amx")
        work = product_work(m, n, k, shape_numel(batch)) if batch and own else None
        if own:
            # The column panels of one product are independent too: where
            # no batch loop is split, the kernel splits them (panels and
            # tiles are per-thread stack arrays; each panel writes its own
            # columns of C).
            mm.work = product_work(m, n, k)
        with self.nest(batch, work=work) as bidx:
            mm.oa = self.imul(self.linear(self.bcast_idx_shape(a_batch, batch, bidx),
                                          a_batch), self.dim(dim_op("mul", m, k)))
            mm.ob = self.imul(self.linear(self.bcast_idx_shape(b_batch, batch, bidx),
                                          b_batch), self.dim(dim_op("mul", k, n)))
            mm.oc = self.imul(self.linear(bidx, batch), self.dim(dim_op("mul", m, n)))
            mm.row0 = self.imul(self.linear(bidx, batch), self.dim(m))
            self.mm_run(mm, choice, dot)

    def mm_plan(self, ba: Buffer, bb: Buffer, out: Buffer, dt: DType, dm: str, n: object,
                dk: str, ta: bool, tb: bool, dot2: str | None = None) -> tuple[_Matmul, bool]:
        """The tiling of ``C = A @ B`` (``A`` in ``ba``, ``B`` in ``bb``, ``C``
        in ``out``; ``dm``/``dk`` the i64 values of M and K, ``n`` the size N),
        and whether it takes the dot-product kernel (:meth:`mm_dot`): B read
        along k and N smaller than a vector, or (any N) at most one row tile
        of the dot kernel (a batch-1 ``linear``, a decode step's ``x @
        W^T``): each row of ``W`` is then read once, in place, where the
        panel kernel would pack (transpose) all of ``W`` for one row of C.
        Offsets start at 0."""
        vw = _matmul_tiling(dt, 1, self.target)[0]
        small_n = isinstance(n, int) and n <= vw
        nrv = 1 if small_n else _MATMUL_NR_VECTORS if dot2 else \
            tile_vectors(n, vw, self.target)
        _, mr, kc = _matmul_tiling(dt, nrv, self.target)
        few_rows = dm.isdigit() and 1 <= int(dm) <= _MATMUL_DOT_TILE[0]
        dot = not dot2 and not ta and (tb or n == 1) and (
            isinstance(n, int) and n < vw or tb and few_rows)
        tile_vw = vw
        if small_n and not dot2 and not dot and n > 0:  # type: ignore[operator]
            # A tile one vector wide: the narrowest vector that holds N (16
            # bytes at least), not the widest register with lanes masked off.
            tile_vw = min(vw, max(16 // dt.itemsize, 1 << (n - 1).bit_length()))  # type: ignore[operator]
        if dot2:
            kc = bf16_panel_depth(vw, nrv)
        # N == 1: B is a vector, contiguous along k whatever its layout.
        mm = _Matmul(ba=ba, bb=bb, out=out, dt=dt, vw=tile_vw, ta=ta, tb=tb or n == 1,
                     dm=dm, dn=self.dim(n), dk=dk, nrv=nrv, mr=mr, kc=kc, dot2=dot2)
        return mm, dot

    def mm_choose(self, node: Node, m: object, n: object, k: object, dot: bool,
                  dot2: str | None, widen: bool = False, amx_ok: bool = False) -> blas.Choice:
        """The kernel of ``node``'s ``M x K @ K x N`` product (recorded in
        :attr:`matmul_choices`): :func:`llvmaccel.blas.choose`'s; for bf16
        operands (``dot2``) with the library's bf16 GEMM only where
        :func:`llvmaccel.blas.bf16_library_reason` allows it, else
        llvmaccel's bf16 kernel, and before both the AMX kernel
        (:mod:`.matmul_amx`) where ``amx_ok`` (A not transposed, a 32-column
        register tile) and :func:`.matmul_amx.amx_reason` allow it;
        ``widen``: half operands of the dot-product kernel, which widens them
        on load (no library GEMM takes them)."""
        dt = node.dtype
        if widen:
            choice = blas.Choice("own", "matrix-vector class of half operands: llvmaccel's "
                                        "dot kernel, widening them on load")
        elif dot2 and amx_ok and not dot and amx_reason(self.target, self.host, m, n, k,
                                                        False) is None:
            choice = blas.Choice("amx", f"bf16 operands, {m}x{n}x{k}: AMX tiles")
        elif dot2:  # (f32 products: matmul_operands names dot2 for no other)
            no_library = blas.bf16_library_reason(self.target)
            if no_library is None:
                # The library's bf16 GEMM (MKL's AMX kernels) from
                # MIN_FLOPS_BF16 multiply-adds; llvmaccel's bf16 pair
                # kernel for the others.
                vw = _matmul_tiling(dt, 1, self.target)[0]
                base = blas.choose(m, n, k, dt.itemsize, dot, self.target, self.host,
                                   tile_columns=_MATMUL_NR_VECTORS * vw,
                                   least=blas.MIN_FLOPS_BF16)
                kernel = blas.bf16_symbol() if base.kernel != "own" else dot2
                choice = base._replace(reason=f"bf16 operands, {kernel}: {base.reason}")
            else:
                choice = blas.Choice("own", f"bf16 operands, {dot2}: {no_library}")
        else:
            vw = _matmul_tiling(dt, 1, self.target)[0]
            choice = blas.choose(m, n, k, dt.itemsize, dot, self.target, self.host,
                                 complex_=not dt.is_float,
                                 tile_columns=_MATMUL_NR_VECTORS * vw)
        self.matmul_choices.append((node.id, choice.kernel, choice.reason))
        return choice

    def mm_run(self, mm: _Matmul, choice: blas.Choice, dot: bool = False) -> None:
        """``C = A @ B`` at the offsets set in ``mm`` with the kernel
        ``choice`` names: the library, llvmaccel's (the dot-product kernel
        when ``dot``, the streaming kernel for few rows and a large B, else
        packed panels), or a branch between them on the run-time sizes."""
        m = int(mm.dm) if mm.dm.isdigit() else None
        if dot:
            own = lambda: self.mm_dot(mm)  # noqa: E731
        elif _streams_b(mm, m):
            own = lambda: self.mm_rows(mm)  # noqa: E731
        else:
            own = lambda: self.mm_panels(mm)  # noqa: E731
        if choice.kernel == "blas":
            self.mm_blas(mm)
        elif choice.kernel == "amx":
            self.mm_amx(mm)
        elif choice.kernel == "own":
            own()
        else:
            # A step with a library branch stays one chunk: each chunk would
            # call the library for the whole product.
            mm.work = None
            self.either(self.mm_blas_fits(mm, choice.min_flops), lambda: self.mm_blas(mm), own)

    def either(self, c: str, then_fn: Callable[[], None], else_fn: Callable[[], None]) -> None:
        """``if (c) then_fn() else else_fn()`` (no value)."""
        t, e, j = self.label("then"), self.label("else"), self.label("endif")
        self.line(f"br i1 {c}, label %{t}, label %{e}")
        saved = dict(self.memo)
        self.start_block(t)
        then_fn()
        self.br(j)
        self.memo = dict(saved)
        self.start_block(e)
        else_fn()
        self.br(j)
        self.memo = saved
        self.start_block(j)

    def mm_blas_fits(self, mm: _Matmul, min_flops: int) -> str:
        """Whether the library takes this matmul (run-time sizes): every size
        in ``[1, INT32_MAX]`` and ``M * N * K >= min_flops``."""
        ok = "true"
        for d in (mm.dm, mm.dn, mm.dk):
            inside = self.op(f"icmp ule i64 {self.op(f'sub i64 {d}, 1', 'i')}, "
                             f"{blas.INT32_MAX - 1}", "c")
            ok = inside if ok == "true" else self.op(f"and i1 {ok}, {inside}", "c")
        # M * N fits in 62 bits; M * N * K >= T  <=>  M * N >= ceil(T / K).
        mn = self.op(f"mul nuw nsw i64 {mm.dm}, {mm.dn}", "i")
        need = self.op(f"udiv i64 {self.op(f'add i64 {mm.dk}, {min_flops - 1}', 'i')}, "
                       f"{self.op(f'call i64 @llvm.umax.i64(i64 {mm.dk}, i64 1)', 'i')}", "i")
        self.declare("llvm.umax.i64", "i64", ["i64", "i64"])
        big = self.op(f"icmp uge i64 {mn}, {need}", "c")
        return self.op(f"and i1 {ok}, {big}", "c")

    def mm_blas(self, mm: _Matmul, count: int = 0) -> None:
        """``C = A @ B`` for the current batch index as one call of the
        library's row-major CBLAS GEMM (``alpha = 1``, ``beta = 0``);
        transposed operands are passed as such, with their leading
        dimensions. Only called with sizes in ``[1, INT32_MAX]``. With
        ``count``: the ``count`` matmuls of a contiguous batch in one call
        (``cblas_?gemm_batch_strided``, strides ``M*K``, ``K*N``, ``M*N``)."""
        row_major, no_trans, trans = 101, 111, 112

        def i32(d: str) -> str:
            return d if d.lstrip("-").isdigit() else self.op(f"trunc i64 {d} to i32", "i")

        m, n, k = i32(mm.dm), i32(mm.dn), i32(mm.dk)
        # (bf16 operands, mm.dot2: the library's bf16 GEMM, an f32 result.)
        a = self.ptr(mm.ba.param, mm.ba.dtype.mem, mm.oa)
        b = self.ptr(mm.bb.param, mm.bb.dtype.mem, mm.ob)
        c = self.ptr(mm.out.param, mm.t, mm.oc)
        one, zero = _const(1, mm.dt), _const(0, mm.dt)
        lda, ldb = (m if mm.ta else k), (k if mm.tb else n)
        if blas.abi() == "fortran":
            self.mm_blas_fortran(mm, (m, n, k, lda, ldb), (a, b, c), (one, zero))
            return
        if count:
            fn = blas.symbol(mm.dt.itemsize, batched=True)
            mk, kn, mn = (self.op(f"mul nsw i32 {x}, {y}", "i") for x, y in
                          ((m, k), (k, n), (m, n)))
            args = [("i32", str(row_major)), ("i32", str(trans if mm.ta else no_trans)),
                    ("i32", str(trans if mm.tb else no_trans)), ("i32", m), ("i32", n),
                    ("i32", k), (mm.t, one), ("ptr", a), ("i32", lda), ("i32", mk),
                    ("ptr", b), ("i32", ldb), ("i32", kn), (mm.t, zero), ("ptr", c),
                    ("i32", n), ("i32", mn), ("i32", str(count))]
        else:
            fn = blas.symbol(mm.dt.itemsize)
            args = [("i32", str(row_major)), ("i32", str(trans if mm.ta else no_trans)),
                    ("i32", str(trans if mm.tb else no_trans)), ("i32", m), ("i32", n),
                    ("i32", k), (mm.t, one), ("ptr", a), ("i32", lda), ("ptr", b),
                    ("i32", ldb), (mm.t, zero), ("ptr", c), ("i32", n)]
        self.declare(fn, "void", [t for t, _ in args])
        self.line(f"call void @{fn}({', '.join(f'{t} {v}' for t, v in args)})")
        self.blas_calls += 1

    def mm_blas_fortran(self, mm: _Matmul, dims: tuple[str, ...], ptrs: tuple[str, ...],
                        scalars: tuple[str, str]) -> None:
        """``C = A @ B`` as one call of a Fortran ``?gemm_`` (column-major,
        every argument by reference): the row-major product is the
        column-major ``C^T = B^T A^T``, so B comes first, each operand
        transposed (``'T'``) exactly when it is stored transposed."""
        m, n, k, lda, ldb = dims
        a, b, c = ptrs
        one, zero = scalars

        def ref(ty: str, value: str) -> str:
            slot = self.alloca(ty)
            self.line(f"store {ty} {value}, ptr {slot}")
            return slot

        trans, no_trans = str(ord("T")), str(ord("N"))
        args = [ref("i8", trans if mm.tb else no_trans), ref("i8", trans if mm.ta else no_trans),
                ref("i32", n), ref("i32", m), ref("i32", k), ref(mm.t, one), b,
                ref("i32", ldb), a, ref("i32", lda), ref(mm.t, zero), c, ref("i32", n)]
        fn = blas.bf16_symbol() if mm.dot2 else blas.symbol(mm.dt.itemsize)
        assert fn is not None, "a bf16 GEMM call without the library's bf16 GEMM"
        self.declare(fn, "void", ["ptr"] * len(args))
        self.line(f"call void @{fn}({', '.join(f'ptr {v}' for v in args)})")
        self.blas_calls += 1

    # Small IR helpers of the matmul kernels.
    def imin(self, a: str, b: str) -> str:
        return self.call("llvm.smin.i64", "i64", [("i64", a), ("i64", b)], hint="i")

    def imax(self, a: str, b: str) -> str:
        return self.call("llvm.smax.i64", "i64", [("i64", a), ("i64", b)], hint="i")

    def ceil_div(self, a: str, b: int) -> str:
        """``ceil(a / b)`` for a size ``a >= 0``."""
        return self.op(f"udiv i64 {self.iadd(a, str(b - 1))}, {b}", "i")

    def ptr(self, base: str, ty: str, off: str) -> str:
        if off == "0":
            return base
        return self.op(f"getelementptr inbounds {ty}, ptr {base}, i64 {off}", "p")

    def vload(self, mm: _Matmul, base: str, off: str) -> str:
        p = self.ptr(base, mm.t, off)
        return self.op(f"load {mm.vt}, ptr {p}, align {mm.dt.itemsize}", "vl")

    def dot_vload(self, mm: _Matmul, buf: Buffer, off: str) -> str:
        """A vector of ``buf`` at ``off`` as ``mm``'s type: a half buffer's
        elements widened (``fpext``, exact)."""
        if buf.dtype is mm.dt:
            return self.vload(mm, buf.param, off)
        nt = f"<{mm.vw} x {buf.dtype.llvm}>"
        p = self.ptr(buf.param, buf.dtype.llvm, off)
        v = self.op(f"load {nt}, ptr {p}, align {buf.dtype.itemsize}", "vl")
        return self.op(f"fpext {nt} {v} to {mm.vt}", "vl")

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

    def stack(self, mm: _Matmul, role: str, count: int, ty: str = "") -> str:
        """An aligned stack array of ``count`` elements (of ``ty``, default
        C's type), one per role, type and size for the whole function
        (matmuls run one after another)."""
        ty = ty or mm.t
        key = (role, ty, count)
        if key not in self.mm_stack:
            self.mm_stack[key] = name = self.fresh("stk")
            self.allocas.append(f"  {name} = alloca [{count} x {ty}], align 64")
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
        C are read and written. With at most one row tile (``M <= MR``, a
        vector-matrix product such as a decode step's ``h @ W``) and B
        contiguous along ``j``, a full panel would be used once: the tile
        reads B in place and only the right edge is packed. So it does with
        two row tiles when B fits in L2 (the second tile finds B there: an
        RNN step's 8 x 256 @ 256 x 256 on 4-row AVX2 tiles, 33 -> 28 us; a
        4 MiB B is faster packed)."""
        nr = mm.nrv * mm.vw
        in_place = not mm.dot2 and not mm.tb and mm.dm.isdigit() and (
            int(mm.dm) <= mm.mr or int(mm.dm) <= 2 * mm.mr and _b_in_l2(mm, self.target))
        panel = self.stack(mm, "panel", mm.kc * nr, "bfloat" if mm.dot2 else "")
        pack = self.mm_bf16_pack if mm.dot2 else self.mm_pack
        tile = self.stack(mm, "tile", mm.mr * nr)
        nkb = self.call("llvm.smax.i64", "i64",
                        [("i64", self.ceil_div(mm.dk, mm.kc)), ("i64", "1")], hint="i")
        njb = self.ceil_div(mm.dn, nr)
        # A parallel kernel's thread takes a chunk of the row tiles where the
        # product has fewer column panels than chunks (a tall product of few
        # columns: a DLRM's 2048 x 64 layers, a late convolution's 512 x 49
        # positions), else a chunk of the panels (mm_panel_range).
        row_lo, rows = "0", mm.dm
        if self.mm_split_rows(mm, in_place):
            t0, t1 = self.par_range(self.ceil_div(mm.dm, mm.mr), mm.work)
            row_lo = self.imul(t0, str(mm.mr))
            rows = self.op(f"sub nsw i64 {self.imin(self.imul(t1, str(mm.mr)), mm.dm)}, "
                           f"{row_lo}", "i")
        mfull = self.op(f"udiv i64 {rows}, {mm.mr}", "i")
        mrest = self.op(f"urem i64 {rows}, {mm.mr}", "i")
        with self.loop(nkb, hint="kb") as kb:
            pc = self.imul(kb, str(mm.kc))
            kc = self.imin(str(mm.kc), self.op(f"sub nsw i64 {mm.dk}, {pc}", "i"))
            first = self.op(f"icmp eq i64 {kb}, 0", "c")
            if mm.final is not None:
                mm.last = self.op(f"icmp eq i64 {kb}, {self.op(f'sub i64 {nkb}, 1', 'i')}", "c")
            jb0, jb1 = self.mm_panel_range(mm, njb)
            with self.loop(jb1, start=jb0, hint="jb") as jb:
                j0 = self.imul(jb, str(nr))
                cols = self.imin(str(nr), self.op(f"sub nsw i64 {mm.dn}, {j0}", "i"))
                if not in_place:
                    pack(mm, panel, pc, kc, j0, cols)
                # Full panel, or the right edge with as few vectors as cover it.
                done = self.label("cols")
                labels = [self.label("full")] + [self.label("edge") for _ in range(mm.nrv)]
                full = self.op(f"icmp eq i64 {cols}, {nr}", "c")
                self.line(f"br i1 {full}, label %{labels[0]}, label %{labels[1]}")
                for nv in range(mm.nrv + 1):
                    self.start_block(labels[nv])
                    if in_place and nv == 1:  # the first edge block: pack it now
                        self.mm_pack(mm, panel, pc, kc, j0, cols)
                    if 0 < nv < mm.nrv:  # the edge needs nv vectors, or more
                        fits = self.op(f"icmp sle i64 {cols}, {nv * mm.vw}", "c")
                        more = self.label("edge")
                        self.line(f"br i1 {fits}, label %{more}, label %{labels[nv + 1]}")
                        self.start_block(more)
                    tile_args = (nv or mm.nrv, None if in_place and not nv else panel,
                                 tile if nv else None, pc, kc, j0, cols, first)
                    with self.loop(mfull, hint="ib") as ib:
                        self.mm_tile(mm, self.iadd(row_lo, self.imul(ib, str(mm.mr))), mm.mr,
                                     *tile_args)
                    base = self.iadd(row_lo, self.imul(mfull, str(mm.mr)))
                    # The last rows % MR rows as tiles of 4, 2 and 1 rows
                    # (powers of two below MR: their bits sum to any rest).
                    size = 1 << ((mm.mr - 1).bit_length() - 1) if mm.mr > 1 else 0
                    while size >= 1:
                        has = self.op(f"icmp ne i64 {self.op(f'and i64 {mrest}, {size}', 'i')}, 0",
                                      "c")
                        i0 = self.iadd(base, self.op(f"and i64 {mrest}, {-2 * size}", "i"))
                        self.when(has, lambda i0=i0, size=size, args=tile_args: self.mm_tile(
                            mm, i0, size, *args))
                        size //= 2
                    self.br(done)
                self.start_block(done)

    def mm_split_rows(self, mm: _Matmul, in_place: bool) -> bool:
        """Whether a parallel kernel splits this product's row tiles rather
        than its column panels: where ``N`` is known and makes fewer than two
        panels per thread (at the most threads), so that a panel split
        leaves threads idle or uneven, and ``M`` (if known) makes at least
        as many row tiles as the chunks. Each chunk then packs every panel
        of B for its rows: B's ``K x N`` again per chunk, which costs about
        as much as the product of a few row tiles does, hence the panel
        split wherever panels go round (Zen 5, 2 threads: a 256 x 196 x 2304
        convolution GEMM, 4 panels, 0.66-0.72 ms by panels, 0.77 by rows;
        4096 x 32 x 256, one panel, 0.33 -> 0.14-0.16 ms by rows). Each
        element of C sums its products in the same order, in the same size
        of tile, either way."""
        if mm.work is None or not self.spmd or in_place or not mm.dn.isdigit():
            return False
        from .parallel import CHUNKS_PER_THREAD, max_threads

        threads = max_threads()
        if -(-int(mm.dn) // (mm.nrv * mm.vw)) >= 2 * threads:
            return False
        return not mm.dm.isdigit() or -(-int(mm.dm) // mm.mr) >= threads * CHUNKS_PER_THREAD

    def mm_panel_range(self, mm: _Matmul, njb: str) -> tuple[str, str]:
        """The column panels ``[begin, end)`` of ``njb`` this thread computes:
        in a parallel kernel's step that has not split a loop yet, a chunk
        of them (:meth:`par_range`, for ``mm.work`` multiply-adds), else all.
        The loops around the panel loop (k-blocks, row blocks) run whole in
        every chunk, so each panel still sees its k-blocks in order."""
        if mm.work is None:
            return "0", njb
        return self.par_range(njb, mm.work)

    def mm_rows(self, mm: _Matmul) -> None:
        """``C = A @ B`` for a few rows of A (``M <= _MATMUL_STREAM_ROWS``,
        a vector-matrix product such as a decode step's ``h @ W``) with B
        contiguous along ``j``: B is read once, row after row, in memory
        order, and each row of it is added into a block of C that stays in
        L1::

            for j0 in [0, N) step NB:           # NB * M elements of C: L1-sized
              C[:, j0:j0+NB] = 0
              for k in [0, K) step U:           # U rows of B at a time, then 1
                a[r][u] = splat(A[r, k+u])
                for j in [j0, j0+NB) step W:    # then single columns
                  C[r, j:j+W] = fma(a[r][u], B[k+u, j:j+W], C[r, j:j+W]) for u < U

        Each element of C sums its products in ``k`` order, as the tiled
        kernel does. The register tile of :meth:`mm_panels` would read B one
        column block at a time, a few cache lines per row ``N`` elements
        apart: for the large B of these products that defeats the caches and
        their prefetchers (a 3.5x slower decode loop than XLA's), while the
        tile's reuse of B across rows is worth little with so few rows."""
        rows = int(mm.dm)
        item = mm.dt.itemsize
        nb = max(mm.vw, _MATMUL_STREAM_BLOCK_BYTES // (rows * item) // mm.vw * mm.vw)
        unroll = max(1, min(4, _MATMUL_STREAM_REGS // rows))
        zero = _const(0, mm.dt)
        # A parallel kernel's thread takes a chunk of the columns, in whole
        # vectors (each column's sum is the same in every chunk).
        v0, v1 = self.mm_panel_range(mm, self.ceil_div(mm.dn, mm.vw))
        lo = self.imul(v0, str(mm.vw))
        hi = self.imin(self.imul(v1, str(mm.vw)), mm.dn)
        span = self.op(f"sub nsw i64 {hi}, {lo}", "i")
        with self.loop(self.ceil_div(span, nb), hint="jb") as jb:
            j0 = self.iadd(lo, self.imul(jb, str(nb)))
            cols = self.imin(str(nb), self.op(f"sub nsw i64 {hi}, {j0}", "i"))
            nv = self.op(f"udiv i64 {cols}, {mm.vw}", "i")
            nvw = self.imul(nv, str(mm.vw))
            crow = [self.iadd(mm.oc, self.iadd(self.imul(str(r), mm.dn), j0))
                    for r in range(rows)]
            for r in range(rows):
                with self.loop(cols, hint="z") as c:
                    self.store(mm.out, self.iadd(crow[r], c), zero)
            kfull = self.imul(self.op(f"udiv i64 {mm.dk}, {unroll}", "i"), str(unroll)) \
                if unroll > 1 else "0"

            def step(k: str, count: int) -> None:
                ks = [self.iadd(k, str(u)) for u in range(count)]
                av = [[self.load(mm.ba, self.addr_a(mm, str(r), kk)) for kk in ks]
                      for r in range(rows)]
                sv = [[self.splat(mm, a) for a in ar] for ar in av]
                brow = [self.addr_b(mm, kk, j0) for kk in ks]
                with self.loop(nv, hint="v") as v:
                    j = self.imul(v, str(mm.vw))
                    bv = [self.vload(mm, mm.bb.param, self.iadd(b, j)) for b in brow]
                    for r in range(rows):
                        acc = self.vload(mm, mm.out.param, self.iadd(crow[r], j))
                        for u in range(count):
                            acc = self.vfma(mm, sv[r][u], bv[u], acc)
                        self.vstore(mm, mm.out.param, self.iadd(crow[r], j), acc)
                with self.loop(cols, start=nvw, hint="jt") as jt:
                    bs = [self.load(mm.bb, self.iadd(b, jt)) for b in brow]
                    for r in range(rows):
                        off = self.iadd(crow[r], jt)
                        acc = self.load(mm.out, off)
                        for u in range(count):
                            acc = self.fma(mm, av[r][u], bs[u], acc)
                        self.store(mm.out, off, acc)

            if unroll > 1:
                with self.loop(self.op(f"udiv i64 {mm.dk}, {unroll}", "i"), hint="srow") as ku:
                    step(self.imul(ku, str(unroll)), unroll)
            with self.loop(mm.dk, start=kfull, hint="srow") as k:
                step(k, 1)

    def mm_pack(self, mm: _Matmul, panel: str, pc: str, kc: str, j0: str, cols: str) -> None:
        """``panel[k * NR + c] = B[pc + k, j0 + c]`` (0 for ``c >= cols``);
        the inner loop runs along B's contiguous dimension."""
        nr = mm.nrv * mm.vw
        if mm.tb:
            k_done = self.mm_pack_transposed(mm, panel, pc, kc, j0, cols)
            with self.loop(cols, hint="pc") as c:
                with self.loop(kc, start=k_done, hint="pk") as k:
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

    def mm_pack_transposed(self, mm: _Matmul, panel: str, pc: str, kc: str, j0: str,
                           cols: str) -> str:
        """Packs a full panel of a B stored ``[N, K]`` in blocks of ``vw``
        columns by ``vw`` k, each block ``vw`` vector loads along K
        transposed in registers (:meth:`vtranspose`) and stored as ``vw``
        rows of the panel; returns the k from which the scalar loop of
        :meth:`mm_pack` goes on (the last ``kc % vw``, or 0 when the panel is
        a right edge or B's type is not C's). Written as a scalar loop, the
        copy is vectorized along K with a scatter per vector (or along N with
        a gather): on the Emerald Rapids Xeon packing K for ``q @ k^T`` took
        8% of an attention's time that way."""
        vw, nr = mm.vw, mm.nrv * mm.vw
        if vw == 1 or mm.bb.dtype is not mm.dt:
            return "0"
        full = self.op(f"icmp eq i64 {cols}, {nr}", "c")
        kv = self.op(f"and i64 {kc}, {-vw}", "i")
        k_done = self.op(f"select i1 {full}, i64 {kv}, i64 0", "i")
        with self.loop(self.op(f"udiv i64 {k_done}, {vw}", "i"), hint="pt") as kb:
            k0 = self.imul(kb, str(vw))
            for cb in range(mm.nrv):
                rows = [self.vload(mm, mm.bb.param, self.addr_b(
                    mm, self.iadd(pc, k0), self.iadd(j0, str(cb * vw + r)))) for r in range(vw)]
                for q, v in enumerate(self.vtranspose(mm, rows)):
                    at = self.imul(self.iadd(k0, str(q)), str(nr))
                    self.vstore(mm, panel, self.iadd(at, str(cb * vw)), v)
        return k_done

    def vtranspose(self, mm: _Matmul, rows: list[str]) -> list[str]:
        """The ``vw x vw`` matrix of vectors ``rows`` transposed, in
        ``log2(vw)`` stages of two-source shuffles: each stage interleaves
        row ``i`` with row ``i + vw/2``, its low halves giving row ``2i``
        and its high halves row ``2i + 1`` (after ``log2(vw)`` such perfect
        shuffles, lane ``c`` of row ``r`` has moved to lane ``r`` of row
        ``c``)."""
        n, h = len(rows), len(rows) // 2
        lo = ", ".join(f"i32 {x}" for q in range(h) for x in (q, n + q))
        hi = ", ".join(f"i32 {x}" for q in range(h, n) for x in (q, n + q))
        for _ in range(n.bit_length() - 1):
            new = []
            for i in range(h):
                a, b = rows[i], rows[i + h]
                for mask in (lo, hi):
                    new.append(self.op(f"shufflevector {mm.vt} {a}, {mm.vt} {b}, "
                                       f"<{n} x i32> <{mask}>", "tr"))
            rows = new
        return rows

    def mm_tile(self, mm: _Matmul, i0: str, rows: int, nv: int, panel: str | None,
                tile: str | None, pc: str, kc: str, j0: str, cols: str, first: str) -> None:
        """``C[i0:i0+rows, j0:j0+nv*W] (+)= A[i0:i0+rows, pc:pc+kc] @ panel``
        with ``rows x nv`` vector accumulators (``panel`` None: B itself, read
        in place along ``j``). ``tile`` (the right edge): C goes through that
        stack buffer, ``cols`` columns of it."""
        nr = mm.nrv * mm.vw
        crows = self.mm_crows(mm, i0, rows)
        if tile is not None:
            self.mm_tile_fill(mm, tile, crows, rows, j0, cols)

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
        if mm.dot2:
            assert panel is not None
            self.mm_bf16_k(mm, accs, panel, i0, rows, nv, pc, kc)
        else:
            self.mm_tile_k(mm, accs, panel, i0, rows, nv, pc, kc, j0)
        def spill(at: Callable[[int, int], tuple[str, str]]) -> None:
            for r in range(rows):
                for q in range(nv):
                    self.vstore(mm, *at(r, q), self.op(f"load {mm.vt}, ptr {accs[r][q]}", "a"))

        def store_c() -> None:
            spill(where)

        if mm.final is None:
            store_c()
            if tile is not None:
                self.mm_tile_copy(mm, tile, crows, rows, j0, cols)
            return
        if tile is not None:  # the right edge: through the stack tile in any k-block
            store_c()
            self.either(mm.last, lambda: self.mm_epilogue(mm, tile, i0, rows, j0, cols),
                        lambda: self.mm_tile_copy(mm, tile, crows, rows, j0, cols))
            return
        full = self.stack(mm, "tile", mm.mr * nr)

        def epilogue() -> None:
            spill(lambda r, q: (full, str(r * nr + q * mm.vw)))
            self.mm_epilogue(mm, full, i0, rows, j0, cols)
        self.either(mm.last, epilogue, store_c)

    def mm_crows(self, mm: _Matmul, i0: str, rows: int) -> list[str]:
        """The offsets in C of rows ``i0 .. i0 + rows - 1``."""
        return [self.iadd(mm.oc, self.imul(self.iadd(i0, str(r)), mm.dn)) for r in range(rows)]

    def mm_tile_fill(self, mm: _Matmul, tile: str, crows: list[str], rows: int, j0: str,
                     cols: str) -> None:
        """The valid ``cols`` columns of C into a right-edge tile (rows
        ``nrv * vw`` apart), the inverse of :meth:`mm_tile_copy`."""
        nr = mm.nrv * mm.vw
        for r in range(rows):
            with self.loop(cols, hint="tc") as c:
                v = self.load(mm.out, self.iadd(crows[r], self.iadd(j0, c)))
                p = self.ptr(tile, mm.t, self.iadd(str(r * nr), c))
                self.line(f"store {mm.t} {v}, ptr {p}")

    def mm_tile_copy(self, mm: _Matmul, tile: str, crows: list[str], rows: int, j0: str,
                     cols: str) -> None:
        """The valid ``cols`` columns of a right-edge tile into C."""
        nr = mm.nrv * mm.vw
        for r in range(rows):
            with self.loop(cols, hint="tc") as c:
                v = self.load(Buffer("temp", (), mm.dt, tile), self.iadd(str(r * nr), c))
                self.store(mm.out, self.iadd(crows[r], self.iadd(j0, c)), v)

    def mm_epilogue(self, mm: _Matmul, tile: str, i0: str, rows: int, j0: str,
                    cols: str) -> None:
        """C's only reader (``mm.final``) at the tile's ``rows x cols``
        elements, computed from the tile (C's values, in a stack buffer) and
        stored into the reader's buffer, in the loop nest of the matmul: C
        itself is not stored (see EmitterCore.mm_epilogues)."""
        assert mm.final is not None
        y, ybuf = mm.final
        nr = mm.nrv * mm.vw
        own = self.buffers.pop(y.id)  # compute the reader, do not load it
        try:
            for r in range(rows):
                row = self.iadd(mm.row0, self.iadd(i0, str(r)))
                with self.loop(cols, hint="ec") as c:
                    self.memo = {}
                    v = self.load(Buffer("temp", (), mm.dt, tile), self.iadd(str(r * nr), c))
                    self.produced = {mm.node_id: v}
                    idx = self.delinearize(row, tuple(y.shape[:-1])) + [self.iadd(j0, c)]
                    self.store_at(ybuf, idx, y.shape, self.emit(y, idx))
        finally:
            self.buffers[y.id] = own
            self.produced = {}
            self.memo = {}

    def mm_tile_k(self, mm: _Matmul, accs: list[list[str]], panel: str | None, i0: str,
                  rows: int, nv: int, pc: str, kc: str, j0: str) -> None:
        """The k-block ``[pc, pc + kc)`` of a register tile, one fused
        multiply-add per element of A and vector of B. Where the target
        multiplies by a lane of a register (:func:`a_lanes`), A's rows are
        loaded W elements at a time and each lane feeds one k-step; the
        last ``kc % W`` k-steps broadcast A's elements one by one."""
        nr = mm.nrv * mm.vw

        def k_step(k: str, a_of: Callable[[int], str]) -> None:
            kk = self.iadd(pc, k)
            if panel is None:
                bv = [self.vload(mm, mm.bb.param,
                                 self.addr_b(mm, kk, self.iadd(j0, str(q * mm.vw))))
                      for q in range(nv)]
            else:
                brow = self.imul(k, str(nr))
                bv = [self.vload(mm, panel, self.iadd(brow, str(q * mm.vw))) for q in range(nv)]
            for r in range(rows):
                av = a_of(r)
                for q in range(nv):
                    acc = self.op(f"load {mm.vt}, ptr {accs[r][q]}", "a")
                    self.line(f"store {mm.vt} {self.vfma(mm, av, bv[q], acc)}, ptr {accs[r][q]}")

        def a_element(k: str) -> Callable[[int], str]:
            kk = self.iadd(pc, k)
            return lambda r: self.splat(mm, self.load(
                mm.ba, self.addr_a(mm, self.iadd(i0, str(r)), kk)))

        def a_lane(arows: list[str], u: int) -> Callable[[int], str]:
            mask = ", ".join([f"i32 {u}"] * mm.vw)
            return lambda r: self.op(f"shufflevector {mm.vt} {arows[r]}, {mm.vt} poison, "
                                     f"<{mm.vw} x i32> <{mask}>", "s")

        lanes = a_lanes(mm, self.target)
        start = "0"
        if lanes:
            groups = self.op(f"udiv i64 {kc}, {lanes}", "i")
            with self.loop(groups, hint="kg") as g:
                k0 = self.imul(g, str(lanes))
                kk = self.iadd(pc, k0)
                arows = [self.dot_vload(mm, mm.ba, self.addr_a(mm, self.iadd(i0, str(r)), kk))
                         for r in range(rows)]
                for u in range(lanes):
                    k_step(self.iadd(k0, str(u)), a_lane(arows, u))
            start = self.imul(groups, str(lanes))
        with self.loop(kc, start=start, hint="k") as k:
            k_step(k, a_element(k))

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
        # A parallel kernel's thread takes a chunk of the column tiles (the
        # last one partial: N % DC single columns); each element is the same
        # dot product in any chunk.
        t0, t1 = self.mm_panel_range(mm, self.ceil_div(mm.dn, dc))
        full_end = self.call("llvm.umin.i64", "i64", [("i64", t1), ("i64", nfull)], hint="i")
        partial = self.op(f"icmp ugt i64 {t1}, {nfull}", "c")
        rest = self.op(f"select i1 {partial}, i64 {self.imul(nfull, str(dc))}, i64 {mm.dn}",
                       "i")

        def row_tiles(i0: str, rows: int) -> None:
            with self.loop(full_end, start=t0, hint="jb") as jb:
                self.mm_dot_tile(mm, i0, rows, self.imul(jb, str(dc)), dc, kv, kvw)
            with self.loop(mm.dn, start=rest, hint="jr") as j:
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
            av = [self.dot_vload(mm, mm.ba, self.addr_a(mm, i, k)) for i in ii]
            bv = [self.dot_vload(mm, mm.bb, self.addr_b(mm, k, j)) for j in jj]
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
            av = [self.convert(self.load(mm.ba, self.addr_a(mm, i, k)), mm.ba.dtype, mm.dt)
                  for i in ii]
            bv = [self.convert(self.load(mm.bb, self.addr_b(mm, k, j)), mm.bb.dtype, mm.dt)
                  for j in jj]
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
    # The bf16 pair dot-product intrinsic when A and B are bf16 buffers
    # (codegen.matmul_bf16), else None (A, B and C of dtype dt).
    dot2: str | None = None
    oa: str = "0"
    ob: str = "0"
    oc: str = "0"
    # The only reader of C and its buffer, which the panel kernel computes
    # in the last k-block from the tile instead of storing C (see
    # EmitterCore.mm_epilogues); the i1 of "this is the last k-block"; the
    # row of C's batch index 0 in the rows of all batches (the reader's
    # index is made from the row and the column).
    final: tuple[Node, Buffer] | None = None
    last: str = "true"
    row0: str = "0"
    node_id: int = -1
    # Multiply-adds of one call of the kernel when its column panels may be
    # split between the threads of a parallel kernel (None: they may not).
    work: object = None

    @property
    def t(self) -> str:
        return self.dt.llvm

    @property
    def vt(self) -> str:
        return f"<{self.vw} x {self.dt.llvm}>"


def _batch_broadcast(x: Node) -> Node | None:
    """The node ``x`` broadcasts across batch dims only (its last two dims
    kept: ``w.expand(b, k, n)`` for a ``bmm``), else None."""
    if x.op != "broadcast" or x.rank < 2:
        return None
    src = x.inputs[0]
    if src.rank < 2 or tuple(src.shape[-2:]) != tuple(x.shape[-2:]):
        return None
    return src


def operand_batch(x: Node, through_broadcast: bool) -> tuple:
    """The batch shape by which a matmul operand's buffer is indexed,
    aligned with ``x``'s batch dims: ``x``'s own, or with
    ``through_broadcast`` those of the node a batch broadcast reads,
    padded with 1s (so every stretched dim is read at index 0)."""
    src = _batch_broadcast(x) if through_broadcast else None
    if src is None:
        return tuple(x.shape[:-2])
    return (1,) * (x.rank - src.rank) + tuple(src.shape[:-2])


def _matmul_source(x: Node, through_broadcast: bool = False) -> tuple[Node, bool]:
    """The node a matmul operand is read from, and whether it is read
    transposed. An operand that swaps the last two dims of ``y`` (a
    ``permute``, maybe reshaped in its batch dims only) is read from ``y``'s
    buffer transposed, instead of being copied into a buffer of its own
    (``linear``'s weight, ``q @ k.transpose(-1, -2)``). With
    ``through_broadcast``, an operand that broadcasts ``y`` across batch
    dims is read from ``y`` (see :func:`operand_batch`), not copied."""
    if through_broadcast and (src := _batch_broadcast(x)) is not None:
        x = src
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


def _b_in_l2(mm: _Matmul, target: TargetInfo) -> bool:
    """Whether B has a static size within ``target``'s L2 cache (TTI's
    figure; none: no)."""
    return mm.dk.isdigit() and mm.dn.isdigit() and target.l2_bytes > 0 and \
        int(mm.dk) * int(mm.dn) * mm.dt.itemsize <= target.l2_bytes


def _streams_b(mm: _Matmul, m: object) -> bool:
    """Whether ``mm`` gets the streaming kernel of few-row products
    (:meth:`MatmulEmitter.mm_rows`): B contiguous along ``j``, a static
    ``M`` of at most ``_MATMUL_STREAM_ROWS`` rows, and B not known to be
    small (a B that stays in cache is faster through the register tile)."""
    if mm.tb or mm.dot2 or not isinstance(m, int) or not 1 <= m <= _MATMUL_STREAM_ROWS:
        return False  # (bf16 operands: the dot-product panels only)
    if mm.dk.isdigit() and mm.dn.isdigit():
        return int(mm.dk) * int(mm.dn) * mm.dt.itemsize >= _MATMUL_STREAM_MIN_B
    return True


def matmul_operands(node: Node, target: TargetInfo, through_broadcast: bool = False
                    ) -> tuple[tuple[Node, bool], tuple[Node, bool], str | None]:
    """Where a matmul reads A and B (each a node and whether it is read
    transposed, see :func:`_matmul_source`) on ``target``, and the bf16
    dot-product intrinsic when it reads bf16 operands: an f32 matmul of two
    casts of bf16 values (bf16 and mixed graphs' form, see
    :mod:`.matmul_bf16`) on a target with a bf16 dot product. When N is
    smaller than a vector with B read along k (the dot-product kernel's
    matrix-vector class), two casts of bf16 or f16 values are read as they
    are, with no intrinsic (the kernel widens them on load; any target).
    ``through_broadcast``: see :func:`_matmul_source` (the matmul kernel's
    own operands; a fused attention reads them as they are)."""
    a, b = node.inputs
    wide = (_matmul_source(a, through_broadcast), _matmul_source(b, through_broadcast))
    na, nb = half_operand(a), half_operand(b)
    if node.dtype is not DType.f32 or na is None or nb is None or not enabled():
        return wide[0], wide[1], None
    vw = _matmul_tiling(DType.f32, 1, target)[0]
    (sa, ta), (sb, tb) = _matmul_source(na, through_broadcast), \
        _matmul_source(nb, through_broadcast)
    n = node.shape[-1]
    if not ta and (tb or n == 1) and isinstance(n, int) and n < vw:
        # The matrix-vector class: the dot-product kernel reads the half
        # values, widening them on load (half the bytes of f32 copies).
        return (sa, ta), (sb, tb), None
    dot2 = bf16_dot(target, vw) if na.dtype is nb.dtype is DType.bf16 else None
    if dot2 is None:
        return wide[0], wide[1], None
    return (sa, ta), (sb, tb), dot2


def _strided_batch(a_batch: tuple, b_batch: tuple, batch: tuple, m: object, n: object,
                   k: object) -> bool:
    """Whether a batched matmul is one strided batch for the library: static
    sizes, neither operand broadcast across the batch (``a_batch``,
    ``b_batch``: the batch shapes their buffers have, see
    :func:`operand_batch`), and every element offset within 32 bits."""
    dims = (*batch, m, n, k)
    if not all(isinstance(d, int) for d in dims):
        return False
    if tuple(a_batch) != tuple(batch) or tuple(b_batch) != tuple(batch):
        return False
    count = shape_numel(batch)
    return all(count * x * y <= blas.INT32_MAX for x, y in ((m, k), (k, n), (m, n)))  # type: ignore[operator]


def a_lanes(mm: _Matmul, target: TargetInfo) -> int:
    """Elements of a row of A that one vector load gives a register tile's
    k-steps (each lane the multiplier of one k-step's multiply-adds), or 0:
    each element broadcast on its own. AArch64's FMLA (by element) takes
    its multiplier from a lane of a register, so one load of W elements of
    A's row feeds W k-steps of the tile where a broadcast costs a load (and
    on Neoverse N1 two micro-ops) per element and k-step: in LLVM's
    scheduling models the 8 x 2 tile's k-step of 16 FMLAs issues in 5.7
    cycles on Neoverse V2 (4 FP pipes: 4 at best) and 13.7 on N1 (2 pipes:
    8), its A loads and their micro-ops the bottleneck. x86's FMAs take a
    broadcast from memory (AVX-512) or broadcast in the load port (AVX2):
    they keep the broadcasts. A must be read along k (not transposed) in
    elements of the kernel's type. (bf16 pairs keep theirs: LLVM 22 selects
    BFDOT by element only for a lane of a register not loaded in the loop,
    and copies a loaded one with a DUP first, as it does clang's own
    ``vbfdotq_laneq_f32`` of loaded operands.)"""
    if target.arch not in ("aarch64", "arm64") or mm.ta or mm.dot2 or mm.vw < 2:
        return 0
    return mm.vw


def tile_vectors(n: object, vw: int, target: TargetInfo) -> int:
    """Vectors of ``vw`` lanes across a register tile of a product ``N``
    wide: :data:`_MATMUL_WIDE_NR_VECTORS` on targets with 32 registers of at
    least 512 bits (TTI's count and width) when ``N`` is wider than
    :data:`_MATMUL_NR_VECTORS` vectors (or known only at run time), else
    :data:`_MATMUL_NR_VECTORS`."""
    wide = target.vector_registers >= 32 and target.vector_bits >= 512
    if wide and (not isinstance(n, int) or n > _MATMUL_NR_VECTORS * vw):
        return _MATMUL_WIDE_NR_VECTORS
    return _MATMUL_NR_VECTORS


def _matmul_tiling(dt: DType, nrv: int, target: TargetInfo | None = None
                   ) -> tuple[int, int, int]:
    """(vector width W, tile rows MR, panel depth KC) for register tiles of
    ``nrv`` vectors on ``target`` (default: the host). W: the vector register
    width LLVM's tuning uses (TTI); MR: the most rows (at most 8) whose
    accumulators leave registers for B's ``nrv`` vectors and a broadcast of
    A, at most :data:`_MATMUL_MAX_ACCUMULATORS` accumulators: 8 x 2 with 32
    registers, 4 x 4 on AVX-512's wide tiles, 6 x 2 with AVX2's 16 (12 accumulators:
    an FMA of 5 cycles' latency on two pipes, Haswell's and Zen 2's, needs
    10 in flight; 4 x 2 left those cores at 0.63 cycles per FMA against 0.5
    in LLVM's models, ``bench/gemm/mca.py``); KC: the depth of a
    _MATMUL_PANEL_BYTES panel."""
    target = target or common.default_target()
    vw = max(1, target.vector_bytes // dt.itemsize)
    regs = max(8, target.vector_registers)
    mr = max(1, min(8, (regs - nrv - 1) // nrv, _MATMUL_MAX_ACCUMULATORS // nrv))
    kc = max(vw, _MATMUL_PANEL_BYTES // (nrv * vw * dt.itemsize))
    return vw, mr, kc
