"""Graph -> compiled callable.

:func:`compile_graph` generates LLVM IR for a :class:`~llvmaccel.graph.Graph`
(:mod:`llvmaccel.codegen`), optimizes it with a pass pipeline
(:func:`llvmaccel.run_passes`, llvmaccel passes included) and JIT-compiles it
(:mod:`llvmaccel.jit`). Results are cached:

* in the process, keyed on (graph fingerprint, dtype/rank signature, pipeline,
  LLVM version, host CPU, ``$LLVMACCEL_AUTO``, ``$LLVMACCEL_BF16_DOT``, ``$LLVMACCEL_AMX``,
  digest of the pass plugin);
* on disk, as optimized bitcode and the pipeline's report, under
  ``$LLVMACCEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/llvmaccel``, else
  ``~/.cache/llvmaccel`` (``LLVMACCEL_CACHE_DIR=off`` disables it), so a new
  process skips the optimizer and only generates machine code.

:class:`CompiledGraph` objects are thread-safe: every call allocates its own
outputs and takes temporaries no other call is using (those of a finished
call when there are some), and the GIL is released while the kernel runs.
A call with contiguous CPU tensors of a signature seen before skips the
checks and size computations of the first one (a kept plan).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import math
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import blas, hugepages, interop, jit, profiling, vecmath
from ._native import core
from .codegen import Kernel, attention, generate, matmul_amx, matmul_bf16
from .codegen import parallel as intra_op
from .errors import KernelIndexError, KernelZeroDivisionError
from .graph import DTYPE_BY_NAME, DType, Graph, SymExpr, dim_eval
from .ir import parse_ir
from .pipeline import AutoPasses, Remark, Report, llvm_version, plugin_path, run_passes

__all__ = [
    "CompiledGraph",
    "CacheStats",
    "cache_dir",
    "compile_graph",
    "stats",
    "reset_stats",
    "clear_memory_cache",
]

DEFAULT_PIPELINE = "default<O3>"
_NUMPY_DTYPES: dict[str, DType] = dict(DTYPE_BY_NAME)
_TORCH_DTYPES: dict[str, DType] = {f"torch.{name}": dt for name, dt in DTYPE_BY_NAME.items()}


@dataclass
class CacheStats:
    """Counters of the compilation caches.

    Attributes:
        compilations: Graphs compiled (code generated and JIT-compiled) in
            this process; memory-cache hits do not count.
        optimizations: Of those, runs of the optimization pipeline (disk-cache
            misses).
        disk_hits: Compilations that reused optimized bitcode from disk.
        memory_hits: Requests served from the process-wide cache.
    """

    compilations: int = 0
    optimizations: int = 0
    disk_hits: int = 0
    memory_hits: int = 0


_stats = CacheStats()
_cache: dict[tuple, CompiledGraph] = {}
_cache_lock = threading.Lock()
_key_locks: dict[tuple, threading.Lock] = {}


def stats() -> CacheStats:
    """The cache counters (a live object; see :func:`reset_stats`)."""
    return _stats


def reset_stats() -> None:
    """Sets every cache counter to zero."""
    _stats.compilations = _stats.optimizations = _stats.disk_hits = _stats.memory_hits = 0


def clear_memory_cache() -> None:
    """Forgets the compiled graphs of this process (the disk cache stays)."""
    with _cache_lock:
        _cache.clear()


def cache_dir() -> Path | None:
    """The on-disk cache directory, or None when disabled."""
    env = os.environ.get("LLVMACCEL_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("off", "0", "none", ""):
            return None
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "llvmaccel"


def _dtype_of(value: Any, index: int) -> DType:
    name = str(value.dtype)
    dt = _TORCH_DTYPES.get(name) or _NUMPY_DTYPES.get(name)
    if dt is None:
        raise TypeError(f"input {index}: dtype {name} is not supported by llvmaccel "
                        f"({', '.join(DTYPE_BY_NAME)})")
    return dt


def _as_torch(x: Any) -> Any:
    """A torch tensor of array ``x``'s values: numpy's memory when it can
    (bfloat16 arrays of ml_dtypes, which torch does not know, as their
    bits)."""
    import torch

    a = np.asarray(x)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a).view(np.uint16)).view(torch.bfloat16)
    return torch.as_tensor(a)


def _temp_dtype(dt: DType) -> Any:
    """The numpy dtype of a temporary of ``dt``: raw storage of its size for
    bf16 (the kernel alone reads it; numpy needs no ml_dtypes for it)."""
    return np.uint16 if dt is DType.bf16 else dt.np_dtype


_SPARE_SHAPES = 4  # sizes of temporaries (and call plans) a compiled graph keeps


class _Temps(NamedTuple):
    """One call's temporaries and their addresses (None for an empty one)."""

    arrays: list
    ptrs: list


