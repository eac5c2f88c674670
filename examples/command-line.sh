#!/usr/bin/env bash
# The README's "Command line" examples, run as written (test/py/test_examples.py
# runs this file; for an LLVM release other than 22 it runs that release's
# opt-NN and clang-NN). Outputs go to a scratch directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/in.ll" "$here/kernel.c" "$work"
cd "$work"

PLUGIN=$(llvmaccel plugin-path)

# A pass alone, with parameters in angle brackets:
opt-22 -load-pass-plugin=$PLUGIN -passes='accel-prefetch<distance=32>' -pass-remarks=accel-prefetch -S in.ll -o out.ll
# The default pipelines run each pass at its extension point:
opt-22 -load-pass-plugin=$PLUGIN -passes='default<O3>' -S in.ll -o out.ll
clang-22 -O2 -fpass-plugin=$PLUGIN -Rpass=accel-prefetch -c kernel.c
# Choose which passes join the default pipelines (also $LLVMACCEL_AUTO):
clang-22 -O3 -fpass-plugin=$PLUGIN -mllvm -llvmaccel-auto=none -c kernel.c
# (clang 19-21 parse -mllvm before loading pass plugins: add -fplugin=$PLUGIN, or set LLVMACCEL_AUTO)
opt-22 -load-pass-plugin=$PLUGIN -print-passes | grep -A1 LLVMAccel   # listed ahead of LLVM's own

llvmaccel passes                       # every pass, its parameters and defaults
llvmaccel opt in.ll -passes='default<O3>' -o out.ll --remarks --stats
llvmaccel profile in.ll -f embedding_sum --arg T=bytes:262144,elem:float --arg B=bytes:8192,elem:i64,bound:1024 --compare   # time per call and per loop nest, with and without them
llvmaccel blas                         # the BLAS library matmuls may call, and from which size (measured on this host; --measure, --json)
