"""Control flow: ``scan`` and ``while`` loops and ``switch`` branches
(:meth:`Graph.scan <llvmaccel.graph.Graph.scan>`, ``while_loop``,
``switch``) as real loops and branches of the kernel, not unrolled::

    carry = init                               # the scan's result buffers
    for i in [0, length):                      # one counted i64 loop
      t = reverse ? length - 1 - i : i
      body(consts, carry, xs[t]) -> (next, ys[t])   # the body's loop nests
      carry = next                             # copied, unless passed through

    carry = init
    loop: cond(carry) -> c; if !c goto exit; body(carry) -> next; carry = next

    switch index: branch k writes the results   # index out of range: the last

A region (body, condition, branch) is a :class:`~llvmaccel.graph.Graph` of
its own, emitted by :func:`codegen.emit_graph` with an emitter of its own
over the same function: its inputs are buffers of the outer kernel (the
operands, the carries, a slice of ``xs`` addressed at ``t``), its outputs
are written straight into the results (the ``ys`` slice at ``t``, a branch's
results) or into a next-carry buffer. Its temporaries are allocated once by
the caller, outside every loop; nested loops nest their code the same way.

Multi-valued nodes (these and ``sort``) have no buffer of their own: each
value is a ``result`` node with a buffer, written when the node is emitted.
"""

from __future__ import annotations

from ..graph import DType, Node, Region, shape_numel
from .common import Buffer, CodegenError
from .emitter import EmitterCore

MULTI_VALUED = frozenset({"scan", "while", "switch", "sort"})
# What a region's emitter has of its own: the graph and what is keyed by its
# node ids, and the names of its blocks.
_REGION_LOCAL = frozenset({"g", "buffers", "memo", "bag_bounds", "bag_prologues", "reduce_acc",
                           "label_scope", "label_prefix"})


