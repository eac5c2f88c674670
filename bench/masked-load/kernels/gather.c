// Gather with a default (fill-mode take): y[i] = 0 <= j < n ? x[j] : 0 with
// j = idx[i], a quarter of the indices out of range (negative or past n).
// The table is TABLE floats (cache-resident or not). HAND: the branch-free
// form written by hand (clamped index, unconditional load, select).
#include "common.h"

#ifndef TABLE
#define TABLE (16 * 1024)
#endif

static float *x, *y;
static int *idx;
static long m;

#ifdef EXTENT
// The table's extent stated, as llvmaccel's frontends state their buffers':
// x holds TABLE floats and n is at most that. Without it the pass may not
// read x[clamp(j, 0, n-1)] (a check's bound says nothing of x's size).
#define XX const float xx[restrict static TABLE]
#else
#define XX const float *restrict xx
#endif

__attribute__((noinline)) void take_fill(float *restrict yy, XX,
                                         const int *restrict ii, int n, long mm) {
#ifdef EXTENT
  __builtin_assume(n <= TABLE);
#endif
  for (long i = 0; i < mm; i++) {
    int j = ii[i];
#ifndef HAND
    yy[i] = (j >= 0 && j < n) ? xx[j] : 0.0f;
#else
    int c = j < 0 ? 0 : (j >= n ? n - 1 : j);
    float v = xx[c];
    yy[i] = (j >= 0 && j < n) ? v : 0.0f;
#endif
  }
}

void setup(long scale) {
  m = scale;
  x = alloc_floats(TABLE);
  y = alloc_floats(m);
  idx = malloc(m * sizeof(int));
  for (long i = 0; i < m; i++) {
    uint64_t r = splitmix64();
    long j = (long)((r >> 8) % (TABLE + TABLE / 3)) - TABLE / 6;
    idx[i] = (int)j;
  }
}

void run(void) {
  take_fill(y, x, idx, TABLE, m);
}

uint64_t check(void) { return checksum(y, m); }
