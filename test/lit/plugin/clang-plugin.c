// clang -fpass-plugin runs the llvmaccel passes in its O2 pipeline. To give
// -mllvm -llvmaccel-auto, load the plugin with -fplugin too (clang before 22
// parses -mllvm before it loads pass plugins), or set LLVMACCEL_AUTO.
// REQUIRES: clang
// RUN: %clang -O2 -fpass-plugin=%plugin -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ON
// RUN: %clang -O2 -fplugin=%plugin -fpass-plugin=%plugin -mllvm -llvmaccel-auto=none -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: env LLVMACCEL_AUTO=none %clang -O2 -fpass-plugin=%plugin -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: %clang -O0 -fpass-plugin=%plugin -Xclang -fdebug-pass-manager -S -emit-llvm %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OFF

// ON: Running pass: AccelPrefetchPass on scale
// OFF-NOT: AccelPrefetchPass

void scale(float *x, long n) {
  for (long i = 0; i < n; ++i)
    x[i] *= 2.0f;
}