class ControlEmitter(EmitterCore):
    def emit_multi(self, node: Node) -> None:
        """Emits a multi-valued node, writing the buffers of its results."""
        self.memo = {}
        self.label_prefix = f"{self.label_scope}n{node.id}."
        try:
            if node.op == "scan":
                self.emit_scan(node)
            elif node.op == "while":
                self.emit_while(node)
            elif node.op == "switch":
                self.emit_switch(node)
            elif node.op == "sort":
                self.emit_sort(node)  # type: ignore[attr-defined]
            else:
                raise CodegenError(f"no loop nest for {node.op}")
        finally:
            self.memo = {}
            self.label_prefix = ""

    # -- helpers ------------------------------------------------------------
    def results_of(self, node: Node) -> list[Buffer]:
        """The buffers of the results of multi-valued ``node``, in order."""
        found: dict[int, Buffer] = {}
        for n in self.g.nodes[node.id + 1:]:
            if n.op == "result" and n.inputs[0] is node:
                found[n.attrs["index"]] = self.buffers[n.id]
        return [found[k] for k in range(len(found))]

    def operand(self, node: Node) -> Buffer:
        buf = self.buffers.get(node.id)
        if buf is None:
            raise CodegenError(f"operand %{node.id} of a region is not materialized")
        return buf

    def copy_buffer(self, dst: Buffer, src: Buffer) -> None:
        """``dst[:] = src[:]`` (one flat loop; LLVM makes it a memcpy; in
        the SPMD body, the first copy of a step may be chunked)."""
        n = shape_numel(dst.shape)
        begin, end = self.par_range(self.dim(n), n)
        with self.loop(end, start=begin, hint="c") as j:
            self.store(dst, j, self.load(src, j))

    def copy_buffers(self, pairs: list[tuple[Buffer, Buffer]]) -> None:
        """``dst[:] = src[:]`` for every ``(dst, src)`` pair, as one step."""
        if pairs:
            from .parallel import small_work

            self.step(lambda: [self.copy_buffer(d, s) for d, s in pairs],
                      all(small_work(shape_numel(d.shape)) for d, _ in pairs))

    def at(self, buf: Buffer, t: str, shape: tuple) -> Buffer:
        """The slice ``buf[t]`` of shape ``shape`` (a view at an offset)."""
        off = self.imul(t, self.dim(shape_numel(shape)))
        return Buffer("temp", tuple(shape), buf.dtype, self.gep(buf, off))

    def run_region(self, region: Region, ins: list[Buffer], outs: list[Buffer]) -> None:
        """Emits ``region`` here: input ``k`` read from ``ins[k]``, output
        ``k`` written to ``outs[k]``."""
        from . import emit_graph

        graph = region.graph
        child = object.__new__(type(self))
        child.__dict__.update(self.__dict__)  # the same function: lists shared
        child.g = graph
        child.buffers, child.memo, child.bag_bounds, child.reduce_acc = {}, {}, {}, {}
        child.bag_prologues = set()
        child.label_scope, child.label_prefix = self.label_prefix, ""
        for n, buf in zip(graph.inputs, ins, strict=True):
            child.buffers[n.id] = Buffer(buf.kind, tuple(n.shape), n.dtype, buf.param, n.id)
        emit_graph(child, graph, outs)
        # Back to this emitter: the state of the function (the SSA counter,
        # the current block, flags such as the zero-division one); lists and
        # dicts were shared all along.
        for key, value in child.__dict__.items():
            if key not in _REGION_LOCAL:
                setattr(self, key, value)
        self.memo = {}

    def _carried(self, body: Region, first: int, carries: list[Buffer]) -> list[Buffer]:
        """Where the body writes its new carries: a buffer of their own, or
        the carry itself when the body passes it through unchanged."""
        g = body.graph
        return [c if g.outputs[k] is g.inputs[first + k] else self.scratch(c.shape, c.dtype)
                for k, c in enumerate(carries)]

    def _update(self, carries: list[Buffer], nexts: list[Buffer]) -> None:
        self.copy_buffers([(c, n) for c, n in zip(carries, nexts, strict=True) if n is not c])

    # -- loops and branches ------------------------------------------------
    def emit_scan(self, node: Node) -> None:
        a = node.attrs
        body: Region = a["body"]
        nc, nk, nx = a["n_consts"], a["n_carry"], a["n_xs"]
        ops = [self.operand(x) for x in node.inputs]
        consts, init, xs, lifted = ops[:nc], ops[nc:nc + nk], ops[nc + nk:nc + nk + nx], \
            ops[nc + nk + nx:]
        res = self.results_of(node)
        carries, ys = res[:nk], res[nk:]
        self.copy_buffers(list(zip(carries, init, strict=True)))
        nexts = self._carried(body, nc, carries)
        n = self.dim(a["length"])
        # In the SPMD body every thread runs the loop (its counter is its
        # own) and the body's loop nests are steps, run in rounds.
        self.par_barrier()
        with self.loop(n, hint="t") as i, self.par_loop():
            t = i
            if a["reverse"]:
                t = self.op(f"sub nsw i64 {self.op(f'sub nsw i64 {n}, 1', 't')}, {i}", "t")
            xin = [self.at(b, t, tuple(x.shape[1:])) for b, x in zip(xs, node.inputs[nc + nk:],
                                                                      strict=False)]
            yout = [self.at(b, t, tuple(b.shape[1:])) for b in ys]
            self.run_region(body, consts + carries + xin + lifted, nexts + yout)
            self._update(carries, nexts)

    def emit_while(self, node: Node) -> None:
        a = node.attrs
        cond: Region = a["cond"]
        body: Region = a["body"]
        ncc, nbc, nk, ncl = a["n_cconsts"], a["n_bconsts"], a["n_carry"], a["n_clift"]
        ops = [self.operand(x) for x in node.inputs]
        cconsts, bconsts = ops[:ncc], ops[ncc:ncc + nbc]
        init = ops[ncc + nbc:ncc + nbc + nk]
        rest = ops[ncc + nbc + nk:]
        clift, blift = rest[:ncl], rest[ncl:]
        carries = self.results_of(node)
        self.copy_buffers(list(zip(carries, init, strict=True)))
        nexts = self._carried(body, nbc, carries)
        flag = self.scratch((), DType.bool)
        head, loop, done = self.label("while"), self.label("do"), self.label("wend")
        # In the SPMD body (a while loop at the kernel's top level) every
        # thread runs the loop: the condition's and the body's nests are
        # steps in rounds, and each round's decision is published once
        # (EmitterCore.par_decide); the iteration ends once its steps are
        # done.
        self.par_barrier()
        self.par_loops += 1
        self.br(head)
        self.start_block(head)
        self.run_region(cond, cconsts + carries + clift, [flag])
        go = self.par_decide(lambda: self.load(flag, "0"))
        self.line(f"br i1 {go}, label %{loop}, label %{done}")
        self.start_block(loop)
        self.run_region(body, bconsts + carries + blift, nexts)
        self._update(carries, nexts)
        self.par_barrier()
        self.br(head)
        self.par_loops -= 1
        self.start_block(done)
        self.memo = {}

    def emit_switch(self, node: Node) -> None:
        a = node.attrs
        branches: tuple[Region, ...] = a["branches"]
        nops = a["n_ops"]
        ops = [self.operand(x) for x in node.inputs]
        index, operands, lifted = ops[0], ops[1:1 + nops], ops[1 + nops:]
        res = self.results_of(node)
        # In the SPMD body (a switch at the kernel's top level) every thread
        # reads the index once the steps before are done; nothing rewrites
        # it later (it is read outside every step, so memplan gives it a
        # buffer of its own), so every thread takes the same branch, whose
        # nests are steps; each branch ends with a barrier.
        self.par_barrier()
        k = self.load(index, "0")
        labels = [self.label("case") for _ in branches]
        join = self.label("endswitch")
        cases = " ".join(f"i64 {j}, label %{lab}" for j, lab in enumerate(labels[:-1]))
        # Out of range: the last branch, as XLA's conditional.
        self.line(f"switch i64 {k}, label %{labels[-1]} [ {cases} ]")
        start = 0
        for br, lab, count in zip(branches, labels, a["n_lifts"], strict=True):
            self.start_block(lab)
            self.run_region(br, operands + lifted[start:start + count], res)
            self.par_barrier()
            start += count
            self.br(join)
        self.start_block(join)
        self.memo = {}
