// A recording GPU runtime for llvmaccel's checks (llvmaccel.taskgen): the
// CUDA, HIP and Level Zero entry points that host launch loops and
// accel-async-fusion's rewrites of them call, without a GPU. Every kernel
// that "runs" (launched directly, replayed from a captured graph, or executed
// from a command list) is appended to the log buffer the caller passed to
// llvmaccel_rec_begin: its kernel id, configuration and argument bytes, with
// pointers into the buffers named by llvmaccel_rec_buffer written as offsets
// (so that two runs on different allocations compare equal). The log keeps
// one section per stream (the order between streams is not defined by the
// APIs, the order within one is). API calls themselves are not logged: a
// rewrite may change them; the kernels that run must not change.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS 4
#define MAX_KERNELS 32
#define MAX_NODES 64
#define MAX_ARGS 8

typedef struct {
  unsigned x, y, z;
} dim3;

typedef struct {
  uint32_t Kernel;
  uint32_t Grid[3], Block[3];
  uint64_t Shmem;
  uint32_t ArgBytes;
  unsigned char Args[MAX_ARGS * 8];
} Node;

typedef struct {
  Node Nodes[MAX_NODES];
  int N;
} Graph;

static struct {
  const void *Stub;
  char Sizes[64];
} Kernels[MAX_KERNELS];
static int NumKernels;
static struct {
  const char *Base;
  long Size;
} Buffers[4];
static int NumBuffers;

// Per-stream logs, written out by llvmaccel_rec_end.
static unsigned char *Log;
static long LogSize;
static unsigned char Sections[MAX_STREAMS][16384];
static long SectionUsed[MAX_STREAMS];
static uint64_t SectionStream[MAX_STREAMS];
static int NumSections, Overflow, Refuse;

static Graph Capture;
static const void *CaptureStream;
static int Capturing, CaptureBroken;
static dim3 PushedGrid[8], PushedBlock[8];
static size_t PushedShmem[8];
static void *PushedStream[8];
static int Pushed;

void llvmaccel_rec_begin(unsigned char *L, long Bytes, int RefuseCapture) {
  Log = L;
  LogSize = Bytes;
  memset(Log, 0, (size_t)Bytes);
  NumKernels = NumBuffers = NumSections = Overflow = Pushed = 0;
  Capturing = CaptureBroken = 0;
  Refuse = RefuseCapture;
}

void llvmaccel_rec_buffer(const void *Base, long Bytes) {
  if (NumBuffers < 4) {
    Buffers[NumBuffers].Base = Base;
    Buffers[NumBuffers].Size = Bytes;
    ++NumBuffers;
  }
}

void llvmaccel_rec_kernel(const void *Stub, const char *Sizes) {
  if (NumKernels < MAX_KERNELS) {
    Kernels[NumKernels].Stub = Stub;
    strncpy(Kernels[NumKernels].Sizes, Sizes, 63);
    ++NumKernels;
  }
}

// An argument's bytes, a pointer into a named buffer as its offset tagged by
// the buffer's number.
static void putArg(Node *K, const void *Value, size_t S) {
  if (K->ArgBytes + S > sizeof K->Args) {
    Overflow = 1;
    return;
  }
  if (S == sizeof(void *)) {
    const char *P;
    memcpy(&P, Value, S);
    for (int B = 0; B < NumBuffers; ++B)
      if (P >= Buffers[B].Base && P <= Buffers[B].Base + Buffers[B].Size) {
        uint64_t Off = (uint64_t)(P - Buffers[B].Base) | (uint64_t)(B + 1) << 56;
        memcpy(K->Args + K->ArgBytes, &Off, S);
        K->ArgBytes += S;
        return;
      }
  }
  memcpy(K->Args + K->ArgBytes, Value, S);
  K->ArgBytes += S;
}

static void run(const Node *K, const void *Stream) {
  uint64_t Id = (uint64_t)(uintptr_t)Stream;
  int S = 0;
  while (S < NumSections && SectionStream[S] != Id)
    ++S;
  if (S == NumSections) {
    if (NumSections == MAX_STREAMS) {
      Overflow = 1;
      return;
    }
    SectionStream[S] = Id;
    SectionUsed[S] = 0;
    ++NumSections;
  }
  size_t Bytes = offsetof(Node, Args) + K->ArgBytes;
  if (SectionUsed[S] + (long)Bytes > (long)sizeof Sections[S]) {
    Overflow = 1;
    return;
  }
  memcpy(Sections[S] + SectionUsed[S], K, Bytes);
  SectionUsed[S] += (long)Bytes;
}

