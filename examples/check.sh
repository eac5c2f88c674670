#!/usr/bin/env bash
# The README's `llvmaccel check` examples, run as written on in.ll
# (test/py/test_examples.py runs this file). Outputs go to a scratch directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/in.ll" "$work"
cd "$work"
llvmaccel opt in.ll -passes='accel-prefetch<distance=32>' -o out.ll

llvmaccel check in.ll --passes accel-prefetch --arg B=bytes:8192,elem:i64,bound:16   # every function, 64 inputs
llvmaccel check in.ll -f embedding_sum --passes 'accel-prefetch<distance=32>' --arg B=bytes:8192,elem:i64,bound:16 --cases 500 --reduce
llvmaccel check in.ll --after out.ll --arg B=bytes:8192,elem:i64,bound:16 --arg n=range:0..1024
llvmaccel check in.ll --passes accel-prefetch --arg B=bytes:8192,elem:i64,bound:16 --targets x86_64,aarch64,riscv64,nvptx,amdgpu,spirv
