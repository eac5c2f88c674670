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
"""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Node
from .common import Buffer, CodegenError, _const, _fconst
from .emitter import EmitterCore


class ConvEmitter(EmitterCore):
    """Direct convolution and pooling."""

    def emit_conv(self, node: Node, out: Buffer) -> None:
        x, w = node.inputs[:2]
        bias = node.inputs[2] if len(node.inputs) > 2 else None
        bx, bw = self.buffer_of(x), self.buffer_of(w)
        bb = self.buffer_of(bias) if bias is not None else None
        if bx is None or bw is None or (bias is not None and bb is None):
            raise CodegenError("conv operands are not materialized")
        t = node.dtype.llvm
        zero = _const(0, node.dtype)
        with self.nest(node.shape) as idx:
            v = self.load(bb, idx[1]) if bb is not None else zero
            self.store(out, self.linear(idx, node.shape), v)
        out_ch, group_ch = node.shape[1], w.shape[1]
        per_group = out_ch // node.attrs["groups"]  # type: ignore[operator]
        with self.loop(self.dim(node.shape[0]), hint="n") as n, \
                self.loop(str(out_ch), hint="oc") as oc:
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

    def emit_pool(self, node: Node, out: Buffer) -> None:
        if node.attrs["fn"] == "argmax":
            self._emit_pool_argmax(node, out)
            return
        x = node.inputs[0]
        bx = self.buffer_of(x)
        if bx is None:
            raise CodegenError("pool operand is not materialized")
        t, fn = node.dtype.llvm, node.attrs["fn"]
        fill = _fconst(float("-inf"), node.dtype) if fn == "max" else _const(0, node.dtype)
        with self.nest(node.shape) as idx:
            self.store(out, self.linear(idx, node.shape), fill)

        def update(off: str, v: str, _: str) -> None:
            old = self.load(out, off)
            new = self.fcall("maximum", node.dtype, [old, v]) if fn == "max" else \
                self.op(f"fadd {t} {old}, {v}")
            self.store(out, off, new)

        with self.loop(self.dim(node.shape[0]), hint="n") as n, \
                self.loop(self.dim(node.shape[1]), hint="c") as c:
            self._window(node, out, bx, 0, [n, c], [n, c], [], fill, lambda k: "", update)
        if fn == "avg":
            with self.nest(node.shape) as idx:
                off = self.linear(idx, node.shape)
                size = self._pool_divisor(node, idx[2:])
                div = self.op(f"sitofp i64 {size} to {t}")
                self.store(out, off, self.op(f"fdiv {t} {self.load(out, off)}, {div}"))

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
        stride, pad = node.attrs["stride"][d], node.attrs["padding"][d]
        dil, isize = node.attrs["dilation"][d], self.dim(x.shape[2 + d])
        with self.loop(str(node.attrs["kernel"][d]), hint="k") as k:
            i = self.imul(oidx[2 + d], str(stride))
            if pad:
                i = self.op(f"sub nsw i64 {i}, {pad}", "i")
            i = self.iadd(i, self.imul(k, str(dil)))
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
        stride, pad = node.attrs["stride"][d], node.attrs["padding"][d]
        dil = node.attrs["dilation"][d]
        osize, isize = self.dim(node.shape[2 + d]), self.dim(x.shape[2 + d])
        ksize = node.attrs["kernel"][d]

        def in_index(o: str, k: str) -> str:
            """o*stride - pad + k*dil, the input index (may be out of range)."""
            base = self.imul(o, str(stride))
            if pad:
                base = self.op(f"sub nsw i64 {base}, {pad}", "i")
            return self.iadd(base, self.imul(k, str(dil)))

        if d < rank - 1:
            # Out-of-range rows add nothing (conv: zeros) or only padding
            # (max: -inf; avg: zeros, the divisor counts them): skip them.
            with self.loop(osize, hint="o") as o, self.loop(str(ksize), hint="k") as k:
                i = in_index(o, k)
                ok = self.op(f"icmp ult i64 {i}, {isize}", "c")
                self.when(ok, lambda: self._window(node, out, bx, d + 1, oidx + [o], iidx + [i],
                                                   kidx + [k], fill, weight, update))
            return
        t = node.dtype.llvm
        with self.loop(str(ksize), hint="k") as k:
            wv = weight(kidx + [k])
            with self.loop(osize, hint="o") as o:
                i = in_index(o, k)
                ok = self.op(f"icmp ult i64 {i}, {isize}", "c")
                v = self.cond(ok, lambda: self.load(bx, self.linear(iidx + [i], x.shape)),
                              lambda: fill, t)
                update(self.linear(oidx + [o], node.shape), v, wv)
