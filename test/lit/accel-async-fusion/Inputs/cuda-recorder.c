// A recording implementation of the CUDA runtime and driver API entry points
// the host code of launch-loops.cu, driver-api-loops.c and
// accel-async-fusion's graphs use, for tests only: it prints every API call
// ("api ...") and every kernel that runs ("run ...", with its configuration
// and argument bytes), from a direct launch or from a graph replay, so the
// kernels run before and after the pass can be compared.
// RECORDER_REFUSE_CAPTURE=1 makes stream capture fail. Compiled with
// -DRECORDER_HIP it implements the HIP runtime and module entry points
// instead (the log still names them by their CUDA names).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RECORDER_HIP
#define cudaLaunchKernel hipLaunchKernel
#define __cudaPushCallConfiguration __hipPushCallConfiguration
#define __cudaPopCallConfiguration __hipPopCallConfiguration
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphLaunch hipGraphLaunch
#define cuLaunchKernel hipModuleLaunchKernel
#endif

typedef struct {
  unsigned x, y, z;
} dim3;

typedef struct {
  const void *Func;
  dim3 Grid, Block;
  size_t Shmem;
  void *Stream;
  unsigned char Args[64];
  size_t ArgBytes;
} Node;

typedef struct {
  Node Nodes[32];
  int N;
} Graph;

// The driver names the argument sizes of each kernel stub ("8,4,4") and the
// buffers whose addresses are printed by name (so that runs of different
// executables compare equal).
const char *recorder_arg_sizes(const char *Stub);
static struct {
  const char *Name;
  const char *Base;
  size_t Size;
} Buffers[8];
static int NumBuffers;
void recorder_buffer(const char *Name, const void *Base, size_t Size) {
  Buffers[NumBuffers].Name = Name;
  Buffers[NumBuffers].Base = Base;
  Buffers[NumBuffers].Size = Size;
  ++NumBuffers;
}

static Graph Capture;
static void *CaptureStream;
static int Capturing;
static dim3 PushedGrid[8], PushedBlock[8];
static size_t PushedShmem[8];
static void *PushedStream[8];
static int Pushed;

static const char *stubName(const void *F) {
  Dl_info Info;
  if (dladdr(F, &Info) && Info.dli_sname)
    return Info.dli_sname;
  return "?";
}

static void run(const Node *K) {
  printf("run %s grid=%u,%u,%u block=%u,%u,%u shmem=%zu stream=%p args=",
         stubName(K->Func), K->Grid.x, K->Grid.y, K->Grid.z, K->Block.x,
         K->Block.y, K->Block.z, K->Shmem, K->Stream);
  for (size_t I = 0; I < K->ArgBytes; ++I)
    printf("%02x", K->Args[I]);
  printf("\n");
}

static int launch(const char *Api, const void *Func, dim3 Grid, dim3 Block,
                  void **Args, size_t Shmem, void *Stream) {
  Node K = {Func, Grid, Block, Shmem, Stream, {0}, 0};
  const char *Sizes = recorder_arg_sizes(stubName(Func));
  for (int I = 0; *Sizes; ++I) {
    size_t S = strtoul(Sizes, (char **)&Sizes, 10);
    if (*Sizes == ',')
      ++Sizes;
    const char *P = NULL;
    if (S == sizeof(void *))
      memcpy(&P, Args[I], S);
    for (int B = 0; B < NumBuffers; ++B)
      if (P >= Buffers[B].Base && P < Buffers[B].Base + Buffers[B].Size) {
        // A pointer into a named buffer: its offset, tagged by the index.
        uint64_t Off = (uint64_t)(P - Buffers[B].Base) | (uint64_t)(B + 1) << 56;
        memcpy(K.Args + K.ArgBytes, &Off, S);
        goto next;
      }
    memcpy(K.Args + K.ArgBytes, Args[I], S);
  next:
    K.ArgBytes += S;
  }
  printf("api %s %s\n", Api, stubName(Func));
  if (Capturing && Stream == CaptureStream) {
    Capture.Nodes[Capture.N++] = K;
    return 0;
  }
  run(&K);
  return 0;
}

int cudaLaunchKernel(const void *Func, dim3 Grid, dim3 Block, void **Args,
                     size_t Shmem, void *Stream) {
  return launch("cudaLaunchKernel", Func, Grid, Block, Args, Shmem, Stream);
}

