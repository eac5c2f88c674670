//===- AccelAsyncFusion.cpp - Fuse and inline MLIR async tasks ------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-async-fusion works on LLVM IR from MLIR's async dialect, lowered by
/// `--async-to-async-runtime --async-runtime-ref-counting(-opt)
/// --convert-async-to-llvm` and translated to LLVM IR, before coroutine
/// splitting.
///
/// Task discovery. Each `async.execute` is a presplit coroutine (a "task
/// function") called once per task launch. Its entry block creates the task's
/// results (`mlirAsyncRuntimeCreateToken`, `...CreateValue(size)`), builds the
/// coroutine frame and hands the coroutine to the thread pool
/// (`mlirAsyncRuntimeExecute` + `llvm.coro.suspend`). Each dependency is one
/// more suspend point behind `mlirAsyncRuntimeAwait{Token,Value,AllInGroup}
/// AndExecute(operand)`, followed by the error check
/// (`mlirAsyncRuntimeIs*Error`) and reference drop of the operand. The body
/// then emplaces its results or sets their error, and every path ends in the
/// cleanup block (`llvm.coro.free`). The results are returned (a token, or a
/// struct of a token and values).
///
/// Body functions. A task function with every suspend point removed (each
/// suspend's switch becomes a branch to its resume block, the hand-off calls
/// go, the frame is not allocated, the results are parameters instead of
/// created, the cleanup block returns) runs the same code as the task: the
/// same error checks, emplaces, error settings and reference drops, on the
/// same runtime objects. It is only correct when every awaited operand is
/// already available when it is called: that is what fusion guarantees.
///
/// Chains. A task call C_{i+1} is fused after C_i when (1) both are in the
/// same block, (2) every use of C_i's results is an operand of C_{i+1} (no one
/// else awaits, groups or drops them), (3) every operand C_{i+1} awaits is a
/// result of C_i, and (4) no blocking call (an await, an unknown call) lies
/// between them. The chain C_0..C_N becomes one call, at C_N, of a new task
/// function: a copy of C_0's that creates C_N's results up front (and returns
/// them), and where C_0's body ends, creates C_i's results and calls C_i's
/// body function in turn (i = 1..N). C_0 keeps its own dependencies. An error
/// in a middle task sets the error on that task's token; the next body
/// function checks it exactly as the task did, and so on down to the tokens
/// the user awaits. Intermediate results still exist (created, emplaced,
/// dropped inside the fused task): only their hand-offs go.
///
/// Inline tasks. A chain whose head has no dependency runs inline in the
/// caller (results created there, body functions called in turn) when
/// inline-small is on and the cost of its bodies is below min-cost: the sum of
/// the TTI size-and-latency costs of their instructions (calls into the async
/// runtime excepted). A body with a loop, or with a call to anything but the
/// async runtime and intrinsics, has unknown cost and stays a task. The
/// default min-cost, 1000, is a conservative figure for one hand-off: the
/// MLIR async runtime measured here costs about 2 us (several thousand
/// cycles) per task for scheduling on its thread pool.
///
/// Everything else stays parallel: tasks with real work, fan-out (a result
/// used by several consumers), fan-in (a consumer of several tasks), tasks
/// carried around loops, each with a missed remark saying why.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusion.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Debug.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;

#define DEBUG_TYPE "accel-async-fusion"

STATISTIC(NumTaskCalls, "Task launches examined");
STATISTIC(NumChainsFused, "Chains of tasks fused into one task");
STATISTIC(NumTasksFused, "Tasks folded into a predecessor's task");
STATISTIC(NumTasksInlined, "Tasks run inline in their caller");
STATISTIC(NumTasksKept, "Tasks left asynchronous");

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

Expected<AccelAsyncFusionOptions>
llvm::parseAccelAsyncFusionOptions(StringRef Params) {
  AccelAsyncFusionOptions Opts;
  accel::PassParamParser P("accel-async-fusion");
  P.integer("min-cost", Opts.MinCost, 0, 1000000);
  P.flag("chains", Opts.Chains);
  P.flag("inline-small", Opts.InlineSmall);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelAsyncFusionPass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-async-fusion<min-cost=" << Opts.MinCost << ';'
     << (Opts.Chains ? "" : "no-") << "chains;"
     << (Opts.InlineSmall ? "" : "no-") << "inline-small>";
}

