// Controls that need no rewrite: saxpy (OP_SAXPY) and a 1-D 7-tap
// convolution over a row padded by the caller (OP_VALID, no checks). HAND is
// the same code.
#include "common.h"

static float *x, *y, *z;
static long n;
static float w[7];

__attribute__((noinline)) void kernel(float *restrict yy, const float *restrict xx,
                                      long nn) {
#ifdef OP_SAXPY
  for (long i = 0; i < nn; i++)
    yy[i] = 1.5f * xx[i] + z[i] * 0.5f;
#else
  for (long i = 0; i < nn; i++) {
    float s = 0;
#pragma clang loop unroll(full)
    for (int k = 0; k < 7; k++)
      s += xx[i + k] * w[k];
    yy[i] = s;
  }
#endif
}

void setup(long scale) {
  n = scale;
  x = alloc_floats(n + 8);
  y = alloc_floats(n);
  z = alloc_floats(n);
  for (int k = 0; k < 7; k++)
    w[k] = rand_float();
}

void run(void) {
  kernel(y, x, n);
}

uint64_t check(void) { return checksum(y, n); }
