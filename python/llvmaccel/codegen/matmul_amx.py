"""Matmul of bfloat16 operands on x86 AMX tiles (AMX-BF16).

On CPUs with AMX-BF16 (Sapphire Rapids and later Xeons) a ``tdpbf16ps``
multiplies a 16 x 32 tile of bf16 A by a 32 x 16 tile of B in pairs (the
same pair layout as :mod:`.matmul_bf16`'s panels: for each pair of k-rows,
each column's two bf16 in one 32-bit word) into a 16 x 16 tile of f32 sums,
about 16 times the multiply-adds of one ``vdpbf16ps``. The kernel::

    for ic in row blocks of MC rows:            # A's k-block stays in L2
      for pc in [0, K) step KC:                 # k-blocks (one up to KC)
        for j0 in [0, N) step 32:
          panel = B[pc:pc+KC, j0:j0+32] in pairs  # KC/2 x 32 words, zero-padded
          for i0 in full 32-row tiles of the block:
            C0..C3 = 0 (first k-block) or C[i0:i0+32, j0:j0+32]
            for k0 in [pc, pc + KC) step 32:
              A0, A1 = A[i0:i0+16, k0:k0+32], A[i0+16:i0+32, k0:k0+32]
              B0, B1 = panel[(k0-pc)/2 : +16, 0:16], panel[..., 16:32]
              Cij += Ai @ Bj
            C[i0:i0+32, j0:j0+32] = C0..C3      # last k-block: or C's only
                                                # reader, computed from them
          (last row block) rows past the last full tile: the bf16 pair
          kernel's register tiles on the same panel

Tiles are LLVM's ``x86_amx`` values of the ``*.internal`` intrinsics, with
constant shapes: the X86 backend configures the tile registers
(``ldtilecfg``) and releases them at the function's end. A is read in place
(its rows contiguous along k), so K must be a multiple of 32 and A not
transposed; the rows are blocked so that ``MC x KC`` of A stays in L2.
(Packing A's tiles instead, each 1 KiB in a row, measured slower at K = 256
and no faster at 2048.)

Using the tiles needs the kernel's permission (Linux: ``arch_prctl
(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``), which :func:`amx_permitted`
asks for; without it a tile instruction faults, so the kernel is emitted for
this process only once it is granted. ``LLVMACCEL_AMX=off`` turns the kernel
off (the library's bf16 GEMM or the pair kernel instead: the comparison the
benchmarks make)."""

from __future__ import annotations

import ctypes
import functools
import os
import platform
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..target import TargetInfo
from .emitter import EmitterCore

if TYPE_CHECKING:
    from .matmul import _Matmul

#: Rows and columns of C per tile, bytes of a tile row (the tdpbf16ps shape).
TILE_ROWS = 16
TILE_BYTES = 64
#: k per step: one A tile row (64 bytes) of bf16.
AMX_K_STEP = 32
#: Columns of C per panel (two B tiles) and rows per register block (two A tiles).
AMX_NR = 32
AMX_MR = 32
#: k per block: the packed panel of B (AMX_KC * 64 bytes) stays in L1; the
#: partial sums of C between k-blocks go through C.
AMX_KC = 512
#: The largest K the tiles take. On the Emerald Rapids Xeon (one thread, bf16
#: result, against MKL's gemm_bf16bf16f32 in the same run) they won at every
#: shape measured up to K = 512 (512x1024x256 306 against 567 us, 4096x768x256
#: 1.58 against 2.68 ms, 512x768x512 442 against 645 us, 2048x2048x512 4.95
#: against 5.45 ms) and were mixed at 1024 (512x256x1024 323 against 352 us,
#: 512x1024x1024 1.18-1.27 against 1.15 ms, 512x4096x1024 4.9 against 4.2 ms)
#: and behind at 2048 (2048^3 17.7 against 13.5 ms, k-blocks of 256): the
#: partial sums of C go through memory between k-blocks, and A's tiles come
#: from L2 for every panel.
AMX_MAX_K = 512

