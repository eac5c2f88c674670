//===- AccelAsyncFusion.h - Fuse and inline MLIR async tasks ----*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-async-fusion removes task hand-offs from code lowered through MLIR's
/// async dialect (`async.execute` bodies as presplit coroutines that call the
/// MLIR async runtime). A chain of tasks, each waiting only on its
/// predecessor's results which nobody else uses, becomes one task; tiny
/// independent tasks (and tiny chains) run inline in the caller when their
/// body costs less than a hand-off. Tokens, values, errors and reference
/// counts seen by the rest of the program are unchanged. Runs before
/// coroutine splitting.
///
/// On GPU host code (AccelAsyncFusionGPU.cpp), a loop that launches the same
/// kernels with the same arguments every iteration is replayed from a CUDA or
/// HIP graph captured in its first iteration, and a Level Zero loop that
/// rebuilds the same command list every iteration builds it once.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELASYNCFUSION_H
#define LLVMACCEL_ACCELASYNCFUSION_H

#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"

namespace llvm {

/// Parameters of accel-async-fusion.
struct AccelAsyncFusionOptions {
  /// Body cost (TTI size-and-latency units, about cycles) from which an
  /// independent task stays asynchronous; cheaper ones run inline.
  unsigned MinCost = 1000;
  /// Fuse chains of dependent tasks into one task.
  bool Chains = true;
  /// Run cheap independent tasks (and cheap chains) inline in the caller.
  bool InlineSmall = true;
  /// Resume tasks with real work that wait for an operand other such tasks
  /// wait for on the thread pool after the wait (MLIR's runtime resumes the
  /// waiters of an operand one after the other on the thread that makes it
  /// available).
  bool PoolResume = true;
  /// Replay loops of CUDA/HIP kernel launches from a captured graph (and
  /// record Level Zero command lists once per loop).
  bool GPUGraphs = true;
  /// Keep a loop's executable graph for its next execution (per call site,
  /// while the launch parameters stay the same).
  bool GraphCache = true;
};

class AccelAsyncFusionPass : public PassInfoMixin<AccelAsyncFusionPass> {
public:
  explicit AccelAsyncFusionPass(AccelAsyncFusionOptions Opts = {})
      : Opts(Opts) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM);
  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)> MapClassName2PassName);

private:
  AccelAsyncFusionOptions Opts;
};

/// Parses the text between the angle brackets of `accel-async-fusion<...>`.
Expected<AccelAsyncFusionOptions>
parseAccelAsyncFusionOptions(StringRef Params);

} // namespace llvm

#endif // LLVMACCEL_ACCELASYNCFUSION_H
