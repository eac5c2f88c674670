"""Sliding windows (convolution and pooling) as direct loop nests, written in
the natural guarded form: padding is a bounds check on the input index, not
a padded copy.

For ``out[n, o, y, x] = bias[o] + sum(w[o, c, ky, kx] * in[n, g*C + c, iy, ix])``
with ``iy = y*sy - py + ky*dy`` (and likewise ``ix``)::

    out = bias (or 0)
    for n, o, c:                       # c: the input channels of o's group
      for y in [0, OH):                # every spatial dim but the last ...
        for ky in [0, KH):
          iy = y*sy - py + ky*dy
          if iy u< H:                  # ... skips padding rows whole
            for kx in [0, KW):
              wv = w[o, c, ky, kx]
              for x in [0, OW):        # innermost: contiguous outputs
                ix = x*sx - px + kx*dx
                v = ix u< W ? in[n, c', iy, ix] : 0     # the padding check
                out[n, o, y, x] += wv * v

Pooling has the same loops without the weights and channels (``max``
accumulates from -inf, padding reads as -inf; ``avg`` sums, then divides by
the window size PyTorch's rules give). The innermost loop is the shape
``accel-masked-load`` rewrites (an index affine in the induction variable,
checked against the row length, the out-of-range side a value): split into
edge and interior loops, the interior without checks vectorizes. Without the
pass the check stays in the hot loop.

Convolutions with enough channels are a GEMM instead (:meth:`ConvEmitter.
emit_conv_gemm`): per image and group, the input windows are copied into a
column buffer (``im2col``: ``col[c * KV + k, p]`` is the input under tap
``k`` of output position ``p``, 0 in the padding, read by the same guarded
load as above, so ``accel-masked-load`` splits the copy's edges from its
interior) and the output is ``W_g [O/G, C/G * KV] @ col [C/G * KV, P]``
through the matmul kernels (the BLAS library or llvmaccel's own, as
:func:`llvmaccel.blas.choose` picks). A 1x1 convolution with stride 1 and no
padding reads the input in place.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from ..graph import DType, Node, dim_op, shape_numel
from ..target import TargetInfo
from .common import Buffer, CodegenError, _const, _fconst
from .matmul import _MATMUL_NR_VECTORS, MatmulEmitter, _Matmul, _matmul_tiling
from .matmul_amx import AMX_NR
from .matmul_bf16 import bf16_dot, bf16_operand, bf16_panel_depth
from .parallel import product_work

# A convolution becomes im2col + GEMM when each output is a dot product of at
# least GEMM_MIN_DEPTH terms (C/G times the kernel volume) and a group has at
# least GEMM_MIN_OUT output channels: the GEMM's register tiles then reuse
# every column they load. Below, the direct loops are as fast.
GEMM_MIN_DEPTH = 16
GEMM_MIN_OUT = 8

# A pooling window, or a direct convolution's window over its group's input
# channels, of at most WINDOW_UNROLL_TAPS taps is summed (or compared) in
# registers, one output at a time, its taps unrolled; larger windows add tap
# by tap into the output plane. (Tap by tap, a 2 x 2 average of 14 x 14
# planes ran 5x slower on one thread than PyTorch's inductor: LLVM unrolled
# the 7-output rows whole and the loop vectorizer made gathers and scatters
# of the rows.)
WINDOW_UNROLL_TAPS = 64


class ConvEmitter(MatmulEmitter):
    """Convolution (direct, or im2col + GEMM) and pooling."""

    def emit_conv(self, node: Node, out: Buffer) -> None:
        if _gemm_form(node):
            self.emit_conv_gemm(node, out)
            return
        x, w = node.inputs[:2]
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        bx, bw = self.buffer_of(x), self.buffer_of(w)
        bb = self.buffer_of(bias) if bias is not None else None
        if bx is None or bw is None or (bias is not None and bb is None):
            raise CodegenError("conv operands are not materialized")
        t = node.dtype.llvm
        zero = _const(0, node.dtype)
        out_ch, group_ch = node.shape[1], w.shape[1]
        per_group = out_ch // node.attrs["groups"]  # type: ignore[operator]
        taps = dim_op("mul", group_ch, shape_numel(node.attrs["kernel"]))
        work = dim_op("mul", shape_numel(node.shape), taps)
        if isinstance(taps, int) and taps <= WINDOW_UNROLL_TAPS and \
                "lhs_dilation" not in node.attrs:
            # Few taps (a depthwise convolution): each output's products
            # summed in a register, its taps unrolled, as a pool's.
            with self.planes(node, work, vectorize=False) as (n, oc):
                ws = self._conv_taps(node, bw, oc)
                b = self.load(bb, oc) if bb is not None else zero
                group = self.op(f"udiv i64 {oc}, {per_group}", "i")
                first = self.imul(group, str(group_ch))
                planes = [[n, self.iadd(first, str(c))] for c in range(group_ch)]

                def finish(oidx: list[str], window: list, n: str = n, oc: str = oc,
                           ws: list[str] = ws, b: str = b, planes: list = planes) -> None:
                    acc = b
                    reads = (v for plane in planes
                             for v in self._window_reads(bx, x, plane, window, zero))
                    for wv, v in zip(ws, reads, strict=True):
                        acc = self.op(f"fadd {t} {acc}, {self.op(f'fmul {t} {wv}, {v}')}")
                    self.store(out, self.linear([n, oc] + oidx, node.shape), acc)

                self._window_outputs(node, 0, [], [], finish)
            return
        with self.planes(node, work) as (n, oc):
            self.fill_plane(node, out, [n, oc], self.load(bb, oc) if bb is not None else zero)
            group = self.op(f"udiv i64 {oc}, {per_group}", "i")
            first = self.imul(group, str(group_ch))
            with self.loop(str(group_ch), hint="ic") as c:
                ic = self.iadd(first, c)

                def weight(kidx: list[str], oc: str = oc, c: str = c) -> str:
                    return self.load(bw, self.linear([oc, c] + kidx, w.shape))

                def update(off: str, v: str, wv: str) -> None:
                    prod = self.op(f"fmul {t} {wv}, {v}")
                    self.store(out, off, self.op(f"fadd {t} {self.load(out, off)}, {prod}"))

                self._window(node, out, bx, 0, [n, oc], [n, ic], [], zero, weight, update)

    def _conv_taps(self, node: Node, bw: Buffer, oc: str) -> list[str]:
        """The weights of output channel ``oc``, input channel by input
        channel, each kernel in row-major order (loaded once per plane)."""
        w = node.inputs[1]
        return [self.load(bw, self.linear([oc, str(c)] + [str(k) for k in taps], w.shape))
                for c in range(w.shape[1])
                for taps in itertools.product(*(range(k) for k in node.attrs["kernel"]))]

    def emit_conv_gemm(self, node: Node, out: Buffer) -> None:
        """``out[n, g] = W_g @ im2col(x[n, g])`` for each image ``n`` and
        group ``g`` (see the module docstring), then the bias."""
        x, w, dot2 = conv_operands(node, self.target)
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        bx, bw = self.buffer_of(x), self.buffer_of(w)
        bb = self.buffer_of(bias) if bias is not None else None
        if bx is None or bw is None or (bias is not None and bb is None):
            raise CodegenError("conv operands are not materialized")
        dt = node.dtype
        groups: int = node.attrs["groups"]  # type: ignore[assignment]
        out_ch, group_ch = node.shape[1], w.shape[1]
        og = out_ch // groups
        depth = group_ch * shape_numel(node.attrs["kernel"])
        positions = shape_numel(node.shape[2:])
        # The columns in the operands' type: bf16 for the bf16 dot product.
        col = None if _reads_in_place(node) else self.scratch((depth, positions), x.dtype)
        vw = _matmul_tiling(dt, 1, self.target)[0]
        _, mr, kc = _matmul_tiling(dt, _MATMUL_NR_VECTORS, self.target)
        if dot2:
            kc = bf16_panel_depth(vw, _MATMUL_NR_VECTORS)
        dp = self.dim(positions)
        mm = _Matmul(ba=bw, bb=bx if col is None else col, out=out, dt=dt, vw=vw, ta=False,
                     tb=False, dm=str(og), dn=dp, dk=str(depth), nrv=_MATMUL_NR_VECTORS,
                     mr=mr, kc=kc, dot2=dot2)
        # (A, the weights, is read along k: the AMX tiles may take bf16 GEMMs.)
        choice = self.mm_choose(node, og, positions, depth, False, dot2,
                                amx_ok=_MATMUL_NR_VECTORS * vw == AMX_NR)
        own = choice.kernel in ("own", "amx")
        work = product_work(og, positions, depth)  # of one product
        if col is not None and node.shape[0] == 1 and groups == 1:
            # One image, one group (inference): the im2col copy is a step of
            # its own, its channels split between the threads, then the
            # product (its column panels split too) and the bias.
            self._im2col(node, x, bx, col, "0", "0", split=True)
            self.step_break()
            if own:
                mm.work = work
            self.mm_run(mm, choice)
            if bb is not None:
                self.step_break()
                self._add_bias(node, out, bb, dp)
            return
        if col is None and bb is None and own:
            # Reading the image in place, the column panels of each product
            # are independent (an im2col copy is one shared buffer, which
            # every chunk would rewrite, and the bias loop below adds to all
            # of C: those convolutions stay whole).
            mm.work = work
        image = self.dim(dim_op("mul", x.shape[1], shape_numel(x.shape[2:])))
        with self.loop(self.dim(node.shape[0]), hint="n") as n, \
                self.loop(str(groups), hint="g") as g:
            first = self.imul(g, str(group_ch))
            if col is None:
                mm.ob = self.iadd(self.imul(n, image), self.imul(first, dp))
            else:
                self._im2col(node, x, bx, col, n, first)
            mm.oa = self.imul(g, str(og * depth))
            mm.oc = self.imul(self.iadd(self.imul(n, str(out_ch)), self.imul(g, str(og))), dp)
            self.mm_run(mm, choice)
        if bb is not None:
            self._add_bias(node, out, bb, dp)

    def _add_bias(self, node: Node, out: Buffer, bb: Buffer, dp: str) -> None:
        """``out[n, oc, :] += bias[oc]``."""
        t = node.dtype.llvm
        out_ch = node.shape[1]
        with self.loop(self.dim(node.shape[0]), hint="n") as n, \
                self.loop(str(out_ch), hint="oc") as oc:
            bv = self.load(bb, oc)
            base = self.imul(self.iadd(self.imul(n, str(out_ch)), oc), dp)
            with self.loop(dp, hint="p") as p:
                off = self.iadd(base, p)
                self.store(out, off, self.op(f"fadd {t} {self.load(out, off)}, {bv}"))

    def _im2col(self, node: Node, x: Node, bx: Buffer, col: Buffer, n: str,
                first: str, split: bool = False) -> None:
        """``col[c * KV + k, p] = x[n, first + c, window of p under tap k]``
        (0 in the padding) for the ``C/G`` channels of one group (``x``: the
        input node, or the bf16 value it is the cast of). ``split``: the
        channels are the outermost loop of a step, which a parallel kernel
        may chunk (each channel writes its own rows of ``col``)."""
        channels = node.inputs[1].shape[1]
        begin, end = "0", str(channels)
        if split:
            work = dim_op("mul", col.shape[0], col.shape[1])
            begin, end = self.par_range(str(channels), work)
        with self.loop(end, start=begin, hint="ic") as c:
            self._im2col_dim(node, x, bx, col, [n, self.iadd(first, c)], c, 0, [], [], [],
                             False)

    def _im2col_dim(self, node: Node, x: Node, bx: Buffer, col: Buffer, chan: list[str],
                    c: str, d: int, iidx: list[str], kidx: list[str], pidx: list[str],
                    zero: bool) -> None:
        """The loops of spatial dim ``d`` of :meth:`_im2col` (and, nested,
        the later dims'). ``zero``: under a padding row of an earlier dim,
        written as zeros without reading the input."""
        rank = x.rank - 2
        ksize = node.attrs["kernel"][d]
        osize, isize = self.dim(node.shape[2 + d]), self.dim(x.shape[2 + d])
        if d < rank - 1:
            with self.loop(osize, hint="o") as o, self.loop(str(ksize), hint="k") as k:
                def rec(i: str, z: bool, o: str = o, k: str = k) -> None:
                    self._im2col_dim(node, x, bx, col, chan, c, d + 1, iidx + [i],
                                     kidx + [k], pidx + [o], z)
                if zero:
                    rec("0", True)
                else:
                    i, ok = self.window_source(node, d, o, k, isize)
                    self.either(ok, lambda i=i: rec(i, False), lambda: rec("0", True))
            return
        dt = col.dtype
        zero_v = _const(0, dt)
        taps = node.attrs["kernel"]
        positions = self.dim(shape_numel(node.shape[2:]))
        with self.loop(str(ksize), hint="k") as k:
            row = self.iadd(self.imul(c, str(shape_numel(taps))), self.linear(kidx + [k], taps))
            row_off = self.imul(row, positions)
            with self.loop(osize, hint="o") as o:
                off = self.iadd(row_off, self.linear(pidx + [o], node.shape[2:]))
                if zero:
                    v = zero_v
                else:
                    i, ok = self.window_source(node, d, o, k, isize)
                    v = self.cond(ok, lambda i=i: self.load(bx, self.linear(chan + iidx + [i],
                                                                            x.shape)),
                                  lambda: zero_v, dt.llvm)
                self.store(col, off, v)

    def window_index(self, node: Node, d: int, o: str, k: str) -> str:
        """The input index of output ``o`` under tap ``k`` along spatial dim
        ``d`` of sliding window ``node``: ``o*stride - pad + k*dilation``
        (out of range in the padding; of the dilated input where the node
        has an ``lhs_dilation``)."""
        a = node.attrs
        i = self.imul(o, str(a["stride"][d]))
        if a["padding"][d]:
            i = self.op(f"sub nsw i64 {i}, {a['padding'][d]}", "i")
        return self.iadd(i, self.imul(k, str(a["dilation"][d])))

    def window_source(self, node: Node, d: int, o: str, k: str, isize: str
                      ) -> tuple[str, str]:
        """The input index of output ``o`` under tap ``k`` along dim ``d``,
        and whether the window reads the input there (``isize`` elements):
        not in the padding and, with an ``lhs_dilation`` of ``l``, not on
        one of the zeros between the input's elements (the dilated index a
        multiple of ``l``; the input index its quotient)."""
        j = self.window_index(node, d, o, k)
        ld = node.attrs.get("lhs_dilation", (1,) * len(node.attrs["kernel"]))[d]
        if ld == 1:
            return j, self.op(f"icmp ult i64 {j}, {isize}", "c")
        span = self.op(f"add nsw i64 {self.imul(isize, str(ld))}, {1 - ld}", "i")
        inside = self.op(f"icmp ult i64 {j}, {span}", "c")
        on_grid = self.op(f"icmp eq i64 {self.op(f'urem i64 {j}, {ld}', 'i')}, 0", "c")
        return self.op(f"udiv i64 {j}, {ld}", "i"), self.op(f"and i1 {inside}, {on_grid}", "c")

    def emit_pool(self, node: Node, out: Buffer) -> None:
        if node.attrs["fn"] == "argmax":
            self._emit_pool_argmax(node, out)
            return
        x = node.inputs[0]
        bx = self.operand_buffer(x, "pool operand")
        t, fn = node.dtype.llvm, node.attrs["fn"]
        fill = _fconst(float("-inf"), node.dtype) if fn == "max" else _const(0, node.dtype)
        work = dim_op("mul", shape_numel(node.shape), shape_numel(node.attrs["kernel"]))
        if shape_numel(node.attrs["kernel"]) <= WINDOW_UNROLL_TAPS:
            with self.planes(node, work, vectorize=False) as (n, c):
                self._window_outputs(node, 0, [], [], lambda oidx, taps, nc=[n, c]:
                                     self._pool_output(node, out, bx, nc, oidx, taps, fill))
            return

        def update(off: str, v: str, _: str) -> None:
            old = self.load(out, off)
            new = self.fcall("maximum", node.dtype, [old, v]) if fn == "max" else \
                self.op(f"fadd {t} {old}, {v}")
            self.store(out, off, new)

        with self.planes(node, work) as (n, c):
            self.fill_plane(node, out, [n, c], fill)
            self._window(node, out, bx, 0, [n, c], [n, c], [], fill, lambda k: "", update)
            if fn == "avg":
                with self.nest(tuple(node.shape[2:])) as sidx:
                    off = self.linear([n, c] + sidx, node.shape)
                    size = self._pool_divisor(node, sidx)
                    div = self.op(f"sitofp i64 {size} to {t}")
                    self.store(out, off, self.op(f"fdiv {t} {self.load(out, off)}, {div}"))

    def _window_outputs(self, node: Node, d: int, oidx: list[str],
                        taps: list[list[tuple[str, str | None]]],
                        finish: Callable[[list[str], list], None]) -> None:
        """The output loops of spatial dim ``d`` of a sliding window whose
        taps are unrolled (nested: the later dims'), and ``finish(output
        index, taps)`` for each output; ``taps`` holds, per dim, each tap's
        input index and whether it lies in the input (None: it does). The
        last dim's outputs are three loops: those whose windows lie wholly
        in the input, with no check (their loads a strided, vectorizable
        sequence), between the outputs before and after, whose taps are
        checked."""
        x = node.inputs[0]
        rank = x.rank - 2
        osize, isize = self.dim(node.shape[2 + d]), self.dim(x.shape[2 + d])
        ksize = node.attrs["kernel"][d]

        def dim_taps(o: str, checked: bool) -> list[tuple[str, str | None]]:
            result = []
            for k in range(ksize):
                if not checked:
                    result.append((self.window_index(node, d, o, str(k)), None))
                    continue
                i, ok = self.window_source(node, d, o, str(k), isize)
                # An index in the input for the load; the value is not used.
                result.append((self.op(f"select i1 {ok}, i64 {i}, i64 0", "i"), ok))
            return result

        if d < rank - 1:
            # Rows of outputs, rows apart in the input: the loop vectorizer
            # would make their reads gathers (it did, for the 7 rows of a
            # 7 x 7 plane on AVX-512 targets, once the row loop inside was
            # unrolled); the rows' own loops are the ones to vectorize.
            with self.loop(osize, hint="o", vectorize=False) as o:
                self._window_outputs(node, d + 1, oidx + [o], taps + [dim_taps(o, True)],
                                     finish)
            return
        a = node.attrs
        s, dl = a["stride"][d], a["dilation"][d]
        first, _ = self._strided_range(self.op(f"sub nsw i64 0, {a['padding'][d]}", "i"), s,
                                       isize)
        last_tap = self.op(f"sub nsw i64 {dl * (ksize - 1)}, {a['padding'][d]}", "i")
        _, past = self._strided_range(last_tap, s, isize)
        first = self.imin(first, osize)
        end = self.imax(first, self.imin(osize, past))
        for begin, stop, checked in (("0", first, True), (first, end, False),
                                     (end, osize, True)):
            with self.loop(stop, start=begin, hint="o") as o:
                finish(oidx + [o], taps + [dim_taps(o, checked)])

    def _window_reads(self, bx: Buffer, x: Node, plane: list[str],
                      taps: list[list[tuple[str, str | None]]], fill: str) -> Iterator[str]:
        """The input values of one output's window, taps in row-major order:
        ``x[plane, tap]``, or ``fill`` for a tap outside the input."""
        t = x.dtype.llvm
        for window in itertools.product(*taps):
            v = self.load(bx, self.linear(plane + [i for i, _ in window], x.shape))
            oks = [ok for _, ok in window if ok is not None]
            if oks:
                ok = oks[0]
                for other in oks[1:]:
                    ok = self.op(f"and i1 {ok}, {other}", "c")
                v = self.op(f"select i1 {ok}, {t} {v}, {t} {fill}")
            yield v

    def _pool_output(self, node: Node, out: Buffer, bx: Buffer, nc: list[str],
                     oidx: list[str], taps: list[list[tuple[str, str | None]]],
                     fill: str) -> None:
        """One output of a pool: its window's taps in row-major order (padding
        reads as ``fill``: -inf for the max, 0 for the average), summed or
        compared in a register."""
        t, fn = node.dtype.llvm, node.attrs["fn"]
        # The average starts from 0 as PyTorch's sum does (0 + -0.0 is 0).
        acc = None if fn == "max" else fill
        for v in self._window_reads(bx, node.inputs[0], nc, taps, fill):
            if acc is None:
                acc = v
            elif fn == "max":
                acc = self.fcall("maximum", node.dtype, [acc, v])
            else:
                acc = self.op(f"fadd {t} {acc}, {v}")
        if fn == "avg":
            div = self.op(f"sitofp i64 {self._pool_divisor(node, oidx)} to {t}")
            acc = self.op(f"fdiv {t} {acc}, {div}")
        self.store(out, self.linear(nc + oidx, node.shape), acc)

    def emit_col2im(self, node: Node, out: Buffer) -> None:
        """``out[n, c, y] += cols[n, c, k, i]`` where ``y = i * stride -
        padding + k * dilation`` lands in the output (:meth:`Graph.col2im
        <llvmaccel.graph.Graph.col2im>`), per output plane: the plane starts
        at zero, then every tap adds its products in order of the taps and
        input positions (the order of PyTorch's ``col2im``); each tap's loop
        covers only the positions that land inside."""
        cols = node.inputs[0]
        bc = self.operand_buffer(cols, "col2im operand")
        rank = node.rank - 2
        with self.planes(node, shape_numel(cols.shape)) as (n, c):
            self.fill_plane(node, out, [n, c], _const(0, node.dtype))
            self._col2im_dim(node, out, bc, [n, c], 0, rank, [], [], [])

    def _col2im_dim(self, node: Node, out: Buffer, bc: Buffer, nc: list[str], d: int,
                    rank: int, kidx: list[str], iidx: list[str], oidx: list[str]) -> None:
        """The tap and input loops of spatial dim ``d`` of :meth:`emit_col2im`
        (nested: the later dims'). For tap ``k`` the input loop runs over
        the positions whose output ``i * s + (k * dil - p)`` lies in
        ``[0, out)``, bounds computed before it: no check in the loop."""
        cols = node.inputs[0]
        a = node.attrs
        t = node.dtype.llvm
        s = a["stride"][d]
        osize, isize = self.dim(node.shape[2 + d]), self.dim(cols.shape[2 + rank + d])
        with self.loop(str(a["kernel"][d]), hint="k") as k:
            shift = self._tap_shift(node, d, k)
            first, past = self._strided_range(shift, s, osize)
            end = self.imin(isize, past)
            with self.loop(end, start=first, hint="i") as i:
                y = self.iadd(self.imul(i, str(s)), shift)
                if d < rank - 1:
                    self._col2im_dim(node, out, bc, nc, d + 1, rank, kidx + [k], iidx + [i],
                                     oidx + [y])
                else:
                    off = self.linear(nc + oidx + [y], node.shape)
                    v = self.load(bc, self.linear(nc + kidx + [k] + iidx + [i], cols.shape))
                    self.store(out, off, self.op(f"fadd {t} {self.load(out, off)}, {v}"))

    def _tap_shift(self, node: Node, d: int, k: str) -> str:
        """``k * dilation - padding`` along dim ``d``: where position 0 of a
        sliding window's output lands under tap ``k``."""
        a = node.attrs
        return self.op(f"sub nsw i64 {self.imul(k, str(a['dilation'][d]))}, "
                       f"{a['padding'][d]}", "i")

    def _strided_range(self, shift: str, s: int, limit: str) -> tuple[str, str]:
        """``[first, past)``: the ``j >= 0`` with ``0 <= j * s + shift <
        limit`` (``past`` unclamped above: the caller bounds it by its own
        loop's size)."""
        # first: ceil(-shift / s) when shift < 0, else 0.
        neg = self.op(f"sub nsw i64 0, {shift}", "i")
        up = self.op(f"udiv i64 {self.iadd(neg, str(s - 1))}, {s}", "i")
        first = self.op(f"select i1 {self.op(f'icmp sgt i64 {neg}, 0', 'c')}, i64 {up}, "
                        "i64 0", "i")
        # past: (limit - 1 - shift) / s + 1, or 0 when limit - 1 - shift < 0.
        room = self.op(f"sub nsw i64 {self.op(f'sub nsw i64 {limit}, 1', 'i')}, {shift}", "i")
        past = self.op(f"add nsw i64 {self.op(f'udiv i64 {room}, {s}', 'i')}, 1", "i")
        past = self.op(f"select i1 {self.op(f'icmp slt i64 {room}, 0', 'c')}, i64 0, "
                       f"i64 {past}", "i")
        return first, past

    def emit_im2col(self, node: Node, out: Buffer) -> None:
        """``cols[n, c, k, o] = x[n, c, o * stride - padding + k *
        dilation]`` (:meth:`Graph.im2col <llvmaccel.graph.Graph.im2col>`),
        per plane ``(n, c)``: for each tap, the output positions whose
        source lies inside the input are computed before the loops (no
        check in them), the others are zeros."""
        x = node.inputs[0]
        bx = self.operand_buffer(x, "im2col operand")
        rank = x.rank - 2
        with self.planes(node, shape_numel(node.shape)) as (n, c):
            with self._taps(node, rank) as kidx:
                self._im2col_out(node, out, bx, [n, c], kidx, 0, rank, [], [])

    @contextmanager
    def _taps(self, node: Node, rank: int) -> Iterator[list[str]]:
        """Loops over every tap of ``node``'s kernel, outermost dim first."""
        with ExitStack() as stack:
            yield [stack.enter_context(self.loop(str(node.attrs["kernel"][d]), hint="k"))
                   for d in range(rank)]

    def _im2col_out(self, node: Node, out: Buffer, bx: Buffer, nc: list[str],
                    kidx: list[str], d: int, rank: int, oidx: list[str],
                    iidx: list[str] | None) -> None:
        """The output positions of spatial dim ``d`` under the taps
        ``kidx`` (nested: the later dims'); ``iidx`` None under a position
        of an earlier dim whose source is padding (all zeros)."""
        x = node.inputs[0]
        zero = _const(0, node.dtype)
        osize, isize = self.dim(node.shape[2 + rank + d]), self.dim(x.shape[2 + d])
        s = node.attrs["stride"][d]
        shift = self._tap_shift(node, d, kidx[d])
        first, past = self._strided_range(shift, s, isize)
        first = self.imin(first, osize)
        end = self.imax(first, self.imin(osize, past))

        def run(begin: str, stop: str, inside: bool) -> None:
            with self.loop(stop, start=begin, hint="o") as o:
                src = None if not inside or iidx is None else \
                    iidx + [self.iadd(self.imul(o, str(s)), shift)]
                if d < rank - 1:
                    self._im2col_out(node, out, bx, nc, kidx, d + 1, rank, oidx + [o], src)
                    return
                off = self.linear(nc + kidx + oidx + [o], node.shape)
                v = zero if src is None else self.load(bx, self.linear(nc + src, x.shape))
                self.store(out, off, v)

        run("0", first, False)
        run(first, end, True)
        run(end, osize, False)

    @contextmanager
    def planes(self, node: Node, work: object, vectorize: bool = True
               ) -> Iterator[tuple[str, str]]:
        """The output planes ``(n, c)`` of a sliding window's node, one loop
        over ``N * C`` (each plane is computed whole by one iteration: in a
        parallel kernel a thread's chunk of them, where ``work``, the
        window's multiply-adds or reads, reaches MIN_WORK); ``vectorize``
        as :meth:`loop`'s."""
        nc = self.dim(dim_op("mul", node.shape[0], node.shape[1]))
        begin, end = self.par_range(nc, work)
        with self.loop(end, start=begin, hint="p", vectorize=vectorize) as p:
            c_dim = self.dim(node.shape[1])
            yield (self.op(f"udiv i64 {p}, {c_dim}", "i"), self.op(f"urem i64 {p}, {c_dim}", "i"))

    def fill_plane(self, node: Node, out: Buffer, nc: list[str], value: str) -> None:
        """``out[n, c, ...] = value``: the start of a plane's sums."""
        with self.nest(tuple(node.shape[2:])) as sidx:
            self.store(out, self.linear(nc + sidx, node.shape), value)

    def _emit_pool_argmax(self, node: Node, out: Buffer) -> None:
        """Indices of a max pool (:meth:`Graph.pool_indices`): per output, the
        window's positions in order; a position is taken when it holds the
        window's maximum and none was taken before, or when the maximum is NaN
        and it holds a NaN (the last NaN wins, as in PyTorch's kernel)."""
        x, pooled = node.inputs
        bx, bp = self.buffer_of(x), self.buffer_of(pooled)
        if bx is None or bp is None:
            raise CodegenError("pool indices: operands are not materialized")
        t = x.dtype.llvm
        rank = x.rank - 2
        with self.nest(node.shape) as idx:
            off = self.linear(idx, node.shape)
            best = self.load(bp, off)
            nan = self.op(f"fcmp uno {t} {best}, {best}", "c")
            self.store(out, off, "-1")
            self._argmax_dim(node, out, bx, off, best, nan, idx, 0, [], rank)

    def _argmax_dim(self, node: Node, out: Buffer, bx: Buffer, off: str, best: str, nan: str,
                    oidx: list[str], d: int, iidx: list[str], rank: int) -> None:
        x = node.inputs[0]
        t = x.dtype.llvm
        isize = self.dim(x.shape[2 + d])
        with self.loop(str(node.attrs["kernel"][d]), hint="k") as k:
            i = self.window_index(node, d, oidx[2 + d], k)
            ok = self.op(f"icmp ult i64 {i}, {isize}", "c")

            def inner(i: str = i) -> None:
                if d < rank - 1:
                    self._argmax_dim(node, out, bx, off, best, nan, oidx, d + 1, iidx + [i],
                                     rank)
                    return
                spatial = iidx + [i]
                v = self.load(bx, self.linear(oidx[:2] + spatial, x.shape))
                flat = self.linear(spatial, x.shape[2:])
                is_nan = self.op(f"fcmp uno {t} {v}, {v}", "c")
                equal = self.op(f"fcmp oeq {t} {v}, {best}", "c")
                none_yet = self.op(f"icmp eq i64 {self.load(out, off)}, -1", "c")
                first_max = self.op(f"and i1 {equal}, {none_yet}", "c")
                take = self.op(f"select i1 {nan}, i1 {is_nan}, i1 {first_max}", "c")
                self.when(take, lambda: self.store(out, off, flat))

            self.when(ok, inner)

    def _pool_divisor(self, node: Node, oidx: list[str]) -> str:
        """The divisor of one average, as PyTorch's avg_pool computes it: the
        override; else the window clipped to the padded input (with
        count_include_pad) or to the input itself."""
        if node.attrs["divisor"]:
            return str(node.attrs["divisor"])
        x = node.inputs[0]
        size = "1"
        for d, o in enumerate(oidx):
            k, s, p = node.attrs["kernel"][d], node.attrs["stride"][d], node.attrs["padding"][d]
            n = self.dim(x.shape[2 + d])
            start = self.op(f"sub nsw i64 {self.imul(o, str(s))}, {p}", "i")
            end = self.op(f"add nsw i64 {start}, {k}", "i")
            padded_end = self.op(f"add nsw i64 {n}, {node.attrs['padding_hi'][d]}", "i")
            end = self.call("llvm.smin.i64", "i64", [("i64", end), ("i64", padded_end)])
            if not node.attrs["count_include_pad"]:
                start = self.call("llvm.smax.i64", "i64", [("i64", start), ("i64", "0")])
                end = self.call("llvm.smin.i64", "i64", [("i64", end), ("i64", n)])
            span = self.op(f"sub nsw i64 {end}, {start}", "i")
            size = self.imul(size, span)
        return self.call("llvm.smax.i64", "i64", [("i64", size), ("i64", "1")])

    def _window(self, node: Node, out: Buffer, bx: Buffer, d: int, oidx: list[str],
                iidx: list[str], kidx: list[str], fill: str,
                weight: Callable[[list[str]], str],
                update: Callable[[str, str, str], None]) -> None:
        """The loops of spatial dim ``d`` of a sliding window (and, nested,
        those of the later dims): ``update(out offset, input value or fill,
        weight(kernel index))`` for every output and window position."""
        x = node.inputs[0]
        rank = x.rank - 2
        osize, isize = self.dim(node.shape[2 + d]), self.dim(x.shape[2 + d])
        ksize = node.attrs["kernel"][d]

        if d < rank - 1:
            # Out-of-range rows add nothing (conv: zeros) or only padding
            # (max: -inf; avg: zeros, the divisor counts them): skip them.
            with self.loop(osize, hint="o") as o, self.loop(str(ksize), hint="k") as k:
                i, ok = self.window_source(node, d, o, k, isize)
                self.when(ok, lambda: self._window(node, out, bx, d + 1, oidx + [o], iidx + [i],
                                                   kidx + [k], fill, weight, update))
            return
        t = node.dtype.llvm
        with self.loop(str(ksize), hint="k") as k:
            wv = weight(kidx + [k])
            with self.loop(osize, hint="o") as o:
                i, ok = self.window_source(node, d, o, k, isize)
                v = self.cond(ok, lambda: self.load(bx, self.linear(iidx + [i], x.shape)),
                              lambda: fill, t)
                update(self.linear(oidx + [o], node.shape), v, wv)


def _gemm_form(node: Node) -> bool:
    """Whether convolution ``node`` is emitted as im2col + GEMM: f32 or f64
    (the matmul kernels' types; half precision arrives here widened), each
    output a dot product of at least GEMM_MIN_DEPTH terms, and at least
    GEMM_MIN_OUT output channels per group."""
    w = node.inputs[1]
    groups: int = node.attrs["groups"]  # type: ignore[assignment]
    depth = w.shape[1] * shape_numel(node.attrs["kernel"])
    return (node.dtype.is_float and node.dtype.itemsize in (4, 8)
            and depth >= GEMM_MIN_DEPTH and node.shape[1] // groups >= GEMM_MIN_OUT)


def _reads_in_place(node: Node) -> bool:
    """A 1x1 convolution with stride 1 and no padding: the rows ``[C/G, P]``
    of each image and group are its column buffer already."""
    a = node.attrs
    return (all(k == 1 for k in a["kernel"]) and all(s == 1 for s in a["stride"])
            and not any(a["padding"]) and not any(a["padding_hi"])
            and "lhs_dilation" not in a)


def conv_operands(node: Node, target: TargetInfo) -> tuple[Node, Node, str | None]:
    """Where convolution ``node`` reads its input and weights on ``target``,
    and the bf16 dot-product intrinsic when it reads them as bf16: an f32
    convolution of two casts of bf16 values (the graph's form of a bf16
    convolution) in the GEMM form, on a target with a bf16 dot product
    (:mod:`.matmul_bf16`): its column buffer is then bf16 too."""
    x, w = node.inputs[:2]
    nx, nw = bf16_operand(x), bf16_operand(w)
    if node.dtype is not DType.f32 or nx is None or nw is None or not _gemm_form(node):
        return x, w, None
    dot2 = bf16_dot(target, _matmul_tiling(DType.f32, 1, target)[0])
    return (nx, nw, dot2) if dot2 else (x, w, None)
