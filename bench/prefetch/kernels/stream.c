/* Control: contiguous streaming sum (the hardware prefetcher's best case). */
#include <stdint.h>

uint64_t stream_sum(const uint64_t *a, int64_t n) {
  uint64_t s = 0;
#ifdef HAND_PREFETCH
  /* One prefetch per 64-byte line, PF_DIST lines ahead. */
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __builtin_prefetch(&a[i + 8 * PF_DIST]);
    for (int k = 0; k < 8; k++)
      s += a[i + k];
  }
  for (; i < n; i++)
    s += a[i];
#else
  for (int64_t i = 0; i < n; i++)
    s += a[i];
#endif
  return s;
}
