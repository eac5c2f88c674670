// The HIP form of device-count.c: counts hipLaunchKernel and hipGraphLaunch
// calls and passes each on to the real runtime (libamdhip64, RTLD_NEXT).
#define _GNU_SOURCE
#define __HIP_PLATFORM_AMD__
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long Launches, GraphLaunches;

static void *real(const char *Name) {
  void *F = dlsym(RTLD_NEXT, Name);
  if (!F) {
    printf("no %s in the HIP runtime\n", Name);
    exit(1);
  }
  return F;
}

hipError_t hipLaunchKernel(const void *Func, dim3 Grid, dim3 Block,
                           void **Args, size_t Shmem, hipStream_t S) {
  static hipError_t (*F)(const void *, dim3, dim3, void **, size_t,
                         hipStream_t);
  if (!F)
    F = real("hipLaunchKernel");
  ++Launches;
  return F(Func, Grid, Block, Args, Shmem, S);
}

hipError_t hipGraphLaunch(hipGraphExec_t Exec, hipStream_t S) {
  static hipError_t (*F)(hipGraphExec_t, hipStream_t);
  if (!F)
    F = real("hipGraphLaunch");
  ++GraphLaunches;
  return F(Exec, S);
}

void report_launches(void) {
  printf("launches: hipLaunchKernel %lu hipGraphLaunch %lu\n", Launches,
         GraphLaunches);
}
