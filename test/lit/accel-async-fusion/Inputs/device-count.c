// Counts the CUDA runtime's launch entry points a program calls, and passes
// each call on to the real runtime (libcudart, found with RTLD_NEXT). For the
// device tests: the launch counts before and after accel-async-fusion.
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long Launches, GraphLaunches;

static void *real(const char *Name) {
  void *F = dlsym(RTLD_NEXT, Name);
  if (!F) {
    printf("no %s in the CUDA runtime\n", Name);
    exit(1);
  }
  return F;
}

cudaError_t cudaLaunchKernel(const void *Func, dim3 Grid, dim3 Block,
                             void **Args, size_t Shmem, cudaStream_t S) {
  static cudaError_t (*F)(const void *, dim3, dim3, void **, size_t,
                          cudaStream_t);
  if (!F)
    F = real("cudaLaunchKernel");
  ++Launches;
  return F(Func, Grid, Block, Args, Shmem, S);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t Exec, cudaStream_t S) {
  static cudaError_t (*F)(cudaGraphExec_t, cudaStream_t);
  if (!F)
    F = real("cudaGraphLaunch");
  ++GraphLaunches;
  return F(Exec, S);
}

void report_launches(void) {
  printf("launches: cudaLaunchKernel %lu cudaGraphLaunch %lu\n", Launches,
         GraphLaunches);
}
