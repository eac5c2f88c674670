"""llvmaccel kernels inside :func:`jax.jit` programs, through :mod:`jax.ffi`.

>>> import jax, llvmaccel.jax.ffi as lffi
>>> @lffi.ffi_function
... def mlp(x, w1, w2):
...     return jax.nn.relu(x @ w1) @ w2
>>> @jax.jit
... def g(x, w1, w2):
...     return mlp(x, w1, w2) * 2          # one XLA custom call to llvmaccel code

:func:`ffi_function` wraps a JAX function like :func:`llvmaccel.jax.jit`
(traced, lowered and compiled by llvmaccel once per argument signature), but
instead of running the kernel from Python it emits
``jax.ffi.ffi_call("llvmaccel_kernel", ...)`` into the program being traced,
so the call works inside :func:`jax.jit`, :func:`jax.lax.scan` and friends
(and eagerly). Each new static shape compiles a new kernel. :func:`call`
does the same for any :class:`~llvmaccel.compiler.CompiledGraph`, including
graphs with symbolic sizes.

All calls go through one XLA FFI handler in the native extension
(``_core.xla_ffi_handler_address()``), registered with XLA for the CPU on
first use under the name :data:`TARGET_NAME`. Kernels are registered with the
handler with their argument layout, and a call names its kernel by the
attributes ``kernel_id`` and ``kernel_key``: the handler checks the buffers it
gets against the kernel before running it. A kernel that fails (an index out
of range, for instance) makes the XLA computation fail with the kernel's
message, which JAX raises as :class:`jax.errors.JaxRuntimeError`.

Compiled kernels stay alive for the rest of the process, since JAX may keep
an executable that calls them in its caches. An :class:`FfiFunction`
composes with JAX's transformations (:mod:`llvmaccel.jax.transforms`):
``jax.grad`` runs a backward kernel that llvmaccel compiles from ``jax.vjp``
of the function, and ``jax.vmap`` compiles the batched function
(``vmap_method="compile"``, the default) or runs the kernel once per batch
element (``"sequential"``). :func:`call` and :class:`FfiKernel`, which know
only the compiled graph, are not differentiable.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import jit as _jit
from .._native import core
from ..compiler import CompiledGraph, buffer_sizes
from ..graph import DType
from .lowering import graph_dtype

__all__ = [
    "TARGET_NAME",
    "FfiFunction",
    "FfiKernel",
    "call",
    "ffi_function",
    "ffi_kernel",
    "register_target",
]

#: The XLA custom call target of the handler.
TARGET_NAME = "llvmaccel_kernel"

_ENTRY = "llvmaccel_xla_entry"
# XLA_FFI_DataType values (xla/ffi/api/c_api.h).
_XLA_DTYPES: dict[DType, int] = {
    DType.bool: 1, DType.i8: 2, DType.i16: 3, DType.i32: 4, DType.i64: 5, DType.u8: 6,
    DType.u16: 7, DType.u32: 8, DType.u64: 9, DType.f16: 10, DType.f32: 11, DType.f64: 12,
    DType.c64: 15, DType.bf16: 16, DType.c128: 18,
}
# XLA_FFI_Error_Code values for the kernels' error kinds.
_ERROR_CODES = {"IndexError": 11, "ValueError": 3}  # OUT_OF_RANGE, INVALID_ARGUMENT
_INTERNAL = 13
_VMAP_METHODS = ("sequential", "sequential_unrolled", None)
# FfiFunction also takes "compile": jax.vmap compiles the batched function.
_FUNCTION_VMAP_METHODS = ("compile", *_VMAP_METHODS)

_lock = threading.RLock()
_target_registered = False
# CompiledGraph id -> (graph, trampoline module, entry address); the graph is
# kept so that its id is not reused and its machine code stays alive.
_trampolines: dict[int, tuple[CompiledGraph, _jit.CompiledModule, int]] = {}
# (CompiledGraph id, input signature, symbols) -> kernel; kept for the process.
_kernels: dict[tuple, FfiKernel] = {}


def register_target() -> None:
    """Registers the handler with XLA as :data:`TARGET_NAME` on the CPU.

    Called on first use; calling it again does nothing. Raises ImportError
    without JAX.
    """
    global _target_registered
    with _lock:
        if _target_registered:
            return
        import jax

        jax.ffi.register_ffi_target(
            TARGET_NAME, jax.ffi.pycapsule(core.xla_ffi_handler_address()),
            platform="cpu", api_version=1)
        _target_registered = True


def _trampoline(compiled: CompiledGraph) -> int:
    """Address of ``i32 @llvmaccel_xla_entry(ptr %ptrs, ptr %syms)`` calling
    ``compiled``'s kernel with its pointers and size symbols unpacked."""
    with _lock:
        hit = _trampolines.get(id(compiled))
        if hit is not None:
            return hit[2]
        k = compiled.kernel
        if k.uses_blas:  # XLA calls the kernel directly: the threads are set now
            from .. import blas

            blas.sync_threads()
        if k.parallel:  # likewise the thread count of its loop nests
            from ..codegen import parallel

            parallel.sync_threads()
        nptr = len(k.inputs) + len(k.constants) + len(k.outputs) + len(k.temps)
        nsym = len(k.symbols)
        module = compiled._module  # noqa: SLF001 - the kernel's own JIT
        sig = module.function(k.name).signature
        want = ("ptr",) * nptr + ("i64",) * nsym
        if sig.return_type != "i32" or tuple(sig.param_types) != want:
            raise TypeError(f"kernel @{k.name} has signature {sig.return_type}"
                            f"({', '.join(sig.param_types)}); expected i32({', '.join(want)})")
        address = module.address(k.name)
        lines = [f"define i32 @{_ENTRY}(ptr %ptrs, ptr %syms) {{", "entry:"]
        params = []
        for i in range(nptr):
            lines += [f"  %p{i}.a = getelementptr inbounds ptr, ptr %ptrs, i64 {i}",
                      f"  %p{i} = load ptr, ptr %p{i}.a, align 8"]
            params.append(f"ptr %p{i}")
        for i in range(nsym):
            lines += [f"  %s{i}.a = getelementptr inbounds i64, ptr %syms, i64 {i}",
                      f"  %s{i} = load i64, ptr %s{i}.a, align 8"]
            params.append(f"i64 %s{i}")
        lines += [f"  %fn = inttoptr i64 {address} to ptr",
                  f"  %rc = call i32 %fn({', '.join(params)})",
                  "  ret i32 %rc", "}", ""]
        entry_module = _jit.compile("\n".join(lines), "function(verify)")
        entry = entry_module.address(_ENTRY)
        _trampolines[id(compiled)] = (compiled, entry_module, entry)
        return entry


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")


