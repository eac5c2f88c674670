"""LLVM modules: parsing, printing, bitcode, verification."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from ._native import core

__all__ = ["Function", "Module", "parse_ir", "load_module", "MAX_MODULE_BYTES"]

#: The largest file :func:`load_module` reads (1 GiB).
MAX_MODULE_BYTES = 1 << 30


@dataclass(frozen=True)
class Function:
    """A function of a module, as its signature.

    Attributes:
        name: Symbol name.
        is_declaration: True for an external declaration (no body).
        return_type: LLVM type of the result, e.g. ``"void"`` or ``"float"``.
        param_types: LLVM types of the parameters, e.g. ``("ptr", "i64")``.
        param_readonly: per parameter, whether the function only reads
            through it (``readonly``/``readnone`` on the parameter, or a
            function that only reads memory); empty when unknown.
    """

    name: str
    is_declaration: bool
    return_type: str
    param_types: tuple[str, ...]
    param_readonly: tuple[bool, ...] = ()


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
            Function(name, bool(decl), ret, tuple(params), tuple(readonly))
            for name, decl, ret, params, readonly in self._ref.functions()
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

    def link(self, other: Module, inline: Sequence[str] = ()) -> None:
        """Links a copy of ``other`` into this module (LLVM's IR linker).

        Each function named in ``inline`` (defined after linking) becomes
        ``internal`` and ``alwaysinline``. ``other`` is not changed.

        Raises:
            TypeError: ``other`` is not a Module.
            ValueError: ``other`` is this module.
            VerifyError: The modules do not link (a symbol defined twice,
                mismatched types), a function of ``inline`` is not defined,
                or the result does not verify.
        """
        if not isinstance(other, Module):
            raise TypeError(f"expected a llvmaccel.Module, got {type(other).__name__}")
        if isinstance(inline, str):
            inline = [inline]
        self._ref.link(other._ref, list(inline))


def same_module_text(a: str, b: str) -> bool:
    """True when two modules' texts are the same but for the module's name
    (the ``; ModuleID`` line and ``source_filename``)."""
    return _normalized(a) == _normalized(b)


def _normalized(ir: str) -> str:
    return "\n".join(line for line in ir.splitlines()
                     if not line.startswith(("; ModuleID", "source_filename")))


def parse_ir(source: str | bytes, name: str = "<string>") -> Module:
    """Parses textual LLVM IR or bitcode.

    Args:
        source: IR text (``str`` or UTF-8 ``bytes``) or bitcode (``bytes``,
            ``bytearray`` or ``memoryview``).
        name: Module identifier, used in error messages.

    Raises:
        TypeError: ``source`` is neither text nor bytes.
        IRParseError: the IR is malformed; ``line`` and ``column`` say where
            (0 when LLVM gives no position, as for bitcode).
    """
    if isinstance(source, str):
        data = source.encode()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        raise TypeError(f"parse_ir() takes IR as str or bytes, not {type(source).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"parse_ir() takes a str name, not {type(name).__name__}")
    return Module(core.parse_ir(data, name))


def load_module(path: str | os.PathLike) -> Module:
    """Reads a ``.ll`` (text) or ``.bc`` (bitcode) file.

    Only regular files of at most :data:`MAX_MODULE_BYTES` are read: a device
    such as ``/dev/zero``, a FIFO or a directory is refused before anything
    is read.

    Raises:
        OSError: the file cannot be read, is not a regular file, or is too
            large.
        IRParseError: its contents are not valid IR.
    """
    path = os.fspath(path)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat on the
    # open descriptor: the file checked is the file read.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "cannot load a module from a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (devices, FIFOs and sockets "
                          "are not read)", path)
        if st.st_size > MAX_MODULE_BYTES:
            raise OSError(errno.EFBIG, f"file of {st.st_size} bytes is larger than "
                          f"llvmaccel.ir.MAX_MODULE_BYTES ({MAX_MODULE_BYTES})", path)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_MODULE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_MODULE_BYTES:  # it grew while we read it
        raise OSError(errno.EFBIG, "file is larger than llvmaccel.ir.MAX_MODULE_BYTES", path)
    return Module(core.parse_ir(data, path))
