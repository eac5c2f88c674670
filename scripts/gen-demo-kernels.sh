#!/usr/bin/env bash
# Regenerates the LLVM IR of the demo kernels (python/llvmaccel/kernels/*.ll)
# from their C sources with clang 19. The IR is unoptimized
# (-O2 -Xclang -disable-llvm-passes: no optnone) and target-neutral (no
# target-cpu attributes), so the JIT optimizes it for the host at run time.
set -euo pipefail
# The oldest supported release writes IR that every newer one reads.
llvm_version="${LLVMACCEL_KERNEL_LLVM:-19}"
clang="${CLANG:-/usr/lib/llvm-${llvm_version}/bin/clang}"
dir="$(cd "$(dirname "$0")/../python/llvmaccel/kernels" && pwd)"
for src in "$dir"/*.c; do
  out="${src%.c}.ll"
  "$clang" -O2 -Xclang -disable-llvm-passes -fno-discard-value-names -g0 \
    -fno-ident -S -emit-llvm "$src" -o - |
    sed -E -e '/^target (datalayout|triple)/d' \
           -e 's/ "(target-cpu|target-features|tune-cpu)"="[^"]*"//g' \
           -e "s|^; ModuleID = .*|; ModuleID = '$(basename "$src")'|" \
           -e "s|^source_filename = .*|source_filename = \"$(basename "$src")\"|" > "$out"
  echo "wrote $out"
done