class FfiKernel:
    """A :class:`~llvmaccel.compiler.CompiledGraph` bound to concrete input
    shapes and registered with the XLA FFI handler.

    Call it with JAX arrays or tracers (or numpy arrays) of exactly
    :attr:`input_specs`; it returns one JAX array per graph output.

    Attributes:
        compiled: The compiled graph.
        kernel_id: The handler's id of this kernel (the ``kernel_id`` attribute).
        key: Digest of the kernel and its shapes (the ``kernel_key`` attribute).
        input_specs: (shape, numpy dtype name) of every input.
        output_specs: (shape, numpy dtype name) of every output buffer.
        symbols: Values of the kernel's size symbols.
        vmap_method: How :func:`jax.vmap` maps the call (see :func:`jax.ffi.ffi_call`).
    """

    def __init__(self, compiled: CompiledGraph, kernel_id: int, key: str,
                 input_specs: list[tuple[tuple[int, ...], str]],
                 output_specs: list[tuple[tuple[int, ...], str]],
                 symbols: dict[str, int], vmap_method: str | None) -> None:
        self.compiled = compiled
        self.kernel_id = kernel_id
        self.key = key
        self.input_specs = input_specs
        self.output_specs = output_specs
        self.symbols = symbols
        self.vmap_method = vmap_method

    def __repr__(self) -> str:
        ins = ", ".join(f"{d}{_shape_text(s)}" for s, d in self.input_specs)
        outs = ", ".join(f"{d}{_shape_text(s)}" for s, d in self.output_specs)
        return f"<llvmaccel.jax.ffi.FfiKernel {self.kernel_id}: ({ins}) -> ({outs})>"

    def __call__(self, *args: Any) -> list[Any]:
        import jax
        import jax.numpy as jnp

        if len(args) != len(self.input_specs):
            raise TypeError(f"llvmaccel kernel takes {len(self.input_specs)} arrays, "
                            f"got {len(args)}")
        x64 = bool(jax.config.jax_enable_x64)
        operands = []
        for k, (a, (shape, dtype)) in enumerate(zip(args, self.input_specs, strict=True)):
            if not hasattr(a, "shape") or not hasattr(a, "dtype"):
                raise TypeError(f"argument {k}: expected an array of {dtype}{_shape_text(shape)},"
                                f" got {type(a).__name__}")
            if str(a.dtype) != dtype:
                raise TypeError(f"argument {k}: expected dtype {dtype}, got {a.dtype}")
            if tuple(a.shape) != shape:
                raise ValueError(f"argument {k}: expected shape {_shape_text(shape)}, "
                                 f"got {_shape_text(tuple(a.shape))}")
            x = jnp.asarray(a)
            if str(x.dtype) != dtype:
                raise TypeError(f"argument {k}: JAX turns {dtype} into {x.dtype}"
                                + ("" if x64 else "; enable jax_enable_x64 for 64-bit kernels"))
            operands.append(x)
        if not x64:
            wide = [d for _, d in self.output_specs if d in ("int64", "float64")]
            if wide:
                raise TypeError(f"the kernel returns {wide[0]}, which JAX represents only with "
                                "jax_enable_x64")
        register_target()
        results = [jax.ShapeDtypeStruct(s, np.dtype(d)) for s, d in self.output_specs]
        outs = jax.ffi.ffi_call(TARGET_NAME, results, vmap_method=self.vmap_method)(
            *operands, kernel_id=np.int64(self.kernel_id), kernel_key=self.key)
        return [outs[i] for i in self.compiled.kernel.output_map]


