//===- Parallel.cpp - the thread pool of generated kernels ----------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See Parallel.h. One run at a time uses the workers: a caller that finds
/// the pool busy runs its kernel on its own thread, so concurrent callers
/// never wait for each other. Waits spin for up to SpinTime (a step is
/// microseconds to milliseconds, the gap between two calls from Python tens
/// of microseconds), then block on a condition variable, so idle workers
/// cost no CPU.
///
/// Where the process has loaded GNU OpenMP (PyTorch's CPU builds ship and
/// load libgomp), runs go to its threads instead (`GOMP_parallel`): a
/// framework's own kernels and ours then share one team of threads. With a
/// pool of our own, the OpenMP workers that PyTorch's ops leave spinning
/// (libgomp's default wait policy) took the cores our workers needed: on a
/// 2-core Xeon an affine row sum right after an inductor kernel ran at 0.85
/// ms against 0.66 with `OMP_WAIT_POLICY=PASSIVE`.
///
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <thread>

namespace {

/// How long a wait spins before it blocks. Waking a blocked thread took
/// 30-60 us on a 2-core VM, more than a step or the gap between two calls
/// from Python: with 2000 pause rounds (about 30 us on a Zen 5) a worker
/// slept between back-to-back calls and a caller slept in the run's last
/// wait, and a 2^17-element map ran at 101 us on two threads against 50 on
/// one. libgomp spins about as long by default.
constexpr std::chrono::microseconds SpinTime{300};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Spins until `Done()` or for SpinTime; whether `Done()` held.
template <typename Pred> bool spinUntil(Pred Done) {
  auto Until = std::chrono::steady_clock::now() + SpinTime;
  for (;;) {
    for (int I = 0; I < 64; ++I) {
      if (Done())
        return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= Until)
      return Done();
  }
}

struct Step {
  std::atomic<int64_t> Claimed{0}; // a step of one chunk
  std::atomic<int64_t> Done{0};
  // A while loop's decision step: the round in which its condition was
  // false (the loop's last), until then the largest value.
  std::atomic<int64_t> Final{INT64_MAX};
};

/// A thread's share of a parallel step's chunks (its lane), on a cache line
/// of its own.
struct alignas(64) Lane {
  std::atomic<int64_t> Claimed{0};
};

/// The state of one run.
struct Team {
  Team(int64_t Steps, int64_t Threads)
      : NSteps(Steps > 0 ? Steps : 1), NLanes(Threads > 0 ? Threads : 1),
        Steps(new Step[NSteps]), Lanes(new Lane[NSteps * NLanes]) {}

  int64_t NSteps, NLanes;
  std::unique_ptr<Step[]> Steps;
  std::unique_ptr<Lane[]> Lanes;
  std::atomic<int32_t> Error{0};
  // Segmented runs (llvmaccel_parallel_run_segmented): 0 not segmented, 1
  // on OpenMP's team (a library step ends the region), 2 the caller alone,
  // outside every region (any other step ends its turn).
  std::atomic<int32_t> Phase{0};
  std::atomic<bool> Yielded{false};
  std::mutex M;
  std::condition_variable CV;
  bool Closed = false; // the caller is done: no worker joins any more (M)
  int64_t Joined = 0;  // workers running the task (M)

  void fail(int32_t Code) {
    int32_t Old = Error.load(std::memory_order_relaxed);
    while ((Old == 0 || Code < Old) &&
           !Error.compare_exchange_weak(Old, Code, std::memory_order_acq_rel))
      ;
    std::lock_guard<std::mutex> L(M);
    CV.notify_all();
  }

  /// Takes the next of the chunk numbers [R * Size, (R + 1) * Size) that
  /// counter `C` hands out in round R, or returns -1. Counters grow over
  /// the rounds of a loop; a thread claims in round R only while the
  /// counter is below the round's end (compare-exchange, never past it), so
  /// a late thread still in an earlier round finds it exhausted and takes
  /// nothing from the next.
  static int64_t take(std::atomic<int64_t> &C, int64_t R, int64_t Size) {
    int64_t End = (R + 1) * Size;
    int64_t Have = C.load(std::memory_order_relaxed);
    while (Have < End)
      if (C.compare_exchange_weak(Have, Have + 1, std::memory_order_relaxed))
        return Have - R * Size;
    return -1;
  }

