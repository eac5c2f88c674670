"""Exceptions raised by llvmaccel."""

from __future__ import annotations

__all__ = [
    "LLVMAccelError", "IRParseError", "PipelineError", "VerifyError", "JITError",
    "KernelIndexError", "KernelZeroDivisionError", "LLVMNotFoundError",
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


class LLVMNotFoundError(ImportError, LLVMAccelError):
    """The shared LLVM library that llvmaccel was built against is missing.

    Raised when the native extension is first imported. The message names the
    LLVM release this build needs and the two ways to get it: the PyPI LLVM
    package (``karellen-llvm-core``) or Debian's ``llvm-NN`` packages.

    Attributes:
        llvm_version: the LLVM release (``MAJOR.MINOR``) this build needs, or
            "" when the build did not record it.
        library: the file name of the library (``libLLVM.so.23.1``), or "".
    """

    def __init__(self, message: str, llvm_version: str = "", library: str = "") -> None:
        super().__init__(message)
        self.llvm_version = llvm_version
        self.library = library
