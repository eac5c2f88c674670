// A launch loop whose launch is made in some iterations only (found by
// llvmaccel fuzz --pass accel-async-fusion, shape launch-cuda): a graph
// captured in the first iteration would replay it in every iteration.
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
typedef struct CUstream_st *cudaStream_t;
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
};
extern "C" int cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                                void **args, unsigned long shmem,
                                cudaStream_t stream);
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block,
                                                unsigned long shmem = 0,
                                                void *stream = 0);
extern "C" int __cudaPopCallConfiguration(dim3 *grid, dim3 *block,
                                          unsigned long *shmem, void *stream);

__global__ void scale(float *x, float a, int n) {}

extern "C" void every_other(float *x, int n, int iters, cudaStream_t s) {
  for (int i = 0; i < iters; ++i)
    if (i % 2 == 0)
      scale<<<n / 256, 256, 0, s>>>(x, 0.5f, n);
}
