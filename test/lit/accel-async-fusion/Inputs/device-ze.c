// A Level Zero program for a real device (gpu-device-level-zero.test): the
// solver loop of device-solve.cu with kernels from SPIR-V (argv[1]), which
// resets, fills, closes, executes and waits for one command list per
// iteration; accel-async-fusion records the list once. Launch counts are
// taken by passing the calls on to the loader (RTLD_NEXT). The values are
// exact in float, so the device's results equal the host reference.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long Appends, Executes;

static void *real(const char *Name) {
  void *F = dlsym(RTLD_NEXT, Name);
  if (!F) {
    printf("no %s in the Level Zero loader\n", Name);
    exit(1);
  }
  return F;
}

ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t L,
                                            ze_kernel_handle_t K,
                                            const ze_group_count_t *G,
                                            ze_event_handle_t E, uint32_t N,
                                            ze_event_handle_t *W) {
  static ze_result_t (*F)(ze_command_list_handle_t, ze_kernel_handle_t,
                          const ze_group_count_t *, ze_event_handle_t,
                          uint32_t, ze_event_handle_t *);
  if (!F)
    F = real("zeCommandListAppendLaunchKernel");
  ++Appends;
  return F(L, K, G, E, N, W);
}

ze_result_t zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t Q,
                                              uint32_t N,
                                              ze_command_list_handle_t *Ls,
                                              ze_fence_handle_t Fence) {
  static ze_result_t (*F)(ze_command_queue_handle_t, uint32_t,
                          ze_command_list_handle_t *, ze_fence_handle_t);
  if (!F)
    F = real("zeCommandQueueExecuteCommandLists");
  ++Executes;
  return F(Q, N, Ls, Fence);
}

static void check(ze_result_t R, const char *What) {
  if (R != ZE_RESULT_SUCCESS) {
    printf("%s failed: 0x%x\n", What, (unsigned)R);
    exit(1);
  }
}

