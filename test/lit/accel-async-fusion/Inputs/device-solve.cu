// A CUDA program for a real device (gpu-device-cuda.test): an iterative
// solver step launching two kernels on one stream per iteration, with
// loop-invariant arguments, the loop accel-async-fusion captures into a
// CUDA graph. The values are exact in float (powers of two times small
// integers), so the device's results equal the host reference whether or
// not the compiler contracts y + a * x into an FMA.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" void report_launches(void); // device-count.c

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

extern "C" void solve(float *x, float *y, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, 0.5f, n);
    axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 2.0f, n);
  }
}

static void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    printf("%s: %s\n", what, cudaGetErrorString(e));
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
  cudaStream_t s;
  check(cudaMalloc(&dx, sizeof x), "cudaMalloc");
  check(cudaMalloc(&dy, sizeof y), "cudaMalloc");
  check(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dy, y, sizeof y, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  // Two calls: the second replays the graph the first captured (the pass
  // caches it per call site).
  solve(dx, dy, n, iters / 2, s);
  solve(dx, dy, n, iters - iters / 2, s);
  check(cudaGetLastError(), "launch");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  check(cudaMemcpy(x, dx, sizeof x, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost), "cudaMemcpy");
  int bad = 0;
  for (int i = 0; i < n; ++i)
    bad += x[i] != rx[i] || y[i] != ry[i];
  for (int i = 0; i < n; i += 1023)
    printf("x[%d] = %a  y[%d] = %a\n", i, x[i], i, y[i]);
  printf("%s\n", bad ? "differs from the host reference" : "matches the host reference");
  report_launches();
  cudaFree(dx);
  cudaFree(dy);
  cudaStreamDestroy(s);
  return bad != 0;
}
