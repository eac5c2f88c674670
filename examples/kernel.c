/* The README's input for clang: the embedding-bag sum of in.ll in C. With
   -O2 -fpass-plugin=$(llvmaccel plugin-path), accel-prefetch prefetches the
   row table[idx[i + d]] d iterations ahead. */
#include <stdint.h>

void embedding_sum(float *restrict out, const float *restrict table,
                   const int64_t *restrict idx, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float *row = table + idx[i] * 64;
    for (int k = 0; k < 64; k++)
      out[k] += row[k];
  }
}
