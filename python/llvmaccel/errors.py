"""Exceptions raised by llvmaccel."""

from __future__ import annotations

__all__ = [
    "LLVMAccelError", "IRParseError", "PipelineError", "VerifyError", "JITError",
    "KernelIndexError",
    "KernelZeroDivisionError",
]


class LLVMAccelError(Exception):
    """Base class of every llvmaccel error."""


class IRParseError(LLVMAccelError):
    """LLVM IR (text or bitcode) could not be parsed.

    Attributes:
        message: LLVM's description of the problem.
        line: 1-based line of the error (0 when unknown, e.g. for bitcode).
        column: 1-based column of the error (0 when unknown).
    """

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line else ""
        super().__init__(f"{where}{message}")


class PipelineError(LLVMAccelError):
    """A pass pipeline names an unknown pass or a malformed parameter."""


class VerifyError(LLVMAccelError):
    """A module fails LLVM's verifier."""


class JITError(LLVMAccelError):
    """Compiling or looking up code in the JIT failed."""


class KernelZeroDivisionError(ZeroDivisionError, RuntimeError):
    """A compiled PyTorch graph divided an integer by zero.

    Eager PyTorch raises ``RuntimeError("ZeroDivisionError")`` there; this is
    both a :class:`RuntimeError` (so code written against eager still catches
    it) and a :class:`ZeroDivisionError`.
    """


class KernelIndexError(IndexError, RuntimeError):
    """A compiled graph met an index out of range.

    Eager PyTorch raises :class:`IndexError` for some index ops and
    ``RuntimeError`` for others (``index_add`` on a vector, on a matrix);
    this is both, so code written against eager catches it either way.
    """
