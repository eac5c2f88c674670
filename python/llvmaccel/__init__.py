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

from . import jit, kernelgen, profiling
from .check import CheckResult, Finding, check
from .custom_ops import CustomOp, custom_op
from .errors import (
    IRParseError,
    JITError,
    KernelIndexError,
    KernelZeroDivisionError,
    LLVMAccelError,
    PipelineError,
    VerifyError,
)
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