int llvmaccel_rec_end(void) {
  // Sections in the order of their stream handles.
  long At = 0;
  int Done[MAX_STREAMS] = {0};
  for (int R = 0; R < NumSections; ++R) {
    int Best = -1;
    for (int S = 0; S < NumSections; ++S)
      if (!Done[S] && (Best < 0 || SectionStream[S] < SectionStream[Best]))
        Best = S;
    Done[Best] = 1;
    long Need = 16 + SectionUsed[Best];
    if (At + Need > LogSize) {
      Overflow = 1;
      break;
    }
    memcpy(Log + At, &SectionStream[Best], 8);
    memcpy(Log + At + 8, &SectionUsed[Best], 8);
    memcpy(Log + At + 16, Sections[Best], (size_t)SectionUsed[Best]);
    At += Need;
  }
  return Overflow ? -1 : NumSections;
}

static uint32_t kernelId(const void *Stub, const char **Sizes) {
  for (int I = 0; I < NumKernels; ++I)
    if (Kernels[I].Stub == Stub) {
      *Sizes = Kernels[I].Sizes;
      return (uint32_t)I;
    }
  *Sizes = "";
  return 0xffffffffu;
}

// CUDA and HIP (the same entry points under two prefixes).
static int launchKernel(const void *Func, dim3 Grid, dim3 Block, void **Args,
                        size_t Shmem, void *Stream) {
  Node K;
  memset(&K, 0, sizeof K);
  const char *Sizes;
  K.Kernel = kernelId(Func, &Sizes);
  K.Grid[0] = Grid.x, K.Grid[1] = Grid.y, K.Grid[2] = Grid.z;
  K.Block[0] = Block.x, K.Block[1] = Block.y, K.Block[2] = Block.z;
  K.Shmem = Shmem;
  for (int I = 0; *Sizes && I < MAX_ARGS; ++I) {
    size_t S = strtoul(Sizes, (char **)&Sizes, 10);
    if (*Sizes == ',')
      ++Sizes;
    putArg(&K, Args[I], S);
  }
  if (Capturing && Stream == CaptureStream) {
    if (Capture.N == MAX_NODES)
      return 1;
    Capture.Nodes[Capture.N++] = K;
    return 0;
  }
  run(&K, Stream);
  return 0;
}

static unsigned pushConfig(dim3 Grid, dim3 Block, size_t Shmem, void *Stream) {
  if (Pushed == 8)
    return 1;
  PushedGrid[Pushed] = Grid;
  PushedBlock[Pushed] = Block;
  PushedShmem[Pushed] = Shmem;
  PushedStream[Pushed] = Stream;
  ++Pushed;
  return 0;
}

static int popConfig(dim3 *Grid, dim3 *Block, size_t *Shmem, void **Stream) {
  if (Pushed == 0)
    return 1;
  --Pushed;
  *Grid = PushedGrid[Pushed];
  *Block = PushedBlock[Pushed];
  *Shmem = PushedShmem[Pushed];
  *Stream = PushedStream[Pushed];
  return 0;
}

static int streamSynchronize(void *Stream) {
  if (Capturing && Stream == CaptureStream) {
    CaptureBroken = 1; // not allowed while capturing: invalidates the capture
    return 1;
  }
  return 0;
}

// The legacy default stream (null) cannot be captured; nor a second capture.
static int beginCapture(void *Stream, int Mode) {
  (void)Mode;
  if (Refuse || !Stream || Capturing)
    return 1;
  Capturing = 1;
  CaptureBroken = 0;
  CaptureStream = Stream;
  Capture.N = 0;
  return 0;
}

static int endCapture(void *Stream, Graph **G) {
  if (!Capturing || Stream != CaptureStream) {
    *G = NULL;
    return 1;
  }
  Capturing = 0;
  if (CaptureBroken) {
    *G = NULL;
    return 1;
  }
  *G = malloc(sizeof(Graph));
  **G = Capture;
  return 0;
}

static int instantiate(Graph **Exec, Graph *G, unsigned long long Flags) {
  (void)Flags;
  if (!G)
    return 1;
  *Exec = malloc(sizeof(Graph));
  **Exec = *G;
  return 0;
}

static int graphDestroy(Graph *G) {
  free(G);
  return 0;
}

static int graphLaunch(Graph *Exec, void *Stream) {
  if (!Exec)
    return 1;
  for (int I = 0; I < Exec->N; ++I)
    run(&Exec->Nodes[I], Stream);
  return 0;
}

