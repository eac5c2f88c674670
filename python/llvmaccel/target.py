"""What LLVM knows of the machine code is generated for.

Code generators size their loops from these facts (vector register width and
count, CPU features), never from /proc/cpuinfo: LLVM's TargetTransformInfo
says what the backend really uses. On Intel CPUs whose tuning prefers 256-bit
vectors even with AVX-512 (Ice Lake, Sapphire Rapids, ...), TTI reports 256
bits for an ordinary function and 512 for one that asks for wider vectors
(``"prefer-vector-width"="512"``, clang's ``-mprefer-vector-width=512``).
llvmaccel's kernels are dense vector loop nests, the code that tuning rule
is not meant for (it protects scalar-heavy code from AVX-512's clock
penalty), so they ask for the widest registers, as eager PyTorch's AVX-512
kernels and the BLAS libraries do: :attr:`TargetInfo.vector_bits` is that
width, :attr:`TargetInfo.tuning_vector_bits` the tuning's, and every
generated function carries :meth:`TargetInfo.function_attributes`. On the
Xeon of bench/results/frontends.md, 512-bit kernels run tanh 1.2x, a row sum
1.4x and the own matmul kernel 1.5x faster than the tuning's 256-bit ones.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ._native import core

__all__ = ["TargetInfo", "host", "named"]


@dataclass(frozen=True)
class TargetInfo:
    """A compilation target as LLVM describes it.

    Attributes:
        triple: Target triple, e.g. ``"x86_64-unknown-linux-gnu"``.
        cpu: LLVM's CPU name, e.g. ``"sapphirerapids"``, ``"znver4"``.
        features: Enabled target features, LLVM's names (``"avx2"``, ``"sve"``).
        vector_bits: Width of the vector registers llvmaccel's kernels use:
            TargetTransformInfo's fixed-width register width for a function
            that asks for the widest vectors.
        vector_registers: Number of vector registers.
        tuning_vector_bits: The width LLVM's tuning for ``cpu`` uses in a
            function that asks for nothing (0: the same as ``vector_bits``).
        l1d_bytes: The level-1 data cache, in bytes, as TTI reports it
            (``getCacheSize``; 0 where the target says nothing).
        l2_bytes: The level-2 cache, in bytes, likewise.
        vector_math: For a target other than this machine, the vector math
            variants its C library has (``_ZGVnN4v_expf``...); None: glibc's
            full list (:mod:`llvmaccel.vecmath`). This machine's library is
            asked directly.
    """

    triple: str
    cpu: str
    features: frozenset[str]
    vector_bits: int
    vector_registers: int
    tuning_vector_bits: int = 0
    l1d_bytes: int = 0
    l2_bytes: int = 0
    vector_math: frozenset[str] | None = None

    def function_attributes(self) -> str:
        """The IR function attributes a kernel needs for LLVM to use
        :attr:`vector_bits` (``""`` when the tuning already does)."""
        if self.arch == "x86_64" and self.tuning_vector_bits and \
                self.vector_bits > self.tuning_vector_bits:
            return f'"prefer-vector-width"="{self.vector_bits}"'
        return ""

    @property
    def arch(self) -> str:
        """The architecture part of the triple (``"x86_64"``, ``"aarch64"``)."""
        return self.triple.split("-", 1)[0]

    @property
    def vector_bytes(self) -> int:
        """Bytes of one vector register as the tuning uses it (at least 16)."""
        return max(16, self.vector_bits // 8)


@functools.cache
def host() -> TargetInfo:
    """This machine, as LLVM's host detection and TargetTransformInfo see it."""
    return _from_info(core.host_info())


@functools.cache
def named(triple: str, cpu: str, features: str = "") -> TargetInfo:
    """Another machine, as TargetTransformInfo sees a function compiled for
    it: ``triple`` (``"aarch64-unknown-linux-gnu"``) with LLVM's ``cpu``
    name (``"neoverse-v1"``) and extra ``features`` (``"+sve,-bf16"``), to
    generate code for a target other than this one
    (:func:`llvmaccel.codegen.generate`'s ``target``).

    Raises:
        PipelineError: this LLVM has no such target, or no such CPU for it.
    """
    return _from_info(core.target_info(triple, cpu, features))


def _from_info(info: dict) -> TargetInfo:
    """A TargetInfo of the facts the bindings report (``host_info``,
    ``target_info``)."""
    tuning = int(info["vector_bits"])
    return TargetInfo(info["triple"], info["cpu"], frozenset(info["features"]),
                      max(tuning, int(info["widest_vector_bits"])),
                      int(info["vector_registers"]), tuning,
                      int(info.get("l1d_bytes", 0)), int(info.get("l2_bytes", 0)))
