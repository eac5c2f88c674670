// From LLVM 22 on, clang loads pass plugins before it parses -mllvm, so the
// plugin's options work with -fpass-plugin alone.
// REQUIRES: clang, llvm-ge-22
// RUN: %clang -O2 -fpass-plugin=%plugin -mllvm -llvmaccel-auto=none -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s

// CHECK-NOT: AccelPrefetchPass

void scale(float *x, long n) {
  for (long i = 0; i < n; ++i)
    x[i] *= 2.0f;
}