  /// A chunk of round R of step S (of N): a step of several chunks has one
  /// lane per thread, N / lanes chunks each, and thread `Tid` runs its own
  /// lane's chunks before it helps with the others'. So in a loop the same
  /// thread runs the same chunk in every round, as long as none is late,
  /// and finds its part of the data in its own caches (the columns of a
  /// decode step's weight matrix, half of it in each core's L2).
  int64_t claim(int64_t S, int64_t R, int64_t N, int64_t Tid) {
    if (Error.load(std::memory_order_relaxed) != 0)
      return -1;
    if (N == 1 || N % NLanes != 0)
      return take(Steps[S].Claimed, R, N);
    int64_t Size = N / NLanes;
    for (int64_t K = 0; K < NLanes; ++K) {
      int64_t L = (Tid + K) % NLanes;
      int64_t C = take(Lanes[S * NLanes + L].Claimed, R, Size);
      if (C >= 0)
        return L * Size + C;
    }
    return -1;
  }

  /// Whether a thread reaching round R of step S (of N chunks; `Library`:
  /// the step calls the BLAS library) must return from the task now, for
  /// the run to go on in the other phase. Steps already done never stop it
  /// (a thread entering the task again runs through them).
  bool yield(int64_t S, int64_t R, int64_t N, bool Library) {
    int32_t P = Phase.load(std::memory_order_relaxed);
    if (P == 0 || finished(S, R, N) || Library == (P == 2))
      return false;
    Yielded.store(true, std::memory_order_relaxed);
    return true;
  }

  void done(int64_t S, int64_t R, int64_t N) {
    // Release: the chunk's stores are seen by whoever sees the count.
    if (Steps[S].Done.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        (R + 1) * N) {
      std::lock_guard<std::mutex> L(M);
      CV.notify_all();
    }
  }

  bool finished(int64_t S, int64_t R, int64_t N) const {
    return Steps[S].Done.load(std::memory_order_acquire) >= (R + 1) * N ||
           Error.load(std::memory_order_acquire) != 0;
  }

  int32_t wait(int64_t S, int64_t R, int64_t N) {
    if (!spinUntil([&] { return finished(S, R, N); })) {
      std::unique_lock<std::mutex> L(M);
      CV.wait(L, [&] { return finished(S, R, N); });
    }
    return Error.load(std::memory_order_acquire);
  }
};

/// The workers, and the run they may join.
struct Pool {
  std::mutex Busy; // held by the caller whose run the workers may join
  std::mutex M;
  std::condition_variable Wake, Left;
  uint64_t Job = 0; // incremented for every run (M)
  std::atomic<uint64_t> JobSeen{0};
  bool Open = false; // workers may join the current run (M)
  // Workers running the current run's task (changed under M; read without
  // it while the caller spins before waiting on Left).
  std::atomic<int64_t> Joined{0};
  llvmaccel_task_fn Fn = nullptr;
  void *Ctx = nullptr;
  int64_t N = 0;
  Team *T = nullptr;
  int64_t Workers = 0; // started so far (M)

  void work(int64_t Index) {
    uint64_t Seen = 0;
    for (;;) {
      spinUntil(
          [&] { return JobSeen.load(std::memory_order_acquire) != Seen; });
      llvmaccel_task_fn F;
      void *C;
      int64_t Threads;
      Team *Tm;
      {
        // Joining happens under M, where the caller closes the run: a
        // worker never touches a team that is gone.
        std::unique_lock<std::mutex> L(M);
        Wake.wait(L, [&] { return Job != Seen; });
        Seen = Job;
        if (!Open || Index + 1 >= N)
          continue;
        ++Joined;
        F = Fn;
        C = Ctx;
        Threads = N;
        Tm = T;
      }
      int32_t Code = F(C, Index + 1, Threads, Tm);
      if (Code != 0)
        Tm->fail(Code);
      std::lock_guard<std::mutex> L(M);
      if (--Joined == 0)
        Left.notify_all();
    }
  }

