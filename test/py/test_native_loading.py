"""Without its libLLVM the package says what to install, and the command
line still prints its help.

The library is hidden in a private mount namespace (``unshare -m``, as root:
/dev/null bound over the libLLVM file the extension loaded), so nothing
outside the child process changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import llvmaccel
from llvmaccel import _native
from llvmaccel.errors import LLVMAccelError, LLVMNotFoundError


def _loaded_libllvm() -> Path:
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libLLVM" in path and ".so" in path:
            return Path(path)
    raise AssertionError("libLLVM is not mapped in this process")


def _hidden(code: str | None = None, argv: list[str] | None = None) -> subprocess.CompletedProcess:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to hide libLLVM in a mount namespace")
    lib = _loaded_libllvm()
    cmd = argv or [sys.executable, "-c", code or ""]
    script = f'mount --bind /dev/null "{lib}" && exec "$@"'
    out = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 and ("unshare:" in out.stderr or "mount:" in out.stderr):
        pytest.skip(f"mount namespaces are not permitted here: {out.stderr.strip()}")
    return out


def test_missing_libllvm_is_one_clear_error():
    info = _native._build_info
    assert info is not None
    out = _hidden("import llvmaccel\n"
                  "try:\n"
                  "    from llvmaccel import parse_ir\n"
                  "except ImportError as err:\n"
                  "    print(type(err).__name__, isinstance(err, llvmaccel.LLVMAccelError))\n"
                  "    print(err)\n")
    assert out.returncode == 0, out.stderr
    first, message = out.stdout.split("\n", 1)
    assert first == "LLVMNotFoundError True"
    assert f"llvmaccel needs LLVM {info.LLVM_VERSION} ({info.LLVM_LIBRARY})" in message
    assert f"pip install 'karellen-llvm-core=={info.LLVM_VERSION}.*'" in message
    assert f"apt-get install llvm-{info.LLVM_MAJOR}" in message


def test_import_of_a_native_module_raises_it():
    out = _hidden("import llvmaccel.jit")
    assert out.returncode == 1
    assert "llvmaccel.errors.LLVMNotFoundError: llvmaccel needs LLVM" in out.stderr


def test_help_works_without_libllvm_and_commands_say_what_to_install():
    cli = [sys.executable, "-m", "llvmaccel"]
    out = _hidden(argv=[*cli, "--help"])
    assert out.returncode == 0, out.stderr
    assert "usage: llvmaccel" in out.stdout and "plugin-path" in out.stdout
    out = _hidden(argv=[*cli, "passes"])
    assert out.returncode == 1
    assert out.stderr.startswith("llvmaccel: error: llvmaccel needs LLVM")
    assert "Traceback" not in out.stderr
    out = _hidden(argv=[*cli, "--version"])
    assert out.returncode == 0 and "LLVM not loaded" in out.stdout


def test_the_error_is_an_import_error_and_an_llvmaccel_error():
    err = LLVMNotFoundError("m", "23.1", "libLLVM.so.23.1")
    assert isinstance(err, ImportError) and isinstance(err, LLVMAccelError)
    assert (err.llvm_version, err.library) == ("23.1", "libLLVM.so.23.1")
    assert llvmaccel.LLVMNotFoundError is LLVMNotFoundError