#define API(P)                                                                 \
  int P##LaunchKernel(const void *F, dim3 G, dim3 B, void **A, size_t S,      \
                      void *St) {                                              \
    return launchKernel(F, G, B, A, S, St);                                    \
  }                                                                            \
  unsigned __##P##PushCallConfiguration(dim3 G, dim3 B, size_t S, void *St) { \
    return pushConfig(G, B, S, St);                                            \
  }                                                                            \
  int __##P##PopCallConfiguration(dim3 *G, dim3 *B, size_t *S, void **St) {   \
    return popConfig(G, B, S, St);                                             \
  }                                                                            \
  int P##StreamSynchronize(void *St) { return streamSynchronize(St); }        \
  int P##StreamBeginCapture(void *St, int M) { return beginCapture(St, M); }  \
  int P##StreamEndCapture(void *St, Graph **G) { return endCapture(St, G); }  \
  int P##GraphInstantiateWithFlags(Graph **E, Graph *G,                       \
                                   unsigned long long F) {                    \
    return instantiate(E, G, F);                                               \
  }                                                                            \
  int P##GraphDestroy(Graph *G) { return graphDestroy(G); }                   \
  int P##GraphExecDestroy(Graph *E) { return graphDestroy(E); }               \
  int P##GraphLaunch(Graph *E, void *St) { return graphLaunch(E, St); }

API(cuda)
API(hip)

// Level Zero: kernels with argument slots, command lists that record
// launches, a queue that runs closed lists.
typedef struct {
  uint32_t Id;
  unsigned char Args[MAX_ARGS][8];
  size_t Sizes[MAX_ARGS];
  uint32_t GroupSize[3];
} ZeKernel;
typedef struct {
  uint32_t X, Y, Z;
} ZeGroups;
typedef struct {
  Node Nodes[MAX_NODES];
  int N, Closed;
} ZeList;

static ZeKernel ZeKernels[MAX_KERNELS];
static ZeList ZeLists[2];

void *llvmaccel_rec_ze_kernel(int Id, const char *Sizes) {
  ZeKernel *K = &ZeKernels[Id % MAX_KERNELS];
  memset(K, 0, sizeof *K);
  K->Id = (uint32_t)Id;
  (void)Sizes;
  return K;
}

void *llvmaccel_rec_ze_list(int Id) {
  ZeList *L = &ZeLists[Id & 1];
  memset(L, 0, sizeof *L);
  return L;
}

void *llvmaccel_rec_ze_queue(void) { return (void *)0x100; }

int zeCommandListReset(ZeList *L) {
  L->N = 0;
  L->Closed = 0;
  return 0;
}

int zeKernelSetArgumentValue(ZeKernel *K, uint32_t I, size_t Size,
                             const void *Value) {
  if (I >= MAX_ARGS || Size > 8)
    return 1;
  memcpy(K->Args[I], Value, Size);
  K->Sizes[I] = Size;
  return 0;
}

int zeKernelSetGroupSize(ZeKernel *K, uint32_t X, uint32_t Y, uint32_t Z) {
  K->GroupSize[0] = X, K->GroupSize[1] = Y, K->GroupSize[2] = Z;
  return 0;
}

int zeCommandListAppendLaunchKernel(ZeList *L, ZeKernel *K, const ZeGroups *G,
                                    void *Signal, uint32_t NumWait,
                                    void **Wait) {
  (void)Signal, (void)NumWait, (void)Wait;
  if (L->Closed || L->N == MAX_NODES)
    return 1;
  Node *N = &L->Nodes[L->N++];
  memset(N, 0, sizeof *N);
  N->Kernel = K->Id;
  N->Grid[0] = G->X, N->Grid[1] = G->Y, N->Grid[2] = G->Z;
  memcpy(N->Block, K->GroupSize, sizeof N->Block);
  for (int A = 0; A < MAX_ARGS; ++A)
    if (K->Sizes[A])
      putArg(N, K->Args[A], K->Sizes[A]);
  return 0;
}

int zeCommandListClose(ZeList *L) {
  L->Closed = 1;
  return 0;
}

int zeCommandQueueExecuteCommandLists(void *Q, uint32_t N, ZeList **Lists,
                                      void *Fence) {
  (void)Fence;
  for (uint32_t I = 0; I < N; ++I) {
    if (!Lists[I]->Closed)
      return 1;
    for (int E = 0; E < Lists[I]->N; ++E)
      run(&Lists[I]->Nodes[E], Q);
  }
  return 0;
}

int zeCommandQueueSynchronize(void *Q, uint64_t Timeout) {
  (void)Q, (void)Timeout;
  return 0;
}
