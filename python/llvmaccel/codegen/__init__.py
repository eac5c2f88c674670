"""Graph -> LLVM IR text.

One LLVM function per graph::

    i32 @<name>(ptr inputs..., ptr constants..., ptr outputs..., ptr temps...,
                i64 size-symbols...)

returns 0, or the number of the index check that failed (see
:attr:`Kernel.errors`). Every pointer is ``noalias``: inputs and constants are
only read; outputs and temporaries are freshly allocated by the caller.
Temporaries whose lifetimes do not overlap share one parameter (a *slot*,
``%slotN``, see :mod:`.memplan`; ``Kernel.temps`` lists the parameters).

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
   host's width (6 x 2 with 16 registers, 4 x 4 vectors on AVX-512 for wide
   products) held in vector registers across a k-block, explicit
   ``<W x float>`` IR; transposed operands such as ``linear``'s weight read
   in place; dot products vectorized along k for N = 1 and N < W; a few
   rows of A times a large B contiguous along j, such as a decode step's
   ``h @ W``, stream B row after row into an L1 block of C, see
   ``_Emitter.mm_panels``, ``_Emitter.mm_dot`` and ``_Emitter.mm_rows``),
   and embedding_bag as the
   counted loop nest accel-prefetch recognizes::

       bounds = offsets (include_last_offset), else a temporary
                holding offsets followed by len(indices)
       for b in [0, bags):                      # i64 induction variables
         start = bounds[b]; end = bounds[b+1]   # CSR: tiles of the indices
         out[b, :] = 0
         for j in [start, end):                 # counted, no early exit
           row = indices[j]                     # T[f(B[j])]
           for k in [0, D): out[b, k] += table[row * D + k]

4. *Regions and multi-valued nodes*: ``scan``, ``while`` and ``switch`` run
   sub-graphs as real loops and branches (:mod:`.control`; each region is
   emitted by :func:`emit_graph` with an emitter of its own over the same
   function, its temporaries allocated here, once), ``sort`` sorts rows
   (:mod:`.sort`); their values are ``result`` nodes with buffers of their own.

A softmax of a matmul's scores by a second matmul (attention: PyTorch's
decomposed ``scaled_dot_product_attention``, the explicit ``softmax(q @
k^T * scale) @ v``) is one loop nest over blocks of query rows that writes
only the output (:mod:`.attention`; ``Kernel.attention`` records each
choice).

Matmuls of the shape classes where a tuned BLAS wins call its GEMM instead
(:mod:`llvmaccel.blas`; ``Kernel.matmuls`` records each choice). An f32
matmul of casts of bf16 values reads the bf16 values on targets with a bf16
dot product (:mod:`.matmul_bf16`). Row
reductions and the loop nests after them that read them at the same row
share one loop over the rows, with one-row temporaries (:mod:`.rows`).

Index inputs in ``check`` mode are validated by a branch-free loop before the
loop nests that use them, so the hot loops have no early exits and never read
out of bounds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..graph import DType, Graph, Node, dim_op, shape_numel
from ..target import TargetInfo
from . import common, memplan, parallel
from .attention import AttentionEmitter, find_attention, tile_sources
from .common import (
    _BUFFERS,
    _KERNELS,
    _VIEWS,
    Buffer,
    CodegenError,
    Kernel,
    _root_for_buffer,
    buffered_reads,
    number_loop_metadata,
)
from .control import MULTI_VALUED, ControlEmitter
from .conv import ConvEmitter, conv_operands
from .custom import CustomEmitter
from .elementwise import ElementwiseEmitter, _row_acc_dtype, _rows_first, calls_math
from .gather import GatherEmitter
from .matmul import _MATMUL_NR_VECTORS, MatmulEmitter, _matmul_tiling, matmul_operands
from .rows import RowEmitter, row_groups, row_local_buffer
from .scan import ScanEmitter
from .sort import SortEmitter

# Re-exported for tests and tools that inspect the tiling.
__all__ = ["Kernel", "generate", "CodegenError", "_MATMUL_NR_VECTORS", "_matmul_tiling"]



class _Emitter(AttentionEmitter, ElementwiseEmitter, ConvEmitter, MatmulEmitter, GatherEmitter,
               CustomEmitter, ScanEmitter, ControlEmitter, SortEmitter, RowEmitter):
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
                if u.op in ("unary", "binary", "compare", "where", "cast", "bitcast") and \
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


def _state_extents(e: _Emitter, buffers: list[Buffer]) -> None:
    """States the size in bytes of each buffer of a symbolic shape at entry,
    as an ``llvm.assume`` "dereferenceable" bundle (static shapes say it in
    the parameter's ``dereferenceable``). Passes may then read what a bounds
    check guards without proving it themselves: accel-masked-load clamps a
    fill-mode gather's index into ``[0, n)`` only where ``x`` holds ``n``
    elements. The caller allocates and checks these sizes (CompiledGraph.bind).
    LLVM takes bundles of a non-constant size from release 22 on."""
    from ..pipeline import llvm_version

    if int(llvm_version().split(".")[0]) < 22:
        return
    seen: set[str] = set()
    for b in buffers:
        if b.param in seen or all(isinstance(d, int) for d in b.shape):
            continue
        seen.add(b.param)
        nbytes: object = b.dtype.itemsize
        for d in b.shape:
            nbytes = dim_op("mul", nbytes, d)  # type: ignore[arg-type]
        e.prologue.append(f'  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr '
                          f"{b.param}, i64 {e.dim(nbytes)}) ]")
        e.declare("llvm.assume", "void", ["i1"])


def generate(graph: Graph, name: str = "llvmaccel_main",
             target: TargetInfo | None = None, threads: bool = True) -> Kernel:
    """LLVM IR for ``graph`` (see the module docstring for the function's
    parameters and the loop shapes), with vector widths and math variants
    for ``target`` (default: this machine, as LLVM sees it). For this
    machine, a graph with loop nests that may be worth several threads also
    gets an SPMD body, chosen per call (:mod:`.parallel`; ``threads=False``:
    the single-threaded kernel alone)."""
    host = target is None
    tgt = target or common.default_target()
    if host and threads and parallel.candidate(graph):
        cap = parallel.max_threads()
        serial = _emit_function(graph, f"{name}.serial", tgt, host, cap=cap)
        spmd = _emit_function(graph, f"{name}.spmd", tgt, host, cap=cap, spmd=True,
                              replay=serial.scratches)
        if spmd.e.par_work:
            assert spmd.e.errors == serial.e.errors and spmd.temps == serial.temps
            serial, spmd = _share_temps([serial, spmd])
            return _kernel(graph, name, serial, parallel.dispatch(
                graph, name, tgt, serial, spmd, cap))
    (made,) = _share_temps([_emit_function(graph, name, tgt, host)])
    return _kernel(graph, name, made, made.lines)


def _share_temps(fns: list[_Function]) -> list[_Function]:
    """The functions of one kernel with their temporaries packed into shared
    buffers where their lifetimes allow (:mod:`.memplan`)."""
    uses = [memplan.uses(f.e.allocas + f.e.prologue + [b for b in f.e.body if b], f.e.spmd)
            for f in fns]
    made = memplan.plan(fns[0].temps, uses)
    if not made.shares:
        return fns
    return [_assemble(f, made) for f in fns]


@dataclass
class _Function:
    """One emitted function over the kernel's parameters."""

    e: _Emitter
    params: list[str]  # the parameters as written in the define
    lines: list[str]  # the function, and the declarations it needs
    outputs: list[tuple]
    temps: list[tuple]  # (shape, dtype) of each temporary's parameter
    scratches: list[Buffer]
    output_map: list[int]
    kinputs: list[int]
    kconsts: list[int]
    symbols: list[str]
    name: str
    fingerprint: str
    # The parameters by kind (params is their concatenation).
    buffer_params: list[str]  # inputs, constants, outputs
    temp_params: list[str]  # one per temporary
    symbol_params: list[str]


def _kernel(graph: Graph, name: str, f: _Function, lines: list[str]) -> Kernel:
    e = f.e
    return Kernel(ir="\n".join(number_loop_metadata(lines)) + "\n", name=name,
                  inputs=f.kinputs, constants=f.kconsts,
                  outputs=f.outputs, temps=f.temps, symbols=f.symbols, errors=e.errors,
                  output_map=f.output_map, links=sorted(set(e.links)),
                  matmuls=e.matmul_choices, attention=e.attention_choices,
                  uses_blas=e.uses_blas,
                  parallel=lines is not f.lines)


def _emit_function(graph: Graph, name: str, target: TargetInfo, host: bool, cap: int = 1,
                   spmd: bool = False, replay: list[Buffer] | None = None) -> _Function:
    """The function ``name`` computing ``graph``: the kernel's entry, or
    (``spmd``) the body every thread of a parallel kernel runs, whose
    temporaries are those of ``replay`` (the serial function's, allocated
    in the same order). ``cap``: the most threads the kernel runs with (its
    row-local temporaries have one row per thread)."""
    e = _Emitter(graph, name, target, host=host)
    e.spmd = spmd
    e.par_cap = cap
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

    outputs: list[tuple] = []
    temps: list[tuple] = []
    out_params: list[str] = []
    temp_params: list[str] = []
    output_map: list[int] = []
    out_bufs: list[Buffer] = []  # per graph output (a value returned twice: twice)
    kernel_bufs: list[Buffer] = []  # per output parameter of the kernel
    out_buf_of: dict[int, int] = {}
    for o in graph.outputs:
        if o.id in out_buf_of:
            output_map.append(out_buf_of[o.id])
            out_bufs.append(kernel_bufs[out_buf_of[o.id]])
            continue
        p = f"%out{len(outputs)}"
        out_buf_of[o.id] = len(outputs)
        output_map.append(len(outputs))
        outputs.append((o.shape, o.dtype))
        out_params.append(_pointer_param(p, o.shape, o.dtype, readonly=False))
        kernel_bufs.append(Buffer("output", o.shape, o.dtype, p))
        out_bufs.append(kernel_bufs[-1])

    scratches: list[Buffer] = []

    def scratch(shape: tuple, dtype: DType) -> Buffer:
        p = f"%tmp{len(temps)}"
        if replay is not None:  # the same temporaries, in the same order
            old = replay[len(temps)]
            assert old.param == p and tuple(old.shape) == tuple(shape) and old.dtype is dtype
        temps.append((shape, dtype))
        temp_params.append(_pointer_param(p, shape, dtype, readonly=False))
        scratches.append(Buffer("temp", shape, dtype, p))
        return scratches[-1]

    # Loop bodies and branches (codegen.control) take their temporaries from
    # here too: allocated once by the caller, outside every loop.
    e.scratch = scratch
    if spmd:
        # A team has a thread at least; saying so (umax) lets SCEV expand the
        # chunk bounds, which divide by the chunk count, before a loop: the
        # trip count accel-prefetch clamps a look-ahead across the loop to.
        e.declare("llvm.umax.i64", "i64", ["i64", "i64"])
        e.prologue += [f"  %par.n = mul nuw i64 %par.nth, {parallel.CHUNKS_PER_THREAD}",
                       "  %par.chunks = call i64 @llvm.umax.i64(i64 %par.n, i64 1)"]
    symbols = graph.symbols()
    e.anchor_symbols(symbols)
    emit_graph(e, graph, out_bufs)
    _state_extents(e, [*(e.buffers[n.id] for n in graph.inputs),
                       *(e.buffers[nid] for nid in kconsts), *out_bufs, *scratches])
    e.par_flush()
    e.line("ret i32 0")
    f = _Function(e, [], [], outputs, temps, scratches, output_map, kinputs, kconsts, symbols,
                  name=name, fingerprint=graph.fingerprint(),
                  buffer_params=params + out_params, temp_params=temp_params,
                  symbol_params=[f"i64 noundef %sym.{s}" for s in symbols])
    return _assemble(f)


def _assemble(f: _Function, plan: memplan.Plan | None = None) -> _Function:
    """``f`` with its define and lines written; with ``plan``, each slot of
    temporaries one parameter, those of a shared slot addresses in it."""
    e = f.e
    temp_params, temps, prologue = f.temp_params, f.temps, e.prologue
    if plan is not None:
        temp_params, temps, prologue = [], [], []
        for s, members in enumerate(plan.members):
            spec = memplan.slot_spec(plan, s, f.temps)
            temps.append(spec)
            if len(members) == 1:
                temp_params.append(f.temp_params[members[0]])
                continue
            temp_params.append(_pointer_param(f"%slot{s}", *spec, readonly=False))
            prologue += [f"  %tmp{t} = getelementptr inbounds i8, ptr %slot{s}, i64 0"
                         for t in members]
        prologue += e.prologue
    params = f.buffer_params + temp_params + f.symbol_params
    head = params
    if e.spmd:
        # Every thread gets the same pointers: no noalias (other threads
        # write through them, between barriers). The buffers are distinct
        # all the same: the JIT's pipeline gives their accesses alias scopes
        # (llvmaccel-distinct-buffers, bindings/Core.cpp).
        head = [p.replace("noalias ", "").replace("ptr noalias", "ptr") for p in params] + \
            ["i64 %par.tid", "i64 %par.nth", "ptr %par.team"]
    linkage = "internal " if e.par_cap > 1 else ""
    # The SPMD body stays a function of its own (noinline): its parameters
    # keep their dereferenceable sizes, which accel-prefetch reads (inlined
    # into the task, they would be loads from the argument struct).
    attrs = 'nounwind noinline "llvmaccel-distinct-buffers"' if e.spmd else "nounwind"
    if wide := e.target.function_attributes():  # the widest vectors (see llvmaccel.target)
        attrs += " " + wide
    lines = [f"; llvmaccel graph {f.fingerprint}",
             f"define {linkage}i32 @{f.name}({', '.join(head)}) {attrs} {{", "entry:"]
    lines += e.allocas + prologue + [b for b in e.body if b] + ["}", ""]
    lines += sorted(e.decls.values())
    if e.vector_variants:  # kept until the loop vectorizer has seen them
        used = ", ".join(f"ptr @{v}" for v in sorted(e.vector_variants))
        lines.append(f"@llvm.compiler.used = appending global [{len(e.vector_variants)} x ptr] "
                     f'[{used}], section "llvm.metadata"')
    return dataclasses.replace(f, params=params, lines=lines, temps=temps)


def _materialized(graph: Graph, target: TargetInfo, fused: frozenset[int] = frozenset(),
                  attention: frozenset[int] = frozenset()) -> set[int]:
    """The nodes of ``graph`` that get their own loop nest (and a buffer) on
    ``target`` (a matmul's operands are buffers: the f32 casts of bf16
    values, or the bf16 values, see codegen.matmul_bf16). ``fused``: nodes
    computed inside another node's loop nest alone (a fused attention's
    scores and softmax, see codegen.attention), never materialized;
    ``attention``: the matmuls whose nests are fused attentions (they read
    their operands' buffers as they are: a broadcast of V is one)."""
    eff, expanded = _uses(graph)
    must: set[int] = set()
    for n in graph.nodes:
        if n.op in _KERNELS:
            must.add(n.id)
        if n.op == "matmul":
            own_kernel = n.id not in attention and n.id not in fused
            for src, _ in matmul_operands(n, target, own_kernel)[:2]:
                must.add(_root_for_buffer(src))  # type: ignore[arg-type]
        if n.op == "conv":  # its input and weights maybe as bf16 (codegen.conv)
            x, w, _ = conv_operands(n, target)
            for src in (x, w, *n.inputs[2:]):
                must.add(_root_for_buffer(src))
        if n.op in ("embedding_bag", "pool", "col2im", "im2col"):
            for x in n.inputs:
                must.add(_root_for_buffer(x))
        if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap"):
            must.add(_root_for_buffer(n.inputs[1]))
        if n.op == "custom" or n.op in MULTI_VALUED:  # contiguous operands of their own shapes
            must.update(x.id for x in n.inputs)
        if n.op in MULTI_VALUED or n.op == "result":
            must.add(n.id)
        cheap = n.op in ("scalar", "iota", "cast", "bitcast") or n.op in _VIEWS or \
            n.op in _BUFFERS
        if not cheap and (eff[n.id] > 1 or expanded[n.id]):
            must.add(n.id)
    for o in graph.outputs:
        must.add(o.id)
    return must - fused


def emit_graph(e: _Emitter, graph: Graph, out_bufs: list[Buffer]) -> None:
    """Emits the loop nests of ``graph`` into ``e``: its inputs and constants
    are in ``e.buffers`` already, output ``k`` is written to ``out_bufs[k]``,
    temporaries come from ``e.scratch``. The kernel's own graph, and the body
    of a loop or a branch (:mod:`codegen.control`, with an emitter of its own
    over the same function) alike."""
    # Fused attentions (codegen.attention): the product by V's loop nest
    # computes the scores and the softmax, which get no buffers.
    plans, choices = find_attention(graph, e.target)
    e.attention_plans.update(plans)
    e.attention_choices.extend(choices)
    fused = frozenset(nid for plan in plans.values() for nid in plan.inner)
    must = _materialized(graph, e.target, fused, frozenset(plans))
    # Q and K of a fused attention whose scale factors were taken out are
    # read from their sources' buffers (codegen.attention._unscaled): each
    # a whole buffer of its own, never a row-local one.
    att_sources: set[int] = set()
    for nid, plan in plans.items():
        plan.tiles = tile_sources(plan, e.target, e.host)
        if plan.tiles is not None:  # the scores on AMX tiles, from the bf16 heads
            att_sources |= {_root_for_buffer(t) for t in plan.tiles}
            e.attention_choices = [(i, kind, f"{why}; scores on AMX tiles" if i == nid else why)
                                   for i, kind, why in e.attention_choices]
        else:
            att_sources |= {_root_for_buffer(operand[0]) for operand in
                            (plan.q_operand, plan.k_operand) if operand is not None}
    must |= att_sources
    # An output that is a reshape of a node with a loop nest of its own (the
    # saved activations of aot_autograd's forward graphs: view(layer_norm),
    # view(gelu)): that node is computed straight into the output's buffer
    # (both are contiguous, element for element the same), not into a
    # temporary copied to the output afterwards.
    outputs = {o.id for o in graph.outputs}
    given = set(e.buffers)  # inputs and constants (and a body's operands)
    for o, buf in zip(graph.outputs, out_bufs, strict=True):
        root = graph.nodes[_root_for_buffer(o)]
        if o.op == "reshape" and root.id in must and root.id not in outputs and \
                root.id not in e.buffers and o.id not in e.buffers and \
                root.op not in MULTI_VALUED and root.op != "result" and \
                root.dtype is o.dtype and not buf.row_local:
            e.buffers[root.id] = Buffer(buf.kind, root.shape, root.dtype, buf.param)
            e.buffers[o.id] = buf
            must.discard(o.id)
    order: list = [n for n in graph.nodes if n.id in must and n.id not in given]
    written: dict[int, Buffer] = {}
    for o, buf in zip(graph.outputs, out_bufs, strict=True):
        have = written.get(o.id) or e.buffers.get(o.id)
        if have is not None and have.param == buf.param:  # already there
            continue
        if o.id not in e.buffers:
            e.buffers[o.id] = buf
            written[o.id] = buf
        else:  # an input or constant returned as is, or one value twice: copy it
            order.append(_Copy(o, buf))  # type: ignore[arg-type]
    # Row groups (codegen.rows): loop nests sharing one loop over rows; their
    # temporaries read only inside the group hold one row. Regions and their
    # results are never members.
    checked = {_root_for_buffer(n.inputs[1]) for n in graph.nodes
               if n.op in ("take", "gather") and n.attrs["mode"] in ("check", "wrap")}
    groups, row_local = row_groups(graph, order, must, checked | att_sources,
                                   min_row=2 * max(1, e.target.vector_bytes // 4))
    group_of = {g[0][0].id: g for g in groups}
    grouped = {m.id for g, _ in groups for m in g}
    prefix_len = {m.id: len(p) for g, p in groups for m in g}
    for n in order:
        if isinstance(n, _Copy) or n.id in e.buffers or n.op in MULTI_VALUED:
            continue
        if n.id in row_local:
            p = prefix_len[n.id]
            # One row per thread of a parallel kernel (par_cap rows).
            buf = row_local_buffer(
                e.scratch((e.par_cap,) + (1,) * (p - 1) + tuple(n.shape[p:]), n.dtype), p)
            e.buffers[n.id] = parallel.thread_row(e, buf, tuple(n.shape[p:]))
        else:
            e.buffers[n.id] = e.scratch(n.shape, n.dtype)
    # embedding_bag without the last offset gets the bounds of its bags as
    # one array of len(offsets) + 1 (offsets, then len(indices)), so that a
    # bag's end is the next bag's start (the CSR shape accel-prefetch looks
    # ahead across).
    for n in graph.nodes:
        if n.op == "embedding_bag" and not n.attrs["last"]:
            e.bag_bounds[n.id] = e.scratch((dim_op("add", n.inputs[2].shape[0], 1),), DType.i64)
    # Row-wise f32 sums and products accumulate in an f64 row.
    for n in graph.nodes:
        if n.op == "reduce" and _rows_first(n) and _row_acc_dtype(n) is not n.dtype and \
                n.id in must:
            e.reduce_acc[n.id] = e.scratch(tuple(n.inputs[0].shape[len(n.attrs["axes"]):]),
                                           DType.f64)

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
    # Each loop nest, and each group of index checks, is one step (in the
    # SPMD body of a parallel kernel: a chunk of it per thread, or thread 0
    # alone, then a barrier; see EmitterCore.step).
    for nid in list(checks):
        if graph.nodes[nid].op in _BUFFERS:
            for idx, size, what, wrap in checks.pop(nid):
                e.step(lambda idx=idx, size=size, what=what, wrap=wrap:
                       e.check_indices(idx, size, what, wrap),
                       parallel.small_work(shape_numel(idx.shape)))
    producers = _producer_fusions(graph, order, must | given, grouped | set(row_local),
                                  set(checks) | fused)
    with_reader = {x.id for xs in producers.values() for x in xs}
    e.mm_epilogues.update(_matmul_epilogues(graph, order, e.buffers, outputs, must | given,
                                            grouped | set(row_local) | with_reader |
                                            set(producers) | set(checks) | fused))
    for n in order:
        if not isinstance(n, _Copy) and n.id in grouped and n.id not in group_of:
            continue  # emitted with its group
        if not isinstance(n, _Copy) and n.id in with_reader:
            continue  # emitted in its reader's nest
        if not isinstance(n, _Copy) and n.id in e.epilogue_done:
            continue  # computed in its matmul's kernel
        if not isinstance(n, _Copy) and n.op == "embedding_bag":
            # Its checks and bounds first, so that its bags can be chunked.
            e.step(lambda n=n: e.emit_embedding_bag_prologue(n))
        if not isinstance(n, _Copy) and n.op in ("scan", "while", "switch") and e.spmd:
            _emit_step(e, n, group_of)  # every thread runs the loop; its nests are steps
        else:
            small = parallel.small_work(shape_numel(n.node.shape)) if isinstance(n, _Copy) \
                else all(parallel.small_node(m) for m in group_of.get(n.id, ([n], 0))[0])
            e.step(lambda n=n: _emit_step(e, n, group_of, producers), small)
        after = checks.pop(n.id, [])
        if after:
            e.step(lambda after=after: [e.check_indices(*c) for c in after],
                   all(parallel.small_work(shape_numel(c[0].shape)) for c in after))
    if checks:  # an index that no loop nest materialized: never read unchecked
        raise CodegenError("index checks without a materialized index")


_ELEMENTWISE = frozenset({"unary", "binary", "compare", "where", "cast"})


def _at_element(user: Node, x: Node) -> bool:
    """Whether ``user`` reads its operand ``x`` at the position ``user``
    itself is read at (a reshape, or a same-shape elementwise op)."""
    return user.op == "reshape" or (user.op in _ELEMENTWISE and
                                    tuple(x.shape) == tuple(user.shape))


def _nest_reads(nodes: list[Node], buffered: set[int]) -> dict[int, dict[int, bool]]:
    """For every nest of ``nodes``: the buffered nodes its expression reads,
    and whether every path reads them at the nest's own element."""
    return {m.id: buffered_reads([(i, (m.op in _ELEMENTWISE or m.op == "reshape") and
                                   _at_element(m, i)) for i in m.inputs], buffered, _at_element)
            for m in nodes}


def _matmul_epilogues(graph: Graph, order: list, buffers: dict[int, Buffer], outputs: set[int],
                      buffered: set[int], skip: set[int]) -> dict[int, tuple[Node, Buffer]]:
    """Matmuls whose result only one loop nest reads, an elementwise node
    (or a reshape of one) ``y`` reading it at its own element (``relu(x @ w
    + b)``, a bf16 matmul's rounding, ``gelu(addmm)``; through reshapes,
    with as many elements and the same last dim), by the matmul's id: ``y``
    and its buffer. The matmul's kernel may compute ``y`` in its last k-block
    instead of storing the product (EmitterCore.mm_epilogues). Everything
    else ``y`` reads must have its buffer before the matmul's nest runs.
    ``buffered``: nodes with buffers; ``skip``: nests emitted in a group
    or another nest, with index checks after them, or fused away."""
    nodes = [n for n in order if not isinstance(n, _Copy)]
    pos = {n.id: k for k, n in enumerate(nodes)}
    reads = _nest_reads(nodes, buffered)
    out: dict[int, tuple[Node, Buffer]] = {}
    for m in nodes:
        if m.op != "matmul" or m.id in outputs or m.id in skip or not _static(m.shape):
            continue
        readers = [y for y in nodes if m.id in reads[y.id]]
        if len(readers) != 1:
            continue
        y = readers[0]
        if (y.op not in _ELEMENTWISE and y.op != "reshape") or y.id in skip or \
                y.id not in buffers or \
                not reads[y.id][m.id] or buffers[y.id].row_local or not _static(y.shape) or \
                shape_numel(y.shape) != shape_numel(m.shape) or y.rank == 0 or \
                y.shape[-1] != m.shape[-1]:
            continue
        if _fused_math(y, buffered):
            # tanh, erf, exp... in the tile's epilogue are scalar calls per
            # element; their own nest calls the vector variants (an RNN
            # cell's tanh(x @ w + h @ u + b): 4.7x slower in the epilogue).
            continue
        # What else y reads is there before m's nest: inputs, constants, or
        # nests emitted earlier.
        if all(x == m.id or x not in pos or pos[x] < pos[m.id] for x in reads[y.id]):
            out[m.id] = (y, buffers[y.id])
    return out


def _fused_math(y: Node, buffered: set[int]) -> bool:
    """Whether computing ``y`` at one element (``y`` and the nodes fused into
    it, up to buffers) calls a math routine (:func:`.elementwise.calls_math`)."""
    todo, seen = [y], set()
    while todo:
        n = todo.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if calls_math(n):
            return True
        todo += [x for x in n.inputs if x.id not in buffered]
    return False


def _producer_fusions(graph: Graph, order: list, buffered: set[int], skip: set[int],
                      avoid: set[int]) -> dict[int, list[Node]]:
    """Elementwise loop nests computed inside their first reader's nest
    (:meth:`EmitterCore.materialize_with`), by the reader's id: a node ``x``
    with a buffer of its own (a graph output, or read by several nests:
    aot_autograd's forward graphs return the pre-activation ``addmm + bias``
    that the activation reads) whose first reader ``y`` is an elementwise
    nest reading it only at the element ``y`` computes (through reshapes and
    same-shape elementwise ops), of as many elements and the same last dim.
    Both stay materialized (later readers read ``x``'s buffer); the pass
    over ``x`` written, then read back, is saved. ``buffered``: nodes with
    buffers; ``skip``: row-group members and row-local nodes; ``avoid``:
    nodes with index checks after their nest, or fused away."""
    nodes = [n for n in order if not isinstance(n, _Copy)]
    pos = {n.id: k for k, n in enumerate(nodes)}
    reads = _nest_reads(nodes, buffered)
    out: dict[int, list[Node]] = {}
    taken: set[int] = set()
    for x in nodes:
        if x.op not in _ELEMENTWISE or x.id in skip or x.id in avoid or x.id in taken or \
                not _static(x.shape):
            continue
        readers = [m for m in nodes if x.id in reads[m.id]]
        if not readers:
            continue
        y = min(readers, key=lambda m: pos[m.id])
        if y.op not in _ELEMENTWISE or y.id in skip or y.id in taken or not reads[y.id][x.id] \
                or not _static(y.shape) or y.rank == 0 or x.rank == 0 or \
                shape_numel(y.shape) != shape_numel(x.shape) or y.shape[-1] != x.shape[-1]:
            continue
        out.setdefault(y.id, []).append(x)
        taken.update((x.id, y.id))
    return out


def _static(shape: tuple) -> bool:
    return all(isinstance(d, int) for d in shape)


def _emit_step(e: _Emitter, n: object, group_of: dict,
               producers: dict[int, list[Node]] | None = None) -> None:
    """The loop nest of ``n`` (an entry of emit_graph's order)."""
    if isinstance(n, _Copy):
        e.memo = {}
        with e.nest(n.node.shape) as idx:
            e.store(n.out, e.linear(idx, n.node.shape), e.emit(n.node, idx))
        e.check_zero_division()
        return
    assert isinstance(n, Node)
    if n.id in group_of:
        members, prefix = group_of[n.id]
        e.materialize_rows(members, prefix)
        e.check_zero_division()
        return
    if n.op in MULTI_VALUED:
        e.emit_multi(n)  # writes the buffers of its results
    elif producers and n.id in producers:
        e.materialize_with(producers[n.id], n, e.buffers[n.id])
    elif n.op != "result":
        e.materialize(n, e.buffers[n.id])
    e.check_zero_division()


@dataclass
class _Copy:
    node: Node
    out: Buffer

    @property
    def id(self) -> int:
        return -1
