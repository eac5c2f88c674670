"""llvmaccel: LLVM IR optimizations for AI workloads.

The package wraps the LLVMAccel pass plugin:

* :func:`parse_ir`, :func:`load_module` give a :class:`Module`;
* :func:`run_passes` runs a pass pipeline over it and returns a :class:`Report`
  of remarks and statistics;
* :mod:`llvmaccel.jit` compiles a module for this machine and calls into it;
* :func:`check` runs a function before and after a transformation on
  generated inputs and compares (differential testing; :mod:`llvmaccel.fuzz`,
  :mod:`llvmaccel.kernelgen`, :mod:`llvmaccel.reduce` build on it);
* :func:`passes` lists the llvmaccel passes and their parameters, and
  :func:`plugin_path` gives the plugin for ``opt`` and ``clang``.
"""

from __future__ import annotations

from typing import Any

from .errors import (
    IRParseError,
    JITError,
    KernelIndexError,
    KernelZeroDivisionError,
    LLVMAccelError,
    LLVMNotFoundError,
    PipelineError,
    VerifyError,
)

try:
    from . import jit, kernelgen, profiling
    from .check import CheckResult, Finding, check
    from .custom_ops import CustomOp, custom_op
    from .ir import Function, Module, load_module, parse_ir
    from .pipeline import (
        PassInfo,
        PassParameter,
        Remark,
        Report,
        llvm_version,
        passes,
        plugin_path,
        run_passes,
    )
    from .profiling import Profile, profile
except LLVMNotFoundError as _llvm_missing:
    # Without its libLLVM the package still imports, so that `llvmaccel --help`
    # works; every use of it (and every `from llvmaccel import ...` of a name
    # that needs LLVM) raises the same LLVMNotFoundError, which says what to
    # install.
    _LLVM_MISSING: LLVMNotFoundError | None = _llvm_missing

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        missing = _LLVM_MISSING
        assert missing is not None
        raise LLVMNotFoundError(str(missing), missing.llvm_version, missing.library)
else:
    _LLVM_MISSING = None

__version__ = "0.1.0"

__all__ = [
    "CheckResult",
    "CustomOp",
    "Finding",
    "Function",
    "IRParseError",
    "JITError",
    "KernelIndexError",
    "KernelZeroDivisionError",
    "LLVMAccelError",
    "LLVMNotFoundError",
    "Module",
    "PassInfo",
    "PassParameter",
    "PipelineError",
    "Profile",
    "Remark",
    "Report",
    "VerifyError",
    "check",
    "custom_op",
    "jit",
    "kernelgen",
    "llvm_version",
    "load_module",
    "parse_ir",
    "passes",
    "plugin_path",
    "profile",
    "profiling",
    "run_passes",
]