  int32_t run(llvmaccel_task_fn F, void *C, int64_t Threads, int64_t Steps) {
    Team Tm(Steps, Threads);
    std::unique_lock<std::mutex> Own(Busy, std::try_to_lock);
    if (Own.owns_lock()) {
      std::lock_guard<std::mutex> L(M);
      while (Workers < Threads - 1) {
        int64_t Index = Workers++;
        std::thread([this, Index] { work(Index); }).detach();
      }
      Fn = F;
      Ctx = C;
      N = Threads;
      T = &Tm;
      Open = true;
      ++Job;
      JobSeen.store(Job, std::memory_order_release);
      Wake.notify_all();
    }
    int32_t Code = F(C, 0, Threads, &Tm);
    if (Code != 0)
      Tm.fail(Code);
    if (Own.owns_lock()) {
      {
        std::lock_guard<std::mutex> L(M);
        Open = false; // no worker joins from here on
        T = nullptr;
      }
      if (!spinUntil([&] { return Joined.load() == 0; })) {
        std::unique_lock<std::mutex> L(M);
        Left.wait(L, [&] { return Joined.load() == 0; });
      }
    }
    return Tm.Error.load(std::memory_order_acquire);
  }
};

std::atomic<int64_t> Threads{1};
std::atomic<Pool *> ThePool{nullptr};

/// GNU OpenMP's entry points, when the process has loaded libgomp.
struct OpenMP {
  using ParallelFn = void (*)(void (*)(void *), void *, unsigned, unsigned);
  using ThreadNumFn = int (*)();
  ParallelFn Parallel = nullptr;
  ThreadNumFn ThreadNum = nullptr;
};

/// libgomp if it is loaded (never loads it): looked up until found, since
/// a framework may load it after our first kernel, but at most once a
/// millisecond (a dlopen on every run cost a 2^19-element map on the pool
/// about 40 us of its 120).
const OpenMP *loadedOpenMP() {
  static std::atomic<const OpenMP *> Found{nullptr};
  static std::atomic<int64_t> NextLook{0}; // steady_clock ticks
  if (const OpenMP *O = Found.load(std::memory_order_acquire))
    return O;
  int64_t Now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (Now < NextLook.load(std::memory_order_relaxed))
    return nullptr;
  void *H = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!H) {
    NextLook.store(
        Now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::milliseconds(1))
                  .count(),
        std::memory_order_relaxed);
    return nullptr;
  }
  auto *O = new OpenMP();
  O->Parallel = reinterpret_cast<OpenMP::ParallelFn>(dlsym(H, "GOMP_parallel"));
  O->ThreadNum =
      reinterpret_cast<OpenMP::ThreadNumFn>(dlsym(H, "omp_get_thread_num"));
  if (!O->Parallel || !O->ThreadNum) {
    delete O;
    return nullptr;
  }
  const OpenMP *Expected = nullptr;
  if (!Found.compare_exchange_strong(Expected, O, std::memory_order_acq_rel)) {
    delete O;
    return Expected;
  }
  return O;
}

/// 0: automatic (OpenMP when loaded), 1: the pool, 2: OpenMP when loaded.
std::atomic<int32_t> RuntimeMode{0};

struct OpenMPRun {
  llvmaccel_task_fn Fn;
  void *Ctx;
  int64_t N;
  Team *T;
  const OpenMP *O;
};

void openMPBody(void *P) {
  auto *R = static_cast<OpenMPRun *>(P);
  int64_t Tid = R->O->ThreadNum();
  if (Tid >= R->N)
    return;
  int32_t Code = R->Fn(R->Ctx, Tid, R->N, R->T);
  if (Code != 0 && Code != LLVMACCEL_PARALLEL_YIELD)
    R->T->fail(Code);
}

/// The run on OpenMP's threads: every thread of the team runs the task
/// with its OpenMP thread number (a nested region has one thread, which
/// claims every chunk).
int32_t runOpenMP(const OpenMP &O, llvmaccel_task_fn Fn, void *Ctx, int64_t N,
                  int64_t Steps) {
  Team Tm(Steps, N);
  OpenMPRun R{Fn, Ctx, N, &Tm, &O};
  O.Parallel(openMPBody, &R, static_cast<unsigned>(N), 0);
  return Tm.Error.load(std::memory_order_acquire);
}

/// A run in segments: OpenMP's team runs the task until every thread has
/// reached a step that calls the library (or the end); the caller alone
/// runs the library steps, outside every region, so the library's own
/// OpenMP region is the caller's team and not a nested one (one thread) or
/// a second team started by another thread (more threads than cores, each
/// spinning in the other's way); then the team again. A thread entering
/// the task again runs through the steps done before (claims find no
/// chunk, waits are over).
int32_t runSegmented(const OpenMP &O, llvmaccel_task_fn Fn, void *Ctx,
                     int64_t N, int64_t Steps) {
  Team Tm(Steps, N);
  OpenMPRun R{Fn, Ctx, N, &Tm, &O};
  // One segment in `Phase`; whether the run goes on in the other phase.
  auto Segment = [&](int32_t Phase, auto Body) {
    Tm.Phase.store(Phase, std::memory_order_relaxed);
    Tm.Yielded.store(false, std::memory_order_relaxed);
    Body();
    return Tm.Error.load(std::memory_order_acquire) == 0 &&
           Tm.Yielded.load(std::memory_order_relaxed);
  };
  auto OnTeam = [&] {
    O.Parallel(openMPBody, &R, static_cast<unsigned>(N), 0);
  };
  auto Alone = [&] {
    int32_t Code = Fn(Ctx, 0, N, &Tm);
    if (Code != 0 && Code != LLVMACCEL_PARALLEL_YIELD)
      Tm.fail(Code);
  };
  while (Segment(1, OnTeam) && Segment(2, Alone))
    ;
  return Tm.Error.load(std::memory_order_acquire);
}

