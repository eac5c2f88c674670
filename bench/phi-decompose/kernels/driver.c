// Calls a kernel `reps` times from native code, so that timing does not
// include the cost of a ctypes call (16 arguments for an MLIR memref ABI).
// Built into each variant's library: with -DHAND against kernels/hand.c,
// otherwise against the MLIR kernels (memref arguments expanded as
// allocated, aligned, offset, size, stride).
#include <stdint.h>

#ifdef HAND
void cdot_hand(const float *a, const float *b, float *out, int64_t n);
void caxpy_hand(const float *x, float *y, float re, float im, int64_t n);
void window_hand(const float *x, float *out, int64_t m, int64_t w,
                 int64_t step);
#else
#define MEMREF(T) T *, T *, int64_t, int64_t, int64_t
#define ARGS(p, n) (p), (p), 0, (n), 1
void cdot(MEMREF(const float), MEMREF(const float), MEMREF(float), int64_t);
void caxpy(MEMREF(const float), MEMREF(float), float, float, int64_t);
void window(MEMREF(const float), MEMREF(float), int64_t, int64_t, int64_t);
#endif

void run_cdot(int64_t reps, const float *a, const float *b, float *out,
              int64_t n) {
  for (int64_t r = 0; r < reps; ++r) {
#ifdef HAND
    cdot_hand(a, b, out, n);
#else
    cdot(ARGS(a, n), ARGS(b, n), ARGS(out, 1), n);
#endif
  }
}

void run_caxpy(int64_t reps, const float *x, float *y, float re, float im,
               int64_t n) {
  for (int64_t r = 0; r < reps; ++r) {
#ifdef HAND
    caxpy_hand(x, y, re, im, n);
#else
    caxpy(ARGS(x, n), ARGS(y, n), re, im, n);
#endif
  }
}

void run_window(int64_t reps, const float *x, int64_t total, float *out,
                int64_t m, int64_t w, int64_t step) {
  for (int64_t r = 0; r < reps; ++r) {
#ifdef HAND
    (void)total;
    window_hand(x, out, m, w, step);
#else
    window(ARGS(x, total), ARGS(out, m), m, w, step);
#endif
  }
}
