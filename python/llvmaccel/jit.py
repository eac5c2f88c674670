"""JIT compilation of LLVM modules and calls into the compiled code.

>>> mod = llvmaccel.parse_ir(ir_text)
>>> compiled = llvmaccel.jit.compile(mod, "default<O3>")
>>> compiled["axpy"](y, x, 2.0, len(x))   # numpy arrays or torch tensors

Arguments are converted from the function's LLVM signature, with the rules
numpy users expect:

* ``ptr`` takes a contiguous numpy array or CPU torch tensor (passed by data
  pointer), an int address or None. A read-only numpy array is accepted only
  where the function cannot write through the parameter (``readonly`` or
  ``readnone`` on it, or a function that only reads memory); elsewhere it is
  a ``ValueError``, as numpy says for an assignment to a read-only array.
* ``iN`` takes a Python int (or any object with ``__index__``) in the signed
  range ``-2**(N-1) .. 2**(N-1) - 1``; outside it is an ``OverflowError``. A
  bool is a ``TypeError`` except for ``i1``, which takes True/False or 0/1.
* ``float`` and ``double`` take Python ints and floats (not bools).

The GIL is released while native code runs, so kernels may be called from
several threads at once.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._native import core
from .errors import JITError
from .ir import Function, Module, parse_ir
from .pipeline import AutoPasses, Report, _auto_selection

__all__ = ["CompiledModule", "Kernel", "compile"]

_INT_TYPES: dict[str, tuple[type, int]] = {
    "i1": (ctypes.c_bool, 1),
    "i8": (ctypes.c_int8, 8),
    "i16": (ctypes.c_int16, 16),
    "i32": (ctypes.c_int32, 32),
    "i64": (ctypes.c_int64, 64),
}
_FLOAT_TYPES: dict[str, type] = {"float": ctypes.c_float, "double": ctypes.c_double}


def _ctype(llvm_type: str, what: str) -> Any:
    if llvm_type == "ptr":
        return ctypes.c_void_p
    if llvm_type in _INT_TYPES:
        return _INT_TYPES[llvm_type][0]
    if llvm_type in _FLOAT_TYPES:
        return _FLOAT_TYPES[llvm_type]
    if llvm_type == "void" and what == "return":
        return None
    raise TypeError(f"cannot pass LLVM type {llvm_type!r} ({what}) from Python")


def _pointer(value: Any, index: int, writable: bool = False) -> Any:
    """The address to pass for a ``ptr`` parameter; ``writable``: the
    function may write through it."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"argument {index}: expected an array, tensor or address, got bool")
    if isinstance(value, int):
        return value
    if hasattr(value, "data_ptr") and hasattr(value, "is_contiguous"):  # torch.Tensor
        if getattr(value, "device", None) is not None and value.device.type != "cpu":
            raise ValueError(f"argument {index}: tensor is on {value.device}, not the CPU")
        if not value.is_contiguous():
            raise ValueError(f"argument {index}: tensor is not contiguous (call .contiguous())")
        return value.data_ptr()
    iface = getattr(value, "__array_interface__", None)
    if iface is not None:  # numpy arrays and friends
        flags = getattr(value, "flags", None)
        if flags is not None and not flags["C_CONTIGUOUS"]:
            raise ValueError(
                f"argument {index}: array is not C-contiguous (use numpy.ascontiguousarray)"
            )
        read_only = iface["data"][1] if flags is None else not flags["WRITEABLE"]
        if writable and read_only:
            raise ValueError(
                f"argument {index}: array is read-only, but the function may write through "
                f"this parameter (pass a writable copy, or mark the parameter readonly)"
            )
        return iface["data"][0]
    if isinstance(value, ctypes.Array):
        return ctypes.addressof(value)
    raise TypeError(
        f"argument {index}: expected a numpy array, CPU torch tensor, int address or None, "
        f"got {type(value).__name__}"
    )


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _integer(value: Any, llvm_type: str, index: int) -> int:
    bits = _INT_TYPES[llvm_type][1]
    if bits == 1:
        if _is_bool(value):
            return bool(value)
    elif _is_bool(value):
        raise TypeError(f"argument {index}: expected an int for {llvm_type}, got bool")
    if not isinstance(value, int):
        if not hasattr(value, "__index__"):
            raise TypeError(f"argument {index}: expected an int for {llvm_type}, "
                            f"got {type(value).__name__}")
        value = value.__index__()
    lo, hi = (0, 1) if bits == 1 else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not lo <= value <= hi:
        raise OverflowError(f"argument {index}: {value} does not fit in {llvm_type} "
                            f"({lo} .. {hi})")
    return int(value)


