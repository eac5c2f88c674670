// Runs @racy of racy.mlir a few times and waits for it.
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
typedef void *Obj;
Obj racy(int32_t *, int32_t *, int64_t, int64_t, int64_t, int64_t);
void mlirAsyncRuntimeAwaitToken(Obj);
void mlirAsyncRuntimeDropRef(Obj, int64_t);

static atomic_int Arrived;

static double seconds(void) {
  struct timespec T;
  clock_gettime(CLOCK_MONOTONIC, &T);
  return T.tv_sec + T.tv_nsec * 1e-9;
}

// Called by both tasks of a round: waits (at most 5 s) until the other one
// has started, so that they run at the same time on two workers. Their
// writes come after it in both, so it orders none of them.
void racy_rendezvous(void) {
  atomic_fetch_add(&Arrived, 1);
  double Start = seconds();
  while (atomic_load(&Arrived) < 2 && seconds() - Start < 5.0)
    ;
}

int main(void) {
  // The runtime's pool has as many workers as this thread may use CPUs
  // (LLVM's hardware_concurrency): under `taskset -c N`, one, which runs the
  // two tasks in turn. Allow every CPU before the runtime starts.
  cpu_set_t All;
  CPU_ZERO(&All);
  for (int C = 0; C < CPU_SETSIZE; ++C)
    CPU_SET(C, &All);
  sched_setaffinity(0, sizeof(All), &All);
  static int32_t M[16];
  for (int R = 0; R < 3; ++R) {
    atomic_store(&Arrived, 0);
    Obj T = racy(M, M, 0, 16, 1, 1000000);
    mlirAsyncRuntimeAwaitToken(T);
    mlirAsyncRuntimeDropRef(T, 1);
  }
  return 0;
}
