"""Intra-op parallelism: a kernel's loop nests on several threads.

A graph whose loop nests may be large gets three functions besides its
entry ``@<name>``::

    i32 @<name>.serial(params...)              ; the single-threaded kernel
    i32 @<name>.spmd(params..., i64 tid, i64 nth, ptr team)
    i32 @<name>.task(ptr ctx, i64 tid, i64 nth, ptr team)  ; unpacks ctx

The entry reads the thread count (``llvmaccel_parallel_threads``, set from
Python before each call: :func:`llvmaccel.blas.num_threads`, capped at
:func:`max_threads`) and calls ``@<name>.serial`` when it is 1 or when no loop
nest reaches :data:`MIN_WORK` elements (a kernel whose serial body would
exceed :data:`MAX_SERIAL_LINES` has none: it runs its SPMD body on one
thread then); else it stores its arguments in a
struct and has the runtime (``llvmaccel_parallel_run``, bindings/Parallel.cpp:
GNU OpenMP's threads where the process has loaded libgomp, else llvmaccel's
pool; ``llvmaccel_parallel_run_segmented`` for a kernel that calls the BLAS
library, whose own OpenMP region would be nested in ours: on OpenMP, the
team runs the steps up to a library step and returns, the caller alone runs
the library's steps outside every region, then the team goes on; every step
starts with ``llvmaccel_parallel_yield``, which says when a thread's segment
ends) run ``@<name>.task`` on that many threads. In the SPMD body each loop nest is a step
(:meth:`EmitterCore.step`): a nest whose outermost loop's iterations are
independent (elementwise maps, reductions over trailing axes with their kept
dims outer, row groups: softmax, layer norm) is split into CHUNKS_PER_THREAD
equal chunks of that loop per thread (:meth:`EmitterCore.par_range`);
llvmaccel's own matmuls split their batch indices or, for one product, their
column panels or (a product of a few rows) their columns
(:meth:`MatmulEmitter.mm_panel_range`); direct convolutions, pooling and
``col2im`` split their output planes ``(n, c)`` (:meth:`ConvEmitter.planes`);
every other step (gathers, convolutions through an im2col copy of several
images or groups, reductions over leading axes, index checks, scatters,
library calls, ...) is one chunk; a convolution of one image and one group
is the copy split by channel, then the product, each a step. A product's
work is :func:`product_work`. A step known to stay below :data:`MIN_WORK`
(:func:`small_node`) is one chunk, and the small steps right after it run
in its claimed chunk without a barrier (:meth:`EmitterCore.step`). The
threads claim chunks as they come, each its own share of a step's chunks
first (a thread the OS has not scheduled yet is not waited for; in a loop,
a thread keeps the same columns of a matrix in its caches round after
round), and wait for a step's chunks before the next step. Each element is
computed by one chunk with the operations of the serial loop, so results
are bit-identical for every thread count.

A scan (``lax.scan``, a ``fori_loop``) is run by every thread: its loop
counter is each thread's own, the loop nests of its body (and the copies of
its carries) are steps that run once per iteration, in rounds
(:meth:`EmitterCore.par_loop`): a step's chunks are numbered on from round
to round, so a late thread finds an earlier round's chunks taken and never
takes a later round's. A ``while`` loop at the kernel's top level runs the
same way, its condition's nests steps too, and each round's decision is
read from the shared condition by one thread and published for the round
(:meth:`EmitterCore.par_decide`). Every thread waits for the steps before
the loop when it enters it and for an iteration's steps at the iteration's
end. A ``switch`` at the top level is read by every thread once the steps
before it are done (nothing rewrites its index later) and its branch's
nests are steps. A ``switch`` or a ``while`` inside another loop or a branch
keeps the kernel serial: the threads would each read a condition or an
index that a thread ahead of them may already be rewriting.

An index check or division by zero that fails on a thread ends that thread
with its code; the others return it at their next barrier; the call raises
as the serial kernel does.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .. import blas
from .._env import getenv
from ..graph import Graph, Node, SymExpr, dim_op, shape_numel
from ..target import TargetInfo
from .common import Buffer

if TYPE_CHECKING:
    from . import _Function
    from .emitter import EmitterCore

#: The fewest elements a loop nest must have to be split between threads
#: (and a kernel to wake the pool at all): below it, the hand-off (waking
#: the workers, a barrier per step) costs more than the threads gain. From
#: bench/parallel_threshold.py (bench/results/parallel.md, AMD EPYC znver4, 2
#: threads: compute-bound maps gain from 2**16-2**17 elements, row sums from
#: 2**19, memory-bound maps barely gain at 2 threads on 2 cores).
MIN_WORK = 1 << 17

#: Multiply-adds of a matrix product that count as one element of work
#: (of an elementwise map's): a register tile does 16-32 a cycle on AVX-512
#: (8-16 on AVX2, NEON), an elementwise map's element takes a few cycles.
#: Measured on Emerald Rapids, 2 threads: own-kernel products of 0.5M-1M
#: multiply-adds ran no faster on two threads than on one (top level, 33 vs
#: 34 us), and in the body of a scan (an RNN cell's 8 x 256 @ 256 x 256
#: each step) 25% slower.
MACS_PER_ELEMENT = 16

#: Lines of IR above which a kernel keeps its SPMD body alone, run on one
#: thread where it would have called the serial kernel: the optimizer's
#: time grows faster than a function's size (MobileNetV3-Small's training
#: step: a forward of 135k lines per body, a backward of 440k; LLVM's O3
#: pipeline spent ~100 s on the two kernels' four bodies), and beside a
#: body that large, one thread's hand-off through the runtime (a lock, no
#: wake-up) is nothing.
MAX_SERIAL_LINES = 60_000

#: Chunks of a parallel loop nest per thread: threads claim them as they
#: come, so a thread the OS preempts (a loaded machine) holds back a
#: quarter of its share, not all of it.
CHUNKS_PER_THREAD = 4

# Graphs with these ops keep the serial kernel alone, but a while loop or a
# switch at the kernel's top level (a sort's several loop nests are one
# step). A scan's loop count is known to every thread: its body's loop nests
# are steps. A top-level while loop publishes each round's decision once
# (EmitterCore.par_decide), a top-level switch's index is read once by
# every thread and never rewritten; inside a loop or a branch, a thread
# ahead could rewrite a condition or an index before another reads it.
_NO_SPMD = frozenset({"while", "switch", "sort"})


# A step's segment check (EmitterCore._step_open), its result named.
_YIELD = re.compile(r"^(\s*%[\w.]+) = call i32 @llvmaccel_parallel_yield\(.*\)$")


def max_threads() -> int:
    """The most threads a kernel generated in this process runs with (the
    CPUs this process may use)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def candidate(graph: Graph) -> bool:
    """Whether ``graph`` gets an SPMD body: more than one CPU, no sort and no
    while loop or switch but at the top level (:data:`_NO_SPMD`), no loop
    timing (:mod:`llvmaccel.profiling`), and a node, at any depth, that may
    reach :data:`MIN_WORK` elements (a symbolic size may)."""
    from .. import profiling

    top = {id(n) for n in graph.nodes}
    if max_threads() < 2 or any(n.op in _NO_SPMD and not (n.op in ("while", "switch") and
                                                          id(n) in top)
                                for n in graph.walk()):
        return False
    if profiling.loop_timing_enabled():  # its counters are per kernel, not per thread
        return False
    for n in graph.walk():
        if n.op in ("input", "constant", "scan", "while", "switch", "result"):
            continue
        size = node_work(n)
        if isinstance(size, SymExpr) or size >= MIN_WORK:  # type: ignore[operator]
            return True
    return False


