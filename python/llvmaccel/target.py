"""What LLVM knows of the machine code is generated for.

Code generators size their loops from these facts (vector register width and
count, CPU features), never from /proc/cpuinfo: LLVM's tuning decides what
the backend really uses. On Intel CPUs that prefer 256-bit vectors, for
example, LLVM reports 256 bits even when AVX-512 is present, and the loop
vectorizer picks 8 float lanes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ._native import core

__all__ = ["TargetInfo", "host"]


@dataclass(frozen=True)
class TargetInfo:
    """A compilation target as LLVM describes it.

    Attributes:
        triple: Target triple, e.g. ``"x86_64-unknown-linux-gnu"``.
        cpu: LLVM's CPU name, e.g. ``"sapphirerapids"``, ``"znver4"``.
        features: Enabled target features, LLVM's names (``"avx2"``, ``"sve"``).
        vector_bits: Width of the vector registers the target's tuning uses
            (TargetTransformInfo's fixed-width register width).
        vector_registers: Number of vector registers.
    """

    triple: str
    cpu: str
    features: frozenset[str]
    vector_bits: int
    vector_registers: int

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
    info = core.host_info()
    return TargetInfo(info["triple"], info["cpu"], frozenset(info["features"]),
                      int(info["vector_bits"]), int(info["vector_registers"]))
