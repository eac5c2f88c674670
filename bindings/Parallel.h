//===- Parallel.h - the thread pool of generated kernels --------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The runtime that runs a kernel's SPMD body (codegen.parallel:
/// `<name>.task`) on several threads: GNU OpenMP's threads where the
/// process has loaded libgomp (PyTorch's CPU builds), else a pool of worker
/// threads started on first use and kept for the life of the process.
///
/// A task is `int32_t task(void *Ctx, int64_t Tid, int64_t N, void *Team)`
/// and returns 0 or the code of a check that failed. Its loop nests are
/// steps 0, 1, ...; step S has `NChunks` chunks (N for a parallel loop nest,
/// 1 for a serial one), which the threads claim one by one
/// (llvmaccel_parallel_claim) and mark done; before the step that follows S
/// every thread waits until step S's chunks are all done
/// (llvmaccel_parallel_wait). Steps in the body of a loop (a scan's) run
/// once per iteration, in rounds: every thread runs the loop and counts
/// the rounds of each step itself, and chunk numbers never repeat. A
/// thread that is late (descheduled on a loaded machine) finds the chunks
/// taken and the steps finished: nobody waits for it, and a worker that has
/// not joined the run when the caller is done never does. Tid (0 for the
/// caller) is unique among the threads of a run: it indexes per-thread
/// scratch rows. Chunk boundaries depend only on N, so which thread runs a
/// chunk never changes a result.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_BINDINGS_PARALLEL_H
#define LLVMACCEL_BINDINGS_PARALLEL_H

#include <cstdint>

extern "C" {
using llvmaccel_task_fn = int32_t (*)(void *, int64_t, int64_t, void *);

/// The thread count kernels run with (set from Python, read per call).
int64_t llvmaccel_parallel_threads(void);
/// Sets the thread count (values below 1 are taken as 1).
void llvmaccel_parallel_set_threads(int64_t N);
/// Runs the task `Fn` with `N` chunks per parallel step over `Steps` steps
/// on the calling thread and up to N - 1 workers; when another caller is
/// using the pool, on the calling thread alone (it claims every chunk).
/// Returns the smallest error code a thread returned, or 0.
int32_t llvmaccel_parallel_run(llvmaccel_task_fn Fn, void *Ctx, int64_t N,
                               int64_t Steps);
/// As llvmaccel_parallel_run, on the pool whatever the runtime: for a kernel
/// that calls a library with OpenMP threads of its own (BLAS), which in an
/// OpenMP region would run on one thread.
int32_t llvmaccel_parallel_run_pool(llvmaccel_task_fn Fn, void *Ctx, int64_t N,
                                    int64_t Steps);
/// Runs the task of a kernel that calls the BLAS library: where runs use
/// OpenMP's threads, in segments (the team runs the other steps; the caller
/// alone, outside every region, the library's steps, so that the library
/// runs on the caller's OpenMP team with all its threads); else as
/// llvmaccel_parallel_run_pool.
int32_t llvmaccel_parallel_run_segmented(llvmaccel_task_fn Fn, void *Ctx,
                                         int64_t N, int64_t Steps);
/// What a task returns when it stops for the run's other segment.
#define LLVMACCEL_PARALLEL_YIELD (-1)
/// Whether the thread reaching round `Round` of `Step` must return
/// LLVMACCEL_PARALLEL_YIELD now (a segmented run: on the team, a step that
/// calls the library, `Library` != 0; for the caller alone, any other
/// step; never a step that is done, nor in a run that is not segmented).
int32_t llvmaccel_parallel_yield(void *Team, int64_t Step, int64_t Round,
                                 int64_t NChunks, int32_t Library);
/// The next unclaimed chunk (0 to NChunks - 1) of round `Round` of step
/// `Step` for thread `Tid`, or -1 when none is left or a thread has failed.
/// A step outside every loop has one round, 0; a step in the body of a
/// loop runs once per iteration, round 0, 1, ... (each thread counts its
/// own). Of a step of several chunks, each thread is given its own share
/// (NChunks / threads consecutive chunks) first, then helps with the
/// others'.
int64_t llvmaccel_parallel_claim(void *Team, int64_t Step, int64_t Round,
                                 int64_t NChunks, int64_t Tid);
/// Marks one claimed chunk of round `Round` of `Step` (of `NChunks`) done.
void llvmaccel_parallel_done(void *Team, int64_t Step, int64_t Round,
                             int64_t NChunks);
/// Waits until the `NChunks` chunks of round `Round` of `Step` are done
/// (and every earlier round's) or a thread has failed; returns the team's
/// error code (0: none).
int32_t llvmaccel_parallel_wait(void *Team, int64_t Step, int64_t Round,
                                int64_t NChunks);
/// In the one-chunk step `Step` that decides a while loop's round `Round`:
/// records that the loop ends there when `Continue` is 0.
void llvmaccel_parallel_decide(void *Team, int64_t Step, int64_t Round,
                               int32_t Continue);
/// After waiting for that step: 1 when the loop goes on in round `Round`
/// (its condition held), 0 when it ends. Every thread reads the decision of
/// its own round, however far ahead another thread is (only the last round
/// is false, so one value per step is enough: a loop nested in another
/// loop would need one per round and keeps the serial kernel).
int32_t llvmaccel_parallel_decided(void *Team, int64_t Step, int64_t Round);
/// Worker threads the pool has started so far (tests: they are reused).
int64_t llvmaccel_parallel_workers(void);
/// Which threads runs use: 0 (the default) GNU OpenMP's when the process
/// has loaded libgomp, else the pool; 1 the pool always; 2 as 0.
void llvmaccel_parallel_set_runtime(int32_t Mode);
/// `"openmp"` or `"pool"`: what the next run with several threads uses.
const char *llvmaccel_parallel_runtime(void);
}

#endif // LLVMACCEL_BINDINGS_PARALLEL_H