class _Plan(NamedTuple):
    """What a call of a known input signature needs, computed once."""

    outputs: tuple  # (shape, torch or numpy dtype) of every output buffer
    temp_sizes: tuple  # sizes of the temporaries
    symbols: tuple  # values of the size symbols
    numpy: bool = False  # numpy inputs and outputs (else torch tensors)
    # Bytes of every output buffer when it is large enough for huge pages
    # (hugepages.MIN_BYTES), else 0; empty when none is: asked once, not
    # per call.
    huge: tuple = ()
    # (shape, strides, torch dtype) of every output: its allocation
    # (torch outputs only).
    alloc: tuple = ()
    # The spare temporaries of these sizes (CompiledGraph._spare_temps'
    # list for them): a planned call pops and appends, both atomic, and
    # takes no lock.
    spare: list | None = None


def _contiguous_strides(shape: tuple) -> tuple:
    """The strides, in elements, of a C-contiguous array of ``shape``."""
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


@functools.cache
def _torch_empty_strided() -> Callable[[tuple, tuple, Any], Any]:
    """``(shape, strides, dtype) -> uninitialized CPU tensor``: PyTorch's
    allocation entry point that inductor's generated code calls (0.4 us
    against torch.empty's 1.3 us, per output of every call), else
    ``torch.empty_strided``."""
    torch = sys.modules["torch"]
    fast = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None),
                   "_empty_strided_cpu", None)
    if fast is not None:
        return fast
    return lambda shape, strides, dtype: torch.empty_strided(shape, strides, dtype=dtype)


#: Alignment in bytes of the numpy outputs of a call: a cache line, and what
#: XLA's CPU client needs to take a host buffer as a ``jax.Array`` without a
#: copy (``llvmaccel.jax.jit``'s outputs).
OUTPUT_ALIGNMENT = 64


