"""LLVM modules: parsing, printing, bitcode, verification."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._native import core

__all__ = ["Function", "Module", "parse_ir", "load_module"]


@dataclass(frozen=True)
class Function:
    """A function of a module, as its signature.

    Attributes:
        name: Symbol name.
        is_declaration: True for an external declaration (no body).
        return_type: LLVM type of the result, e.g. ``"void"`` or ``"float"``.
        param_types: LLVM types of the parameters, e.g. ``("ptr", "i64")``.
    """

    name: str
    is_declaration: bool
    return_type: str
    param_types: tuple[str, ...]


class Module:
    """An LLVM module with its own context.

    Create one with :func:`parse_ir` or :func:`load_module`. ``str(module)``
    gives textual IR. Passes change the module in place
    (:func:`llvmaccel.run_passes`). A module may be used from several threads;
    operations on one module take turns.
    """

    __slots__ = ("_ref",)

    def __init__(self, ref: object) -> None:
        self._ref = ref

    def __str__(self) -> str:
        return self._ref.print()

    def __repr__(self) -> str:
        return f"<llvmaccel.Module {self.name!r} with {len(self.functions)} functions>"

    @property
    def name(self) -> str:
        """The module identifier (the file name or the name given to parse_ir)."""
        return self._ref.name

    @property
    def triple(self) -> str:
        """The target triple, or ``""`` when the module has none."""
        return self._ref.triple

    @property
    def functions(self) -> list[Function]:
        """Every function defined or declared in the module, in order."""
        return [
            Function(name, bool(decl), ret, tuple(params))
            for name, decl, ret, params in self._ref.functions()
        ]

    def function(self, name: str) -> Function:
        """The function called ``name``; raises KeyError if there is none."""
        for fn in self.functions:
            if fn.name == name:
                return fn
        raise KeyError(f"no function named {name!r} in module {self.name!r}")

    def to_bitcode(self) -> bytes:
        """The module as LLVM bitcode."""
        return self._ref.bitcode()

    def verify(self) -> None:
        """Runs LLVM's verifier; raises :class:`~llvmaccel.VerifyError` if it fails."""
        self._ref.verify()

    def clone(self) -> Module:
        """An independent copy of the module (in a new context)."""
        return Module(self._ref.clone())


def parse_ir(source: str | bytes, name: str = "<string>") -> Module:
    """Parses textual LLVM IR or bitcode.

    Args:
        source: IR text (``str`` or UTF-8 ``bytes``) or bitcode (``bytes``).
        name: Module identifier, used in error messages.

    Raises:
        IRParseError: the IR is malformed; ``line`` and ``column`` say where.
    """
    data = source.encode() if isinstance(source, str) else bytes(source)
    return Module(core.parse_ir(data, name))


def load_module(path: str | os.PathLike) -> Module:
    """Reads a ``.ll`` (text) or ``.bc`` (bitcode) file.

    Raises:
        OSError: the file cannot be read.
        IRParseError: its contents are not valid IR.
    """
    return Module(core.load_module(os.fspath(path)))