_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18
_SYS_ARCH_PRCTL = 158


def enabled() -> bool:
    """False when ``LLVMACCEL_AMX=off`` (part of the compiled-graph cache's
    key)."""
    return os.environ.get("LLVMACCEL_AMX", "").lower() != "off"


@functools.cache
def amx_permitted() -> bool:
    """Whether this process may use the AMX tile registers: asks Linux for
    them once (``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``, the
    request PyTorch's oneDNN makes too; granted for the whole process)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM,
                                _XFEATURE_XTILEDATA)) == 0
    except (OSError, AttributeError):
        return False


def amx_reason(target: TargetInfo, host: bool, m: object, n: object, k: object,
               ta: bool) -> str | None:
    """None when a bf16 ``M x K @ K x N`` matmul on ``target`` takes the AMX
    kernel (``host``: the code runs in this process), else why not."""
    if not enabled():
        return "LLVMACCEL_AMX=off"
    if target.arch != "x86_64" or not {"amx-tile", "amx-bf16"} <= target.features:
        return f"{target.cpu} has no AMX-BF16"
    if host and not amx_permitted():
        return "the kernel did not grant this process the AMX tile registers"
    if ta:
        return "A is read transposed (the tiles load rows of A along k)"
    if not (isinstance(m, int) and isinstance(n, int) and isinstance(k, int)):
        return "sizes known only at run time"
    if k % AMX_K_STEP or not AMX_K_STEP <= k <= AMX_MAX_K:
        return f"K = {k} is not a multiple of {AMX_K_STEP} up to {AMX_MAX_K}"
    if m < AMX_MR:
        return f"fewer than {AMX_MR} rows"
    return None


def amx_row_block(k: int, target: TargetInfo) -> int:
    """Rows of A per block (a multiple of :data:`AMX_MR`): as many as fill
    half of ``target``'s L2 (TTI's figure; 1 MiB where it gives none) with
    ``rows x K`` bf16, one tile at least."""
    l2 = target.l2_bytes or (2 << 20)
    return max(AMX_MR, (l2 // 2) // (2 * k) // AMX_MR * AMX_MR)


class AmxMatmulEmitter(EmitterCore):
    """The AMX kernel (a base of :class:`.matmul.MatmulEmitter`, whose
    packing, register tiles and epilogue it uses)."""

    def amx_declare(self) -> None:
        self.declare("llvm.x86.tilezero.internal", "x86_amx", ["i16", "i16"])
        self.declare("llvm.x86.tileloadd64.internal", "x86_amx", ["i16", "i16", "ptr", "i64"])
        self.declare("llvm.x86.tdpbf16ps.internal", "x86_amx",
                     ["i16", "i16", "i16", "x86_amx", "x86_amx", "x86_amx"])
        self.declare("llvm.x86.tilestored64.internal", "void",
                     ["i16", "i16", "ptr", "i64", "x86_amx"])
        self.declare("llvm.x86.cast.tile.to.vector.v256i32", "<256 x i32>", ["x86_amx"])
        self.declare("llvm.x86.cast.vector.to.tile.v256i32", "x86_amx", ["<256 x i32>"])

    def amx_tile(self, value: str) -> str:
        """The ``<256 x i32>`` form of a tile (as clang keeps them between
        intrinsics; the X86 backend's AMX lowering removes the casts)."""
        return self.op(f"call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32("
                       f"x86_amx {value})", "tv")

    def amx_value(self, vec: str) -> str:
        return self.op(f"call x86_amx @llvm.x86.cast.vector.to.tile.v256i32("
                       f"<256 x i32> {vec})", "t")

    def amx_load(self, p: str, stride: str) -> str:
        return self.amx_tile(self.op(
            f"call x86_amx @llvm.x86.tileloadd64.internal(i16 {TILE_ROWS}, i16 {TILE_BYTES}, "
            f"ptr {p}, i64 {stride})", "t"))

    def mm_amx(self, mm: _Matmul) -> None:
        """``C = A @ B`` on AMX tiles (see the module docstring); ``mm`` has
        static sizes that :func:`amx_reason` accepts and a tile of
        :data:`AMX_NR` columns (``nrv * vw``)."""
        assert mm.dot2 is not None and not mm.ta and mm.nrv * mm.vw == AMX_NR
        self.amx_declare()
        m, k = int(mm.dm), int(mm.dk)
        kc_max = min(k, AMX_KC)
        nkb = -(-k // kc_max)
        panel = self.stack(mm, "amxpanel", kc_max * AMX_NR, "bfloat")
        ctile = self.stack(mm, "amxtile", AMX_MR * AMX_NR)
        edge = self.stack(mm, "tile", mm.mr * AMX_NR)
        tiles = m // AMX_MR
        per_block = min(amx_row_block(kc_max, self.target) // AMX_MR, tiles)
        blocks = -(-tiles // per_block)
        njb = self.ceil_div(mm.dn, AMX_NR)
        with self.loop(str(blocks), hint="amxb") as blk:
            t0 = self.imul(blk, str(per_block))
            t1 = self.imin(self.iadd(t0, str(per_block)), str(tiles))
            with self.loop(str(nkb), hint="kb") as kb:
                pc = self.imul(kb, str(kc_max))
                kc = self.imin(str(kc_max), self.op(f"sub nsw i64 {mm.dk}, {pc}", "i"))
                first = self.op(f"icmp eq i64 {kb}, 0", "c")
                mm.last = self.op(f"icmp eq i64 {kb}, {nkb - 1}", "c") if nkb > 1 else "true"
                jb0, jb1 = self.mm_panel_range(mm, njb)  # type: ignore[attr-defined]
                with self.loop(jb1, start=jb0, hint="jb") as jb:
                    j0 = self.imul(jb, str(AMX_NR))
                    cols = self.imin(str(AMX_NR), self.op(f"sub nsw i64 {mm.dn}, {j0}", "i"))
                    if mm.tb:
                        self.mm_amx_pack_transposed(mm, panel, pc, kc, j0, cols)
                    else:
                        self.mm_bf16_pack(mm, panel, pc, kc, j0, cols)  # type: ignore[attr-defined]
                    with self.loop(t1, start=t0, hint="ib") as ib:
                        self.mm_amx_block(mm, panel, ctile, self.imul(ib, str(AMX_MR)), j0,
                                          cols, pc, kc, first, nkb)
                    if m % AMX_MR:
                        lastb = self.op(f"icmp eq i64 {blk}, {blocks - 1}", "c")
                        self.when(lastb, lambda j0=j0, cols=cols, pc=pc, kc=kc, first=first:
                                  self.mm_amx_rest(mm, panel, edge, tiles * AMX_MR, m % AMX_MR,
                                                   j0, cols, pc, kc, first))

    def mm_amx_block(self, mm: _Matmul, panel: str, ctile: str, i0: str, j0: str,
                     cols: str, pc: str, kc: str, first: str, nkb: int) -> None:
        """The 32 x 32 block of C at ``(i0, j0)`` over the k-block ``[pc, pc
        + kc)``: four accumulator tiles, from zero in the first k-block and
        from C's partial sums in the others; in the last k-block stored into
        C (a full block without a fused reader) or into the stack tile
        ``ctile`` for the reader or the right edge, in the others into C."""
        accs = [self.alloca("<256 x i32>") for _ in range(4)]
        cbase = self.ptr(mm.out.param, mm.t, mm.oc)  # type: ignore[attr-defined]

        def quarters(base: str, row: str, col: str, stride: str) -> Iterator[tuple[str, str]]:
            """Each accumulator and its 16 x 16 quarter of the block at
            ``(row, col)`` of the f32 matrix at ``base`` (rows ``stride``
            apart)."""
            for r in range(2):
                for q in range(2):
                    off = self.iadd(self.imul(self.iadd(row, str(r * TILE_ROWS)), stride),
                                    self.iadd(col, str(q * TILE_ROWS)))
                    yield accs[2 * r + q], self.ptr(base, "float", off)

        def zero() -> None:
            for acc in accs:
                z = self.op(f"call x86_amx @llvm.x86.tilezero.internal(i16 {TILE_ROWS}, "
                            f"i16 {TILE_BYTES})", "t")
                self.line(f"store <256 x i32> {self.amx_tile(z)}, ptr {acc}")

        def load(base: str, row: str, col: str, stride: str) -> None:
            for acc, p in quarters(base, row, col, stride):
                self.line(f"store <256 x i32> {self.amx_load(p, self.imul(stride, '4'))}, "
                          f"ptr {acc}")

        def load_edge() -> None:  # C's valid columns through the stack tile
            self.mm_tile_fill(mm, ctile, self.mm_crows(mm, i0, AMX_MR),  # type: ignore[attr-defined]
                              AMX_MR, j0, cols)
            load(ctile, "0", "0", str(AMX_NR))

        if nkb == 1:
            zero()
        else:
            self.either(first, zero, lambda: self.amx_by_columns(  # type: ignore[attr-defined]
                mm, cols, lambda: load(cbase, i0, j0, mm.dn), load_edge))
        a_stride = self.imul(mm.dk, "2")
        b_stride = str(AMX_NR * 4)  # one panel row: 32 words
        steps = self.op(f"lshr i64 {kc}, 5", "i")
        with self.loop(steps, hint="k") as s:
            k0 = self.iadd(pc, self.imul(s, str(AMX_K_STEP)))
            a = [self.amx_load(self.ptr(mm.ba.param, "bfloat",
                                        self.addr_a(mm, self.iadd(i0, str(r * TILE_ROWS)), k0)),
                               a_stride) for r in range(2)]
            prow = self.imul(s, str(TILE_ROWS * AMX_NR))  # 16 pairs of k, in words
            b = [self.amx_load(self.ptr(panel, "i32", self.iadd(prow, str(q * TILE_ROWS))),
                               b_stride) for q in range(2)]
            for r in range(2):
                for q in range(2):
                    acc = accs[2 * r + q]
                    c = self.amx_value(self.op(f"load <256 x i32>, ptr {acc}", "a"))
                    d = self.op(f"call x86_amx @llvm.x86.tdpbf16ps.internal(i16 {TILE_ROWS}, "
                                f"i16 {TILE_BYTES}, i16 {TILE_BYTES}, x86_amx {c}, "
                                f"x86_amx {self.amx_value(a[r])}, "
                                f"x86_amx {self.amx_value(b[q])})", "t")
                    self.line(f"store <256 x i32> {self.amx_tile(d)}, ptr {acc}")

        def store(base: str, row: str, col: str, stride: str) -> None:
            for acc, p in quarters(base, row, col, stride):
                t = self.amx_value(self.op(f"load <256 x i32>, ptr {acc}", "a"))
                self.line(f"call void @llvm.x86.tilestored64.internal(i16 {TILE_ROWS}, "
                          f"i16 {TILE_BYTES}, ptr {p}, i64 {self.imul(stride, '4')}, "
                          f"x86_amx {t})")

        def through_tile(final: bool) -> None:
            store(ctile, "0", "0", str(AMX_NR))
            if final:
                self.mm_epilogue(mm, ctile, i0, AMX_MR, j0, cols)  # type: ignore[attr-defined]
            else:
                self.mm_tile_copy(mm, ctile, self.mm_crows(mm, i0, AMX_MR),  # type: ignore[attr-defined]
                                  AMX_MR, j0, cols)

        def into_c() -> None:
            self.amx_by_columns(mm, cols, lambda: store(cbase, i0, j0, mm.dn),
                                lambda: through_tile(False))

        if mm.final is None:
            into_c()
        elif nkb == 1:
            through_tile(True)
        else:
            self.either(mm.last, lambda: through_tile(True), into_c)  # type: ignore[attr-defined]

    def mm_amx_rest(self, mm: _Matmul, panel: str, edge: str, i0: int, rows: int, j0: str,
                    cols: str, pc: str, kc: str, first: str) -> None:
        """The ``rows`` (< 32) rows of C from ``i0`` on over the k-block: the
        bf16 pair kernel's register tiles (:meth:`MatmulEmitter.mm_tile`) on
        the same panel, in tiles of ``mr`` rows, then halves."""

        def tiles(tile: str | None) -> None:
            at, left = i0, rows
            size = mm.mr
            while left:
                while size > left:
                    size //= 2
                self.mm_tile(mm, str(at), size, mm.nrv, panel, tile,  # type: ignore[attr-defined]
                             pc, kc, j0, cols, first)
                at, left = at + size, left - size
        self.amx_by_columns(mm, cols, lambda: tiles(None), lambda: tiles(edge))

    def amx_by_columns(self, mm: _Matmul, cols: str, whole: Callable[[], None],
                       edge: Callable[[], None]) -> None:
        """``whole()`` for a panel of :data:`AMX_NR` columns, ``edge()`` for
        the right edge (``cols`` fewer): a branch on ``cols``, none when N
        is a multiple of the panel."""
        if int(mm.dn) % AMX_NR == 0:
            whole()
            return
        full = self.op(f"icmp eq i64 {cols}, {AMX_NR}", "c")
        self.either(full, whole, edge)  # type: ignore[attr-defined]

    def mm_amx_pack_transposed(self, mm: _Matmul, panel: str, pc: str, kc: str, j0: str,
                               cols: str) -> None:
        """The panel of the k-block ``[pc, pc + kc)`` (``kc`` a multiple of
        32) of a B stored ``[N, K]`` (a linear layer's weight): word ``p`` of
        column ``c`` (``B[j0 + c, pc + 2p:pc + 2p + 2]``, a bf16 pair) to panel
        word ``p * 32 + c``, in 16 x 16 blocks of words transposed in
        registers (:meth:`MatmulEmitter.vtranspose` on the words' bits);
        columns past ``cols`` are zero."""
        vt = "<16 x float>"
        w = TILE_ROWS

        def row(col: str, k0: str) -> str:  # 16 words of column col from k0 on
            src = self.ptr(mm.bb.param, "bfloat", self.addr_b(mm, k0, col))  # type: ignore[attr-defined]
            return self.op(f"load {vt}, ptr {src}, align 2", "vl")

        def block(valid: bool) -> None:
            with self.loop(self.op(f"lshr i64 {kc}, 5", "i"), hint="pt") as pb:
                p0 = self.imul(pb, str(w))
                k0 = self.iadd(pc, self.imul(p0, "2"))
                for cb in range(AMX_NR // w):
                    rows = []
                    for r in range(w):
                        col = self.iadd(j0, str(cb * w + r))
                        if valid:
                            rows.append(row(col, k0))
                        else:
                            rows.append(self.cond(
                                self.op(f"icmp slt i64 {cb * w + r}, {cols}", "c"),
                                lambda col=col, k0=k0: row(col, k0),
                                lambda: "zeroinitializer", vt))
                    view = _F32View(w)
                    for q, v in enumerate(self.vtranspose(view, rows)):  # type: ignore[attr-defined]
                        at = self.iadd(self.imul(self.iadd(p0, str(q)), str(AMX_NR)), str(cb * w))
                        self.line(f"store {vt} {v}, ptr {self.ptr(panel, 'i32', at)}, align 4")
        self.amx_by_columns(mm, cols, lambda: block(True), lambda: block(False))


class _F32View:
    """What :meth:`MatmulEmitter.vtranspose` reads of a matmul: 16 lanes of
    float (the bits of 16 bf16 pairs, moved, never computed on)."""

    def __init__(self, lanes: int) -> None:
        self.vw = lanes
        self.vt = f"<{lanes} x float>"
