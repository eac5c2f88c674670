"""Loop nests of cumulative ops (``cumulative``: cumsum, cumprod, cummax,
cummin, logcumsumexp along one axis): the other axes outside, the scanned axis inside,
carrying the running value from one element to the next."""

from __future__ import annotations

from ..graph import DType, Node
from .common import Buffer, _fconst
from .elementwise import _reduce_identity
from .emitter import EmitterCore


class ScanEmitter(EmitterCore):
    def log_add_exp(self, dt: DType, a: str, v: str) -> str:
        """``log(exp(a) + exp(v))`` without overflow: ``max + log1p(exp(min -
        max))``; -inf when both are, +inf when either is, NaN when either
        is."""
        t = dt.llvm
        hi = self.fcall("maximum", dt, [a, v])  # NaN-propagating
        lo = self.fcall("minimum", dt, [a, v])
        e = self.fcall("exp", dt, [self.op(f"fsub {t} {lo}, {hi}")])
        r = self.op(f"fadd {t} {hi}, {self.fcall('log1p', dt, [e], libm=True)}")
        big = self.op(f"fcmp oeq {t} {self.fcall('fabs', dt, [hi])}, "
                      f"{_fconst(float('inf'), dt)}", "c")
        return self.op(f"select i1 {big}, {t} {hi}, {t} {r}")

    def emit_cumulative(self, node: Node, out: Buffer) -> None:
        """``out[..., k, ...] = fn(x[..., 0, ...], ..., x[..., k, ...])`` along
        ``axis`` (from the end with ``reverse``). Float sums and products run
        in double, as PyTorch's CPU kernels do, and are rounded per element."""
        x = node.inputs[0]
        fn, axis, reverse = node.attrs["fn"], node.attrs["axis"], node.attrs["reverse"]
        dt = node.dtype
        acc_dt = DType.f64 if dt is DType.f32 and fn in ("sum", "prod") else dt
        at = acc_dt.llvm
        outer = [k for k in range(x.rank) if k != axis]
        n = self.dim(x.shape[axis])
        with self.nest(tuple(x.shape[k] for k in outer)) as oidx:
            acc = self.alloca(at)
            first = _fconst(float("-inf"), acc_dt) if fn == "logaddexp" else \
                _reduce_identity(fn, acc_dt)
            self.line(f"store {at} {first}, ptr {acc}")
            with self.loop(n) as j:
                k = self.op(f"sub i64 {self.op(f'sub i64 {n}, 1', 'i')}, {j}", "i") \
                    if reverse else j
                full = [""] * x.rank
                for d, i in zip(outer, oidx, strict=True):
                    full[d] = i
                full[axis] = k
                v = self.convert(self.emit(x, full), dt, acc_dt)
                a = self.op(f"load {at}, ptr {acc}", "a")
                r = self.log_add_exp(acc_dt, a, v) if fn == "logaddexp" else \
                    self.combine(fn, acc_dt, a, v)
                self.line(f"store {at} {r}, ptr {acc}")
                self.store(out, self.linear(full, node.shape), self.convert(r, acc_dt, dt))
