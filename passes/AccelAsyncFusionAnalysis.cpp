//===- AccelAsyncFusionAnalysis.cpp - MLIR async tasks in LLVM IR ---------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The analysis half of accel-async-fusion (see AccelAsyncFusion.cpp for the
/// algorithm): recognizing the task functions MLIR's async lowering emits
/// (their results, suspend points and awaited operands), the cost model for
/// running bodies inline, and the rule that links a task launch to the next
/// one of a chain.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusionAnalysis.h"
#include "Compat.h"

#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

using namespace llvm;
using namespace llvm::asyncfusion;

//===----------------------------------------------------------------------===//
// Task discovery
//===----------------------------------------------------------------------===//

/// Runtime entry points by role.
bool asyncfusion::isRuntimeCall(const CallBase &CB, StringRef Name) {
  const Function *F = CB.getCalledFunction();
  return F && F->getName() == Name;
}

bool asyncfusion::isRuntimeFunction(const Function *F) {
  return F && (F->getName().starts_with("mlirAsyncRuntime") ||
               F->getName() == "mlirAsyncRuntimGetNumWorkerThreads");
}

/// Calls that block the calling thread until a task finishes.
bool asyncfusion::isBlockingRuntimeCall(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  if (!F)
    return false;
  StringRef N = F->getName();
  return N == "mlirAsyncRuntimeAwaitToken" ||
         N == "mlirAsyncRuntimeAwaitValue" ||
         N == "mlirAsyncRuntimeAwaitAllInGroup";
}

/// Hand-off calls that resume the coroutine later (on the pool, or when an
/// operand becomes available).
bool asyncfusion::isAwaitAndExecute(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  if (!F)
    return false;
  StringRef N = F->getName();
  return N == "mlirAsyncRuntimeAwaitTokenAndExecute" ||
         N == "mlirAsyncRuntimeAwaitValueAndExecute" ||
         N == "mlirAsyncRuntimeAwaitAllInGroupAndExecute";
}

bool asyncfusion::isCoroIntrinsic(const Instruction &I, Intrinsic::ID ID) {
  auto *II = dyn_cast<IntrinsicInst>(&I);
  return II && II->getIntrinsicID() == ID;
}

bool asyncfusion::isAnyCoroIntrinsic(const Instruction &I) {
  auto *CB = dyn_cast<CallBase>(&I);
  const Function *F = CB ? CB->getCalledFunction() : nullptr;
  return F && F->getName().starts_with("llvm.coro.");
}

namespace {
/// Splits the returned value \p V into the created result objects.
bool collectResults(Value *V, TaskFunction &T) {
  if (auto *CI = dyn_cast<CallInst>(V)) {
    if (!isRuntimeCall(*CI, "mlirAsyncRuntimeCreateToken"))
      return false;
    T.Results.push_back(CI);
    return true;
  }
  auto *STy = dyn_cast<StructType>(V->getType());
  if (!STy)
    return false;
  SmallVector<CallInst *, 2> Elts(STy->getNumElements(), nullptr);
  while (auto *IV = dyn_cast<InsertValueInst>(V)) {
    if (IV->getNumIndices() != 1)
      return false;
    unsigned Idx = IV->getIndices()[0];
    auto *CI = dyn_cast<CallInst>(IV->getInsertedValueOperand());
    if (!CI || Elts[Idx] ||
        !(isRuntimeCall(*CI, "mlirAsyncRuntimeCreateToken") ||
          isRuntimeCall(*CI, "mlirAsyncRuntimeCreateValue")))
      return false;
    Elts[Idx] = CI;
    V = IV->getAggregateOperand();
  }
  if (!isa<PoisonValue>(V) && !isa<UndefValue>(V))
    return false;
  for (CallInst *CI : Elts) {
    if (!CI)
      return false;
    T.Results.push_back(CI);
  }
  return true;
}
} // namespace

namespace {
/// Reads the suspend point ending at \p Suspend.
std::optional<SuspendPoint> readSuspend(CallInst *Suspend, CallInst *Begin) {
  SuspendPoint S;
  S.Suspend = Suspend;
  S.Save = dyn_cast<CallInst>(Suspend->getArgOperand(0));
  if (!S.Save || !isCoroIntrinsic(*S.Save, Intrinsic::coro_save))
    return std::nullopt;
  S.Hop = dyn_cast_or_null<CallInst>(Suspend->getPrevNode());
  if (!S.Hop || S.Save->getNextNode() != S.Hop)
    return std::nullopt;
  bool IsExecute = isRuntimeCall(*S.Hop, "mlirAsyncRuntimeExecute");
  if (!IsExecute && !isAwaitAndExecute(*S.Hop))
    return std::nullopt;
  unsigned HandleArg = IsExecute ? 0 : 1;
  if (S.Hop->getArgOperand(HandleArg) != Begin)
    return std::nullopt;
  if (!IsExecute)
    S.Awaited = S.Hop->getArgOperand(0);
  if (!Suspend->hasOneUse())
    return std::nullopt;
  User *U = *Suspend->user_begin();
  if (auto *Ext = dyn_cast<SExtInst>(U)) {
    if (!Ext->hasOneUse())
      return std::nullopt;
    S.Ext = Ext;
    U = *Ext->user_begin();
  }
  S.Switch = dyn_cast<SwitchInst>(U);
  if (!S.Switch || S.Switch->getNumCases() != 2)
    return std::nullopt;
  for (auto Case : S.Switch->cases()) {
    if (Case.getCaseValue()->isZero())
      S.Resume = Case.getCaseSuccessor();
  }
  if (!S.Resume)
    return std::nullopt;
  return S;
}
} // namespace