// The loop the pass records once: the same launches and arguments every
// iteration.
void solve(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
           ze_kernel_handle_t Scale, ze_kernel_handle_t Axpy, float *X,
           float *Y, int N, int Iters) {
  ze_group_count_t G = {(uint32_t)(N + 255) / 256, 1, 1};
  float Half = 0.5f, Two = 2.0f;
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeKernelSetArgumentValue(Scale, 0, sizeof X, &X);
    zeKernelSetArgumentValue(Scale, 1, sizeof Half, &Half);
    zeKernelSetArgumentValue(Scale, 2, sizeof N, &N);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListAppendBarrier(List, 0, 0, 0);
    zeKernelSetArgumentValue(Axpy, 0, sizeof Y, &Y);
    zeKernelSetArgumentValue(Axpy, 1, sizeof X, &X);
    zeKernelSetArgumentValue(Axpy, 2, sizeof Two, &Two);
    zeKernelSetArgumentValue(Axpy, 3, sizeof N, &N);
    zeCommandListAppendLaunchKernel(List, Axpy, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

static unsigned char *readFile(const char *Path, size_t *Size) {
  FILE *F = fopen(Path, "rb");
  if (!F) {
    printf("cannot open %s\n", Path);
    exit(1);
  }
  fseek(F, 0, SEEK_END);
  *Size = (size_t)ftell(F);
  fseek(F, 0, SEEK_SET);
  unsigned char *Data = malloc(*Size);
  if (fread(Data, 1, *Size, F) != *Size)
    exit(1);
  fclose(F);
  return Data;
}

int main(int Argc, char **Argv) {
  enum { N = 4096, Iters = 10 };
  if (Argc != 2) {
    printf("usage: %s kernels.spv\n", Argv[0]);
    return 1;
  }
  check(zeInit(ZE_INIT_FLAG_GPU_ONLY), "zeInit");
  uint32_t Count = 1;
  ze_driver_handle_t Driver;
  check(zeDriverGet(&Count, &Driver), "zeDriverGet");
  Count = 1;
  ze_device_handle_t Device;
  check(zeDeviceGet(Driver, &Count, &Device), "zeDeviceGet");
  ze_context_desc_t CtxDesc = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, 0, 0};
  ze_context_handle_t Ctx;
  check(zeContextCreate(Driver, &CtxDesc, &Ctx), "zeContextCreate");

  // The first queue group that runs compute work.
  uint32_t Groups = 0;
  check(zeDeviceGetCommandQueueGroupProperties(Device, &Groups, 0), "queue groups");
  ze_command_queue_group_properties_t Props[16];
  if (Groups > 16)
    Groups = 16;
  for (uint32_t I = 0; I < Groups; ++I)
    Props[I] = (ze_command_queue_group_properties_t){
        ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, 0, 0, 0, 0};
  check(zeDeviceGetCommandQueueGroupProperties(Device, &Groups, Props), "queue groups");
  uint32_t Ordinal = 0;
  while (Ordinal < Groups &&
         !(Props[Ordinal].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE))
    ++Ordinal;
  if (Ordinal == Groups) {
    printf("no compute queue\n");
    return 1;
  }

  size_t Size;
  unsigned char *Spirv = readFile(Argv[1], &Size);
  ze_module_desc_t ModDesc = {ZE_STRUCTURE_TYPE_MODULE_DESC, 0, ZE_MODULE_FORMAT_IL_SPIRV,
                              Size, Spirv, "", 0};
  ze_module_handle_t Mod;
  check(zeModuleCreate(Ctx, Device, &ModDesc, &Mod, 0), "zeModuleCreate");
  ze_kernel_handle_t Scale, Axpy;
  ze_kernel_desc_t KDesc = {ZE_STRUCTURE_TYPE_KERNEL_DESC, 0, 0, "scale"};
  check(zeKernelCreate(Mod, &KDesc, &Scale), "zeKernelCreate scale");
  KDesc.pKernelName = "axpy";
  check(zeKernelCreate(Mod, &KDesc, &Axpy), "zeKernelCreate axpy");
  check(zeKernelSetGroupSize(Scale, 256, 1, 1), "zeKernelSetGroupSize");
  check(zeKernelSetGroupSize(Axpy, 256, 1, 1), "zeKernelSetGroupSize");

  ze_command_queue_desc_t QDesc = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, 0, Ordinal, 0, 0,
                                   ZE_COMMAND_QUEUE_MODE_DEFAULT,
                                   ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t Q;
  check(zeCommandQueueCreate(Ctx, Device, &QDesc, &Q), "zeCommandQueueCreate");
  ze_command_list_desc_t LDesc = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, 0, Ordinal, 0};
  ze_command_list_handle_t List;
  check(zeCommandListCreate(Ctx, Device, &LDesc, &List), "zeCommandListCreate");

  ze_device_mem_alloc_desc_t DDesc = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, 0, 0, 0};
  ze_host_mem_alloc_desc_t HDesc = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, 0, 0};
  float *X, *Y;
  check(zeMemAllocShared(Ctx, &DDesc, &HDesc, N * sizeof(float), 64, Device, (void **)&X),
        "zeMemAllocShared");
  check(zeMemAllocShared(Ctx, &DDesc, &HDesc, N * sizeof(float), 64, Device, (void **)&Y),
        "zeMemAllocShared");
  static float RX[N], RY[N];
  for (int I = 0; I < N; ++I) {
    X[I] = RX[I] = (float)I;
    Y[I] = RY[I] = 1.0f;
  }
  for (int K = 0; K < Iters; ++K)
    for (int I = 0; I < N; ++I) {
      RX[I] *= 0.5f;
      RY[I] += 2.0f * RX[I];
    }
  solve(List, Q, Scale, Axpy, X, Y, N, Iters);
  int Bad = 0;
  for (int I = 0; I < N; ++I)
    Bad += X[I] != RX[I] || Y[I] != RY[I];
  for (int I = 0; I < N; I += 1023)
    printf("x[%d] = %a  y[%d] = %a\n", I, X[I], I, Y[I]);
  printf("%s\n", Bad ? "differs from the host reference" : "matches the host reference");
  printf("launches: zeCommandListAppendLaunchKernel %lu zeCommandQueueExecuteCommandLists %lu\n",
         Appends, Executes);
  zeMemFree(Ctx, X);
  zeMemFree(Ctx, Y);
  zeCommandListDestroy(List);
  zeCommandQueueDestroy(Q);
  zeKernelDestroy(Scale);
  zeKernelDestroy(Axpy);
  zeModuleDestroy(Mod);
  zeContextDestroy(Ctx);
  free(Spirv);
  return Bad != 0;
}
