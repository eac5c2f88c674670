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
/// splitting. Task discovery, the cost model and the chain link rule live in
/// AccelAsyncFusionAnalysis.cpp; body functions, private tokens and the
/// rewriting here.
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
/// the user awaits.
///
/// Private tokens. A token of C_i (i < N) that only C_{i+1} sees, and whose
/// every use on both sides is an emplace, a set-error, an error test or a
/// reference count change, becomes an i8 error flag on the stack (variants of
/// the body functions take the flag's address in its place): a fused chain
/// has one runtime token, the one the user awaits. Values (and tokens used in
/// any other way) stay runtime objects, created, emplaced, read and dropped
/// inside the fused task as before.
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
/// launched in different blocks (loops of tasks), each with a missed remark
/// saying why.
///
/// Fan-out after a wait. MLIR's runtime resumes the tasks waiting for an
/// operand inside the call that makes it available (emplace or set-error), on
/// that thread, one after the other: two tasks with real work that wait for
/// one token run in turn. With pool-resume, every such task (its body has a
/// loop, an unknown call or a cost of at least min-cost, and another such
/// task waits for one of its operands) gets a second hand-off to the thread
/// pool right after its last wait: a copy of its first suspend point. It
/// costs one hand-off and changes no result.
///
/// GPU launch loops (part 2) are in AccelAsyncFusionGPU.cpp.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusion.h"
#include "AccelAsyncFusionAnalysis.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/Dominators.h"
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
using namespace llvm::asyncfusion;

#define DEBUG_TYPE "accel-async-fusion"

STATISTIC(NumTaskCalls, "Task launches examined");
STATISTIC(NumChainsFused, "Chains of tasks fused into one task");
STATISTIC(NumTasksFused, "Tasks folded into a predecessor's task");
STATISTIC(NumTasksInlined, "Tasks run inline in their caller");
STATISTIC(NumTasksKept, "Tasks left asynchronous");
STATISTIC(NumTasksRespread, "Tasks resumed on the thread pool after a wait "
                            "other tasks share");

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
  P.flag("gpu-graphs", Opts.GPUGraphs);
  P.flag("graph-cache", Opts.GraphCache);
  P.flag("pool-resume", Opts.PoolResume);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelAsyncFusionPass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-async-fusion<min-cost=" << Opts.MinCost << ';'
     << (Opts.Chains ? "" : "no-") << "chains;"
     << (Opts.InlineSmall ? "" : "no-") << "inline-small;"
     << (Opts.PoolResume ? "" : "no-") << "pool-resume;"
     << (Opts.GPUGraphs ? "" : "no-") << "gpu-graphs;"
     << (Opts.GraphCache ? "" : "no-") << "graph-cache>";
}

