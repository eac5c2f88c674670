"""Loads the native extension and points it at the LLVMAccel plugin.

The extension (``_core``) and the plugin need the shared libLLVM they were
built against. A wheel built on the PyPI LLVM finds it through a relative
RUNPATH (``site-packages/../../../lib``, where pip puts the data files of
``karellen-llvm-core``); when that fails (another layout, e.g. ``pip install
--target``), the library is looked up through the distribution's file list
and loaded here before the extension. A build on Debian's LLVM has an
absolute RUNPATH (``/usr/lib/llvm-NN/lib``). Either way, a missing library is
one :class:`~llvmaccel.errors.LLVMNotFoundError` that says what to install.
"""

from __future__ import annotations

import ctypes
import os
from importlib import metadata
from pathlib import Path
from types import ModuleType

from .errors import LLVMNotFoundError

_PACKAGE_DIR = Path(__file__).resolve().parent

try:  # written by CMake at build time (bindings/_build_info.py.in)
    from . import _build_info
except ImportError:  # pragma: no cover - a source tree without a build
    _build_info = None  # type: ignore[assignment]

#: The PyPI distribution that carries libLLVM (and the libc++ it links).
PYPI_LLVM_DISTRIBUTION = "karellen-llvm-core"
# The shared libraries the extension needs beside the C library.
_LIBRARY_NAMES = ("libLLVM", "libc++", "libunwind")


def _info(name: str, default: str = "") -> str:
    return str(getattr(_build_info, name, default))


def _pypi_libraries() -> list[Path]:
    """The runtime libraries of the installed PyPI LLVM, in load order
    (libunwind, libc++abi, libc++, then libLLVM), or [] without it."""
    wanted = _info("LLVM_LIBRARY")
    if not wanted:
        return []
    try:
        dist = metadata.distribution(PYPI_LLVM_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return []
    found: dict[str, Path] = {}
    for entry in dist.files or []:
        name = entry.name
        for key in ("libunwind.so.1", "libc++abi.so.1", "libc++.so.1", wanted):
            # libc++.so.1.0 carries the soname libc++.so.1 (its symlink may
            # not have been made yet).
            if name == key or (key != wanted and name == key + ".0"):
                found.setdefault(key, Path(str(dist.locate_file(entry))))
    order = ["libunwind.so.1", "libc++abi.so.1", "libc++.so.1", wanted]
    paths = [found[k] for k in order if k in found and found[k].exists()]
    return paths if wanted in found and found[wanted].exists() else []


def _missing_library_message(detail: str) -> str:
    version = _info("LLVM_VERSION")
    major = _info("LLVM_MAJOR")
    library = _info("LLVM_LIBRARY", "libLLVM")
    source = _info("LLVM_SOURCE")
    need = f"LLVM {version} ({library})" if version else "its LLVM shared library"
    pypi = (f"  - from PyPI: pip install '{PYPI_LLVM_DISTRIBUTION}=={version}.*'"
            if version else f"  - from PyPI: pip install {PYPI_LLVM_DISTRIBUTION}")
    debian = (f"  - from Debian/Ubuntu: apt-get install llvm-{major}" if major
              else "  - from Debian/Ubuntu: apt-get install llvm-NN")
    ways = [pypi, debian] if source != "system" else [debian, pypi]
    rebuild = ("(a build for the other source is made with `pip install .` for PyPI's LLVM, "
               "or `LLVMACCEL_LLVM_VERSION=NN pip install --no-build-isolation .` for "
               "Debian's llvm-NN)")
    return (f"llvmaccel needs {need}, which could not be loaded: {detail}\n"
            f"This build of llvmaccel was made against "
            f"{'the PyPI LLVM' if source == 'pypi' else 'the system LLVM' if source else 'LLVM'}"
            f". Get that release in one of two ways:\n" + "\n".join(ways) + "\n" + rebuild)


def _load_core() -> ModuleType:
    try:
        from . import _core  # type: ignore[attr-defined]

        return _core
    except ImportError as err:
        text = str(err)
        # The dynamic loader names the library it could not load first
        # ("libLLVM.so.23.1: cannot open shared object file", "...: file too
        # short"); anything else (a broken extension) is not ours to explain.
        if not any(name in text.split(":")[0] for name in _LIBRARY_NAMES):
            raise
        first = text
    for path in _pypi_libraries():
        try:
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError:
            break
    else:
        try:
            from . import _core  # type: ignore[attr-defined]

            return _core
        except ImportError:
            pass
    raise LLVMNotFoundError(_missing_library_message(first), _info("LLVM_VERSION"),
                            _info("LLVM_LIBRARY")) from None


def _find_plugin() -> Path:
    override = os.environ.get("LLVMACCEL_PLUGIN")
    if override:
        return Path(override).resolve()
    for name in ("LLVMAccel.so", "LLVMAccel.dylib", "LLVMAccel.dll"):
        candidate = _PACKAGE_DIR / name
        if candidate.exists():
            return candidate
    return _PACKAGE_DIR / "LLVMAccel.so"


_core = _load_core()
PLUGIN_PATH = _find_plugin()
_core.set_plugin_path(str(PLUGIN_PATH))

core = _core
