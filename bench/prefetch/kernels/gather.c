/* Control: tight gather s += T[idx[i]] (serial float sum). Used over a 1 GiB
 * table (memory bound, latency hidden by out-of-order execution) and over a
 * 64 KiB cache-resident table. */
#include <stdint.h>

float gather_sum(const float *T, const int32_t *idx, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; i++) {
#ifdef HAND_PREFETCH
    int64_t ahead = i + PF_DIST < n ? i + PF_DIST : n - 1;
    __builtin_prefetch(&T[idx[ahead]]);
#endif
    s += T[idx[i]];
  }
  return s;
}
