"""Graph -> LLVM IR text.

One LLVM function per graph::

    i32 @<name>(ptr inputs..., ptr constants..., ptr outputs..., ptr temps...,
                i64 size-symbols...)

returns 0, or the number of the index check that failed (see
:attr:`Kernel.errors`). Every pointer is ``noalias``: inputs and constants are
only read; outputs and temporaries are freshly allocated by the caller.

Stages inside :func:`generate`:

1. *Fusion.* Nodes are split into materialized nodes (graph inputs/constants,
   outputs, reductions, matmuls, embedding bags, operands that must be
   buffers, and elementwise values used more than once or broadcast) and
   fused nodes. Each materialized node gets one loop nest; fused nodes are
   computed inside the loop nests of their consumers.
2. *Elemental emission* (in the manner of XLA's elemental IR emitter): every
   node is a function from an output index to a value; views (reshape,
   permute, broadcast, slice, select) only remap indices, padding and
   ``concat`` are bounds-checked loads, gathers load through an index.
   Same-shape elementwise chains over contiguous buffers are emitted as one
   flat loop over a linear index. Math calls (exp, erf, tanh, ...) name
   their vector variants in the C library when it has them
   (:mod:`llvmaccel.vecmath`), so these loops vectorize too.
3. *Kernels* with their own loop shape: reductions (kept dims outer, reduced
   dims inner, f32 sums accumulated in f64, in partial sums: the
   accumulator's ``fadd`` is ``reassoc``, the only fast-math flag used),
   matmul (k-blocks of B packed
   into an L1-sized panel, register tiles of C of 8 rows x 2 vectors of the
   host's width held in vector registers across a k-block, explicit
   ``<W x float>`` IR; transposed operands such as ``linear``'s weight read
   in place; dot products vectorized along k for N = 1 and N < W, see
   ``_Emitter.mm_panels`` and ``_Emitter.mm_dot``), and embedding_bag as the
   counted loop nest accel-prefetch recognizes::

       bounds = offsets (include_last_offset), else a temporary
                holding offsets followed by len(indices)
       for b in [0, bags):                      # i64 induction variables
         start = bounds[b]; end = bounds[b+1]   # CSR: tiles of the indices
         out[b, :] = 0
         for j in [start, end):                 # counted, no early exit
           row = indices[j]                     # T[f(B[j])]
           for k in [0, D): out[b, k] += table[row * D + k]

Matmuls of the shape classes where a tuned BLAS wins call its GEMM instead
(:mod:`llvmaccel.blas`; ``Kernel.matmuls`` records each choice). Row
reductions and the loop nests after them that read them at the same row
share one loop over the rows, with one-row temporaries (:mod:`.rows`).

Index inputs in ``check`` mode are validated by a branch-free loop before the
loop nests that use them, so the hot loops have no early exits and never read
out of bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph import DType, Graph, Node, dim_op, shape_numel
from ..target import TargetInfo
from . import common
from .common import _BUFFERS, _KERNELS, _VIEWS, Buffer, CodegenError, Kernel, _root_for_buffer
from .conv import ConvEmitter
from .custom import CustomEmitter
from .elementwise import ElementwiseEmitter, _row_acc_dtype, _rows_first
from .gather import GatherEmitter
from .matmul import _MATMUL_NR_VECTORS, MatmulEmitter, _matmul_source, _matmul_tiling
from .rows import RowEmitter, row_groups, row_local_buffer
from .scan import ScanEmitter

# Re-exported for tests and tools that inspect the tiling.
__all__ = ["Kernel", "generate", "CodegenError", "_MATMUL_NR_VECTORS", "_matmul_tiling"]



class _Emitter(ElementwiseEmitter, MatmulEmitter, GatherEmitter, ConvEmitter, CustomEmitter,
               ScanEmitter, RowEmitter):
    """Builds the body of the entry function: every kind of loop nest."""


def _uses(graph: Graph) -> tuple[dict[int, int], dict[int, bool]]:
    """Effective use counts (through views) and whether a node is broadcast."""
    users: dict[int, list[Node]] = {n.id: [] for n in graph.nodes}
    for n in graph.nodes:
        for i in n.inputs:
            users[i.id].append(n)
    outs = [o.id for o in graph.outputs]
    eff: dict[int, int] = {}
    expanded: dict[int, bool] = {}
    for n in reversed(graph.nodes):
        count = outs.count(n.id)
        exp = False
        for u in users[n.id]:
            if u.op in _VIEWS:
                count += eff[u.id]
                exp = exp or expanded[u.id] or u.op == "broadcast"
            else:
                count += 1
                # A broadcasting elementwise consumer reads each value many times.
                if u.op in ("unary", "binary", "compare", "where", "cast") and \
                        tuple(n.shape) != tuple(u.shape):
                    exp = True
        eff[n.id] = count
        expanded[n.id] = exp
    return eff, expanded


def _pointer_param(name: str, shape: tuple, dtype: DType, readonly: bool) -> str:
    """A buffer parameter. With a static shape it says its size in bytes
    (``dereferenceable``), which lets LLVM speculate loads from it and tells
    accel-prefetch when a gathered-from buffer is small enough to stay in cache."""
    attrs = "noalias readonly" if readonly else "noalias"
    if all(isinstance(d, int) for d in shape):
        nbytes = shape_numel(shape) * dtype.itemsize
        if nbytes > 0:
            attrs += f" dereferenceable({nbytes})"
    return f"ptr {attrs} {name}"


def generate(graph: Graph, name: str = "llvmaccel_main",
             target: TargetInfo | None = None) -> Kernel:
    """LLVM IR for ``graph`` (see the module docstring for the function's
    parameters and the loop shapes), with vector widths and math variants
    for ``target`` (default: this machine, as LLVM sees it)."""
    e = _Emitter(graph, name, target or common.default_target(), host=target is None)
    eff, expanded = _uses(graph)
    params: list[str] = []
    kinputs = [n.id for n in graph.inputs]
    kconsts = sorted(graph.constants)
    for n in graph.inputs:
        p = f"%in{len(params)}"
        params.append(_pointer_param(p, n.shape, n.dtype, readonly=True))
        e.buffers[n.id] = Buffer("input", n.shape, n.dtype, p, n.id)
    for nid in kconsts:
        n = graph.nodes[nid]
        p = f"%const{nid}"
        params.append(_pointer_param(p, n.shape, n.dtype, readonly=True))
        e.buffers[nid] = Buffer("constant", n.shape, n.dtype, p, nid)

    # Which nodes get their own loop nest.
    must: set[int] = set()
    for n in graph.nodes:
        if n.op in _KERNELS:
            must.add(n.id)
        if n.op in ("matmul", "embedding_bag", "conv", "pool"):
            for x in n.inputs:
                must.add(_root_for_buffer(_matmul_source(x)[0] if n.op == "matmul" else x))
        if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap"):
            must.add(_root_for_buffer(n.inputs[1]))
        if n.op == "custom":  # contiguous operands of their own shapes
            must.update(x.id for x in n.inputs)
        cheap = n.op in ("scalar", "iota", "cast") or n.op in _VIEWS or n.op in _BUFFERS
        if not cheap and (eff[n.id] > 1 or expanded[n.id]):
            must.add(n.id)
    for o in graph.outputs:
        must.add(o.id)

    outputs: list[tuple] = []
    temps: list[tuple] = []
    out_params: list[str] = []
    temp_params: list[str] = []
    output_map: list[int] = []
    order = [n for n in graph.nodes if n.id in must and n.id not in e.buffers]
    out_buf_of: dict[int, int] = {}
    for o in graph.outputs:
        if o.id in out_buf_of:
            output_map.append(out_buf_of[o.id])
            continue
        p = f"%out{len(outputs)}"
        out_buf_of[o.id] = len(outputs)
        output_map.append(len(outputs))
        outputs.append((o.shape, o.dtype))
        out_params.append(_pointer_param(p, o.shape, o.dtype, readonly=False))
        if o.id not in e.buffers:
            e.buffers[o.id] = Buffer("output", o.shape, o.dtype, p)
        else:  # an input or constant returned as is: copy it
            order.append(_Copy(o, Buffer("output", o.shape, o.dtype, p)))  # type: ignore[arg-type]
    def scratch(shape: tuple, dtype: DType) -> Buffer:
        p = f"%tmp{len(temps)}"
        temps.append((shape, dtype))
        temp_params.append(_pointer_param(p, shape, dtype, readonly=False))
        return Buffer("temp", shape, dtype, p)

    # Row groups (codegen.rows): loop nests sharing one loop over rows; their
    # temporaries read only inside the group hold one row.
    checked = {_root_for_buffer(n.inputs[1]) for n in graph.nodes
               if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap")}
    groups, row_local = row_groups(graph, order, must, checked,
                                   min_row=2 * max(1, e.target.vector_bytes // 4))
    group_of = {g[0][0].id: g for g in groups}
    grouped = {m.id for g, _ in groups for m in g}
    prefix_len = {m.id: len(p) for g, p in groups for m in g}
    for n in order:
        if isinstance(n, _Copy) or n.id in e.buffers:
            continue
        if n.id in row_local:
            p = prefix_len[n.id]
            e.buffers[n.id] = row_local_buffer(
                scratch((1,) * p + tuple(n.shape[p:]), n.dtype), p)
        else:
            e.buffers[n.id] = scratch(n.shape, n.dtype)
    # embedding_bag without the last offset gets the bounds of its bags as
    # one array of len(offsets) + 1 (offsets, then len(indices)), so that a
    # bag's end is the next bag's start (the CSR shape accel-prefetch looks
    # ahead across).
    for n in graph.nodes:
        if n.op == "embedding_bag" and not n.attrs["last"]:
            e.bag_bounds[n.id] = scratch((dim_op("add", n.inputs[2].shape[0], 1),), DType.i64)
    # Row-wise f32 sums and products accumulate in an f64 row.
    for n in graph.nodes:
        if n.op == "reduce" and _rows_first(n) and _row_acc_dtype(n) is not n.dtype and \
                n.id in must:
            e.reduce_acc[n.id] = scratch(tuple(n.inputs[0].shape[len(n.attrs["axes"]):]),
                                         DType.f64)
    symbols = graph.symbols()
    params += out_params + temp_params + [f"i64 noundef %sym.{s}" for s in symbols]
    e.anchor_symbols(symbols)

    # Index checks of graph inputs first; of computed indices after their nest.
    # Every index of a "check" or "wrap" take/gather is validated before it
    # is used: the loop nests themselves read x[index] unchecked.
    checks: dict[int, list[tuple[Node, object, str, bool]]] = {}
    for n in graph.nodes:
        if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap"):
            idx = n.inputs[1]
            size = n.inputs[0].shape[n.attrs["axis"] if n.op == "take" else n.attrs["dim"]]
            wrap = n.attrs["mode"] == "wrap"
            what = "gather" if n.op == "gather" else \
                "indexing/take" if wrap else "embedding/index_select"
            checks.setdefault(_root_for_buffer(idx), []).append((idx, size, what, wrap))
    for nid in list(checks):
        if nid in kinputs or nid in kconsts:
            for idx, size, what, wrap in checks.pop(nid):
                e.check_indices(idx, size, what, wrap)
    for n in order:
        if isinstance(n, _Copy):
            e.memo = {}
            with e.nest(n.node.shape) as idx:
                e.store(n.out, e.linear(idx, n.node.shape), e.emit(n.node, idx))
            e.check_zero_division()
            continue
        if n.id in group_of:
            members, prefix = group_of[n.id]
            e.materialize_rows(members, prefix)
            e.check_zero_division()
            continue
        if n.id in grouped:  # emitted with its group
            continue
        e.materialize(n, e.buffers[n.id])
        e.check_zero_division()
        for idx, size, what, wrap in checks.pop(n.id, []):
            e.check_indices(idx, size, what, wrap)
    if checks:  # an index that no loop nest materialized: never read unchecked
        raise CodegenError("index checks without a materialized index")
    e.line("ret i32 0")

    lines = [f"; llvmaccel graph {graph.fingerprint()}",
             f"define i32 @{name}({', '.join(params)}) nounwind {{", "entry:"]
    lines += e.allocas + e.prologue + e.body + ["}", ""]
    lines += sorted(e.decls.values())
    if e.vector_variants:  # kept until the loop vectorizer has seen them
        used = ", ".join(f"ptr @{v}" for v in sorted(e.vector_variants))
        lines.append(f"@llvm.compiler.used = appending global [{len(e.vector_variants)} x ptr] "
                     f'[{used}], section "llvm.metadata"')
    return Kernel(ir="\n".join(lines) + "\n", name=name, inputs=kinputs, constants=kconsts,
                  outputs=outputs, temps=temps, symbols=symbols, errors=e.errors,
                  output_map=output_map, links=sorted(set(e.links)),
                  matmuls=e.matmul_choices, uses_blas=e.uses_blas)


@dataclass
class _Copy:
    node: Node
    out: Buffer

    @property
    def id(self) -> int:
        return -1