/// Recognizes a task function, or says why \p F is not one.
TaskFunction asyncfusion::analyzeTaskFunction(Function &F) {
  TaskFunction T;
  T.F = &F;
  auto Fail = [&](const Twine &Why) {
    T.NotTask = Why.str();
    return T;
  };
  if (F.isDeclaration() || !F.hasFnAttribute(Attribute::PresplitCoroutine))
    return Fail("is not a presplit coroutine");
  BasicBlock &Entry = F.getEntryBlock();
  SmallVector<CallInst *, 4> Suspends;
  SmallVector<ReturnInst *, 1> Rets;
  for (Instruction &I : instructions(F)) {
    if (auto *RI = dyn_cast<ReturnInst>(&I))
      Rets.push_back(RI);
    if (isCoroIntrinsic(I, Intrinsic::coro_begin)) {
      if (T.CoroBegin)
        return Fail("has more than one coroutine frame");
      T.CoroBegin = cast<CallInst>(&I);
    } else if (isCoroIntrinsic(I, Intrinsic::coro_suspend)) {
      Suspends.push_back(cast<CallInst>(&I));
    } else if (isCoroIntrinsic(I, Intrinsic::coro_free)) {
      if (T.Cleanup)
        return Fail("has more than one frame release");
      T.Cleanup = I.getParent();
    } else if (isAnyCoroIntrinsic(I) &&
               !isCoroIntrinsic(I, Intrinsic::coro_id) &&
               !isCoroIntrinsic(I, Intrinsic::coro_size) &&
               !isCoroIntrinsic(I, Intrinsic::coro_align) &&
               !isCoroIntrinsic(I, Intrinsic::coro_save) &&
               !isCoroIntrinsic(I, Intrinsic::coro_end)) {
      return Fail("uses " + cast<CallBase>(I).getCalledFunction()->getName());
    }
  }
  if (!T.CoroBegin || T.CoroBegin->getParent() != &Entry || !T.Cleanup ||
      Suspends.empty() || Rets.size() != 1)
    return Fail("is not shaped like an MLIR async.execute coroutine");
  if (!collectResults(Rets[0]->getReturnValue(), T))
    return Fail("does not return the token and values it creates");
  for (CallInst *R : T.Results)
    if (R->getParent() != &Entry ||
        !all_of(R->args(), [](const Use &U) { return isa<Constant>(U.get()); }))
      return Fail("creates its results outside its entry block");
  for (CallInst *S : Suspends) {
    std::optional<SuspendPoint> SP = readSuspend(S, T.CoroBegin);
    if (!SP)
      return Fail("has a suspend point that is not a runtime hand-off");
    // The Execute hop comes first, in the entry block.
    bool IsExecute = !SP->Awaited;
    if (IsExecute != (S->getParent() == &Entry))
      return Fail("does not start with one hand-off to the thread pool");
    if (IsExecute)
      T.Suspends.insert(T.Suspends.begin(), *SP);
    else
      T.Suspends.push_back(*SP);
  }
  if (T.Suspends.front().Awaited)
    return Fail("does not start with one hand-off to the thread pool");
  // The frame memory must serve the frame only.
  auto *Mem = dyn_cast<CallInst>(T.CoroBegin->getArgOperand(1));
  if (!Mem || !Mem->hasOneUse())
    T.NoBody = "its coroutine frame memory is used elsewhere";
  for (const SuspendPoint &S : drop_begin(T.Suspends))
    if (!isa<Argument>(S.Awaited))
      T.NoBody = "it awaits a token created in its own body";
  return T;
}

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// The cost of running a body function once, or none if unknown (a loop, a
/// call to code whose cost we cannot see).
std::optional<uint64_t>
asyncfusion::bodyCost(Function &B, TargetTransformInfo &TTI, std::string &Why) {
  SmallVector<std::pair<const BasicBlock *, const BasicBlock *>, 4> Back;
  FindFunctionBackedges(B, Back);
  if (!Back.empty()) {
    Why = "its body has a loop";
    return std::nullopt;
  }
  uint64_t Cost = 0;
  for (Instruction &I : instructions(B)) {
    if (auto *CB = dyn_cast<CallBase>(&I)) {
      const Function *Callee = CB->getCalledFunction();
      if (isRuntimeFunction(Callee))
        continue;
      if (!Callee || !Callee->isIntrinsic()) {
        Why = "its body calls " +
              (Callee ? "@" + Callee->getName().str() : "through a pointer");
        return std::nullopt;
      }
    }
    InstructionCost C =
        TTI.getInstructionCost(&I, TargetTransformInfo::TCK_SizeAndLatency);
    if (!C.isValid()) {
      Why = "its body has an instruction of unknown cost";
      return std::nullopt;
    }
    Cost += accel::costValue(C);
  }
  return Cost;
}

