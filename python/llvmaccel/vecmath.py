"""Vector variants of math functions for LLVM's loop vectorizer.

Generated kernels call libm functions (``erff``, ``tanhf``) and LLVM math
intrinsics (``llvm.exp.f32``) one element at a time. glibc ships vector
variants of them in ``libmvec``, named by the vector function ABI
(``_ZGVdN8v_expf``: AVX2, 8 floats). LLVM's own library tables know some of
them: the JIT's pipeline runs with the LIBMVEC vector library (as clang's
``-fveclib=libmvec``), so those need nothing from us. For the functions and
widths the tables lack (tanh, erf, expm1, ... in LLVM 22's table, and every
AVX-512 variant on x86), :func:`variants`
names glibc's variants at every vector width the target can run, and the
code generator lists them on the scalar call with the
``vector-function-abi-variant`` attribute; the vectorizer then calls the one
whose width it chose.

The library is loaded into the process with ``RTLD_GLOBAL`` (:func:`load`),
so that the JIT resolves the variants like any other C library symbol. Set
``LLVMACCEL_VECMATH=0`` to generate scalar calls only.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
from typing import NamedTuple

from ._native import core
from .target import TargetInfo

__all__ = ["VECTOR_LIBRARY", "Variant", "covered_by_llvm", "load", "variants"]

#: The vector library LLVM's pipeline is told about when :func:`load` succeeds.
VECTOR_LIBRARY = "libmvec"

# glibc's libmvec functions (x86-64 since glibc 2.35, AArch64 AdvSIMD since
# 2.40), for targets other than the host, whose library cannot be asked.
_GLIBC_FUNCTIONS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "erf",
    "erfc", "exp", "exp10", "exp2", "expm1", "hypot", "log", "log10", "log1p", "log2", "pow",
    "sin", "sinh", "tan", "tanh",
})


@functools.cache
def load() -> ctypes.CDLL | None:
    """glibc's libmvec, loaded for the whole process; None where there is
    none (another C library or architecture) or ``LLVMACCEL_VECMATH=0``."""
    if os.environ.get("LLVMACCEL_VECMATH", "1") == "0":
        return None
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in ("x86_64", "amd64", "aarch64", "arm64"):
        return None
    try:
        return ctypes.CDLL("libmvec.so.1", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None


class Variant(NamedTuple):
    """A vector variant: its symbol, its lanes, and the mangled prefix
    (``_ZGVeN16v_``) that names it in a ``vector-function-abi-variant``."""

    symbol: str
    lanes: int
    abi_prefix: str


def _isas(target: TargetInfo) -> list[tuple[str, int]]:
    """(vector function ABI ISA letter, register bytes) the target can run."""
    if target.arch == "x86_64":
        out = [("b", 16)]  # SSE: every x86-64
        if "avx2" in target.features:
            out.append(("d", 32))
        if "avx512f" in target.features:
            out.append(("e", 64))
        return out
    if target.arch in ("aarch64", "arm64"):
        return [("n", 16)]  # AdvSIMD
    return []


def _exists(symbol: str, name: str, target: TargetInfo, host: bool) -> bool:
    if not host:
        if target.vector_math is not None:
            return symbol in target.vector_math
        return name in _GLIBC_FUNCTIONS
    lib = load()
    if lib is None:
        return False
    try:
        getattr(lib, symbol)
    except AttributeError:
        return False
    return True


@functools.cache
def variants(name: str, bits: int, nargs: int, target: TargetInfo,
             host: bool = True) -> tuple[Variant, ...]:
    """Every vector variant of libm's ``name`` (``"tanh"``; the ``f`` suffix
    is added for 32-bit floats) with ``nargs`` vector arguments that
    ``target`` can run, narrowest first; empty when there is none. With
    ``host``, only variants the loaded library has (else the target's
    :attr:`~llvmaccel.target.TargetInfo.vector_math`, or glibc's list)."""
    if bits not in (32, 64) or (host and load() is None):
        return ()
    out = []
    for isa, vbytes in _isas(target):
        lanes = vbytes * 8 // bits
        prefix = f"_ZGV{isa}N{lanes}{'v' * nargs}_"
        symbol = f"{prefix}{name}{'f' if bits == 32 else ''}"
        if _exists(symbol, name, target, host):
            out.append(Variant(symbol, lanes, prefix))
    return tuple(out)


@functools.cache
def covered_by_llvm(callee: str, lanes: int = 0) -> bool:
    """Whether LLVM's LIBMVEC table already maps ``callee`` (``"expf"``,
    ``"llvm.exp.f32"``) to a vector variant of ``lanes`` lanes (0: of any
    width), so the call needs no attribute for that width. (LLVM 22's x86
    table stops at AVX2's 8 floats: the AVX-512 variants are listed by the
    code generator.)"""
    return load() is not None and bool(core.vector_library_has(VECTOR_LIBRARY, callee, lanes))