namespace {

//===----------------------------------------------------------------------===//
// Task discovery
//===----------------------------------------------------------------------===//

/// Runtime entry points by role.
bool isRuntimeCall(const CallBase &CB, StringRef Name) {
  const Function *F = CB.getCalledFunction();
  return F && F->getName() == Name;
}

bool isRuntimeFunction(const Function *F) {
  return F && (F->getName().starts_with("mlirAsyncRuntime") ||
               F->getName() == "mlirAsyncRuntimGetNumWorkerThreads");
}

/// Calls that block the calling thread until a task finishes.
bool isBlockingRuntimeCall(const CallBase &CB) {
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
bool isAwaitAndExecute(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  if (!F)
    return false;
  StringRef N = F->getName();
  return N == "mlirAsyncRuntimeAwaitTokenAndExecute" ||
         N == "mlirAsyncRuntimeAwaitValueAndExecute" ||
         N == "mlirAsyncRuntimeAwaitAllInGroupAndExecute";
}

bool isCoroIntrinsic(const Instruction &I, Intrinsic::ID ID) {
  auto *II = dyn_cast<IntrinsicInst>(&I);
  return II && II->getIntrinsicID() == ID;
}

bool isAnyCoroIntrinsic(const Instruction &I) {
  auto *CB = dyn_cast<CallBase>(&I);
  const Function *F = CB ? CB->getCalledFunction() : nullptr;
  return F && F->getName().starts_with("llvm.coro.");
}

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

/// Recognizes a task function, or says why \p F is not one.
TaskFunction analyzeTaskFunction(Function &F) {
  TaskFunction T;
  T.F = &F;
  auto Fail = [&](const Twine &Why) {
    T.NotTask = Why.str();
    return T;
  };
  if (F.isDeclaration() || !F.hasFnAttribute(Attribute::PresplitCoroutine))
    return Fail("not a presplit coroutine");
  BasicBlock &Entry = F.getEntryBlock();
  SmallVector<CallInst *, 4> Suspends;
  SmallVector<ReturnInst *, 1> Rets;
  for (Instruction &I : instructions(F)) {
    if (auto *RI = dyn_cast<ReturnInst>(&I))
      Rets.push_back(RI);
    if (isCoroIntrinsic(I, Intrinsic::coro_begin)) {
      if (T.CoroBegin)
        return Fail("more than one coroutine frame");
      T.CoroBegin = cast<CallInst>(&I);
    } else if (isCoroIntrinsic(I, Intrinsic::coro_suspend)) {
      Suspends.push_back(cast<CallInst>(&I));
    } else if (isCoroIntrinsic(I, Intrinsic::coro_free)) {
      if (T.Cleanup)
        return Fail("more than one frame release");
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
    return Fail("not shaped like an MLIR async.execute coroutine");
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
// Body functions (task functions without suspend points)
//===----------------------------------------------------------------------===//

/// Builds the body function of \p T: \p T.F's parameters, then one pointer
/// per result object; returns nothing. Null if the body cannot be separated.
Function *buildBodyFunction(const TaskFunction &T) {
  Function &F = *T.F;
  Module &M = *F.getParent();
  LLVMContext &Ctx = M.getContext();
  SmallVector<Type *, 8> Params(F.getFunctionType()->params());
  for (CallInst *R : T.Results)
    Params.push_back(R->getType());
  auto *FTy = FunctionType::get(Type::getVoidTy(Ctx), Params, false);
  Function *B = Function::Create(FTy, GlobalValue::InternalLinkage,
                                 F.getName() + ".accel.body", M);
  ValueToValueMapTy VMap;
  for (Argument &A : F.args())
    VMap[&A] = B->getArg(A.getArgNo());
  SmallVector<ReturnInst *, 1> Rets;
  CloneFunctionInto(B, &F, VMap, CloneFunctionChangeType::LocalChangesOnly,
                    Rets);
  B->removeFnAttr(Attribute::PresplitCoroutine);
  B->setLinkage(GlobalValue::InternalLinkage);
  // The cloned `ret` of the task's result is unreachable once the suspend
  // switches are gone; make it so now, since B returns void.
  for (ReturnInst *RI : Rets) {
    new UnreachableInst(Ctx, RI->getIterator());
    RI->eraseFromParent();
  }
  // Each suspend point resumes at once.
  for (const SuspendPoint &S : T.Suspends) {
    auto *Sw = cast<SwitchInst>(VMap[S.Switch]);
    BranchInst::Create(cast<BasicBlock>(VMap[S.Resume]), Sw->getIterator());
    Sw->eraseFromParent();
    for (Instruction *I :
         {S.Ext, cast<Instruction>(S.Suspend), cast<Instruction>(S.Hop),
          cast<Instruction>(S.Save)}) {
      if (!I)
        continue;
      auto *C = cast<Instruction>(VMap[I]);
      C->replaceAllUsesWith(PoisonValue::get(C->getType()));
      C->eraseFromParent();
    }
  }
  // The cleanup block (frame release) returns.
  auto *Cleanup = cast<BasicBlock>(VMap[T.Cleanup]);
  while (!Cleanup->empty()) {
    Instruction &I = Cleanup->back();
    I.replaceAllUsesWith(PoisonValue::get(I.getType()));
    I.eraseFromParent();
  }
  ReturnInst::Create(Ctx, Cleanup);
  // The results are parameters.
  for (auto [Idx, R] : enumerate(T.Results)) {
    auto *C = cast<Instruction>(VMap[R]);
    C->replaceAllUsesWith(B->getArg(F.arg_size() + Idx));
    C->eraseFromParent();
  }
  removeUnreachableBlocks(*B);
  // No frame: drop the coroutine intrinsics and the frame allocation.
  auto *Begin = cast<CallInst>(VMap[T.CoroBegin]);
  auto *Mem = dyn_cast<Instruction>(Begin->getArgOperand(1));
  SmallVector<Instruction *, 8> Coro;
  for (Instruction &I : instructions(*B))
    if (isAnyCoroIntrinsic(I))
      Coro.push_back(&I);
  for (Instruction *I : Coro)
    I->replaceAllUsesWith(PoisonValue::get(I->getType()));
  for (Instruction *I : Coro)
    I->eraseFromParent();
  if (Mem && Mem->use_empty()) {
    SmallVector<Value *, 2> Ops(Mem->operands());
    Mem->eraseFromParent();
    for (Value *Op : Ops)
      RecursivelyDeleteTriviallyDeadInstructions(Op);
  }
  for (Instruction &I : instructions(*B))
    if (auto *CB = dyn_cast<CallBase>(&I))
      if (isRuntimeCall(*CB, "mlirAsyncRuntimeExecute") ||
          isAwaitAndExecute(*CB) || isa<PoisonValue>(CB->getCalledOperand())) {
        B->eraseFromParent();
        return nullptr;
      }
  return B;
}

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// The cost of running a body function once, or none if unknown (a loop, a
/// call to code whose cost we cannot see).
std::optional<uint64_t> bodyCost(Function &B, TargetTransformInfo &TTI,
                                 std::string &Why) {
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
// Local tokens
//===----------------------------------------------------------------------===//

/// Whether every use of the token \p Tok (other than those \p Ignore
/// accepts) is a runtime call that a private error flag can stand in for:
/// emplace, set error, error test, reference counting.
bool isLocalizable(Value *Tok, function_ref<bool(User *)> Ignore = nullptr) {
  for (Use &U : Tok->uses()) {
    if (Ignore && Ignore(U.getUser()))
      continue;
    auto *CB = dyn_cast<CallInst>(U.getUser());
    const Function *Callee = CB ? CB->getCalledFunction() : nullptr;
    if (!Callee || U.getOperandNo() != 0)
      return false;
    StringRef N = Callee->getName();
    if (N != "mlirAsyncRuntimeEmplaceToken" &&
        N != "mlirAsyncRuntimeSetTokenError" &&
        N != "mlirAsyncRuntimeIsTokenError" && N != "mlirAsyncRuntimeAddRef" &&
        N != "mlirAsyncRuntimeDropRef")
      return false;
  }
  return true;
}

/// Replaces the runtime calls on the token \p Tok by loads and stores of the
/// i8 error flag \p Flag (checked by isLocalizable): a token nobody else sees
/// needs no runtime object.
void localizeToken(Value *Tok, Value *Flag) {
  SmallVector<CallInst *, 4> Calls;
  for (User *U : Tok->users())
    if (auto *CB = dyn_cast<CallInst>(U); CB && CB->getArgOperand(0) == Tok)
      Calls.push_back(CB);
  for (CallInst *C : Calls) {
    IRBuilder<> B(C);
    StringRef N = C->getCalledFunction()->getName();
    if (N == "mlirAsyncRuntimeSetTokenError") {
      B.CreateStore(B.getInt8(1), Flag);
    } else if (N == "mlirAsyncRuntimeIsTokenError") {
      Value *F = B.CreateLoad(B.getInt8Ty(), Flag, "accel.err");
      C->replaceAllUsesWith(B.CreateICmpNE(F, B.getInt8(0)));
    }
    C->eraseFromParent();
  }
}

//===----------------------------------------------------------------------===//
// Chains
//===----------------------------------------------------------------------===//

/// A launch of a task: the call of a task function.
struct Launch {
  CallInst *Call;
  TaskFunction *Task;
};

/// Which result of \p Pred the value \p V is, if it is one.
std::optional<unsigned> resultIndex(Value *V, CallInst *Pred) {
  if (V == Pred)
    return 0;
  auto *EV = dyn_cast<ExtractValueInst>(V);
  if (EV && EV->getAggregateOperand() == Pred && EV->getNumIndices() == 1)
    return EV->getIndices()[0];
  return std::nullopt;
}

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

/// Why \p Pred cannot be fused with a successor in its block; fills \p Next
/// when it can.
std::string linkToSuccessor(const Launch &Pred, std::optional<Launch> &Next,
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

//===----------------------------------------------------------------------===//
// Transformation
//===----------------------------------------------------------------------===//

class Fuser {
public:
  Fuser(Module &M, ModuleAnalysisManager &MAM,
        const AccelAsyncFusionOptions &Opts)
      : M(M), Opts(Opts),
        FAM(MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager()) {
  }

  bool run();

private:
  Function *bodyOf(TaskFunction &T);
  void processBlock(BasicBlock &BB, OptimizationRemarkEmitter &ORE);
  void processChain(ArrayRef<Launch> Chain, StringRef Why,
                    OptimizationRemarkEmitter &ORE);
  /// The cost of running the chain inline, or why it cannot be.
  std::optional<uint64_t> chainCost(ArrayRef<Launch> Chain, std::string &Why);
  void inlineChain(ArrayRef<Launch> Chain);
  void fuseChain(ArrayRef<Launch> Chain);
  /// Creates the results of \p T with \p B, as T's entry does.
  SmallVector<Value *, 2> createResults(IRBuilder<> &B, const TaskFunction &T);
  /// Builds T's return value from \p Objs.
  Value *packResults(IRBuilder<> &B, const TaskFunction &T,
                     ArrayRef<Value *> Objs);
  /// Emits the body calls of Chain[From..] with \p B. \p Arg gives the
  /// value for launch I's operand J that is not a predecessor's result.
  void emitBodies(IRBuilder<> &B, ArrayRef<Launch> Chain, size_t From,
                  SmallVector<Value *, 2> PrevObjs, ArrayRef<Value *> LastObjs,
                  ArrayRef<SmallVector<unsigned, 2>> Local,
                  function_ref<Value *()> NewFlag,
                  function_ref<Value *(size_t, unsigned)> Arg);
  /// The body function of \p T whose parameters \p LocalArgs carry error
  /// flags instead of tokens; null if a use of one cannot be a flag's.
  Function *bodyVariant(TaskFunction &T, ArrayRef<unsigned> LocalArgs);
  /// For each launch but the last, the results (token indices) that only the
  /// next launch uses and can become private flags. \p FusedHead: the head
  /// keeps its coroutine (its own uses are checked in its task function).
  SmallVector<SmallVector<unsigned, 2>, 8>
  planLocalTokens(ArrayRef<Launch> Chain, bool FusedHead);
  /// The body parameters of Chain[I] that are local (own results, and
  /// operands that are local results of Chain[I-1]).
  SmallVector<unsigned, 4> localArgs(ArrayRef<Launch> Chain, size_t I,
                                     ArrayRef<SmallVector<unsigned, 2>> Local);
  void eraseChain(ArrayRef<Launch> Chain);

  Module &M;
  const AccelAsyncFusionOptions &Opts;
  FunctionAnalysisManager &FAM;
  MapVector<Function *, std::unique_ptr<TaskFunction>> TaskStore;
  DenseMap<Function *, TaskFunction *> Tasks;
  DenseMap<Function *, Function *> Bodies;
  std::map<std::pair<Function *, std::vector<unsigned>>, Function *> Variants;
  bool Changed = false;
};

Function *Fuser::bodyOf(TaskFunction &T) {
  auto [It, New] = Bodies.try_emplace(T.F, nullptr);
  if (New) {
    It->second = buildBodyFunction(T);
    if (!It->second)
      T.NoBody = "its body does not separate from its suspend points";
  }
  return It->second;
}

Function *Fuser::bodyVariant(TaskFunction &T, ArrayRef<unsigned> LocalArgs) {
  Function *Base = Bodies.lookup(T.F);
  if (LocalArgs.empty() || !Base)
    return Base;
  std::vector<unsigned> Key(LocalArgs.begin(), LocalArgs.end());
  auto [It, New] = Variants.try_emplace({T.F, Key}, nullptr);
  if (!New)
    return It->second;
  for (unsigned A : LocalArgs)
    if (!isLocalizable(Base->getArg(A)))
      return nullptr;
  ValueToValueMapTy VMap;
  Function *V = CloneFunction(Base, VMap);
  V->setName(Base->getName() + ".local");
  for (unsigned A : LocalArgs)
    localizeToken(V->getArg(A), V->getArg(A));
  It->second = V;
  return V;
}

SmallVector<unsigned, 4>
Fuser::localArgs(ArrayRef<Launch> Chain, size_t I,
                 ArrayRef<SmallVector<unsigned, 2>> Local) {
  SmallVector<unsigned, 4> Args;
  const Launch &L = Chain[I];
  if (I > 0)
    for (unsigned J = 0; J < L.Call->arg_size(); ++J)
      if (auto R = resultIndex(L.Call->getArgOperand(J), Chain[I - 1].Call);
          R && is_contained(Local[I - 1], *R))
        Args.push_back(J);
  if (I < Local.size())
    for (unsigned K : Local[I])
      Args.push_back(L.Task->F->arg_size() + K);
  return Args;
}

SmallVector<SmallVector<unsigned, 2>, 8>
Fuser::planLocalTokens(ArrayRef<Launch> Chain, bool FusedHead) {
  SmallVector<SmallVector<unsigned, 2>, 8> Local(Chain.size() - 1);
  for (size_t I = 0; I + 1 < Chain.size(); ++I) {
    const TaskFunction &T = *Chain[I].Task;
    for (auto [K, R] : enumerate(T.Results)) {
      if (!isRuntimeCall(*R, "mlirAsyncRuntimeCreateToken"))
        continue;
      bool Producer =
          I == 0 && FusedHead
              ? isLocalizable(R,
                              [](User *U) {
                                return isa<ReturnInst>(U) ||
                                       isa<InsertValueInst>(U);
                              })
              : isLocalizable(Bodies.lookup(T.F)->getArg(T.F->arg_size() + K));
      bool Consumer = true;
      const Launch &Next = Chain[I + 1];
      for (unsigned J = 0; J < Next.Call->arg_size(); ++J)
        if (resultIndex(Next.Call->getArgOperand(J), Chain[I].Call) == K)
          Consumer &= isLocalizable(Bodies.lookup(Next.Task->F)->getArg(J));
      if (Producer && Consumer)
        Local[I].push_back(K);
    }
  }
  // Drop what a variant cannot be built for.
  for (size_t I = 0; I < Chain.size(); ++I) {
    if (I == 0 && FusedHead)
      continue;
    if (!bodyVariant(*Chain[I].Task, localArgs(Chain, I, Local))) {
      if (I > 0)
        Local[I - 1].clear();
      if (I < Local.size())
        Local[I].clear();
    }
  }
  return Local;
}

SmallVector<Value *, 2> Fuser::createResults(IRBuilder<> &B,
                                             const TaskFunction &T) {
  SmallVector<Value *, 2> Objs;
  for (CallInst *R : T.Results) {
    SmallVector<Value *, 1> Args(R->args());
    Objs.push_back(
        B.CreateCall(R->getFunctionType(), R->getCalledOperand(), Args));
  }
  return Objs;
}

Value *Fuser::packResults(IRBuilder<> &B, const TaskFunction &T,
                          ArrayRef<Value *> Objs) {
  Type *RetTy = T.F->getReturnType();
  if (!RetTy->isStructTy())
    return Objs[0];
  Value *V = PoisonValue::get(RetTy);
  for (auto [Idx, O] : enumerate(Objs))
    V = B.CreateInsertValue(V, O, {unsigned(Idx)});
  return V;
}

void Fuser::emitBodies(IRBuilder<> &B, ArrayRef<Launch> Chain, size_t From,
                       SmallVector<Value *, 2> PrevObjs,
                       ArrayRef<Value *> LastObjs,
                       ArrayRef<SmallVector<unsigned, 2>> Local,
                       function_ref<Value *()> NewFlag,
                       function_ref<Value *(size_t, unsigned)> Arg) {
  for (size_t I = From; I < Chain.size(); ++I) {
    const Launch &L = Chain[I];
    SmallVector<Value *, 2> Objs;
    if (I + 1 == Chain.size()) {
      Objs.assign(LastObjs.begin(), LastObjs.end());
    } else {
      // Local tokens are flags, cleared here (this may run in a loop).
      for (auto [K, R] : enumerate(L.Task->Results)) {
        if (!is_contained(Local[I], K)) {
          SmallVector<Value *, 1> Args(R->args());
          Objs.push_back(
              B.CreateCall(R->getFunctionType(), R->getCalledOperand(), Args));
          continue;
        }
        Value *Flag = NewFlag();
        B.CreateStore(B.getInt8(0), Flag);
        Objs.push_back(Flag);
      }
    }
    SmallVector<Value *, 8> Args;
    for (unsigned J = 0; J < L.Call->arg_size(); ++J) {
      std::optional<unsigned> R;
      if (I > 0)
        R = resultIndex(L.Call->getArgOperand(J), Chain[I - 1].Call);
      Args.push_back(R ? PrevObjs[*R] : Arg(I, J));
    }
    Args.append(Objs.begin(), Objs.end());
    B.CreateCall(bodyVariant(*L.Task, localArgs(Chain, I, Local)), Args);
    PrevObjs = std::move(Objs);
  }
}

void Fuser::eraseChain(ArrayRef<Launch> Chain) {
  for (const Launch &L : reverse(Chain)) {
    SmallVector<Instruction *, 4> Users;
    for (User *U : L.Call->users())
      Users.push_back(cast<Instruction>(U));
    for (Instruction *U : Users) {
      assert(U->use_empty() && "fused result still in use");
      U->eraseFromParent();
    }
    L.Call->eraseFromParent();
  }
}

void Fuser::inlineChain(ArrayRef<Launch> Chain) {
  CallInst *Last = Chain.back().Call;
  IRBuilder<> B(Last);
  SmallVector<Value *, 2> LastObjs = createResults(B, *Chain.back().Task);
  auto Local = planLocalTokens(Chain, /*FusedHead=*/false);
  BasicBlock &Entry = Last->getFunction()->getEntryBlock();
  auto NewFlag = [&]() -> Value * {
    IRBuilder<> EB(&Entry, Entry.getFirstInsertionPt());
    return EB.CreateAlloca(EB.getInt8Ty(), nullptr, "accel.token.flag");
  };
  emitBodies(
      B, Chain, 0, {}, LastObjs, Local, NewFlag,
      [&](size_t I, unsigned J) { return Chain[I].Call->getArgOperand(J); });
  Last->replaceAllUsesWith(packResults(B, *Chain.back().Task, LastObjs));
  eraseChain(Chain);
}

/// A key for caller values that are the same (MLIR's lowering extracts the
/// same memref field once per launch).
using ValueKey = std::pair<Value *, unsigned>;
ValueKey keyOf(Value *V) {
  auto *EV = dyn_cast<ExtractValueInst>(V);
  if (EV && EV->getNumIndices() == 1)
    return {EV->getAggregateOperand(), EV->getIndices()[0] + 1};
  if (EV && EV->getNumIndices() == 2)
    return {EV->getAggregateOperand(),
            (EV->getIndices()[0] + 1) * 1024 + EV->getIndices()[1] + 1};
  return {V, 0};
}

void Fuser::fuseChain(ArrayRef<Launch> Chain) {
  const TaskFunction &Head = *Chain.front().Task;
  const TaskFunction &Tail = *Chain.back().Task;
  Function &F0 = *Head.F;
  LLVMContext &Ctx = M.getContext();
  // Parameters: the head's, then every other operand the chain's launches
  // pass from the caller (once per distinct value).
  SmallVector<Type *, 16> Params(F0.getFunctionType()->params());
  SmallVector<Value *, 16> CallArgs(Chain.front().Call->args());
  DenseMap<ValueKey, unsigned> ParamOf;
  DenseMap<std::pair<size_t, unsigned>, unsigned> ArgParam;
  for (size_t I = 1; I < Chain.size(); ++I) {
    CallInst *C = Chain[I].Call;
    for (unsigned J = 0; J < C->arg_size(); ++J) {
      Value *V = C->getArgOperand(J);
      if (resultIndex(V, Chain[I - 1].Call))
        continue;
      auto [It, New] = ParamOf.try_emplace(keyOf(V), Params.size());
      if (New) {
        Params.push_back(V->getType());
        CallArgs.push_back(V);
      }
      ArgParam[{I, J}] = It->second;
    }
  }
  auto *FTy = FunctionType::get(Tail.F->getReturnType(), Params, false);
  Function *Fused = Function::Create(FTy, GlobalValue::InternalLinkage,
                                     F0.getName() + ".accel.chain", M);
  ValueToValueMapTy VMap;
  for (Argument &A : F0.args())
    VMap[&A] = Fused->getArg(A.getArgNo());
  SmallVector<ReturnInst *, 1> Rets;
  CloneFunctionInto(Fused, &F0, VMap, CloneFunctionChangeType::LocalChangesOnly,
                    Rets);
  Fused->setLinkage(GlobalValue::InternalLinkage);
  // The tail's results are created up front and returned to the caller.
  BasicBlock &Entry = Fused->getEntryBlock();
  IRBuilder<> B(&Entry, Entry.getFirstInsertionPt());
  SmallVector<Value *, 2> LastObjs = createResults(B, Tail);
  for (ReturnInst *RI : Rets) {
    B.SetInsertPoint(RI);
    Value *V = packResults(B, Tail, LastObjs);
    ReturnInst::Create(Ctx, V, RI->getIterator());
    Value *Old = RI->getReturnValue();
    RI->eraseFromParent();
    RecursivelyDeleteTriviallyDeadInstructions(Old);
  }
  // Where the head's body ends (every edge into the cleanup block that is
  // not a suspend's destroy edge), the other bodies run in turn.
  auto *Cleanup = cast<BasicBlock>(VMap[Head.Cleanup]);
  SmallPtrSet<Instruction *, 4> SuspendSwitches;
  for (const SuspendPoint &S : Head.Suspends)
    SuspendSwitches.insert(cast<Instruction>(VMap[S.Switch]));
  BasicBlock *ChainBB = BasicBlock::Create(Ctx, "accel.chain", Fused, Cleanup);
  SmallVector<BasicBlock *, 4> Preds(predecessors(Cleanup));
  for (BasicBlock *P : Preds)
    if (!SuspendSwitches.count(P->getTerminator()))
      P->getTerminator()->replaceSuccessorWith(Cleanup, ChainBB);
  auto Local = planLocalTokens(Chain, /*FusedHead=*/true);
  auto NewFlag = [&]() -> Value * {
    IRBuilder<> EB(&Entry, Entry.getFirstInsertionPt());
    return EB.CreateAlloca(EB.getInt8Ty(), nullptr, "accel.token.flag");
  };
  SmallVector<Value *, 2> HeadObjs;
  for (auto [K, R] : enumerate(Head.Results)) {
    auto *Obj = cast<Instruction>(VMap[R]);
    if (!is_contained(Local.front(), K)) {
      HeadObjs.push_back(Obj);
      continue;
    }
    // The head's own token becomes a flag, cleared before the frame exists.
    Value *Flag = NewFlag();
    IRBuilder<> OB(Obj);
    OB.CreateStore(OB.getInt8(0), Flag);
    localizeToken(Obj, Flag);
    Obj->eraseFromParent();
    HeadObjs.push_back(Flag);
  }
  B.SetInsertPoint(ChainBB);
  emitBodies(B, Chain, 1, HeadObjs, LastObjs, Local, NewFlag,
             [&](size_t I, unsigned J) {
               return Fused->getArg(ArgParam.lookup({I, J}));
             });
  B.CreateBr(Cleanup);
  // The caller launches the fused task where it launched the last one.
  CallInst *Last = Chain.back().Call;
  B.SetInsertPoint(Last);
  CallInst *NewCall = B.CreateCall(Fused, CallArgs);
  Last->replaceAllUsesWith(NewCall);
  eraseChain(Chain);
}

std::optional<uint64_t> Fuser::chainCost(ArrayRef<Launch> Chain,
                                         std::string &Why) {
  uint64_t Total = 0;
  for (const Launch &L : Chain) {
    Function *Body = Bodies.lookup(L.Task->F);
    std::optional<uint64_t> C =
        bodyCost(*Body, FAM.getResult<TargetIRAnalysis>(*Body), Why);
    if (!C)
      return std::nullopt;
    Total += *C;
  }
  return Total;
}

void Fuser::processChain(ArrayRef<Launch> Chain, StringRef LinkWhy,
                         OptimizationRemarkEmitter &ORE) {
  const Launch &Head = Chain.front();
  CallInst *At = Chain.back().Call;
  for (const Launch &L : Chain)
    bodyOf(*L.Task);
  bool HaveBodies = all_of(Chain, [&](const Launch &L) {
    return Bodies.lookup(L.Task->F) != nullptr;
  });
  // Inline: an independent head, cheap bodies.
  std::string InlineWhy;
  std::optional<uint64_t> Cost;
  if (!Opts.InlineSmall)
    InlineWhy = "inline-small is off";
  else if (!HaveBodies)
    InlineWhy = "its body does not separate from its suspend points";
  else if (Head.Task->numAwaits())
    InlineWhy = "it waits for " + std::to_string(Head.Task->numAwaits()) +
                " operand(s)";
  else if ((Cost = chainCost(Chain, InlineWhy)) && *Cost >= Opts.MinCost)
    InlineWhy = "body cost " + std::to_string(*Cost) + " is not below " +
                "min-cost=" + std::to_string(Opts.MinCost);
  if (InlineWhy.empty()) {
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": inline " << Chain.size()
                      << " task(s) at " << *At << ", cost " << *Cost << "\n");
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "RunInline", At)
             << "ran " << ore::NV("Tasks", unsigned(Chain.size()))
             << " task(s) inline (@" << Head.Task->F->getName()
             << "): body cost " << ore::NV("Cost", *Cost)
             << " is below min-cost=" << ore::NV("MinCost", Opts.MinCost);
    });
    inlineChain(Chain);
    NumTasksInlined += Chain.size();
    Changed = true;
    return;
  }
  if (Chain.size() > 1 && HaveBodies) {
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": fuse " << Chain.size()
                      << " tasks ending at " << *At << "\n");
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "FusedChain", At)
             << "fused a chain of " << ore::NV("Tasks", unsigned(Chain.size()))
             << " tasks (@" << Head.Task->F->getName() << " .. @"
             << Chain.back().Task->F->getName()
             << ") into one task; not inline: " << InlineWhy;
    });
    fuseChain(Chain);
    ++NumChainsFused;
    NumTasksFused += Chain.size() - 1;
    Changed = true;
    return;
  }
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": keep " << *At << ": " << LinkWhy << "; "
                    << InlineWhy << "\n");
  NumTasksKept += Chain.size();
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, "KeptTask", At)
           << "task @" << ore::NV("Task", Head.Task->F->getName())
           << " stays asynchronous: not fused (" << LinkWhy << "), not inline ("
           << InlineWhy << ")";
  });
}

