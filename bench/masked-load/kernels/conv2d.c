// 3x3 convolution (OP_CONV) or 3x3 max pooling (OP_POOL) over an H x W image
// with padding 1 (zero for the convolution, -inf for the pooling), the 2-D
// bounds check in the hot loop. HAND: rows and columns split by hand, the
// interior without checks.
#include "common.h"
#include <math.h>

static float *in, *out, w[9];
static long H, W;

#ifdef OP_POOL
#define PAD (-INFINITY)
#define ACC(s, v, k) s = fmaxf(s, v)
#define INIT (-INFINITY)
#else
#define PAD 0.0f
#define ACC(s, v, k) s += (v) * ww[k]
#define INIT 0.0f
#endif

__attribute__((noinline)) void conv2d(float *restrict o, const float *restrict a,
                                      const float *restrict ww, int h, int wd) {
#ifndef HAND
  for (int r = 0; r < h; r++)
    for (int c = 0; c < wd; c++) {
      float s = INIT;
#pragma clang loop unroll(full)
      for (int ky = 0; ky < 3; ky++)
#pragma clang loop unroll(full)
        for (int kx = 0; kx < 3; kx++) {
          int iy = r + ky - 1, ix = c + kx - 1;
          float v = PAD;
          if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
            v = a[(long)iy * wd + ix];
          ACC(s, v, ky * 3 + kx);
        }
      o[(long)r * wd + c] = s;
    }
#else
  for (int r = 0; r < h; r++) {
    int inner = r >= 1 && r < h - 1;
    int cl = wd < 1 ? wd : 1, ch = wd - 1 > cl ? wd - 1 : cl;
    for (int c = 0; c < wd; c++) {
      if (inner && c == cl) {
        // interior of an interior row: no checks
        for (; c < ch; c++) {
          float s = INIT;
#pragma clang loop unroll(full)
          for (int ky = 0; ky < 3; ky++)
#pragma clang loop unroll(full)
            for (int kx = 0; kx < 3; kx++) {
              float v = a[(long)(r + ky - 1) * wd + (c + kx - 1)];
              ACC(s, v, ky * 3 + kx);
            }
          o[(long)r * wd + c] = s;
        }
        if (c >= wd)
          break;
      }
      float s = INIT;
#pragma clang loop unroll(full)
      for (int ky = 0; ky < 3; ky++)
#pragma clang loop unroll(full)
        for (int kx = 0; kx < 3; kx++) {
          int iy = r + ky - 1, ix = c + kx - 1;
          float v = PAD;
          if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
            v = a[(long)iy * wd + ix];
          ACC(s, v, ky * 3 + kx);
        }
      o[(long)r * wd + c] = s;
    }
  }
#endif
}

void setup(long scale) {
  H = scale;
  W = scale;
  in = alloc_floats(H * W);
  out = alloc_floats(H * W);
  for (int k = 0; k < 9; k++)
    w[k] = rand_float();
}

void run(void) {
  conv2d(out, in, w, (int)H, (int)W);
}

uint64_t check(void) { return checksum(out, H * W); }
