/* Control: a contiguous stream, out = a * x + y. The hardware prefetcher
 * covers it; llvmaccel should leave it alone. */
#include <stdint.h>

void scale_add(float *out, const float *x, const float *y, float a,
               int64_t n) {
  for (int64_t i = 0; i < n; i++)
    out[i] = a * x[i] + y[i];
}