void Fuser::processBlock(BasicBlock &BB, OptimizationRemarkEmitter &ORE) {
  SmallVector<Launch, 8> Launches;
  for (Instruction &I : BB)
    if (auto *CI = dyn_cast<CallInst>(&I))
      if (Function *Callee = CI->getCalledFunction())
        if (TaskFunction *T = Tasks.lookup(Callee))
          Launches.push_back({CI, T});
  SmallPtrSet<CallInst *, 8> Done;
  for (const Launch &L : Launches) {
    if (Done.count(L.Call))
      continue;
    ++NumTaskCalls;
    if (!L.Task->NotTask.empty()) {
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "NotATask", L.Call)
               << "@" << ore::NV("Task", L.Task->F->getName())
               << " is left alone: it " << L.Task->NotTask;
      });
      continue;
    }
    // Grow the chain forward from L.
    SmallVector<Launch, 8> Chain{L};
    std::string Why = L.Task->NoBody;
    while (Opts.Chains && Why.empty()) {
      std::optional<Launch> Next;
      Why = linkToSuccessor(Chain.back(), Next, Tasks);
      if (Next) {
        Chain.push_back(*Next);
        NumTaskCalls += 1;
      }
    }
    if (!Opts.Chains)
      Why = "chains is off";
    for (const Launch &C : Chain)
      Done.insert(C.Call);
    processChain(Chain, Why, ORE);
  }
}

