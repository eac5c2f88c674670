//===- parallel_stress.cpp - the kernel thread pool under ThreadSanitizer -===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Drives bindings/Parallel.cpp as generated SPMD bodies do (claim a chunk,
/// write its part, mark it done, wait for the step before reading), with
/// the task itself in C++ so that ThreadSanitizer sees its memory accesses
/// (generated code is not instrumented): a parallel step writing disjoint
/// chunks, a serial step reading all of them, a step reading the serial
/// one's result, an error in a chunk, and several callers at once. Built and
/// run by test/py/test_parallel.py with -fsanitize=thread; exits non-zero
/// on a wrong result (TSan on a race).
///
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include <cstdio>
#include <thread>
#include <vector>

namespace {

struct Ctx {
  int64_t N;
  std::vector<int64_t> *X; // written by step 0, in chunks
  int64_t Sum = 0;         // written by step 1 (serial)
  std::vector<int64_t> *Y; // written by step 2 from X and Sum
  int64_t FailAt = -1;     // an element whose chunk fails in step 0
};

int32_t waitStep(void *Team, int64_t Step, int64_t Chunks) {
  return llvmaccel_parallel_wait(Team, Step, Chunks);
}

int32_t task(void *P, int64_t Tid, int64_t Nth, void *Team) {
  (void)Tid;
  auto *C = static_cast<Ctx *>(P);
  int64_t Chunks = 4 * Nth;
  for (int64_t K; (K = llvmaccel_parallel_claim(Team, 0, Chunks)) >= 0;) {
    int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
    for (int64_t I = Lo; I < Hi; ++I) {
      if (I == C->FailAt)
        return 7;
      (*C->X)[I] = I * 3 + 1;
    }
    llvmaccel_parallel_done(Team, 0, Chunks);
  }
  if (int32_t E = waitStep(Team, 0, Chunks))
    return E;
  for (int64_t K; (K = llvmaccel_parallel_claim(Team, 1, 1)) >= 0;) {
    int64_t S = 0;
    for (int64_t I = 0; I < C->N; ++I)
      S += (*C->X)[I];
    C->Sum = S;
    llvmaccel_parallel_done(Team, 1, 1);
  }
  if (int32_t E = waitStep(Team, 1, 1))
    return E;
  for (int64_t K; (K = llvmaccel_parallel_claim(Team, 2, Chunks)) >= 0;) {
    int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
    for (int64_t I = Lo; I < Hi; ++I)
      (*C->Y)[I] = (*C->X)[I] + C->Sum;
    llvmaccel_parallel_done(Team, 2, Chunks);
  }
  return 0;
}

bool runOnce(int64_t N, int64_t Threads, int64_t FailAt) {
  std::vector<int64_t> X(N), Y(N);
  Ctx C{N, &X, 0, &Y, FailAt};
  int32_t Rc = llvmaccel_parallel_run(task, &C, Threads, 3);
  if (FailAt >= 0)
    return Rc == 7;
  if (Rc != 0)
    return false;
  int64_t Sum = 0;
  for (int64_t I = 0; I < N; ++I)
    Sum += I * 3 + 1;
  for (int64_t I = 0; I < N; ++I)
    if (X[I] != I * 3 + 1 || Y[I] != X[I] + Sum)
      return false;
  return true;
}

} // namespace

int main() {
  bool Ok = true;
  for (int64_t Threads : {1, 2, 3, 4})
    for (int64_t N : {0, 1, 5, 1000, 100000})
      for (int64_t FailAt : {int64_t(-1), N / 2, N - 1})
        if (FailAt < N)
          for (int R = 0; R < 5; ++R)
            Ok &= runOnce(N, Threads, FailAt);
  std::vector<std::thread> Callers;
  std::vector<char> CallerOk(4, 1);
  for (int K = 0; K < 4; ++K)
    Callers.emplace_back([&, K] {
      for (int R = 0; R < 50; ++R)
        CallerOk[K] &= runOnce(10000 + K, 2 + K % 2, R % 7 == 3 ? 5000 : -1);
    });
  for (auto &T : Callers)
    T.join();
  for (char C : CallerOk)
    Ok &= C != 0;
  std::printf("%s workers=%lld\n", Ok ? "ok" : "FAILED",
              static_cast<long long>(llvmaccel_parallel_workers()));
  return Ok ? 0 : 1;
}
