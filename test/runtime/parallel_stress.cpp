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
/// one's result, an error in a chunk, several callers at once, the same two
/// steps in the body of a loop (rounds), and a while loop whose decision is
/// published once a round. Built and
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
  return llvmaccel_parallel_wait(Team, Step, 0, Chunks);
}

int32_t task(void *P, int64_t Tid, int64_t Nth, void *Team) {
  auto *C = static_cast<Ctx *>(P);
  int64_t Chunks = 4 * Nth;
  for (int64_t K;
       (K = llvmaccel_parallel_claim(Team, 0, 0, Chunks, Tid)) >= 0;) {
    int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
    for (int64_t I = Lo; I < Hi; ++I) {
      if (I == C->FailAt)
        return 7;
      (*C->X)[I] = I * 3 + 1;
    }
    llvmaccel_parallel_done(Team, 0, 0, Chunks);
  }
  if (int32_t E = waitStep(Team, 0, Chunks))
    return E;
  for (int64_t K; (K = llvmaccel_parallel_claim(Team, 1, 0, 1, Tid)) >= 0;) {
    int64_t S = 0;
    for (int64_t I = 0; I < C->N; ++I)
      S += (*C->X)[I];
    C->Sum = S;
    llvmaccel_parallel_done(Team, 1, 0, 1);
  }
  if (int32_t E = waitStep(Team, 1, 1))
    return E;
  for (int64_t K;
       (K = llvmaccel_parallel_claim(Team, 2, 0, Chunks, Tid)) >= 0;) {
    int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
    for (int64_t I = Lo; I < Hi; ++I)
      (*C->Y)[I] = (*C->X)[I] + C->Sum;
    llvmaccel_parallel_done(Team, 2, 0, Chunks);
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

/// A loop of `Rounds` iterations whose body is two steps: X = 2 X + R in
/// chunks, then Hist[R] = sum(X) on one thread. Every thread runs the loop;
/// before an iteration's first step it waits for the last step of the
/// iteration before.
struct LoopCtx {
  int64_t N, Rounds;
  std::vector<int64_t> *X, *Hist;
};

int32_t loopTask(void *P, int64_t Tid, int64_t Nth, void *Team) {
  auto *C = static_cast<LoopCtx *>(P);
  int64_t Chunks = 4 * Nth;
  for (int64_t R = 0; R < C->Rounds; ++R) {
    if (R > 0)
      if (int32_t E = llvmaccel_parallel_wait(Team, 1, R - 1, 1))
        return E;
    for (int64_t K;
         (K = llvmaccel_parallel_claim(Team, 0, R, Chunks, Tid)) >= 0;) {
      int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
      for (int64_t I = Lo; I < Hi; ++I)
        (*C->X)[I] = 2 * (*C->X)[I] + R;
      llvmaccel_parallel_done(Team, 0, R, Chunks);
    }
    if (int32_t E = llvmaccel_parallel_wait(Team, 0, R, Chunks))
      return E;
    for (int64_t K; (K = llvmaccel_parallel_claim(Team, 1, R, 1, Tid)) >= 0;) {
      int64_t S = 0;
      for (int64_t I = 0; I < C->N; ++I)
        S += (*C->X)[I];
      (*C->Hist)[R] = S;
      llvmaccel_parallel_done(Team, 1, R, 1);
    }
  }
  return 0;
}

bool runLoop(int64_t N, int64_t Rounds, int64_t Threads) {
  std::vector<int64_t> X(N, 1), Hist(Rounds, -1), Want(N, 1);
  LoopCtx C{N, Rounds, &X, &Hist};
  if (llvmaccel_parallel_run(loopTask, &C, Threads, 2) != 0)
    return false;
  for (int64_t R = 0; R < Rounds; ++R) {
    int64_t S = 0;
    for (int64_t I = 0; I < N; ++I)
      S += Want[I] = 2 * Want[I] + R;
    if (Hist[R] != S)
      return false;
  }
  return X == Want;
}

/// A while loop: step 0 (one chunk) writes the condition to a shared flag,
/// step 1 (one chunk) publishes it (llvmaccel_parallel_decide), every thread
/// reads the decision of its own round (llvmaccel_parallel_decided), step 2
/// adds 1 to every element in chunks. The flag is rewritten every round: a
/// thread reading it directly, instead of the decision, would race.
struct WhileCtx {
  int64_t N, Limit;
  std::vector<int64_t> *X;
  int64_t Flag = 0;
};

int32_t whileTask(void *P, int64_t Tid, int64_t Nth, void *Team) {
  auto *C = static_cast<WhileCtx *>(P);
  int64_t Chunks = 4 * Nth;
  for (int64_t R = 0;; ++R) {
    if (R > 0)
      if (int32_t E = llvmaccel_parallel_wait(Team, 2, R - 1, Chunks))
        return E;
    for (int64_t K; (K = llvmaccel_parallel_claim(Team, 0, R, 1, Tid)) >= 0;) {
      C->Flag = (*C->X)[0] < C->Limit;
      llvmaccel_parallel_done(Team, 0, R, 1);
    }
    if (int32_t E = llvmaccel_parallel_wait(Team, 0, R, 1))
      return E;
    for (int64_t K; (K = llvmaccel_parallel_claim(Team, 1, R, 1, Tid)) >= 0;) {
      llvmaccel_parallel_decide(Team, 1, R, static_cast<int32_t>(C->Flag));
      llvmaccel_parallel_done(Team, 1, R, 1);
    }
    if (int32_t E = llvmaccel_parallel_wait(Team, 1, R, 1))
      return E;
    if (!llvmaccel_parallel_decided(Team, 1, R))
      return 0;
    for (int64_t K;
         (K = llvmaccel_parallel_claim(Team, 2, R, Chunks, Tid)) >= 0;) {
      int64_t Lo = C->N * K / Chunks, Hi = C->N * (K + 1) / Chunks;
      for (int64_t I = Lo; I < Hi; ++I)
        (*C->X)[I] += 1;
      llvmaccel_parallel_done(Team, 2, R, Chunks);
    }
  }
}

bool runWhile(int64_t N, int64_t Limit, int64_t Threads) {
  std::vector<int64_t> X(N, 0);
  WhileCtx C{N, Limit, &X};
  if (llvmaccel_parallel_run(whileTask, &C, Threads, 3) != 0)
    return false;
  for (int64_t V : X)
    if (V != Limit)
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
  for (int64_t Threads : {1, 2, 3})
    for (int64_t N : {1, 7, 1000})
      for (int R = 0; R < 5; ++R) {
        Ok &= runLoop(N, 40, Threads);
        Ok &= runWhile(N, R * 9, Threads);
      }
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
