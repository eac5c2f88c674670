// The padded 1-D convolution and the fill-mode gather, as C through clang -O3
// with the plugin in the default pipeline: clang unrolls the taps, the pass
// splits the row loop at VectorizerStart and the vectorizer vectorizes the
// main loop; the gather from a table whose size the code states is clamped
// (generic x86-64) or left to masked gathers (AVX-512); one from a table of
// unknown size is clamped nowhere. -llvmaccel-auto=none leaves them alone.

// REQUIRES: clang, x86-registered-target
// RUN: %clang --target=x86_64-unknown-linux-gnu -O3 -fpass-plugin=%plugin \
// RUN:   -Rpass='accel-masked-load|loop-vectorize' -Rpass-missed=accel-masked-load \
// RUN:   -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=GENERIC
// RUN: %clang --target=x86_64-unknown-linux-gnu -O3 -mavx512f -fpass-plugin=%plugin \
// RUN:   -Rpass=accel-masked-load -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=AVX512
// RUN: %clang --target=x86_64-unknown-linux-gnu -O3 -fpass-plugin=%plugin -fplugin=%plugin \
// RUN:   -mllvm -llvmaccel-auto=none -Rpass=accel-masked-load -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NONE --allow-empty

// GENERIC: conv-clang.c:32:{{.*}} remark: loop split into {{[23]}} loops; the main loop runs without the range checks
// GENERIC: conv-clang.c:32:{{.*}} remark: vectorized loop
// GENERIC: conv-clang.c:49:{{.*}} remark: guarded gather made unconditional
// GENERIC: conv-clang.c:57:{{.*}} remark: guarded gather left alone: x is not known to hold n elements
// AVX512: conv-clang.c:32:{{.*}} remark: loop split into {{[23]}} loops
// AVX512: conv-clang.c:49:{{.*}} remark: guarded load left to the loop vectorizer: the target has masked gathers
// NONE-NOT: remark: {{.*}}accel-masked-load

#define K 7

void conv1d(float *restrict y, const float *restrict x, const float *restrict w,
            int n) {
  for (int i = 0; i < n; i++) {
    float s = 0;
    for (int k = 0; k < K; k++) {
      int j = i + k - K / 2;
      if (j >= 0 && j < n)
        s += x[j] * w[k];
    }
    y[i] = s;
  }
}

// x holds 4096 floats and n is at most that.
void take_fill(float *restrict y, const float x[restrict static 4096],
               const int *restrict idx, int n, int m) {
  __builtin_assume(n <= 4096);
  for (int i = 0; i < m; i++) {
    int j = idx[i];
    y[i] = (j >= 0 && j < n) ? x[j] : 0.0f;
  }
}

void take_fill_any(float *restrict y, const float *restrict x,
                   const int *restrict idx, int n, int m) {
  for (int i = 0; i < m; i++) {
    int j = idx[i];
    y[i] = (j >= 0 && j < n) ? x[j] : 0.0f;
  }
}
