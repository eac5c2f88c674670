// Shared helpers of the accel-masked-load benchmark kernels: deterministic
// data and a checksum over the bits of an output array.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bench_rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t splitmix64(void) {
  uint64_t z = (bench_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline float rand_float(void) {
  return (float)(splitmix64() >> 40) / (float)(1 << 24) - 0.5f;
}

static float *alloc_floats(long n) {
  float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
  for (long i = 0; i < n; i++)
    p[i] = rand_float();
  return p;
}

// Sum of the bit patterns of a[0..n), position-weighted: identical outputs
// give identical checksums, any changed bit changes it.
static uint64_t checksum(const float *a, long n) {
  uint64_t s = 0;
  for (long i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &a[i], 4);
    s += (uint64_t)b * (uint64_t)(i + 1);
  }
  return s;
}