def aligned_empty(shape: tuple, dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous numpy array whose data starts at a
    multiple of :data:`OUTPUT_ALIGNMENT` bytes."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + OUTPUT_ALIGNMENT, np.uint8)
    address = raw.ctypes.data
    hugepages.advise(address, raw.nbytes)
    start = -address % OUTPUT_ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def torch_empty(shape: tuple, dtype: Any) -> Any:
    """An uninitialized contiguous CPU tensor for a call's output, on huge
    pages where it is large enough (:mod:`llvmaccel.hugepages`)."""
    import torch

    out = torch.empty(shape, dtype=dtype)
    hugepages.advise(out.data_ptr(), out.numel() * out.element_size())
    return out


def _keep_recent(cache: dict, key: Any, value: Any) -> None:
    """``cache[key] = value`` as the most recent entry, dropping the oldest
    beyond _SPARE_SHAPES entries (the caller holds the lock)."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > _SPARE_SHAPES:
        del cache[next(iter(cache))]


def buffer_sizes(specs: list[tuple], env: dict[str, int], what: str
                 ) -> tuple[tuple[int, ...], ...]:
    """The sizes of buffers given as (shape, dtype) with symbolic shapes
    (a kernel's outputs or temporaries), for the symbol values ``env``.
    Raises ValueError for a negative size."""
    sizes = []
    for shape, _ in specs:
        dims = tuple(dim_eval(d, env) for d in shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"negative {what} size {dims}")
        sizes.append(dims)
    return tuple(sizes)


def _tensor_signature(inputs: tuple) -> tuple | None:
    """The inputs' dtypes and shapes (dtype, shape, dtype, shape, ...) if all
    are contiguous CPU torch tensors or parameters (the inputs torch.compile
    passes; aot_autograd passes a
    model's parameters themselves when gradients are enabled), else None.
    Every call takes this check, once per input: it asks each tensor only
    what costs tens of nanoseconds (``is_cpu``, not ``device.type``)."""
    types = _TENSOR_TYPES or _tensor_types()
    if not types or not inputs:
        return None
    sig = []
    for x in inputs:
        dt = x.dtype
        # (Only complex tensors can carry the conjugate bit.)
        if type(x) not in types or not x.is_cpu or not x.is_contiguous() or x.is_neg() or \
                (dt.is_complex and x.is_conj()):
            return None
        sig.append(dt)
        sig.append(x.shape)
    return tuple(sig)


#: torch.Tensor and nn.Parameter once torch is imported (:func:`_tensor_types`).
_TENSOR_TYPES: frozenset = frozenset()


def _tensor_types() -> frozenset:
    """The types :func:`_tensor_signature` plans calls for (none before
    torch is imported)."""
    global _TENSOR_TYPES
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "nn"):
        _TENSOR_TYPES = frozenset((torch.Tensor, torch.nn.Parameter))
    return _TENSOR_TYPES


def _array_signature(inputs: tuple) -> tuple | None:
    """(dtype, shape) of every input if all are C-contiguous numpy arrays
    (the inputs of ``llvmaccel.jax.jit`` calls), else None."""
    sig = []
    for x in inputs:
        if type(x) is not np.ndarray or not x.flags.c_contiguous:
            return None
        sig.append((x.dtype, x.shape))
    return ("numpy", *sig) if sig else None


def kernel_ops(graph: Graph) -> str:
    """The frontend ops a graph computes, bracketed, as profiles name them:
    ``[addmm@model.py:12 (forward), relu@model.py:13 (forward)]`` (the
    graph's own ops where the frontend gave no sources)."""
    ops = [f"{op}@{src}" if src else op for op, src in graph.sources] or \
        [n.op for n in graph.nodes if n.op not in ("input", "constant")]
    text = ", ".join(ops)
    if len(text) > 240:
        text = text[:237] + "..."
    return f"[{text}]"


def kernel_label(graph: Graph, function: str) -> str:
    """A kernel's name in profiles: its function and :func:`kernel_ops`."""
    return function + kernel_ops(graph)


def bind_inputs(graph: Graph, kernel: Kernel, inputs: tuple,
                symbols: dict[str, int] | None = None) -> dict[str, int]:
    """Checks ``inputs`` (arrays or tensors) against the inputs of ``graph``'s
    ``kernel`` and returns the values of its size symbols (bound from input
    dims that are a bare symbol, and from ``symbols``).

    Raises:
        TypeError: the wrong number of inputs or a wrong dtype.
        ValueError: a shape that does not match, an unbound symbol, or a size
            that breaks a fact the graph was compiled for.
    """
    nodes = [graph.nodes[i] for i in kernel.inputs]
    if len(inputs) != len(nodes):
        raise TypeError(f"expected {len(nodes)} inputs, got {len(inputs)}")
    env: dict[str, int] = {k: int(v) for k, v in (symbols or {}).items()}
    deferred = []
    for k, (x, node) in enumerate(zip(inputs, nodes, strict=False)):
        dt = _dtype_of(x, k)
        if dt is not node.dtype:
            raise TypeError(f"input {k}: expected dtype {node.dtype.numpy}, "
                            f"got {dt.numpy}")
        shape = tuple(x.shape)
        if len(shape) != node.rank:
            raise ValueError(f"input {k}: expected rank {node.rank}, got shape {shape}")
        for d, size in zip(node.shape, shape, strict=False):
            if isinstance(d, SymExpr) and d.op == "sym":
                name = d.args[0]
                if name in env and env[name] != size:
                    raise ValueError(f"input {k}: size {size} conflicts with "
                                     f"{name}={env[name]} bound earlier")
                env[name] = int(size)
            else:
                deferred.append((k, d, size, shape))
    for k, d, size, shape in deferred:
        if dim_eval(d, env) != size:
            raise ValueError(f"input {k}: shape {shape} does not match the compiled "
                             f"graph ({', '.join(str(s) for s in nodes[k].shape)})")
    for s in kernel.symbols:
        if s not in env:
            raise ValueError(f"size symbol {s!r} is not bound by the inputs; pass "
                             "symbols={...}")
    # The kernel assumes these facts (shape anchors): a call that breaks
    # one must not reach it.
    for s, (lo, hi, m) in graph.symbol_facts.items():
        v = env.get(s)
        if v is None:
            continue
        if (lo is not None and v < lo) or (hi is not None and v > hi) or v % m:
            raise ValueError(f"size {s}={v} breaks what the graph was compiled for "
                             f"(in [{lo}, {hi}], a multiple of {m})")
    return env


def raise_kernel_error(kernel: Kernel, rc: int) -> None:
    """Raises the exception of the kernel's nonzero return code ``rc`` (its
    index and zero-division checks, :attr:`Kernel.errors`)."""
    kind, message = kernel.errors.get(rc, ("RuntimeError", f"kernel failed with code {rc}"))
    raise {"IndexError": KernelIndexError, "ValueError": ValueError,
           "ZeroDivisionError": KernelZeroDivisionError}.get(kind, RuntimeError)(message)


class CompiledGraph:
    """A graph compiled to machine code; call it with arrays or tensors.

    ``compiled(*inputs, symbols={...})`` takes numpy arrays or CPU torch
    tensors (made contiguous if needed) and returns a list of outputs of the
    same kind. Size symbols are bound from input dims that are a bare symbol;
    others can be given in ``symbols``.

    Attributes:
        graph: The source graph.
        kernel: The generated code (``kernel.ir`` is the unoptimized IR).
        report: Remarks and statistics of the optimization pipeline.
        pipeline: The pass pipeline used.
        optimized_ir: The optimized module as text (computed on demand).
        branches: With the inter-op mode, the graph's branches, each run as
            a task of MLIR's async runtime (:mod:`llvmaccel.interop`); None
            for the sequential kernel.
    """

    branches: list | None = None

    def __init__(self, graph: Graph, kernel: Kernel, module: jit.CompiledModule,
                 report: Report, pipeline: str, bitcode: bytes) -> None:
        self.graph = graph
        self.kernel = kernel
        self.report = report
        self.pipeline = pipeline
        self._module = module  # keeps the machine code alive
        self._bitcode = bitcode
        nptr = len(kernel.inputs) + len(kernel.constants) + len(kernel.outputs) + \
            len(kernel.temps)
        argtypes = [ctypes.c_void_p] * nptr + [ctypes.c_int64] * len(kernel.symbols)
        self._fn = module.ctypes_function(kernel.name, ctypes.c_int32, *argtypes)
        self._consts = [graph.constants[c] for c in kernel.constants]
        self._const_ptrs = [a.ctypes.data for a in self._consts]
        self._inputs = [graph.nodes[i] for i in kernel.inputs]
        # Temporaries of finished calls, by their sizes, for the next calls
        # (see _take_temps).
        self._spare_temps: dict[tuple, list[_Temps]] = {}
        self._spare_lock = threading.Lock()
        # Signatures of contiguous CPU tensor inputs seen before -> _Plan.
        self._plans: dict[tuple, _Plan] = {}
        # Whether a call gives the library or the pool their thread counts.
        self._syncs = kernel.uses_blas or kernel.parallel
        # Whether the results are the output buffers as they are.
        self._outputs_in_order = kernel.output_map == list(range(len(kernel.outputs)))

    @property
    def optimized_ir(self) -> str:
        """Textual IR of the optimized module."""
        return str(parse_ir(self._bitcode))

    def __repr__(self) -> str:
        return (f"<llvmaccel.CompiledGraph {len(self._inputs)} inputs -> "
                f"{len(self.kernel.output_map)} outputs, pipeline={self.pipeline!r}>")

    def bind(self, inputs: tuple, symbols: dict[str, int] | None = None) -> dict[str, int]:
        """Checks ``inputs`` against the graph and returns the symbol values."""
        return bind_inputs(self.graph, self.kernel, inputs, symbols)

    @property
    def label(self) -> str:
        """The kernel's name in profiles (:func:`kernel_label`)."""
        return kernel_label(self.graph, self.kernel.name)

    def __call__(self, *inputs: Any, symbols: dict[str, int] | None = None) -> list[Any]:
        if profiling.instrumented():
            return profiling.call_instrumented(self, lambda: self._run(inputs, symbols))
        return self._run(inputs, symbols)

    def call_tensors(self, tensors: list | tuple) -> list[Any]:
        """``self(*tensors)`` for the torch.compile runner, in fewer steps:
        a planned call of contiguous CPU tensors of a signature seen before
        costs about 1 us of Python here, as much as inductor's wrapper (its
        per-tensor checks are the same as every call's)."""
        if profiling.instrumented():
            return self(*tensors)
        if self._syncs:
            self.sync_threads()
        key = _tensor_signature(tensors)
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            return self._run_checked(tuple(tensors), None, key)
        return self._run_plan(plan, tensors)

    def sync_threads(self) -> None:
        """Gives the library and the intra-op pool the thread counts in force
        now (what the kernel uses of them): done before each call, here and
        where the kernel is called by others (:mod:`llvmaccel.jax`)."""
        if self.kernel.uses_blas:
            blas.sync_threads(tasks=self.branches is not None)
        if self.kernel.parallel:
            intra_op.sync_threads()

    def _run(self, inputs: tuple, symbols: dict[str, int] | None) -> list[Any]:
        if self._syncs:
            self.sync_threads()
        key = _tensor_signature(inputs)
        if key is None:
            key = _array_signature(inputs)
        if key is not None and symbols:
            key = (key, tuple(sorted(symbols.items())))
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            return self._run_plan(plan, inputs)
        return self._run_checked(inputs, symbols, key)

    def _run_checked(self, inputs: tuple, symbols: dict[str, int] | None,
                     key: tuple | None) -> list[Any]:
        """A call of a signature with no plan: checked and converted
        (:meth:`_call`); its plan kept under ``key`` (None: not plannable)."""
        outs, plan = self._call(inputs, symbols)
        if key is not None:  # checked: the next call of this signature skips bind
            # (and the conversions: its inputs are contiguous already)
            with self._spare_lock:
                _keep_recent(self._plans, key, plan)
        return [outs[i] for i in self.kernel.output_map]

    def _run_plan(self, plan: _Plan, inputs: tuple) -> list[Any]:
        """A call with contiguous CPU tensors, or contiguous numpy arrays, of a
        signature seen before."""
        if plan.numpy:
            outs = [aligned_empty(shape, dtype) for shape, dtype in plan.outputs]
            ptrs = [x.ctypes.data or None for x in inputs] + self._const_ptrs + \
                [o.ctypes.data or None for o in outs]
        else:
            # Loops, not comprehensions (each of which is a call of its own in
            # Python 3.11): a small op's call is mostly such steps.
            empty = _torch_empty_strided()
            ptrs = []
            for x in inputs:
                ptrs.append(x.data_ptr())
            ptrs += self._const_ptrs
            outs = []
            for alloc in plan.alloc:
                o = empty(*alloc)
                outs.append(o)
                ptrs.append(o.data_ptr())
            if plan.huge:
                for o, nbytes in zip(outs, plan.huge, strict=True):
                    if nbytes:
                        hugepages.advise(o.data_ptr(), nbytes)
        spare = plan.spare
        if spare is None:
            rc = self._fn(*ptrs, *plan.symbols)
        else:
            try:
                temps = spare.pop()
            except IndexError:  # all in use by other threads' calls
                temps = self._take_temps(plan.temp_sizes)
            ptrs += temps.ptrs
            try:
                rc = self._fn(*ptrs, *plan.symbols)
            finally:
                spare.append(temps)
        if rc != 0:
            raise_kernel_error(self.kernel, rc)
        if self._outputs_in_order:
            return outs
        return [outs[i] for i in self.kernel.output_map]

    def _call(self, inputs: tuple, symbols: dict[str, int] | None) -> tuple[list[Any], _Plan]:
        """A call with any inputs: checked, converted. Returns all output
        buffers and the plan of the call (for torch outputs, a planned call
        of the same signature)."""
        env = self.bind(inputs, symbols)
        use_torch = any(type(x).__module__.startswith("torch") for x in inputs)
        if use_torch:
            import torch

            args = []
            for k, x in enumerate(inputs):
                if not isinstance(x, torch.Tensor):
                    x = _as_torch(x)
                if x.device.type != "cpu":
                    raise ValueError(f"input {k}: tensor is on {x.device}, not the CPU")
                if x.is_conj() or x.is_neg():  # lazily conjugated or negated: the values
                    x = x.resolve_conj().resolve_neg()
                if not x.is_contiguous():
                    x = x.contiguous()
                args.append(x)

            def alloc(shape: tuple, dt: DType) -> Any:
                return torch_empty(shape, getattr(torch, dt.numpy))

            def ptr(x: Any) -> int | None:
                return x.data_ptr() or None
        else:
            args = [np.ascontiguousarray(x) for x in inputs]

            def alloc(shape: tuple, dt: DType) -> Any:
                return aligned_empty(shape, dt.np_dtype)

            def ptr(x: Any) -> int | None:
                return x.ctypes.data or None
        outs = [alloc(dims, dt) for dims, (_, dt) in
                zip(buffer_sizes(self.kernel.outputs, env, "output"), self.kernel.outputs,
                    strict=True)]
        temp_sizes = buffer_sizes(self.kernel.temps, env, "intermediate")
        temps = self._take_temps(temp_sizes)
        sym_values = tuple(env[s] for s in self.kernel.symbols)
        ptrs = [ptr(a) for a in args] + self._const_ptrs + [ptr(o) for o in outs] + temps.ptrs
        try:
            rc = self._fn(*ptrs, *sym_values)
        finally:
            self._give_back_temps(temp_sizes, temps)
        if rc != 0:
            raise_kernel_error(self.kernel, rc)
        del args
        huge = tuple(o.nbytes if o.nbytes >= hugepages.MIN_BYTES else 0 for o in outs)
        shapes = tuple((tuple(o.shape), o.dtype) for o in outs)
        alloc = () if not use_torch else tuple(
            (shape, _contiguous_strides(shape), dtype) for shape, dtype in shapes)
        spare = None
        if temp_sizes:
            with self._spare_lock:
                spare = self._spare_temps.get(temp_sizes)
        plan = _Plan(shapes, temp_sizes, sym_values, numpy=not use_torch,
                     huge=huge if any(huge) else (), alloc=alloc, spare=spare)
        return outs, plan

    def _take_temps(self, sizes: tuple) -> _Temps:
        """Temporaries of these sizes for one call: those of an earlier call
        when one has finished, else new ones. Reusing them spares each call
        the page faults of fresh memory (a DLRM's 12 MiB of intermediates
        cost up to a third of its run time when allocated per call), and
        asking numpy for their addresses (about 1 us a buffer: a
        TransformerEncoder's 51 temporaries cost 50 us a call)."""
        with self._spare_lock:
            free = self._spare_temps.get(sizes)
        try:  # (planned calls pop from the same list without the lock)
            if free:
                return free.pop()
        except IndexError:
            pass
        # Aligned as PyTorch aligns tensors (64 bytes): a BLAS call reading a
        # temporary at a 16-byte offset within cache lines, as np.empty gives
        # it, ran 5-10% slower than on eager's operands.
        temps = [aligned_empty(dims, _temp_dtype(dt))
                 for dims, (_, dt) in zip(sizes, self.kernel.temps, strict=True)]
        return _Temps(temps, [t.ctypes.data or None for t in temps])

    def _give_back_temps(self, key: tuple, temps: _Temps) -> None:
        """Keeps ``temps`` for a later call (the last _SPARE_SHAPES sizes)."""
        if not temps.arrays:
            return
        with self._spare_lock:
            spare = self._spare_temps.pop(key, [])
            spare.append(temps)
            _keep_recent(self._spare_temps, key, spare)


def _signature(graph: Graph) -> tuple:
    return tuple((n.dtype.value[0], n.rank) for n in graph.inputs)


def _host_cpu() -> str:
    return core.host_cpu()


@functools.cache
def _plugin_id() -> str:
    """Digest of the pass plugin: cached code optimized by another build of
    the passes is not reused."""
    return hashlib.sha256(Path(plugin_path()).read_bytes()).hexdigest()[:16]


def _blas_thresholds(graph: Graph) -> tuple[int, ...]:
    """The sizes from which the graph's matmuls go to the BLAS library
    (:func:`llvmaccel.blas.min_flops`, per float size of its products):
    asked only of graphs with products, since on first use the thresholds
    are measured."""
    sizes = sorted({n.dtype.itemsize for n in graph.walk()
                    if n.op in ("matmul", "conv") and n.dtype.itemsize in (4, 8)})
    if not sizes or blas.load() is None:
        return ()
    return tuple(blas.min_flops(None, s) for s in sizes)


def compile_graph(graph: Graph, pipeline: str | None = None,
                  auto: AutoPasses | None = None,
                  inter_op: bool | None = None) -> CompiledGraph:
    """Compiles ``graph`` (or returns the cached compilation).

    Args:
        graph: The graph; it must not change afterwards.
        pipeline: Pass pipeline; default ``"default<O3>"`` (llvmaccel passes
            at their extension points).
        auto: Which llvmaccel passes join the default pipelines: ``"all"``,
            ``"none"``, pass names separated by commas, or a list of pass
            names; None leaves it to ``$LLVMACCEL_AUTO`` (default all).
        inter_op: Run independent branches of the graph as parallel tasks
            of MLIR's async runtime (:mod:`llvmaccel.interop`); None leaves
            it to ``$LLVMACCEL_INTER_OP`` (default off). Where the MLIR tools
            or the runtime are missing, a RuntimeWarning says so and the
            graph is compiled sequentially; so is a graph without
            independent branches.
    """
    pipeline, key, parallel = _compile_key(graph, pipeline, auto, inter_op)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _stats.memory_hits += 1
            return hit
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _stats.memory_hits += 1
                return hit
        compiled = _compile(graph, pipeline, key, parallel)
        with _cache_lock:
            _cache[key] = compiled
            _stats.compilations += 1
        return compiled


def _compile_key(graph: Graph, pipeline: str | None, auto: AutoPasses | None,
                 inter_op: bool | None) -> tuple[str, tuple, bool]:
    """The pipeline, the cache key and the inter-op choice of
    :func:`compile_graph`'s arguments."""
    pipeline = profiling.with_loop_timing(pipeline or DEFAULT_PIPELINE)
    if auto is None:
        auto = os.environ.get("LLVMACCEL_AUTO", "") or "all"
    elif isinstance(auto, (list, tuple)) and all(isinstance(n, str) for n in auto):
        auto = ",".join(auto) or "none"  # one text: the cache key is hashed
    elif not isinstance(auto, str):
        raise TypeError(f"auto must be None, 'all', 'none' or a list of pass names, "
                        f"not {auto!r}")
    parallel = interop.requested(inter_op)
    key = (graph.fingerprint(), _signature(graph), pipeline, llvm_version(), _host_cpu(), auto,
           _plugin_id(), vecmath.VECTOR_LIBRARY if vecmath.load() is not None else "",
           (blas.mode() + ":" + blas.library()) if blas.load() is not None else "off",
           _blas_thresholds(graph), parallel,
           matmul_bf16.enabled(), matmul_amx.enabled(), attention.enabled())
    return pipeline, key, parallel


def compile_private(graph: Graph) -> CompiledGraph:
    """``graph`` compiled as :func:`compile_graph` compiles it (the disk cache
    included) but kept out of the process's cache of compiled graphs: for
    llvmaccel's own measurements (:func:`llvmaccel.blas.calibrate`), whose
    kernels a user's program never calls."""
    pipeline, key, parallel = _compile_key(graph, None, None, None)
    return _compile(graph, pipeline, key, parallel)


def _inter_op_kernel(graph: Graph) -> tuple[Kernel, list[interop.Branch]] | None:
    """The inter-op kernel of ``graph``, or None (sequential: no independent
    branches, or the mode cannot run here, which a warning says)."""
    try:
        made = interop.generate(graph)
        if made is not None:
            interop.load_runtime()
        return made
    except interop.InterOpUnavailable as e:
        warnings.warn(f"llvmaccel: {e}; compiling the graph sequentially", RuntimeWarning,
                      stacklevel=4)
        return None


def _compile(graph: Graph, pipeline: str, key: tuple, parallel: bool) -> CompiledGraph:
    made = _inter_op_kernel(graph) if parallel else None
    kernel = made[0] if made is not None else generate(graph)
    digest = hashlib.sha256(
        "\0".join([kernel.ir, *map(str, key[2:])]).encode()).hexdigest()[:40]
    directory = cache_dir()
    bitcode: bytes | None = None
    report: Report | None = None
    if directory is not None:
        bitcode, report = _disk_load(directory, digest)
    if bitcode is None or report is None:
        module = parse_ir(kernel.ir, name="llvmaccel-graph")
        if kernel.links:
            from .custom_ops import link_bodies

            link_bodies(module, kernel.links)
        report = run_passes(module, pipeline, target="host", auto=key[5].split(","),
                            vector_library=key[7] or None)
        bitcode = module.to_bitcode()
        _stats.optimizations += 1
        if directory is not None:
            _disk_store(directory, digest, bitcode, report)
    else:
        _stats.disk_hits += 1
    compiled_module = jit.compile(parse_ir(bitcode, name="llvmaccel-graph"),
                                  "function(verify)",
                                  perf_label=kernel_ops(graph))
    compiled = CompiledGraph(graph, kernel, compiled_module, report, pipeline, bitcode)
    compiled.branches = made[1] if made is not None else None
    return compiled


def _disk_load(directory: Path, digest: str) -> tuple[bytes | None, Report | None]:
    try:
        bc = (directory / f"{digest}.bc").read_bytes()
        meta = json.loads((directory / f"{digest}.json").read_text())
        report = Report(remarks=[Remark(**r) for r in meta["remarks"]],
                        statistics=dict(meta["statistics"]))
        return bc, report
    except (OSError, ValueError, KeyError, TypeError):
        return None, None


def _disk_store(directory: Path, digest: str, bitcode: bytes, report: Report) -> None:
    meta = {
        "remarks": [r.__dict__ for r in report.remarks],
        "statistics": report.statistics,
    }
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for suffix, data in ((".bc", bitcode), (".json", json.dumps(meta).encode())):
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=digest, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, directory / f"{digest}{suffix}")
    except OSError:
        pass  # a read-only or full cache directory only costs speed
