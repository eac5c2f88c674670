// 1-D convolution of a long row with K taps and zero padding K/2 on both
// sides (float32), the bounds check in the hot loop: y[i] = sum_k x[i+k-P]*w[k]
// over the taps that fall inside x. HAND: the row split by hand into the
// left edge, the unchecked interior and the right edge.
#include "common.h"

#ifndef K
#define K 7
#endif
#define P (K / 2)

static float *x, *y, w[K];
static long n;

__attribute__((noinline)) void conv1d(float *restrict yy, const float *restrict xx,
                                      const float *restrict ww, int nn) {
#ifndef HAND
  for (int i = 0; i < nn; i++) {
    float s = 0;
#pragma clang loop unroll(full)
    for (int k = 0; k < K; k++) {
      int j = i + k - P;
      if (j >= 0 && j < nn)
        s += xx[j] * ww[k];
    }
    yy[i] = s;
  }
#else
  int lo = P < nn ? P : nn, hi = nn - P > lo ? nn - P : lo;
  for (int i = 0; i < lo; i++) {
    float s = 0;
#pragma clang loop unroll(full)
    for (int k = 0; k < K; k++) {
      int j = i + k - P;
      if (j >= 0 && j < nn)
        s += xx[j] * ww[k];
    }
    yy[i] = s;
  }
  for (int i = lo; i < hi; i++) {
    float s = 0;
#pragma clang loop unroll(full)
    for (int k = 0; k < K; k++)
      s += xx[i + k - P] * ww[k];
    yy[i] = s;
  }
  for (int i = hi; i < nn; i++) {
    float s = 0;
#pragma clang loop unroll(full)
    for (int k = 0; k < K; k++) {
      int j = i + k - P;
      if (j >= 0 && j < nn)
        s += xx[j] * ww[k];
    }
    yy[i] = s;
  }
#endif
}

void setup(long scale) {
  n = scale;
  x = alloc_floats(n);
  y = alloc_floats(n);
  for (int k = 0; k < K; k++)
    w[k] = rand_float();
}

void run(void) {
  conv1d(y, x, w, (int)n);
}

uint64_t check(void) { return checksum(y, n); }