def ffi_kernel(compiled: CompiledGraph, *args: Any, symbols: dict[str, int] | None = None,
               vmap_method: str | None = "sequential") -> FfiKernel:
    """The :class:`FfiKernel` of ``compiled`` for arguments shaped like ``args``.

    Args:
        compiled: A compiled graph (:func:`llvmaccel.compiler.compile_graph`,
            :meth:`llvmaccel.jax.JitFunction.compiled_for`).
        args: Arrays, tracers or :class:`jax.ShapeDtypeStruct` s giving the
            input shapes and dtypes; size symbols are bound from them.
        symbols: Values of size symbols the inputs do not bind.
        vmap_method: Passed to :func:`jax.ffi.ffi_call` (``"sequential"``,
            ``"sequential_unrolled"`` or None to refuse :func:`jax.vmap`).

    Raises:
        TypeError, ValueError: ``args`` do not match the graph.
    """
    if not isinstance(compiled, CompiledGraph):
        raise TypeError(f"expected a llvmaccel CompiledGraph, got {type(compiled).__name__}")
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {_VMAP_METHODS}, got {vmap_method!r}")
    for k, a in enumerate(args):
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            raise TypeError(f"argument {k}: expected an array or jax.ShapeDtypeStruct, "
                            f"got {type(a).__name__}")
    env = compiled.bind(args, symbols)
    kern = compiled.kernel
    sym_values = [int(env[s]) for s in kern.symbols]
    sig = tuple((tuple(int(d) for d in a.shape), str(np.dtype(a.dtype))) for a in args)
    cache_key = (id(compiled), sig, tuple(sym_values), vmap_method)
    with _lock:
        hit = _kernels.get(cache_key)
        if hit is not None:
            return hit
        entry = _trampoline(compiled)

        def concrete(specs: list[tuple], what: str) -> list[tuple[tuple[int, ...], DType]]:
            sizes = buffer_sizes(specs, env, what)
            return [(dims, dt) for dims, (_, dt) in zip(sizes, specs, strict=True)]

        outputs = concrete(kern.outputs, "output")
        temps = concrete(kern.temps, "intermediate")
        inputs = [(shape, graph_dtype(dt, f"argument {k}")) for k, (shape, dt) in enumerate(sig)]
        key = hashlib.sha256("\0".join(
            [kern.ir, repr(sig), repr(sym_values), repr(outputs)]).encode()).hexdigest()[:32]
        errors = {int(code): (_ERROR_CODES.get(kind, _INTERNAL),
                              f"{kind}: {message} (llvmaccel kernel {kern.name})")
                  for code, (kind, message) in kern.errors.items()}
        kernel_id = core.xla_ffi_register_kernel(
            kern.name, key, entry,
            [(_XLA_DTYPES[dt], list(shape)) for shape, dt in inputs],
            [(_XLA_DTYPES[dt], list(shape)) for shape, dt in outputs],
            [int(p) for p in compiled._const_ptrs],  # noqa: SLF001 - kept alive by compiled
            [int(np.prod(shape, dtype=np.int64)) * dt.itemsize for shape, dt in temps],
            sym_values, errors)
        fk = FfiKernel(compiled, kernel_id, key,
                       [(shape, dt.numpy) for shape, dt in inputs],
                       [(shape, dt.numpy) for shape, dt in outputs],
                       dict(zip(kern.symbols, sym_values, strict=True)), vmap_method)
        _kernels[cache_key] = fk
        return fk


def call(compiled: CompiledGraph, *args: Any, symbols: dict[str, int] | None = None,
         vmap_method: str | None = "sequential") -> list[Any]:
    """Runs ``compiled`` on JAX arrays, as a custom call when traced.

    ``call(compiled, x, y)`` is ``ffi_kernel(compiled, x, y)(x, y)``: it works
    inside :func:`jax.jit` (the shapes of the traced arguments select or
    register the kernel) and eagerly, and returns one JAX array per graph
    output.
    """
    return ffi_kernel(compiled, *args, symbols=symbols, vmap_method=vmap_method)(*args)