class Kernel:
    """A compiled function, callable from Python.

    Attributes:
        name: Symbol name.
        signature: The function's LLVM signature.
        address: Address of the machine code.
    """

    def __init__(self, owner: CompiledModule, signature: Function, address: int) -> None:
        self._owner = owner  # keeps the JIT (and so the code) alive
        self.name = signature.name
        self.signature = signature
        self.address = address
        restype = _ctype(signature.return_type, "return")
        argtypes = [_ctype(t, f"parameter {i}") for i, t in enumerate(signature.param_types)]
        # CFUNCTYPE (not PYFUNCTYPE): ctypes releases the GIL during the call.
        self._fn = ctypes.CFUNCTYPE(restype, *argtypes)(address)

    def __repr__(self) -> str:
        params = ", ".join(self.signature.param_types)
        return f"<llvmaccel.jit.Kernel {self.signature.return_type} @{self.name}({params})>"

    def __call__(self, *args: Any) -> Any:
        params = self.signature.param_types
        if len(args) != len(params):
            raise TypeError(f"{self.name}() takes {len(params)} arguments, got {len(args)}")
        readonly = self.signature.param_readonly or (False,) * len(params)
        converted = []
        for i, (value, ty) in enumerate(zip(args, params, strict=False)):
            if ty == "ptr":
                converted.append(_pointer(value, i, writable=not readonly[i]))
            elif ty in _INT_TYPES:
                converted.append(_integer(value, ty, i))
            else:
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    raise TypeError(f"argument {i}: expected a float for {ty}, "
                                    f"got {type(value).__name__}")
                converted.append(float(value))
        return self._fn(*converted)


class CompiledModule:
    """Machine code for a module, compiled for this machine by LLVM's ORC JIT.

    Attributes:
        report: Remarks and statistics of the optimization pipeline.
        pipeline: The pipeline the module was optimized with.
    """

    def __init__(self, ref: Any, report: Report, pipeline: str) -> None:
        self._ref = ref
        self.report = report
        self.pipeline = pipeline
        self._kernels: dict[str, Kernel] = {}
        self._lock = threading.Lock()

    def address(self, name: str) -> int:
        """Address of the symbol ``name`` (compiling it on first use)."""
        return self._ref.lookup(name)

    def function(self, name: str) -> Kernel:
        """The compiled function ``name`` as a Python callable."""
        with self._lock:
            kernel = self._kernels.get(name)
            if kernel is None:
                raw = self._ref.function_info(name)
                signature = Function(raw[0], bool(raw[1]), raw[2], tuple(raw[3]),
                                     tuple(raw[4]))
                kernel = Kernel(self, signature, self._ref.lookup(name))
                self._kernels[name] = kernel
            return kernel

    __getitem__ = function

    def ctypes_function(self, name: str, restype: Any, *argtypes: Any) -> Callable[..., Any]:
        """``name`` as a raw ctypes function with the given C signature."""
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


def compile(
    module: Module | str | bytes,
    pipeline: str = "default<O3>",
    *,
    remarks: str = "accel-.*",
    auto: AutoPasses | None = None,
    vector_library: str | None = None,
    perf_label: str = "",
) -> CompiledModule:
    """Optimizes a copy of ``module`` for this machine and JIT-compiles it.

    Args:
        module: A Module, or IR text/bitcode to parse.
        pipeline: The optimization pipeline (``"default<O3>"`` includes the
            llvmaccel passes at their extension points, see ``auto``).
        remarks: Regular expression of the passes whose remarks are kept.
        auto: Which llvmaccel passes join the default pipelines (``"all"``,
            ``"none"`` or a list of names; ``None``: ``$LLVMACCEL_AUTO``, default all).
        vector_library: ``"libmvec"`` lets the vectorizer call glibc's vector
            math variants (loaded into the process first,
            :func:`llvmaccel.vecmath.load`); ``None``: scalar math calls.
        perf_label: Appended to the module's function names in the perf map
            (written while :func:`llvmaccel.profiling.perf_map_enabled`).

    The module itself is not changed.
    """
    if not isinstance(module, Module):
        module = parse_ir(module)
    if vector_library is not None:
        from . import vecmath

        if vector_library == vecmath.VECTOR_LIBRARY and vecmath.load() is None:
            raise JITError("vector_library='libmvec': glibc's libmvec cannot be loaded here")
    from . import profiling

    ref, raw_report = core.jit_compile(module._ref, pipeline, remarks, _auto_selection(auto),
                                       vector_library or "", profiling.perf_map_enabled(),
                                       perf_label)
    return CompiledModule(ref, Report._from_native(raw_report), pipeline)