// The driver API's launch (the module API's with RECORDER_HIP): the
// configuration as operands, the arguments in kernelParams; the packed
// `extra` form is not recorded.
int cuLaunchKernel(const void *Func, unsigned GX, unsigned GY, unsigned GZ,
                   unsigned BX, unsigned BY, unsigned BZ, unsigned Shmem,
                   void *Stream, void **Params, void **Extra) {
  dim3 Grid = {GX, GY, GZ}, Block = {BX, BY, BZ};
  if (Extra) {
    printf("api cuLaunchKernel with extra: not recorded\n");
    return 1;
  }
  return launch("cuLaunchKernel", Func, Grid, Block, Params, Shmem, Stream);
}

unsigned __cudaPushCallConfiguration(dim3 Grid, dim3 Block, size_t Shmem,
                                     void *Stream) {
  PushedGrid[Pushed] = Grid;
  PushedBlock[Pushed] = Block;
  PushedShmem[Pushed] = Shmem;
  PushedStream[Pushed] = Stream;
  ++Pushed;
  return 0;
}

int __cudaPopCallConfiguration(dim3 *Grid, dim3 *Block, size_t *Shmem,
                               void **Stream) {
  --Pushed;
  *Grid = PushedGrid[Pushed];
  *Block = PushedBlock[Pushed];
  *Shmem = PushedShmem[Pushed];
  *Stream = PushedStream[Pushed];
  return 0;
}

int cudaStreamSynchronize(void *Stream) {
  printf("api cudaStreamSynchronize\n");
  return 0;
}

static int beginCapture(const char *Api, void *Stream, int Mode) {
  printf("api %s mode=%d\n", Api, Mode);
  const char *Refuse = getenv("RECORDER_REFUSE_CAPTURE");
  if (Refuse && *Refuse == '1')
    return 1;
  Capturing = 1;
  CaptureStream = Stream;
  Capture.N = 0;
  return 0;
}

static int endCapture(const char *Api, void *Stream, Graph **G) {
  printf("api %s nodes=%d\n", Api, Capture.N);
  Capturing = 0;
  *G = malloc(sizeof(Graph));
  **G = Capture;
  return 0;
}

static int instantiate(const char *Api, Graph **Exec, Graph *G) {
  printf("api %s\n", Api);
  *Exec = malloc(sizeof(Graph));
  **Exec = *G;
  return 0;
}

static int graphDestroy(const char *Api, Graph *G) {
  printf("api %s\n", Api);
  free(G);
  return 0;
}

static int graphLaunch(const char *Api, Graph *Exec, void *Stream) {
  printf("api %s\n", Api);
  for (int I = 0; I < Exec->N; ++I)
    run(&Exec->Nodes[I]);
  return 0;
}

int cudaStreamBeginCapture(void *Stream, int Mode) {
  return beginCapture("cudaStreamBeginCapture", Stream, Mode);
}
int cudaStreamEndCapture(void *Stream, Graph **G) {
  return endCapture("cudaStreamEndCapture", Stream, G);
}
int cudaGraphInstantiateWithFlags(Graph **Exec, Graph *G,
                                  unsigned long long Flags) {
  return instantiate("cudaGraphInstantiateWithFlags", Exec, G);
}
int cudaGraphDestroy(Graph *G) { return graphDestroy("cudaGraphDestroy", G); }
int cudaGraphExecDestroy(Graph *Exec) {
  return graphDestroy("cudaGraphExecDestroy", Exec);
}
int cudaGraphLaunch(Graph *Exec, void *Stream) {
  return graphLaunch("cudaGraphLaunch", Exec, Stream);
}

#ifndef RECORDER_HIP
// The driver API's graph entry points (HIP's module API uses the hip graph
// entry points above).
int cuStreamSynchronize(void *Stream) {
  printf("api cuStreamSynchronize\n");
  return 0;
}
int cuStreamBeginCapture_v2(void *Stream, int Mode) {
  return beginCapture("cuStreamBeginCapture_v2", Stream, Mode);
}
int cuStreamEndCapture(void *Stream, Graph **G) {
  return endCapture("cuStreamEndCapture", Stream, G);
}
int cuGraphInstantiateWithFlags(Graph **Exec, Graph *G,
                                unsigned long long Flags) {
  return instantiate("cuGraphInstantiateWithFlags", Exec, G);
}
int cuGraphDestroy(Graph *G) { return graphDestroy("cuGraphDestroy", G); }
int cuGraphExecDestroy(Graph *Exec) {
  return graphDestroy("cuGraphExecDestroy", Exec);
}
int cuGraphLaunch(Graph *Exec, void *Stream) {
  return graphLaunch("cuGraphLaunch", Exec, Stream);
}
#endif
