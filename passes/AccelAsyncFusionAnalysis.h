//===- AccelAsyncFusionAnalysis.h - MLIR async tasks in LLVM IR -*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal to accel-async-fusion: what a task function of MLIR's async
/// lowering looks like, the body cost model and the chain link rule
/// (AccelAsyncFusionAnalysis.cpp), used by the transformation
/// (AccelAsyncFusion.cpp).
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELASYNCFUSIONANALYSIS_H
#define LLVMACCEL_ACCELASYNCFUSIONANALYSIS_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class DominatorTree;
class LoopInfo;
class OptimizationRemarkEmitter;
class TargetTransformInfo;

namespace asyncfusion {

/// Whether \p CB calls the runtime entry point \p Name.
bool isRuntimeCall(const CallBase &CB, StringRef Name);
/// Whether \p F is an entry point of the MLIR async runtime.
bool isRuntimeFunction(const Function *F);
/// Calls that block the calling thread until a task finishes.
bool isBlockingRuntimeCall(const CallBase &CB);
/// Hand-off calls that resume the coroutine later (on the pool, or when an
/// operand becomes available).
bool isAwaitAndExecute(const CallBase &CB);
bool isCoroIntrinsic(const Instruction &I, Intrinsic::ID ID);
bool isAnyCoroIntrinsic(const Instruction &I);

/// One suspend point of a task function.
struct SuspendPoint {
  CallInst *Save = nullptr;
  CallInst *Hop = nullptr; ///< Execute or Await*AndExecute.
  CallInst *Suspend = nullptr;
  Instruction *Ext = nullptr; ///< The sext of the suspend result, if any.
  SwitchInst *Switch = nullptr;
  BasicBlock *Resume = nullptr;
  Value *Awaited = nullptr; ///< The awaited operand (null for Execute).
};

/// A recognized task function.
struct TaskFunction {
  Function *F = nullptr;
  /// The result objects in the order the function returns them.
  SmallVector<CallInst *, 2> Results;
  SmallVector<SuspendPoint, 2> Suspends; ///< Suspends[0] is the Execute hop.
  BasicBlock *Cleanup = nullptr;
  CallInst *CoroBegin = nullptr;
  /// Why the function is not a task we can transform ("" if it is).
  std::string NotTask;
  /// Why its body cannot run without its suspend points ("" if it can).
  std::string NoBody;

  /// The parameter indices the task awaits.
  SmallVector<unsigned, 2> awaitedArgs() const {
    SmallVector<unsigned, 2> Idx;
    for (const SuspendPoint &S : drop_begin(Suspends))
      if (auto *A = dyn_cast_or_null<Argument>(S.Awaited))
        Idx.push_back(A->getArgNo());
    return Idx;
  }
  unsigned numAwaits() const { return Suspends.size() - 1; }
};

/// Recognizes a task function, or says why \p F is not one.
TaskFunction analyzeTaskFunction(Function &F);

/// The cost of running a body function once, or none if unknown (a loop, a
/// call to code whose cost we cannot see); \p Why says which.
std::optional<uint64_t> bodyCost(Function &B, TargetTransformInfo &TTI,
                                 std::string &Why);

/// A launch of a task: the call of a task function.
struct Launch {
  CallInst *Call;
  TaskFunction *Task;
};

/// Which result of \p Pred the value \p V is, if it is one.
std::optional<unsigned> resultIndex(Value *V, CallInst *Pred);

/// Why \p Pred cannot be fused with a successor in its block (a missed
/// remark's reason); fills \p Next and returns "" when it can.
std::string linkToSuccessor(const Launch &Pred, std::optional<Launch> &Next,
                            const DenseMap<Function *, TaskFunction *> &Tasks);

/// Part 2 (AccelAsyncFusionGPU.cpp): replays the CUDA and HIP kernel
/// launches of each capturable innermost loop of \p F from a graph captured
/// in its first iteration (\p DT: only launches made in every iteration are
/// captured), cached for the loop's next execution when \p GraphCache; records
/// Level Zero command lists once per execution of their loop. Returns whether
/// \p F changed.
bool captureLaunchLoops(Function &F, LoopInfo &LI, DominatorTree &DT,
                        OptimizationRemarkEmitter &ORE, bool GraphCache);

} // namespace asyncfusion
} // namespace llvm

#endif // LLVMACCEL_ACCELASYNCFUSIONANALYSIS_H