def product_work(m: object, n: object, k: object, count: object = 1) -> object:
    """Elements of work of ``count`` products ``(m x k) @ (k x n)``: their
    multiply-adds over :data:`MACS_PER_ELEMENT`, or the elements of ``B``
    they read where that is more (a product of a few rows, a decode step's
    ``h @ W``, streams ``B`` from memory as an elementwise map does)."""
    macs = dim_op("floordiv", shape_numel((m, n, k)), MACS_PER_ELEMENT)
    return dim_op("mul", dim_op("max", macs, dim_op("mul", k, n)), count)


def node_work(n: Node) -> object:
    """Elements of work of ``n``'s loop nest: its result's, for an
    embedding_bag the table elements it gathers (``len(indices) x dim``:
    a batch of bags sums many rows into each of its few), for a matmul or a
    convolution :func:`product_work`."""
    if n.op == "embedding_bag":
        return shape_numel((n.inputs[1].shape[0], n.inputs[0].shape[1]))
    if n.op == "matmul":  # operands of rank >= 2
        return product_work(n.shape[-2], n.shape[-1], n.inputs[0].shape[-1],
                            shape_numel(n.shape[:-2]))
    if n.op == "conv":  # each output sums a window of every input channel
        from .conv import _gemm_form

        w = n.inputs[1].shape
        if not _gemm_form(n):  # direct loops: a multiply-add per output and tap
            return dim_op("mul", shape_numel(n.shape), shape_numel(w[1:]))
        return product_work(n.shape[1], shape_numel(n.shape[2:]), shape_numel(w[1:]), n.shape[0])
    if n.op == "col2im":  # every product is added once
        return shape_numel(n.inputs[0].shape)
    if n.op == "im2col":  # every column element is written once
        return shape_numel(n.shape)
    if n.op == "pool":  # each output reads a window
        return dim_op("mul", shape_numel(n.shape), shape_numel(n.attrs["kernel"]))
    return shape_numel(n.shape)


