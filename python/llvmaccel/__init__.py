"""llvmaccel: LLVM IR optimizations for AI workloads.

The package wraps the LLVMAccel pass plugin:

* :func:`parse_ir`, :func:`load_module` give a :class:`Module`;
* :func:`run_passes` runs a pass pipeline over it and returns a :class:`Report`
  of remarks and statistics;
* :mod:`llvmaccel.jit` compiles a module for this machine and calls into it;
* :func:`passes` lists the llvmaccel passes and their parameters, and
  :func:`plugin_path` gives the plugin for ``opt`` and ``clang``.
"""

from __future__ import annotations

from . import jit
from .errors import (
    IRParseError,
    JITError,
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

__version__ = "0.1.0"

__all__ = [
    "Function",
    "IRParseError",
    "JITError",
    "KernelZeroDivisionError",
    "LLVMAccelError",
    "Module",
    "PassInfo",
    "PassParameter",
    "PipelineError",
    "Remark",
    "Report",
    "VerifyError",
    "jit",
    "llvm_version",
    "load_module",
    "parse_ir",
    "passes",
    "plugin_path",
    "run_passes",
]
