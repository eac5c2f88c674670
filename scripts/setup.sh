#!/usr/bin/env bash
# Sets up everything llvmaccel needs on a fresh Debian/Ubuntu machine, and is
# quick when it is all there already:
#   1. LLVM/clang from the distribution's packages (apt, when missing);
#   2. a virtualenv (.venv) with the pinned Python stack (requirements-dev.txt);
#   3. the llvmaccel package built and installed into it (pip install .);
#   4. the plugin and lit suite configured and built under build/llvm-NN.
# LLVMACCEL_LLVM_VERSION picks the LLVM release (default 22; 19..22).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
llvm="${LLVMACCEL_LLVM_VERSION:-22}"
venv="${LLVMACCEL_VENV:-$root/.venv}"
python="${PYTHON:-python3}"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "setup: need root (or sudo) to run: $*" >&2; exit 1
  fi
}

install_llvm() {
  local prefix="/usr/lib/llvm-$1"
  local pkgs=()
  [ -f "$prefix/lib/cmake/llvm/LLVMConfig.cmake" ] || pkgs+=("llvm-$1-dev")
  [ -x "$prefix/bin/FileCheck" ] || pkgs+=("llvm-$1-tools")
  [ -x "$prefix/bin/opt" ] || pkgs+=("llvm-$1")
  [ -x "$prefix/bin/lli" ] || pkgs+=("llvm-$1-runtime")
  [ -x "$prefix/bin/clang" ] || pkgs+=("clang-$1")
  [ -x "$prefix/bin/clang-format" ] || pkgs+=("clang-format-$1")
  # mlir-opt and mlir-translate, for the lit tests that lower MLIR themselves.
  [ -x "$prefix/bin/mlir-opt" ] || pkgs+=("mlir-$1-tools")
  command -v g++ >/dev/null || pkgs+=(g++)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    say "installing ${pkgs[*]} (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
}

setup_venv() {
  local stamp="$venv/.llvmaccel-requirements"
  if [ ! -x "$venv/bin/python" ]; then
    say "creating virtualenv $venv"
    "$python" -m venv "$venv"
  fi
  if ! cmp -s requirements-dev.txt "$stamp" 2>/dev/null; then
    say "installing the Python stack (requirements-dev.txt)"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -r requirements-dev.txt
    cp requirements-dev.txt "$stamp"
  fi
}

install_package() {
  say "building and installing llvmaccel (LLVM $llvm)"
  LLVMACCEL_LLVM_VERSION="$llvm" "$venv/bin/python" -m pip install -q \
    --no-build-isolation --no-deps --config-settings=build-dir="build/py-llvm$llvm" "$root"
}

build_lit_tree() {
  local build="$root/build/llvm-$1"
  say "building the plugin and lit suite in build/llvm-$1"
  "$venv/bin/cmake" -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DLLVMACCEL_LLVM_VERSION="$1" -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >/dev/null
  "$venv/bin/ninja" -C "$build" >/dev/null
}

install_llvm "$llvm"
setup_venv
if [ "${1:-}" = "--lit-only" ]; then
  build_lit_tree "$llvm"
  exit 0
fi
install_package
build_lit_tree "$llvm"
