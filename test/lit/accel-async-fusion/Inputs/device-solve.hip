// The HIP form of device-solve.cu, for a real AMD device (gpu-device-hip.test): an iterative
// solver step launching two kernels on one stream per iteration, with
// loop-invariant arguments, the loop accel-async-fusion captures into a
// HIP graph. The values are exact in float (powers of two times small
// integers), so the device's results equal the host reference whether or
// not the compiler contracts y + a * x into an FMA.
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" void report_launches(void); // device-count-hip.c

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= a;
}

__global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += a * x[i];
}

extern "C" void solve(float *x, float *y, int n, int iters, hipStream_t s) {
  for (int i = 0; i < iters; ++i) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, 0.5f, n);
    axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 2.0f, n);
  }
}

static void check(hipError_t e, const char *what) {
  if (e != hipSuccess) {
    printf("%s: %s\n", what, hipGetErrorString(e));
    exit(1);
  }
}

int main() {
  const int n = 4096, iters = 10;
  static float x[n], y[n], rx[n], ry[n];
  for (int i = 0; i < n; ++i) {
    x[i] = rx[i] = (float)i;
    y[i] = ry[i] = 1.0f;
  }
  for (int k = 0; k < iters; ++k)
    for (int i = 0; i < n; ++i) {
      rx[i] *= 0.5f;
      ry[i] += 2.0f * rx[i];
    }
  float *dx, *dy;
  hipStream_t s;
  check(hipMalloc(&dx, sizeof x), "hipMalloc");
  check(hipMalloc(&dy, sizeof y), "hipMalloc");
  check(hipMemcpy(dx, x, sizeof x, hipMemcpyHostToDevice), "hipMemcpy");
  check(hipMemcpy(dy, y, sizeof y, hipMemcpyHostToDevice), "hipMemcpy");
  check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreate");
  // Two calls: the second replays the graph the first captured (the pass
  // caches it per call site).
  solve(dx, dy, n, iters / 2, s);
  solve(dx, dy, n, iters - iters / 2, s);
  check(hipGetLastError(), "launch");
  check(hipStreamSynchronize(s), "hipStreamSynchronize");
  check(hipMemcpy(x, dx, sizeof x, hipMemcpyDeviceToHost), "hipMemcpy");
  check(hipMemcpy(y, dy, sizeof y, hipMemcpyDeviceToHost), "hipMemcpy");
  int bad = 0;
  for (int i = 0; i < n; ++i)
    bad += x[i] != rx[i] || y[i] != ry[i];
  for (int i = 0; i < n; i += 1023)
    printf("x[%d] = %a  y[%d] = %a\n", i, x[i], i, y[i]);
  printf("%s\n", bad ? "differs from the host reference" : "matches the host reference");
  report_launches();
  hipFree(dx);
  hipFree(dy);
  hipStreamDestroy(s);
  return bad != 0;
}