class FfiFunction:
    """A JAX function compiled by llvmaccel, callable inside :func:`jax.jit`.

    Made by :func:`ffi_function`. Calling it traces, lowers and compiles the
    function for the arguments' shapes and dtypes (once per signature, as
    :func:`llvmaccel.jax.jit` does) and emits a call to the compiled kernel
    through :func:`jax.ffi.ffi_call`; results come back as JAX arrays in the
    function's pytree structure.
    """

    def __init__(self, fun: Callable[..., Any], pipeline: str | None = None,
                 auto: str | None = None, static_argnums: tuple[int, ...] = (),
                 fallback: bool = False, vmap_method: str | None = "compile") -> None:
        from . import JitFunction

        if vmap_method not in _FUNCTION_VMAP_METHODS:
            raise ValueError(f"vmap_method must be one of {_FUNCTION_VMAP_METHODS}, "
                             f"got {vmap_method!r}")
        self.fun = fun
        self.vmap_method = vmap_method
        self._jit = JitFunction(fun, pipeline, fallback, auto, tuple(static_argnums))
        functools.update_wrapper(self, fun)

    @property
    def static_argnums(self) -> tuple[int, ...]:
        """Positions of the arguments that are Python values, not arrays."""
        return self._jit.static_argnums

    def _canonical(self, args: tuple) -> tuple:
        import jax
        import jax.numpy as jnp

        def leaf(x: Any) -> Any:
            return x if isinstance(x, jax.Array) else jnp.asarray(x)

        return tuple(a if i in self._jit.static_argnums else jax.tree_util.tree_map(leaf, a)
                     for i, a in enumerate(args))

    def _entry(self, args: tuple) -> tuple[Any, list[Any]]:
        key, arrays, tree = self._jit._signature(args, {})
        return self._jit._entry(key, args, {}, arrays, tree), arrays

    def compiled_for(self, *args: Any) -> CompiledGraph | None:
        """The compiled graph for these arguments (None if it fell back to JAX)."""
        entry, _ = self._entry(self._canonical(args))
        return entry.fn if entry.kind == "llvmaccel" else None

    def kernel_for(self, *args: Any) -> FfiKernel | None:
        """The registered kernel for these arguments (None if it fell back)."""
        entry, arrays = self._entry(self._canonical(args))
        if entry.kind != "llvmaccel":
            return None
        method = "sequential" if self.vmap_method == "compile" else self.vmap_method
        return ffi_kernel(entry.fn, *arrays, vmap_method=method)

    def __call__(self, *args: Any) -> Any:
        import jax

        args = self._canonical(args)
        entry, arrays = self._entry(args)
        if entry.kind == "jax":
            return jax.tree_util.tree_unflatten(entry.out_tree, jax.tree_util.tree_leaves(
                entry.fn(*arrays)))
        outs = entry.transformable(self._jit._recompile, self.vmap_method)(*arrays)  # noqa: SLF001
        return jax.tree_util.tree_unflatten(entry.out_tree, outs)


def ffi_function(fun: Callable[..., Any] | None = None, *, pipeline: str | None = None,
                 auto: str | None = None, static_argnums: tuple[int, ...] = (),
                 fallback: bool = False, vmap_method: str | None = "compile") -> Any:
    """Compiles ``fun`` with llvmaccel for use inside :func:`jax.jit`.

    Usable as ``ffi_function(f)``, ``@ffi_function`` or ``@ffi_function(...)``.

    Args:
        fun: A JAX function of arrays and pytrees of arrays.
        pipeline: LLVM pass pipeline (default ``"default<O3>"``).
        auto: llvmaccel passes in the default pipelines (``"all"``, ``"none"``).
        static_argnums: Arguments that are Python values, not arrays.
        fallback: On an unsupported primitive, warn and trace ``fun`` into the
            program as plain JAX instead of raising
            :class:`~llvmaccel.jax.UnsupportedPrimitive`.
        vmap_method: How :func:`jax.vmap` maps the call: ``"compile"``
            (llvmaccel compiles the batched function, one kernel call per
            batch), ``"sequential"`` or ``"sequential_unrolled"`` (the kernel
            once per batch element), or None to refuse.

    Returns:
        An :class:`FfiFunction`, differentiable with ``jax.grad``.
    """
    if fun is None:
        return lambda f: FfiFunction(f, pipeline, auto, static_argnums, fallback, vmap_method)
    return FfiFunction(fun, pipeline, auto, static_argnums, fallback, vmap_method)
