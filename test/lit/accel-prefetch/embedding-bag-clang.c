// The embedding-bag kernel through clang -O2 with the plugin: the inner loop
// is vectorized and fully unrolled, so the outer loop's 16 vector loads of a
// 256-byte row form one access of 4 cache lines.

// REQUIRES: clang
// RUN: %clang -O2 -fpass-plugin=%plugin -S -emit-llvm %s -o - | FileCheck %s
// RUN: %clang -O2 -fpass-plugin=%plugin -fno-discard-value-names -Rpass=accel-prefetch \
// RUN:   -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REMARK

// CHECK-LABEL: define {{.*}}void @embedding_bag(
// CHECK-COUNT-4: call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
// CHECK-NOT:     call void @llvm.prefetch.p0(
// CHECK:         declare void @llvm.prefetch.p0(

// REMARK: embedding-bag-clang.c:[[@LINE+7]]:{{.*}} remark: prefetched T[...] via idx, {{[0-9]+}} iterations ahead, 4 lines [-Rpass=accel-prefetch]

void embedding_bag(const float *restrict T, const int *restrict idx, int n,
                   float *restrict out) {
  for (int j = 0; j < n; j++) {
    const float *row = T + (long)idx[j] * 64;
    for (int k = 0; k < 64; k++)
      out[k] += row[k];
  }
}
