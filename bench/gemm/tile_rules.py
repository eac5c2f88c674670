"""Tile-row rules of llvmaccel's matmul kernel that bench/gemm's scripts set
against the present one (``codegen.matmul._matmul_tiling``, which
:data:`PRESENT` keeps while they patch it): each keeps its vector width and
panel depth and changes only the rows."""

from __future__ import annotations

from llvmaccel.codegen import common, matmul
from llvmaccel.graph import DType
from llvmaccel.target import TargetInfo

PRESENT = matmul._matmul_tiling


def _registers(target: TargetInfo | None) -> int:
    return max(8, (target or common.default_target()).vector_registers)


def power_of_two(dt: DType, nrv: int, target: TargetInfo | None = None
                 ) -> tuple[int, int, int]:
    """The rule before 2026-12-07: the largest power of two (at most 8)
    leaving 4 registers."""
    vw, _, kc = PRESENT(dt, nrv, target)
    return vw, min(8, 1 << (((_registers(target) - 4) // nrv).bit_length() - 1)), kc


def uncapped(dt: DType, nrv: int, target: TargetInfo | None = None) -> tuple[int, int, int]:
    """The present rule without its cap on accumulators: as many rows (at
    most 8) as leave registers for B's vectors and a broadcast of A."""
    vw, _, kc = PRESENT(dt, nrv, target)
    return vw, max(1, min(8, (_registers(target) - nrv - 1) // nrv)), kc
