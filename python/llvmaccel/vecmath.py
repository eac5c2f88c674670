"""Vector variants of math functions for LLVM's loop vectorizer.

Generated kernels call libm functions (``erff``, ``tanhf``) and LLVM math
intrinsics (``llvm.exp.f32``) one element at a time. Without a vector
library, a vectorized loop still makes one scalar call per element, and
``exp``, ``erf`` or ``tanh`` then cost more than everything else in a GELU or
a softmax. glibc ships vector variants in ``libmvec`` (x86-64: SSE, AVX2 and
AVX-512 variants named by the x86 vector function ABI, e.g.
``_ZGVeN16v_expf`` for 16 floats with AVX-512). :func:`variant` names the
variant of a function for the host's vector width when the library has it;
the code generator then marks the scalar call with the
``vector-function-abi-variant`` attribute, which tells the loop vectorizer
what to call for a whole vector.

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

__all__ = ["Variant", "load", "variant"]

# The x86 vector function ABI's ISA letters, by vector register bytes.
_X86_ISA = {16: "b", 32: "d", 64: "e"}


@functools.cache
def load() -> ctypes.CDLL | None:
    """glibc's libmvec, loaded for the whole process; None where there is
    none (another C library or architecture) or ``LLVMACCEL_VECMATH=0``."""
    if os.environ.get("LLVMACCEL_VECMATH", "1") == "0":
        return None
    if platform.system() != "Linux" or platform.machine().lower() not in ("x86_64", "amd64"):
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


@functools.cache
def variant(name: str, bits: int, nargs: int, vector_bytes: int) -> Variant | None:
    """The vector variant of libm's ``name`` (``"exp"``, ``"erf"``; the
    ``f`` suffix is added for 32-bit floats) over ``vector_bytes`` of
    ``bits``-bit floats with ``nargs`` vector arguments; None when the
    library does not have it."""
    lib = load()
    isa = _X86_ISA.get(vector_bytes)
    if lib is None or isa is None or bits not in (32, 64):
        return None
    lanes = vector_bytes * 8 // bits
    prefix = f"_ZGV{isa}N{lanes}{'v' * nargs}_"
    symbol = f"{prefix}{name}{'f' if bits == 32 else ''}"
    try:
        getattr(lib, symbol)
    except AttributeError:
        return None
    return Variant(symbol, lanes, prefix)