//===----------------------------------------------------------------------===//
// Chains
//===----------------------------------------------------------------------===//

/// Which result of \p Pred the value \p V is, if it is one.
std::optional<unsigned> asyncfusion::resultIndex(Value *V, CallInst *Pred) {
  if (V == Pred)
    return 0;
  auto *EV = dyn_cast<ExtractValueInst>(V);
  if (EV && EV->getAggregateOperand() == Pred && EV->getNumIndices() == 1)
    return EV->getIndices()[0];
  return std::nullopt;
}

namespace {
/// Whether \p I may block or otherwise do work the fused schedule must not
/// move a task launch across.
bool blocksOrWorks(const Instruction &I,
                   const DenseMap<Function *, TaskFunction *> &Tasks) {
  auto *CB = dyn_cast<CallBase>(&I);
  if (!CB)
    return false; // Stores and loads of the caller do not wait for tasks.
  Function *Callee = CB->getCalledFunction();
  if (Callee && Tasks.count(Callee))
    return false;
  if (isBlockingRuntimeCall(*CB))
    return true;
  if (isRuntimeFunction(Callee) || (Callee && Callee->isIntrinsic()))
    return false;
  return true;
}
} // namespace

/// Why \p Pred cannot be fused with a successor in its block; fills \p Next
/// when it can.
std::string asyncfusion::linkToSuccessor(
    const Launch &Pred, std::optional<Launch> &Next,
    const DenseMap<Function *, TaskFunction *> &Tasks) {
  CallInst *C = Pred.Call;
  SmallPtrSet<CallInst *, 2> Consumers;
  for (User *U : C->users()) {
    Instruction *UI = cast<Instruction>(U);
    if (auto *EV = dyn_cast<ExtractValueInst>(UI); EV && resultIndex(EV, C)) {
      for (User *EU : EV->users())
        Consumers.insert(dyn_cast<CallInst>(EU));
      continue;
    }
    Consumers.insert(dyn_cast<CallInst>(UI));
  }
  for (CallInst *U : Consumers) {
    if (U && isBlockingRuntimeCall(*U))
      return "the caller awaits it";
    if (U && isRuntimeCall(*U, "mlirAsyncRuntimeAddTokenToGroup"))
      return "it joins a group";
    if (U && isAwaitAndExecute(*U))
      return "the task that launched it awaits it";
  }
  if (Consumers.empty())
    return "its results are not used";
  if (Consumers.size() > 1)
    return "its results have " + std::to_string(Consumers.size()) +
           " users (fan-out)";
  CallInst *Succ = *Consumers.begin();
  if (!Succ) {
    for (User *U : C->users())
      if (isa<ReturnInst>(U))
        return "its results are returned to the caller's caller";
    return "its results are used by an instruction that is not a call";
  }
  Function *Callee = Succ->getCalledFunction();
  auto It = Callee ? Tasks.find(Callee) : Tasks.end();
  if (It == Tasks.end())
    return "its results are used by " +
           (Callee ? "@" + Callee->getName().str() : std::string("a call")) +
           ", not by a task launch";
  TaskFunction *ST = It->second;
  if (!ST->NotTask.empty() || !ST->NoBody.empty())
    return "its successor @" + Callee->getName().str() + " cannot be fused: " +
           (ST->NotTask.empty() ? ST->NoBody : ST->NotTask);
  if (Succ->getParent() != C->getParent())
    return "its successor is launched in another block";
  if (!C->comesBefore(Succ))
    return "its successor is launched before it";
  // Every operand the successor awaits is a result of this task.
  SmallVector<unsigned, 2> Awaited = ST->awaitedArgs();
  for (unsigned A : Awaited)
    if (!resultIndex(Succ->getArgOperand(A), C))
      return "its successor @" + Callee->getName().str() + " waits for " +
             std::to_string(Awaited.size()) +
             " operands, not all from this task (fan-in)";
  if (Awaited.empty())
    return "its successor does not wait for it";
  for (Instruction *I = C->getNextNode(); I != Succ; I = I->getNextNode())
    if (blocksOrWorks(*I, Tasks))
      return "the caller blocks or calls other code before launching its "
             "successor";
  Next = Launch{Succ, ST};
  return "";
}