def small_work(work: object) -> bool:
    """Whether ``work`` (elements) is known to stay below :data:`MIN_WORK`
    (a symbolic size may not)."""
    return isinstance(work, int) and work < MIN_WORK


def small_node(n: Node) -> bool:
    """Whether ``n``'s loop nest is known to stay below :data:`MIN_WORK`:
    its work, its result and every operand (a reduction's input counts, not
    just its few outputs). Such a step of one chunk may share the claimed
    chunk of the one before it (:meth:`EmitterCore.step`)."""
    sizes = [node_work(n), shape_numel(n.shape), *(shape_numel(x.shape) for x in n.inputs)]
    return all(small_work(v) for v in sizes)


def thread_row(e: EmitterCore, buf: Buffer, row: tuple) -> Buffer:
    """A row-local temporary (one row per thread): in the SPMD body, this
    thread's row."""
    if not e.spmd:
        return buf
    p = f"{buf.param}.t"
    e.prologue.append(f"  {p}.off = mul nuw i64 %par.tid, {e.dim(shape_numel(row))}")
    e.prologue.append(f"  {p} = getelementptr inbounds {buf.dtype.mem}, ptr {buf.param}, "
                      f"i64 {p}.off")
    return Buffer(buf.kind, buf.shape, buf.dtype, p, buf.node, row_local=buf.row_local)