const OpenMP *openMPForRuns() {
  return RuntimeMode.load(std::memory_order_relaxed) == 1 ? nullptr
                                                          : loadedOpenMP();
}
std::once_flag AtFork;

Pool &pool() {
  Pool *P = ThePool.load(std::memory_order_acquire);
  if (P)
    return *P;
  // A forked child has none of the parent's workers: it starts a new pool
  // (the parent's is left alone; its threads do not exist in the child).
  std::call_once(AtFork, [] {
    pthread_atfork(nullptr, nullptr,
                   [] { ThePool.store(nullptr, std::memory_order_release); });
  });
  Pool *Fresh = new Pool(); // never freed: workers run until the process ends
  Pool *Expected = nullptr;
  if (!ThePool.compare_exchange_strong(Expected, Fresh,
                                       std::memory_order_acq_rel)) {
    delete Fresh;
    return *Expected;
  }
  return *Fresh;
}

} // namespace

extern "C" {

int64_t llvmaccel_parallel_threads(void) {
  return Threads.load(std::memory_order_relaxed);
}

void llvmaccel_parallel_set_threads(int64_t N) {
  Threads.store(N < 1 ? 1 : N, std::memory_order_relaxed);
}

int32_t llvmaccel_parallel_run(llvmaccel_task_fn Fn, void *Ctx, int64_t N,
                               int64_t Steps) {
  N = N < 1 ? 1 : N;
  if (const OpenMP *O = N > 1 ? openMPForRuns() : nullptr)
    return runOpenMP(*O, Fn, Ctx, N, Steps);
  return pool().run(Fn, Ctx, N, Steps);
}

int32_t llvmaccel_parallel_run_pool(llvmaccel_task_fn Fn, void *Ctx, int64_t N,
                                    int64_t Steps) {
  return pool().run(Fn, Ctx, N < 1 ? 1 : N, Steps);
}

int32_t llvmaccel_parallel_run_segmented(llvmaccel_task_fn Fn, void *Ctx,
                                         int64_t N, int64_t Steps) {
  N = N < 1 ? 1 : N;
  if (const OpenMP *O = N > 1 ? openMPForRuns() : nullptr)
    return runSegmented(*O, Fn, Ctx, N, Steps);
  return pool().run(Fn, Ctx, N, Steps);
}

void llvmaccel_parallel_decide(void *T, int64_t Step, int64_t Round,
                               int32_t Continue) {
  // Published by the step's done (release); read after its wait (acquire).
  if (!Continue)
    static_cast<Team *>(T)->Steps[Step].Final.store(Round,
                                                    std::memory_order_relaxed);
}

int32_t llvmaccel_parallel_decided(void *T, int64_t Step, int64_t Round) {
  return Round < static_cast<Team *>(T)->Steps[Step].Final.load(
                     std::memory_order_relaxed);
}

int32_t llvmaccel_parallel_yield(void *T, int64_t Step, int64_t Round,
                                 int64_t NChunks, int32_t Library) {
  return static_cast<Team *>(T)->yield(Step, Round, NChunks, Library != 0);
}

void llvmaccel_parallel_set_runtime(int32_t Mode) {
  RuntimeMode.store(Mode == 1 || Mode == 2 ? Mode : 0,
                    std::memory_order_relaxed);
}

const char *llvmaccel_parallel_runtime(void) {
  return openMPForRuns() ? "openmp" : "pool";
}

int64_t llvmaccel_parallel_claim(void *T, int64_t Step, int64_t Round,
                                 int64_t NChunks, int64_t Tid) {
  return static_cast<Team *>(T)->claim(Step, Round, NChunks, Tid);
}

void llvmaccel_parallel_done(void *T, int64_t Step, int64_t Round,
                             int64_t NChunks) {
  static_cast<Team *>(T)->done(Step, Round, NChunks);
}

int32_t llvmaccel_parallel_wait(void *T, int64_t Step, int64_t Round,
                                int64_t NChunks) {
  return static_cast<Team *>(T)->wait(Step, Round, NChunks);
}

int64_t llvmaccel_parallel_workers(void) {
  Pool *P = ThePool.load(std::memory_order_acquire);
  if (!P)
    return 0;
  std::lock_guard<std::mutex> L(P->M);
  return P->Workers;
}
}
