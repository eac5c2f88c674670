"""Gathers: ``take`` and ``gather`` through an index, the branch-free index
checks that run before the loop nests using them, and embedding_bag as the
CSR loop nest accel-prefetch looks ahead across."""

from __future__ import annotations

from ..graph import DType, Node, shape_numel
from .common import Buffer, _const
from .emitter import EmitterCore


class GatherEmitter(EmitterCore):
    """Indexed loads, index checks and embedding bags."""

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

    def emit_scatter(self, node: Node, out: Buffer) -> None:
        """``out = x``, then one pass over the updates in row-major order,
        each written to (or combined with) the position its indices name."""
        x, upd, *indices = node.inputs
        reduce, mode = node.attrs["reduce"], node.attrs["mode"]
        dt = node.dtype
        with self.nest(node.shape) as idx:
            self.store(out, self.linear(idx, node.shape), self.emit(x, idx))
        code = 0
        if mode != "drop":
            code = len(self.errors) + 1
            self.errors[code] = (node.attrs["error"],
                                 f"index out of range in {node.attrs['what']}")
        with self.nest(upd.shape) as it:
            dest: list[str] = []
            inside: str | None = None
            for d, (kind, a) in enumerate(node.attrs["dest"]):
                if kind == "iter":
                    dest.append(it[a])
                    continue
                v = self.to_i64(self.emit(indices[a], it), indices[a].dtype)
                n = self.dim(x.shape[d])
                if mode == "wrap":
                    neg = self.op(f"icmp slt i64 {v}, 0", "c")
                    v = self.op(f"select i1 {neg}, i64 {self.op(f'add i64 {v}, {n}', 'i')}, "
                                f"i64 {v}", "i")
                ok = self.op(f"icmp ult i64 {v}, {n}", "c")
                if mode == "drop":
                    inside = ok if inside is None else self.op(f"and i1 {inside}, {ok}", "c")
                else:
                    self.fail_if(self.op(f"xor i1 {ok}, true", "c"), code)
                dest.append(v)
            value = self.emit(upd, it)
            off = self.linear(dest, node.shape)

            def write(off: str = off, value: str = value) -> None:
                if reduce == "set":
                    self.store(out, off, value)
                    return
                fn = {"add": "sum", "mul": "prod"}.get(reduce, reduce)
                if dt is DType.bool:  # PyTorch accumulates booleans with "or"/"and"
                    fn = {"sum": "any", "prod": "all", "max": "any", "min": "all"}[fn]
                self.store(out, off, self.combine(fn, dt, self.load(out, off), value))

            if inside is None:
                write()
            else:
                self.when(inside, write)

    # -- index checks -------------------------------------------------------
    def check_indices(self, index: Node, size: object, what: str, wrap: bool = False) -> None:
        """A branch-free scan of ``index`` (a buffer): return an error code when
        any entry is outside ``[0, size)`` (``[-size, size)`` with ``wrap``,
        where a negative index counts from the end)."""
        buf = self.operand_buffer(index, "index operand")
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

    def emit_embedding_bag_prologue(self, node: Node) -> None:
        """What an embedding_bag does before its bags: the checks of its
        offsets and indices and, without the last offset, the bounds array
        (offsets, then ``len(indices)``). A parallel kernel runs it as a step
        of its own, so that the bags' step can be split between threads
        (each reads the bounds, none writes them)."""
        if node.id in self.bag_prologues:
            return
        self.bag_prologues.add(node.id)
        table, indices, offsets = node.inputs[:3]
        bi, bo = self.buffer_of(indices), self.buffer_of(offsets)
        assert bi is not None and bo is not None
        nidx = self.dim(indices.shape[0])
        noff = self.dim(offsets.shape[0])
        self.check_bag_offsets(bo, offsets.dtype, noff, nidx)
        self.check_indices(indices, table.shape[0], "embedding_bag")
        if not node.attrs["last"]:  # bounds = offsets + [len(indices)]
            bounds = self.bag_bounds[node.id]
            with self.loop(noff) as i:
                self.store(bounds, i, self.to_i64(self.load(bo, i), offsets.dtype))
            self.store(bounds, noff, nidx)

    def emit_embedding_bag(self, node: Node, out: Buffer) -> None:
        """``out[b] = sum`` (or mean) of the table rows of bag ``b``; the
        bags are independent, so a parallel kernel splits them between its
        threads (:meth:`par_range`, by the rows gathered)."""
        table, indices, offsets = node.inputs[:3]
        weights = node.inputs[3] if len(node.inputs) > 3 else None
        bt, bi, bo = (self.buffer_of(x) for x in (table, indices, offsets))
        bw = self.buffer_of(weights) if weights is not None else None
        assert bt is not None and bi is not None and bo is not None
        t = node.dtype.llvm
        nidx = self.dim(indices.shape[0])
        d = self.dim(table.shape[1])
        self.emit_embedding_bag_prologue(node)

        bags = self.dim(node.shape[0])
        zero = _const(0, node.dtype)
        bounds, bdt = bo, offsets.dtype
        if not node.attrs["last"]:
            bounds, bdt = self.bag_bounds[node.id], DType.i64
        first, last = self.par_range(bags, shape_numel((indices.shape[0], table.shape[1])))
        with self.loop(last, start=first, hint="bag") as b:
            start = self.to_i64(self.load(bounds, b), bdt)
            b1 = self.op(f"add nsw i64 {b}, 1", "i")
            end = self.to_i64(self.load(bounds, b1), bdt)
            orow = self.imul(b, d)
            with self.loop(d) as k:
                self.store(out, self.iadd(orow, k), zero)
            # Entries equal to padding_idx are left out (and not counted).
            pidx = node.attrs.get("padding_idx", -1)
            kept = self.alloca("i64") if pidx >= 0 else None
            if kept is not None:
                self.line(f"store i64 0, ptr {kept}")
            with self.loop(end, start=start, hint="j") as j:
                row = self.to_i64(self.load(bi, j), indices.dtype)

                def accumulate(j: str = j, row: str = row) -> None:
                    trow = self.imul(row, d)
                    w = self.load(bw, j) if bw is not None else None
                    with self.loop(d) as k:
                        v = self.load(bt, self.iadd(trow, k))
                        if w is not None:
                            v = self.op(f"fmul {t} {v}, {w}")
                        o = self.iadd(orow, k)
                        self.store(out, o, self.op(f"fadd {t} {self.load(out, o)}, {v}"))
                    if kept is not None:
                        n = self.op(f"load i64, ptr {kept}", "i")
                        self.line(f"store i64 {self.op(f'add nsw i64 {n}, 1', 'i')}, ptr {kept}")

                if kept is None:
                    accumulate()
                else:
                    self.when(self.op(f"icmp ne i64 {row}, {pidx}", "c"), accumulate)
            if node.attrs["mode"] == "mean" and kept is not None:
                cnt = self.op(f"load i64, ptr {kept}", "i")
                one = self.call("llvm.smax.i64", "i64", [("i64", cnt), ("i64", "1")])
                fc = self.op(f"sitofp i64 {one} to {t}")
                with self.loop(d) as k:
                    o = self.iadd(orow, k)
                    self.store(out, o, self.op(f"fdiv {t} {self.load(out, o)}, {fc}"))
            elif node.attrs["mode"] == "mean":
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