def dispatch(graph: Graph, name: str, target: TargetInfo, serial: _Function,
             spmd: _Function, cap: int) -> list[str]:
    """The module: the entry ``@name`` that picks the serial function or the
    pool, the task that unpacks its arguments, and both bodies."""
    from .emitter import EmitterCore

    d = EmitterCore(graph, name, target, host=True)
    params = serial.params
    names = [p.split()[-1] for p in params]
    types = [p.split()[0] for p in params]
    ctx_t = "{ " + ", ".join(types) + " }" if types else "{}"
    work = "0"
    for w in spmd.e.par_work:
        v = d.dim(w)
        if work == "0":
            work = v
        else:
            work = d.call("llvm.smax.i64", "i64", [("i64", work), ("i64", v)], hint="w")
    want = d.call("llvmaccel_parallel_threads", "i64", [], hint="nt")
    nt = d.call("llvm.smin.i64", "i64", [("i64", want), ("i64", str(cap))], hint="nt")
    big = d.op(f"icmp sge i64 {work}, {MIN_WORK}", "c")
    multi = d.op(f"icmp sgt i64 {nt}, 1", "c")
    go = d.op(f"and i1 {big}, {multi}", "c")
    keep_serial = len(serial.lines) <= MAX_SERIAL_LINES
    if keep_serial:
        d.line(f"br i1 {go}, label %pool, label %serial")
        d.start_block("serial")
        args = ", ".join(f"{t} {n}" for t, n in zip(types, names, strict=True))
        d.line(f"%rs = call i32 @{name}.serial({args})")
        d.line("ret i32 %rs")
    else:  # the SPMD body on one thread instead
        nt = d.op(f"select i1 {go}, i64 {nt}, i64 1", "nt")
        d.line("br label %pool")
    d.start_block("pool")
    d.line(f"%ctx = alloca {ctx_t}")
    for k, (t, n) in enumerate(zip(types, names, strict=True)):
        d.line(f"%ctx.{k} = getelementptr inbounds {ctx_t}, ptr %ctx, i32 0, i32 {k}")
        d.line(f"store {t} {n}, ptr %ctx.{k}")
    # A kernel that calls the BLAS library runs in segments: inside an
    # OpenMP region the library's own OpenMP region would be nested, one
    # thread (PyTorch's MKL: an MLP's GEMMs at 2 threads 1.8 -> 3.1 ms); on
    # llvmaccel's pool, a worker calling it starts a second OpenMP team.
    # A library step in a scan's body would end a segment every iteration,
    # and each new segment runs through the rounds before: that kernel
    # stays on the pool.
    run = "llvmaccel_parallel_run_pool" if spmd.e.par_loop_library else \
        "llvmaccel_parallel_run_segmented" if spmd.e.uses_blas else "llvmaccel_parallel_run"
    d.declare(run, "i32", ["ptr", "ptr", "i64", "i64"])
    d.line(f"%rp = call i32 @{run}(ptr @{name}.task, ptr %ctx, i64 {nt}, "
           f"i64 {spmd.e.par_steps})")
    d.line("ret i32 %rp")
    # The serial kernel is inlined into the entry, the SPMD body may be into
    # the task: both carry the kernels' attributes (a vector width asked for
    # by the callee alone is lost in the caller).
    attrs = " ".join(["nounwind", serial.e.target.function_attributes()]).strip()
    entry = [f"define i32 @{name}({', '.join(params)}) {attrs} {{", "entry:",
             *d.prologue, *d.body, "}", ""]
    task = [f"define internal i32 @{name}.task(ptr %ctx, i64 %tid, i64 %nth, ptr %team) "
            f"{attrs} {{", "entry:"]
    for k, t in enumerate(types):
        task.append(f"  %a{k}.p = getelementptr inbounds {ctx_t}, ptr %ctx, i32 0, i32 {k}")
        task.append(f"  %a{k} = load {t}, ptr %a{k}.p")
    targs = ", ".join([f"{t} %a{k}" for k, t in enumerate(types)] +
                      ["i64 %tid", "i64 %nth", "ptr %team"])
    task += [f"  %r = call i32 @{name}.spmd({targs})", "  ret i32 %r", "}", ""]
    decls = {**serial.e.decls, **spmd.e.decls, **d.decls}
    spmd_lines = spmd.lines
    if run != "llvmaccel_parallel_run_segmented":
        # Only a run in segments ever yields: elsewhere each step's check
        # is a constant the optimizer folds away (no call per step).
        decls.pop("llvmaccel_parallel_yield", None)
        spmd_lines = [_YIELD.sub(r"\1 = add i32 0, 0", ln) for ln in spmd_lines]
    body_lines = [ln for ln in (serial.lines if keep_serial else []) + spmd_lines
                  if not ln.startswith(("declare ", "@llvm.compiler.used"))]
    out = entry + task + body_lines + sorted(decls.values())
    variants = sorted(serial.e.vector_variants | spmd.e.vector_variants)
    if variants:
        used = ", ".join(f"ptr @{v}" for v in variants)
        out.append(f"@llvm.compiler.used = appending global [{len(variants)} x ptr] "
                   f'[{used}], section "llvm.metadata"')
    return out


_threads_set = 0
_runtime_set: str | None = None
_RUNTIMES = {"auto": 0, "": 0, "pool": 1, "openmp": 2}


def sync_threads() -> int:
    """Gives the runtime :func:`llvmaccel.blas.num_threads` threads (the CPU
    count where that says nothing), read now, and the threads
    ``$LLVMACCEL_PARALLEL_RUNTIME`` asks for (see :func:`runtime`); returns
    the count. Called before each call of a parallel kernel."""
    global _threads_set, _runtime_set
    want = blas.num_threads() or max_threads()
    if want != _threads_set:
        from .._native import core

        core.parallel_set_threads(want)
        _threads_set = want
    mode = getenv("LLVMACCEL_PARALLEL_RUNTIME", "auto")
    if mode != _runtime_set:
        from .._native import core

        key = mode.lower()
        if key not in _RUNTIMES:
            raise ValueError(f"LLVMACCEL_PARALLEL_RUNTIME must be auto, pool or openmp, "
                             f"not {key!r}")
        core.parallel_set_runtime(_RUNTIMES[key])
        _runtime_set = mode
    return want


def runtime() -> str:
    """The threads a parallel kernel's run uses: ``"openmp"``, GNU OpenMP's
    (where the process has loaded libgomp, as PyTorch's CPU builds do: the
    framework's ops and llvmaccel's kernels share one team, instead of
    PyTorch's spinning OpenMP workers taking the cores llvmaccel's pool
    needs), or ``"pool"``, llvmaccel's own pool (no libgomp in the process,
    or ``LLVMACCEL_PARALLEL_RUNTIME=pool``)."""
    from .._native import core

    sync_threads()
    return str(core.parallel_runtime())
