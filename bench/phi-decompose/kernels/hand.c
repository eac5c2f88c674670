// Hand-scalarized versions of kernels/complex.mlir for bench/phi-decompose:
// separate float accumulators for the real and imaginary parts, with the
// same fast-math flags as the MLIR (fastmath<reassoc,contract>).
#include <stdint.h>

#pragma clang fp reassociate(on) contract(fast)

void cdot_hand(const float *a, const float *b, float *out, int64_t n) {
  float re = 0.0f, im = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float ar = a[2 * i], ai = a[2 * i + 1];
    float br = b[2 * i], bi = b[2 * i + 1];
    re += ar * br - ai * bi;
    im += ai * br + ar * bi;
  }
  out[0] = re;
  out[1] = im;
}

void caxpy_hand(const float *x, float *y, float re, float im, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float xr = x[2 * i], xi = x[2 * i + 1];
    y[2 * i] = re * xr - im * xi + y[2 * i];
    y[2 * i + 1] = re * xi + im * xr + y[2 * i + 1];
  }
}

void window_hand(const float *x, float *out, int64_t m, int64_t w,
                 int64_t step) {
  for (int64_t j = 0; j < m; ++j) {
    const float *v = x + j * step;
    float s = 0.0f;
    for (int64_t k = 0; k < w; ++k)
      s += v[k];
    out[j] = s;
  }
}