namespace {

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
  /// Tasks of \p Caller that wait for an operand other tasks with real work
  /// wait for too: each resumes on the thread pool after its last wait.
  void spreadFanOut(Function &Caller, OptimizationRemarkEmitter &ORE);
  /// Whether \p T's body does real work (a loop, an unknown call, or a cost
  /// of at least min-cost); \p Why says what.
  bool hasRealWork(TaskFunction &T, std::string &Why);

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

//===----------------------------------------------------------------------===//
// Fan-out: resume on the thread pool after a shared wait
//===----------------------------------------------------------------------===//

/// Adds a suspend point at the start of \p Resume that hands the coroutine to
/// the thread pool, as the task's first suspend point (\p Hop) does: a copy
/// of its save, execute, suspend (and sign extension) and switch, whose
/// resume edge goes on to the rest of \p Resume.
static void addPoolHop(const SuspendPoint &Hop, BasicBlock *Resume) {
  BasicBlock *Rest = Resume->splitBasicBlock(accel::firstNonPHIIt(*Resume),
                                             Resume->getName() + ".pool");
  Resume->getTerminator()->eraseFromParent();
  IRBuilder<> B(Resume);
  Instruction *Save = Hop.Save->clone();
  B.Insert(Save);
  Instruction *Exec = Hop.Hop->clone();
  B.Insert(Exec);
  Instruction *Suspend = Hop.Suspend->clone();
  Suspend->replaceUsesOfWith(Hop.Save, Save);
  B.Insert(Suspend);
  Value *Cond = Suspend;
  if (Hop.Ext) {
    Instruction *Ext = Hop.Ext->clone();
    Ext->replaceUsesOfWith(Hop.Suspend, Suspend);
    B.Insert(Ext);
    Cond = Ext;
  }
  auto *Switch = cast<SwitchInst>(Hop.Switch->clone());
  Switch->setCondition(Cond);
  B.Insert(Switch);
  BasicBlock *From = Hop.Switch->getParent();
  for (unsigned I = 0, E = Switch->getNumSuccessors(); I != E; ++I) {
    BasicBlock *Succ = Switch->getSuccessor(I);
    if (Succ == Hop.Resume) {
      Switch->setSuccessor(I, Rest);
      continue;
    }
    // The cleanup and suspend paths: a phi there takes from the new block
    // what it takes from the first suspend point (defined before it).
    for (PHINode &P : Succ->phis())
      if (P.getBasicBlockIndex(Resume) < 0)
        P.addIncoming(P.getIncomingValueForBlock(From), Resume);
  }
}

bool Fuser::hasRealWork(TaskFunction &T, std::string &Why) {
  Function *Body = bodyOf(T);
  if (!Body) {
    Why = "its body does not separate from its suspend points";
    return true;
  }
  std::optional<uint64_t> Cost =
      bodyCost(*Body, FAM.getResult<TargetIRAnalysis>(*Body), Why);
  if (!Cost)
    return true;
  Why = "body cost " + std::to_string(*Cost);
  return *Cost >= Opts.MinCost;
}

void Fuser::spreadFanOut(Function &Caller, OptimizationRemarkEmitter &ORE) {
  // The launches of tasks with real work, by the operands they wait for.
  MapVector<Value *, SmallVector<Launch, 4>> Waiters;
  DenseMap<Function *, std::string> Work;
  for (Instruction &I : instructions(Caller)) {
    auto *CI = dyn_cast<CallInst>(&I);
    Function *Callee = CI ? CI->getCalledFunction() : nullptr;
    TaskFunction *T = Callee ? Tasks.lookup(Callee) : nullptr;
    if (!T || !T->NotTask.empty() || !T->numAwaits())
      continue;
    std::string Why;
    if (!hasRealWork(*T, Why))
      continue;
    Work[T->F] = Why;
    for (unsigned A : T->awaitedArgs())
      Waiters[CI->getArgOperand(A)].push_back({CI, T});
  }
  SmallPtrSet<Function *, 8> Done;
  for (auto &[Operand, Launches] : Waiters) {
    if (Launches.size() < 2)
      continue;
    for (const Launch &L : Launches) {
      if (!Done.insert(L.Task->F).second)
        continue;
      // A task function called from several launches is changed for all:
      // the hop costs one hand-off and changes no result.
      LLVM_DEBUG(dbgs() << DEBUG_TYPE ": resume @" << L.Task->F->getName()
                        << " on the pool after its last wait\n");
      ORE.emit([&] {
        return OptimizationRemark(DEBUG_TYPE, "PoolResume", L.Call)
               << "task @" << ore::NV("Task", L.Task->F->getName())
               << " resumes on the thread pool after its last wait: "
               << ore::NV("Waiters", unsigned(Launches.size()))
               << " tasks with real work wait for one operand, and the "
                  "runtime would run them one after the other on the thread "
                  "that makes it available ("
               << Work.lookup(L.Task->F) << ")";
      });
      addPoolHop(L.Task->Suspends.front(), L.Task->Suspends.back().Resume);
      ++NumTasksRespread;
      Changed = true;
    }
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
    if (Opts.PoolResume)
      spreadFanOut(*F, ORE);
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
  bool Changed = Fu.run();
  if (Opts.GPUGraphs &&
      (M.getFunction("cudaLaunchKernel") || M.getFunction("cuLaunchKernel") ||
       M.getFunction("hipLaunchKernel") ||
       M.getFunction("hipModuleLaunchKernel") ||
       M.getFunction("zeCommandListAppendLaunchKernel"))) {
    auto &FAM =
        MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    for (Function &F : M) {
      if (F.isDeclaration())
        continue;
      OptimizationRemarkEmitter ORE(&F);
      if (captureLaunchLoops(F, FAM.getResult<LoopAnalysis>(F),
                             FAM.getResult<DominatorTreeAnalysis>(F), ORE,
                             Opts.GraphCache)) {
        FAM.invalidate(F, PreservedAnalyses::none());
        Changed = true;
      }
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