bool Fuser::run() {
  if (!M.getFunction("mlirAsyncRuntimeExecute"))
    return false;
  for (Function &F : M)
    if (F.hasFnAttribute(Attribute::PresplitCoroutine) && !F.isDeclaration())
      for (User *U : F.users())
        if (auto *CI = dyn_cast<CallInst>(U);
            CI && CI->getCalledFunction() == &F) {
          auto T = std::make_unique<TaskFunction>(analyzeTaskFunction(F));
          LLVM_DEBUG(dbgs() << DEBUG_TYPE ": @" << F.getName() << ": "
                            << (T->NotTask.empty() ? "task" : T->NotTask)
                            << ", " << T->numAwaits() << " await(s)\n");
          Tasks[&F] = T.get();
          TaskStore[&F] = std::move(T);
          break;
        }
  if (Tasks.empty())
    return false;
  SmallVector<Function *, 8> Callers;
  for (Function &F : M)
    if (!F.isDeclaration())
      Callers.push_back(&F);
  for (Function *F : Callers) {
    OptimizationRemarkEmitter ORE(F);
    for (BasicBlock &BB : *F)
      processBlock(BB, ORE);
  }
  // Body functions and task functions nobody calls any more.
  for (auto &[Key, V] : Variants)
    if (V && V->use_empty())
      V->eraseFromParent();
  for (auto &[F, B] : Bodies)
    if (B && B->use_empty())
      B->eraseFromParent();
  for (auto &[F, T] : TaskStore)
    if (F->use_empty() && F->hasLocalLinkage())
      F->eraseFromParent();
  return Changed;
}

} // namespace

PreservedAnalyses AccelAsyncFusionPass::run(Module &M,
                                            ModuleAnalysisManager &MAM) {
  Fuser Fu(M, MAM, Opts);
  return Fu.run() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
