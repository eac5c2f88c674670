// Ragged attention-style row loop: each of R rows holds len[r] <= L valid
// keys; scores[r][j] = q[j] * k[r][j] for j < len[r], and -inf (the masked
// tail) past it; the row loop runs to L with the check inside. HAND: the
// valid part and the tail as two loops.
#include "common.h"
#include <math.h>

#define L 512
static float *q, *kk, *sc;
static int *len;
static long R;

__attribute__((noinline)) void scores(float *restrict s, const float *restrict qq,
                                      const float *restrict k, const int *restrict ln,
                                      long rows) {
  for (long r = 0; r < rows; r++) {
    int n = ln[r];
#ifndef HAND
    for (int j = 0; j < L; j++)
      s[r * L + j] = j < n ? qq[j] * k[r * L + j] : -INFINITY;
#else
    int v = n < L ? n : L;
    for (int j = 0; j < v; j++)
      s[r * L + j] = qq[j] * k[r * L + j];
    for (int j = v < 0 ? 0 : v; j < L; j++)
      s[r * L + j] = -INFINITY;
#endif
  }
}

void setup(long scale) {
  R = scale;
  q = alloc_floats(L);
  kk = alloc_floats(R * L);
  sc = alloc_floats(R * L);
  len = malloc(R * sizeof(int));
  for (long r = 0; r < R; r++)
    len[r] = (int)(splitmix64() % (L + 1));
}

void run(void) {
  scores(sc, q, kk, len, R);
}

uint64_t check(void) { return checksum(sc, R * L); }
