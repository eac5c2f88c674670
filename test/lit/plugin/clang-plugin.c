// clang -fpass-plugin runs the llvmaccel passes in its O2 pipeline, and
// -mllvm -llvmaccel-auto=none leaves them out.
// REQUIRES: clang
// RUN: %clang -O2 -fpass-plugin=%plugin -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ON
// RUN: %clang -O2 -fpass-plugin=%plugin -mllvm -llvmaccel-auto=none -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: %clang -O0 -fpass-plugin=%plugin -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF

// ON: Running pass: AccelPrefetchPass on scale
// OFF-NOT: AccelPrefetchPass

void scale(float *x, long n) {
  for (long i = 0; i < n; ++i)
    x[i] *= 2.0f;
}
