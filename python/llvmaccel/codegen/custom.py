"""Loop nests of custom ops (:mod:`llvmaccel.custom_ops`): a call to the op's
body, linked into the kernel's module and inlined, so the passes see its
loops beside the loops of the ops around it."""

from __future__ import annotations

from ..graph import Node
from .common import Buffer, CodegenError
from .emitter import EmitterCore


class CustomEmitter(EmitterCore):
    def emit_custom(self, node: Node, out: Buffer) -> None:
        """``call void @body(ptr inputs..., ptr out, i64 sizes...)``: every
        input is a contiguous buffer of its declared shape (the caller
        materializes views), the output is written whole by the body. A body
        returning i32 fails the kernel (ValueError) when it returns nonzero."""
        fn = node.attrs["function"]
        if node.attrs["checks"]:  # sizes the signature relates, not provably equal
            code = len(self.errors) + 1
            self.errors[code] = ("ValueError", f"{node.attrs['op']}: the arguments' sizes do "
                                 "not fit the signature")
            bad = "false"
            for a, b in node.attrs["checks"]:
                ne = self.op(f"icmp ne i64 {self.dim(a)}, {self.dim(b)}", "c")
                bad = self.op(f"or i1 {bad}, {ne}", "c")
            self.fail_if(bad, code)
        ptrs = []
        for x in node.inputs:
            b = self.buffers.get(x.id)
            if b is None:
                raise CodegenError(f"custom op {node.attrs['op']}: operand %{x.id} has no buffer")
            ptrs.append(f"ptr {b.param}")
        ptrs.append(f"ptr {out.param}")
        sizes = [f"i64 {self.dim(d)}" for d in node.attrs["sizes"]]
        types = ", ".join(["ptr"] * len(ptrs) + ["i64"] * len(sizes))
        self.links.append((fn, node.attrs["op"]))
        if node.attrs["error"] is None:
            self.decls[fn] = f"declare void @{fn}({types})"
            self.line(f"call void @{fn}({', '.join(ptrs + sizes)})")
            return
        # An i32 body: nonzero means it rejected its arguments.
        self.decls[fn] = f"declare i32 @{fn}({types})"
        rc = self.op(f"call i32 @{fn}({', '.join(ptrs + sizes)})", "rc")
        code = len(self.errors) + 1
        self.errors[code] = ("ValueError", f"{node.attrs['op']}: {node.attrs['error']}")
        self.fail_if(self.op(f"icmp ne i32 {rc}, 0", "c"), code)
