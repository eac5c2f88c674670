// Host code of iterative GPU loops, compiled by clang as CUDA host code with
// minimal declarations of the CUDA runtime API (no CUDA installation needed).
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
typedef struct CUstream_st *cudaStream_t;
typedef int cudaError_t;
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
extern "C" cudaError_t cudaLaunchKernel(const void *func, dim3 grid,
                                        dim3 block, void **args,
                                        unsigned long shmem,
                                        cudaStream_t stream);
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block,
                                                unsigned long shmem = 0,
                                                void *stream = 0);
extern "C" cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block,
                                                  unsigned long *shmem,
                                                  void *stream);
extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t stream);

__global__ void scale(float *x, float a, int n) {}
__global__ void axpy(float *y, const float *x, float a, int n) {}

// An iterative solver step: the same two launches on one stream each
// iteration, with loop-invariant arguments.
extern "C" void solve(float *x, float *y, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i) {
    scale<<<n / 256, 256, 0, s>>>(x, 0.5f, n);
    axpy<<<n / 256, 256, 0, s>>>(y, x, 2.0f, n);
  }
}

// A float argument is part of the graph cache's key, compared bit for bit.
extern "C" void solve_scaled(float *x, float a, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i)
    scale<<<n / 256, 256, 0, s>>>(x, a, n);
}

// Declined: the host waits for the stream every iteration.
extern "C" void solve_sync(float *x, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i) {
    scale<<<n / 256, 256, 0, s>>>(x, 0.5f, n);
    cudaStreamSynchronize(s);
  }
}

// Declined: an argument changes from iteration to iteration.
extern "C" void solve_shift(float *x, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i)
    scale<<<n / 256, 256, 0, s>>>(x + i, 0.5f, n);
}

// Declined: the legacy default stream cannot be captured.
extern "C" void solve_default(float *x, int n, int iters) {
  for (int i = 0; i < iters; ++i)
    scale<<<n / 256, 256>>>(x, 0.5f, n);
}
