"""The loop nest of ``sort`` (:meth:`Graph.sort <llvmaccel.graph.Graph.sort>`):
a stable bottom-up merge sort of each row, O(n log n), general over the
sorted dim by iterating the others::

    for every index of the other dims:           # base = offset of the row
      perm[j] = j                                # a permutation of the row
      for (w = 1; w < n; w *= 2):                # runs of w, merged pairwise
        for each pair of runs [lo, mid), [mid, hi):
          merge src -> dst: the right one first only when strictly less
        swap(src, dst)
      out_k[base + j * stride] = x_k[base + src[j] * stride]   # every operand

The order compares the keys (the first ``num_keys`` operands)
lexicographically; floats as numpy, PyTorch and JAX sort them (NaN after
every number, -0.0 equal to 0.0), or in IEEE 754's total order (``lax.top_k``);
``descending`` reverses it (NaN first).
Reads go through the permutation, so any number of operands ride along (the
indices of ``argsort`` and ``topk`` are an iota operand).
"""

from __future__ import annotations

from ..graph import DType, Node, shape_numel
from .common import Buffer
from .emitter import EmitterCore


class SortEmitter(EmitterCore):
    def sort_lt(self, dt: DType, a: str, b: str, total: bool = False) -> str:
        """``a < b`` in the sort order of ``dt``: for floats, NaN largest and
        -0.0 == 0.0, or with ``total`` IEEE 754's totalOrder (the bits as a
        sign-magnitude integer: -NaN < -inf < -0.0 < 0.0 < inf < NaN)."""
        if dt.is_float and total:
            bits = dt.itemsize * 8
            it = f"i{bits}"
            keys = []
            for v in (a, b):
                s = self.op(f"bitcast {dt.llvm} {v} to {it}", "k")
                neg = self.op(f"lshr {it} {self.op(f'ashr {it} {s}, {bits - 1}', 'k')}, 1", "k")
                keys.append(self.op(f"xor {it} {s}, {neg}", "k"))
            return self.op(f"icmp slt {it} {keys[0]}, {keys[1]}", "b")
        if dt.is_float:
            t = dt.llvm
            lt = self.op(f"fcmp olt {t} {a}, {b}", "b")
            num = self.op(f"fcmp ord {t} {a}, {a}", "b")
            nan = self.op(f"fcmp uno {t} {b}, {b}", "b")
            return self.op(f"or i1 {lt}, {self.op(f'and i1 {num}, {nan}', 'b')}", "b")
        return self.compare("lt", dt, a, b)  # type: ignore[attr-defined]

    def sort_less(self, node: Node, keys: list[Buffer], base: str, stride: str,
                  pa: str, pb: str) -> str:
        """Whether row element ``pa`` sorts strictly before ``pb``."""
        if node.attrs["descending"]:
            pa, pb = pb, pa
        oa = self.iadd(base, self.imul(pa, stride))
        ob = self.iadd(base, self.imul(pb, stride))
        total = node.attrs.get("total_order", False)
        result = None
        for buf in reversed(keys):  # less = lt0 | (!gt0 & (lt1 | (!gt1 & ...)))
            a, b = self.load(buf, oa), self.load(buf, ob)
            lt = self.sort_lt(buf.dtype, a, b, total)
            if result is None:
                result = lt
                continue
            ngt = self.op(f"xor i1 {self.sort_lt(buf.dtype, b, a, total)}, true", "b")
            result = self.op(f"or i1 {lt}, {self.op(f'and i1 {ngt}, {result}', 'b')}", "b")
        assert result is not None
        return result

    def emit_sort(self, node: Node) -> None:
        ops = node.inputs
        bufs = [self.operand(x) for x in ops]  # type: ignore[attr-defined]
        res = self.results_of(node)  # type: ignore[attr-defined]
        d = node.attrs["dim"]
        keys = bufs[:node.attrs["num_keys"]]
        shape = tuple(ops[0].shape)
        n = self.dim(shape[d])
        stride = self.dim(shape_numel(shape[d + 1:]))
        i64 = DType.i64
        perm = self.scratch((shape[d],), i64)
        spare = self.scratch((shape[d],), i64)
        src_p, dst_p, w_p = self.alloca("ptr"), self.alloca("ptr"), self.alloca("i64")
        lo_p, hi_p = self.alloca("i64"), self.alloca("i64")

        def row(p: str) -> Buffer:
            return Buffer("temp", (shape[d],), i64, p)

        outer = [k for k in range(len(shape)) if k != d]
        with self.nest(tuple(shape[k] for k in outer)) as oidx:
            full = ["0"] * len(shape)
            for k, i in zip(outer, oidx, strict=True):
                full[k] = i
            base = self.linear(full, shape)
            with self.loop(n, hint="j") as j:
                self.store(perm, j, j)
            self.line(f"store ptr {perm.param}, ptr {src_p}")
            self.line(f"store ptr {spare.param}, ptr {dst_p}")
            self.line(f"store i64 1, ptr {w_p}")
            head, body, done = self.label("runs"), self.label("merge"), self.label("sorted")
            self.br(head)
            self.start_block(head)
            w = self.op(f"load i64, ptr {w_p}", "w")
            self.line(f"br i1 {self.op(f'icmp slt i64 {w}, {n}', 'c')}, label %{body}, "
                      f"label %{done}")
            self.start_block(body)
            s = self.op(f"load ptr, ptr {src_p}", "s")
            t = self.op(f"load ptr, ptr {dst_p}", "s")
            src, dst = row(s), row(t)
            w2 = self.op(f"shl nsw i64 {w}, 1", "w")
            # ceil(n / w2) pairs of runs (n >= 2 here: w < n)
            nm1 = self.op(f"sub nsw i64 {n}, 1", "w")
            pairs = self.op(f"add nsw i64 {self.op(f'udiv i64 {nm1}, {w2}', 'w')}, 1", "w")
            with self.loop(pairs, hint="q") as q:
                lo = self.imul(q, w2)
                mid = self.smin(self.iadd(lo, w), n)
                hi = self.smin(self.iadd(lo, w2), n)
                last = self.op(f"sub nsw i64 {hi}, 1", "h")
                self.line(f"store i64 {lo}, ptr {lo_p}")
                self.line(f"store i64 {mid}, ptr {hi_p}")
                with self.loop(hi, start=lo, hint="k") as k:
                    a = self.op(f"load i64, ptr {lo_p}", "a")
                    b = self.op(f"load i64, ptr {hi_p}", "b")
                    pa = self.load(src, self.smin(a, last))
                    pb = self.load(src, self.smin(b, last))
                    left = self.op(f"icmp slt i64 {a}, {mid}", "c")
                    right = self.op(f"icmp slt i64 {b}, {hi}", "c")
                    before = self.sort_less(node, keys, base, stride, pb, pa)
                    nleft = self.op(f"xor i1 {left}, true", "c")
                    pick = self.op(f"and i1 {right}, {self.op(f'or i1 {nleft}, {before}', 'c')}",
                                   "c")
                    self.store(dst, k, self.op(f"select i1 {pick}, i64 {pb}, i64 {pa}", "p"))
                    a1 = self.op(f"add nsw i64 {a}, 1", "a")
                    b1 = self.op(f"add nsw i64 {b}, 1", "b")
                    self.line(f"store i64 {self.op(f'select i1 {pick}, i64 {a}, i64 {a1}', 'a')}"
                              f", ptr {lo_p}")
                    self.line(f"store i64 {self.op(f'select i1 {pick}, i64 {b1}, i64 {b}', 'b')}"
                              f", ptr {hi_p}")
            self.line(f"store ptr {t}, ptr {src_p}")
            self.line(f"store ptr {s}, ptr {dst_p}")
            self.line(f"store i64 {w2}, ptr {w_p}")
            self.br(head)
            self.start_block(done)
            final = row(self.op(f"load ptr, ptr {src_p}", "s"))
            with self.loop(n, hint="j") as j:
                p = self.load(final, j)
                at = self.iadd(base, self.imul(j, stride))
                src_at = self.iadd(base, self.imul(p, stride))
                for x, out in zip(bufs, res, strict=True):
                    self.store(out, at, self.load(x, src_at))

    def smin(self, a: str, b: str) -> str:
        self.declare("llvm.smin.i64", "i64", ["i64", "i64"])
        return self.op(f"call i64 @llvm.smin.i64(i64 {a}, i64 {b})", "m")
