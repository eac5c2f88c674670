// A recording implementation of the Level Zero entry points ze-loops.c uses,
// for tests only: prints every API call ("api ...") and every kernel a
// command list runs when it is executed ("run ...", with the group count and
// the argument bytes captured when the launch was appended), plus a driver
// that calls the loops of ze-loops.c on pretend handles.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *Name;
  unsigned char Args[4][8];
  size_t Sizes[4];
} Kernel;
typedef struct {
  uint32_t X, Y, Z;
} Groups;
typedef struct {
  Kernel K;
  Groups G;
} Entry;
typedef struct {
  Entry Entries[16];
  int N, Closed;
} List;

int zeCommandListReset(List *L) {
  printf("api zeCommandListReset\n");
  L->N = 0;
  L->Closed = 0;
  return 0;
}

int zeKernelSetArgumentValue(Kernel *K, uint32_t I, size_t Size,
                             const void *Value) {
  printf("api zeKernelSetArgumentValue %s %u\n", K->Name, I);
  memcpy(K->Args[I], Value, Size);
  K->Sizes[I] = Size;
  return 0;
}

int zeCommandListAppendLaunchKernel(List *L, Kernel *K, const Groups *G,
                                    void *Signal, uint32_t NumWait,
                                    void **Wait) {
  printf("api zeCommandListAppendLaunchKernel %s\n", K->Name);
  if (L->Closed)
    return 1;
  L->Entries[L->N].K = *K;
  L->Entries[L->N].G = *G;
  ++L->N;
  return 0;
}

int zeCommandListAppendBarrier(List *L, void *Signal, uint32_t NumWait,
                               void **Wait) {
  static const Kernel Barrier = {"barrier"};
  printf("api zeCommandListAppendBarrier\n");
  if (L->Closed)
    return 1;
  L->Entries[L->N].K = Barrier;
  L->Entries[L->N].G = (Groups){0, 0, 0};
  ++L->N;
  return 0;
}

int zeCommandListClose(List *L) {
  printf("api zeCommandListClose\n");
  L->Closed = 1;
  return 0;
}

int zeCommandQueueExecuteCommandLists(void *Q, uint32_t N, List **Lists,
                                      void *Fence) {
  printf("api zeCommandQueueExecuteCommandLists\n");
  for (uint32_t I = 0; I < N; ++I) {
    if (!Lists[I]->Closed)
      return 1;
    for (int E = 0; E < Lists[I]->N; ++E) {
      Entry *En = &Lists[I]->Entries[E];
      printf("run %s groups=%u,%u,%u args=", En->K.Name, En->G.X, En->G.Y,
             En->G.Z);
      for (int A = 0; A < 4; ++A)
        for (size_t B = 0; B < En->K.Sizes[A]; ++B)
          printf("%02x", En->K.Args[A][B]);
      printf("\n");
    }
  }
  return 0;
}

int zeCommandQueueSynchronize(void *Q, uint64_t Timeout) {
  printf("api zeCommandQueueSynchronize\n");
  return 0;
}

void step(List *, void *, Kernel *, Kernel *, float *, float *, int, int);
void step_shift(List *, void *, Kernel *, int);
void step_nowait(List *, void *, Kernel *, int);
void step_barrier(List *, void *, Kernel *, Kernel *, int);
void step_barrier_event(List *, void *, Kernel *, void *, int);
void step_indexed_args(List *, void *, Kernel *, int, int);
void step_indexed_groups(List *, void *, Kernel *, int, int);

int main(void) {
  static List L;
  static Kernel Scale = {"scale"}, Axpy = {"axpy"};
  void *Q = (void *)0x100;
  // Pretend device pointers: never dereferenced, the same in every build.
  float *X = (float *)0x10000, *Y = (float *)0x20000;
  printf("== step 3\n");
  step(&L, Q, &Scale, &Axpy, X, Y, 1024, 3);
  printf("== step 0\n");
  step(&L, Q, &Scale, &Axpy, X, Y, 1024, 0);
  printf("== step_shift 2\n");
  step_shift(&L, Q, &Scale, 2);
  printf("== step_nowait 2\n");
  step_nowait(&L, Q, &Scale, 2);
  printf("== step_barrier 2\n");
  step_barrier(&L, Q, &Scale, &Axpy, 2);
  printf("== step_barrier_event 2\n");
  step_barrier_event(&L, Q, &Scale, &L, 2);
  printf("== step_indexed_args 3\n");
  step_indexed_args(&L, Q, &Scale, 7, 3);
  printf("== step_indexed_groups 3\n");
  step_indexed_groups(&L, Q, &Scale, 7, 3);
  return 0;
}
