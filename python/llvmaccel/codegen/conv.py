"""Convolution as a direct loop nest, written in the natural guarded form:
zero padding is a bounds check on the input index, not a padded copy.

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

The innermost loop is the shape ``accel-masked-load`` rewrites (an index
affine in the induction variable, checked against the row length, the
out-of-range side a value): split into edge and interior loops, the interior
without checks vectorizes. Without the pass the check stays in the hot loop.
"""

from __future__ import annotations

from ..graph import Node
from .common import Buffer, CodegenError, _const
from .emitter import EmitterCore


class ConvEmitter(EmitterCore):
    """Direct convolution."""

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
                self._conv_dim(node, out, bx, bw, t, 0, [n, oc], [n, ic], [oc, c], [])

    def _conv_dim(self, node: Node, out: Buffer, bx: Buffer, bw: Buffer, t: str, d: int,
                  oidx: list[str], iidx: list[str], widx: list[str], kidx: list[str]) -> None:
        """The loops of spatial dim ``d`` (and, recursively, the later ones)."""
        x, w = node.inputs[:2]
        rank = x.rank - 2
        stride, pad = node.attrs["stride"][d], node.attrs["padding"][d]
        dil = node.attrs["dilation"][d]
        osize, isize = self.dim(node.shape[2 + d]), self.dim(x.shape[2 + d])
        ksize = w.shape[2 + d]

        def in_index(o: str, k: str) -> str:
            """o*stride - pad + k*dil, the input index (may be out of range)."""
            base = self.imul(o, str(stride))
            if pad:
                base = self.op(f"sub nsw i64 {base}, {pad}", "i")
            return self.iadd(base, self.imul(k, str(dil)))

        if d < rank - 1:
            with self.loop(osize, hint="o") as o, self.loop(str(ksize), hint="k") as k:
                i = in_index(o, k)
                ok = self.op(f"icmp ult i64 {i}, {isize}", "c")
                self.when(ok, lambda: self._conv_dim(node, out, bx, bw, t, d + 1, oidx + [o],
                                                     iidx + [i], widx, kidx + [k]))
            return
        with self.loop(str(ksize), hint="k") as k:
            wv = self.load(bw, self.linear(widx + kidx + [k], w.shape))
            with self.loop(osize, hint="o") as o:
                i = in_index(o, k)
                ok = self.op(f"icmp ult i64 {i}, {isize}", "c")
                v = self.cond(ok, lambda: self.load(bx, self.linear(iidx + [i], x.shape)),
                              lambda: _const(0, node.dtype), t)
                off = self.linear(oidx + [o], node.shape)
                acc = self.op(f"fadd {t} {self.load(out, off)}, {self.op(f'fmul {t} {wv}, {v}')}")
                self.store(out, off, acc)
