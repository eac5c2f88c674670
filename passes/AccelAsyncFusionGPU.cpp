//===- AccelAsyncFusionGPU.cpp - Launch loops into CUDA graphs ------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Part 2 of accel-async-fusion. Level Zero (at the end of this file): a
/// loop that resets a command list, sets kernel arguments, appends launches
/// (and barriers without events between them), closes the list, executes it and
/// waits for it builds the same list every iteration; it is built in the first
/// iteration only and executed in every one.
///
/// CUDA and HIP runtime API host code (as clang
/// emits it for `kernel<<<grid, block, shmem, stream>>>(args)` once the device
/// stubs are inlined: `__cudaPushCallConfiguration`, argument slots on the
/// stack, `__cudaPopCallConfiguration`, `cudaLaunchKernel`; the same with
/// `hip` names).
///
/// A loop whose only effects are kernel launches on one stream, with
/// loop-invariant configurations and arguments, launches the same sequence of
/// kernels every iteration. The pass captures the first iteration's launches
/// into a CUDA graph and replays it once per iteration:
///
///   preheader: state = 0 (fresh); exec = null
///   header:    if (state == 0 && cudaStreamBeginCapture(s, relaxed) != 0)
///                state = 2 (capture refused: launch directly)
///   launches:  each runs only while state != 1 (graph ready)
///   latch:     if (state == 0) { state = 2;
///                if (cudaStreamEndCapture(s, &g) == 0) {
///                  ok = cudaGraphInstantiateWithFlags(&exec, g, 0) == 0;
///                  cudaGraphDestroy(g); state = ok ? 1 : 2 } }
///              if (state == 1) cudaGraphLaunch(exec, s)
///   exits:     if (state == 1) cudaGraphExecDestroy(exec)
///
/// (If ending the capture or instantiating fails, the kernels of the first
/// iteration were recorded but not run, and the later iterations launch
/// directly: the legality rules leave nothing in the loop that can break the
/// capture, so this takes a runtime fault.)
///
/// The graph is built once per execution of the loop (the arguments are
/// invariant within one execution, not across calls of the function).
/// Legality: nothing else in the loop may have an effect (a host
/// synchronization, a memory copy, any other call, a store outside the
/// launches' argument slots), every launch uses the same stream, which is not
/// the legacy default stream (null), and every value the launches read is
/// loop-invariant. Otherwise the loop is left alone with a missed remark.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusionAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

#include <string>

using namespace llvm;
using namespace llvm::PatternMatch;

#define DEBUG_TYPE "accel-async-fusion"

STATISTIC(NumGraphLoops, "Launch loops replayed from a graph or a command "
                         "list recorded once");

namespace {

//===----------------------------------------------------------------------===//
// Launch discovery
//===----------------------------------------------------------------------===//

enum class LaunchCall { None, Push, Pop, Launch };

/// The entry points of one runtime: CUDA's, or HIP's (the same API with
/// hip names).
struct Runtime {
  StringRef Push, Pop, Launch, BeginCapture, EndCapture, Instantiate,
      GraphDestroy, GraphLaunch, ExecDestroy;
};
const Runtime CUDA = {"__cudaPushCallConfiguration",
                      "__cudaPopCallConfiguration",
                      "cudaLaunchKernel",
                      "cudaStreamBeginCapture",
                      "cudaStreamEndCapture",
                      "cudaGraphInstantiateWithFlags",
                      "cudaGraphDestroy",
                      "cudaGraphLaunch",
                      "cudaGraphExecDestroy"};
const Runtime HIP = {"__hipPushCallConfiguration",
                     "__hipPopCallConfiguration",
                     "hipLaunchKernel",
                     "hipStreamBeginCapture",
                     "hipStreamEndCapture",
                     "hipGraphInstantiateWithFlags",
                     "hipGraphDestroy",
                     "hipGraphLaunch",
                     "hipGraphExecDestroy"};

LaunchCall classify(const CallBase &CB, const Runtime **RT = nullptr) {
  const Function *F = CB.getCalledFunction();
  if (!F)
    return LaunchCall::None;
  StringRef N = F->getName();
  for (const Runtime *R : {&CUDA, &HIP}) {
    LaunchCall K = N == R->Push     ? LaunchCall::Push
                   : N == R->Pop    ? LaunchCall::Pop
                   : N == R->Launch ? LaunchCall::Launch
                                    : LaunchCall::None;
    if (K != LaunchCall::None) {
      if (RT)
        *RT = R;
      return K;
    }
  }
  return LaunchCall::None;
}

/// The launches of a loop and the one stream they use.
struct LaunchLoop {
  SmallVector<CallInst *, 8> Calls; ///< Push, Pop and Launch calls.
  unsigned NumLaunches = 0;
  Value *Stream = nullptr;
  const Runtime *RT = nullptr;
};

/// The stack slots the launch calls \p Calls read: the objects their
/// pointer arguments point into, and the slots whose addresses the loop
/// stores into those (argument arrays of pointers to argument values).
SmallPtrSet<const Value *, 8> launchSlots(Loop &L, ArrayRef<CallInst *> Calls) {
  SmallPtrSet<const Value *, 8> Slots;
  for (CallInst *C : Calls)
    for (Value *Op : C->args())
      if (Op->getType()->isPointerTy())
        if (auto *A = dyn_cast<AllocaInst>(getUnderlyingObject(Op)))
          Slots.insert(A);
  for (bool Grew = true; Grew;) {
    Grew = false;
    for (BasicBlock *BB : L.blocks())
      for (Instruction &I : *BB)
        if (auto *SI = dyn_cast<StoreInst>(&I))
          if (Slots.count(getUnderlyingObject(SI->getPointerOperand())) &&
              SI->getValueOperand()->getType()->isPointerTy())
            if (auto *A = dyn_cast<AllocaInst>(
                    getUnderlyingObject(SI->getValueOperand())))
              Grew |= Slots.insert(A).second;
  }
  return Slots;
}

/// What a host call in a launch loop means for capture.
std::string describeCall(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  if (!F)
    return "an indirect call";
  StringRef N = F->getName();
  if (N.contains("Synchronize") || N.contains("Query"))
    return "host synchronization (@" + N.str() + ")";
  if (N.contains("Memcpy") || N.contains("Memset"))
    return "a memory operation (@" + N.str() + ")";
  return "a call to @" + N.str();
}

/// True when \p BB runs in every iteration of \p L that reaches the latch
/// (it dominates the loop's single latch).
bool runsEveryIteration(const Loop &L, const BasicBlock *BB,
                        const DominatorTree &DT) {
  const BasicBlock *Latch = L.getLoopLatch();
  return Latch && DT.dominates(BB, Latch);
}

/// True when a launch in \p BB is made in every iteration of \p L: \p BB
/// runs every iteration, or exactly when the launch configuration pushed
/// before it was accepted (clang's `<<<...>>>` calls the device stub under
/// `if (__cudaPushCallConfiguration(...) == 0)`), in a block that does.
bool launchesEveryIteration(const Loop &L, const BasicBlock *BB,
                            const DominatorTree &DT) {
  while (!runsEveryIteration(L, BB, DT)) {
    const BasicBlock *P = BB->getSinglePredecessor();
    if (!P || !L.contains(P))
      return false;
    auto *Br = dyn_cast<BranchInst>(P->getTerminator());
    auto *Cmp = Br && Br->isConditional()
                    ? dyn_cast<ICmpInst>(Br->getCondition())
                    : nullptr;
    auto *Zero = Cmp ? dyn_cast<ConstantInt>(Cmp->getOperand(1)) : nullptr;
    auto *Push = Cmp ? dyn_cast<CallInst>(Cmp->getOperand(0)) : nullptr;
    if (!Zero || !Zero->isZero() || !Cmp->isEquality() || !Push ||
        classify(*Push) != LaunchCall::Push)
      return false;
    // The edge taken when the configuration was accepted.
    unsigned Accepted = Cmp->getPredicate() == ICmpInst::ICMP_EQ ? 0 : 1;
    if (Br->getSuccessor(Accepted) != BB)
      return false;
    BB = P;
  }
  return true;
}

/// Collects the launches of \p L, or says why the loop cannot be captured.
std::string analyzeLoop(Loop &L, LaunchLoop &LL, const DominatorTree &DT) {
  SmallVector<StoreInst *, 16> Stores;
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB) {
      if (auto *CB = dyn_cast<CallInst>(&I)) {
        const Runtime *RT = nullptr;
        LaunchCall K = classify(*CB, &RT);
        if (K != LaunchCall::None) {
          if (LL.RT && LL.RT != RT)
            return "the loop mixes CUDA and HIP launches";
          LL.RT = RT;
          LL.Calls.push_back(CB);
          LL.NumLaunches += K == LaunchCall::Launch;
          continue;
        }
        if (isa<DbgInfoIntrinsic>(CB) || CB->isLifetimeStartOrEnd())
          continue;
        if (!CB->mayHaveSideEffects())
          continue;
        return "the loop makes " + describeCall(*CB);
      }
      if (isa<InvokeInst>(&I))
        return "the loop has an invoke";
      if (auto *SI = dyn_cast<StoreInst>(&I)) {
        // Argument slots: stack objects of this function.
        if (!isa<AllocaInst>(getUnderlyingObject(SI->getPointerOperand())))
          return "the loop stores to memory other than launch arguments";
        if (SI->isVolatile())
          return "the loop has a volatile store";
        Stores.push_back(SI);
        continue;
      }
      if (I.mayWriteToMemory() || I.isAtomic())
        return "the loop writes memory";
      if (auto *LI = dyn_cast<LoadInst>(&I)) {
        // Launch configuration read back from its slots is fine; other
        // memory may change under the loop.
        if (!isa<AllocaInst>(getUnderlyingObject(LI->getPointerOperand())))
          return "the loop reads memory (a launch argument may change)";
      }
    }
  if (!LL.NumLaunches)
    return "";
  // A replayed graph runs every captured launch in every iteration: a launch
  // the loop makes in some iterations only stays per iteration.
  for (CallInst *C : LL.Calls)
    if (!launchesEveryIteration(L, C->getParent(), DT))
      return "a launch is conditional within the iteration";
  // What the launches read is the same every iteration (other stack slots,
  // such as a loop counter kept in memory, may change).
  SmallPtrSet<const Value *, 8> Slots = launchSlots(L, LL.Calls);
  for (StoreInst *SI : Stores)
    if (Slots.count(getUnderlyingObject(SI->getPointerOperand())) &&
        !L.isLoopInvariant(SI->getValueOperand()))
      return "a launch argument changes from iteration to iteration";
  // One stream, loop-invariant configurations.
  for (CallInst *C : LL.Calls) {
    LaunchCall K = classify(*C);
    if (K == LaunchCall::Pop)
      continue;
    bool HasPush = any_of(
        LL.Calls, [](CallInst *X) { return classify(*X) == LaunchCall::Push; });
    if (K == LaunchCall::Launch && HasPush)
      continue; // Its configuration comes from the pushed one.
    Value *S = C->getArgOperand(C->arg_size() - 1);
    for (Value *Op : C->args())
      if (!L.isLoopInvariant(Op) && !isa<AllocaInst>(getUnderlyingObject(Op)))
        return "a launch configuration changes from iteration to iteration";
    if (LL.Stream && LL.Stream != S)
      return "the launches use more than one stream";
    LL.Stream = S;
  }
  if (!LL.Stream || isa<ConstantPointerNull>(LL.Stream))
    return "the launches use the legacy default stream, which cannot be "
           "captured";
  // A capture begun in the header must end in the latch: the loop may only
  // leave from its latch (a rotated loop).
  if (!L.getLoopLatch() || L.getExitingBlock() != L.getLoopLatch())
    return "the loop can be left before the end of an iteration, with the "
           "capture still open";
  if (!L.getLoopPredecessor() || !L.getLoopLatch())
    return "the loop has more than one entry or more than one latch";
  return "";
}

//===----------------------------------------------------------------------===//
// Expansion
//===----------------------------------------------------------------------===//

/// The loop's preheader, made if the loop is entered from a block with other
/// successors (the loop's single outside predecessor is checked).
BasicBlock *preheaderOf(Loop &L) {
  if (BasicBlock *Pre = L.getLoopPreheader())
    return Pre;
  return SplitEdge(L.getLoopPredecessor(), L.getHeader());
}

FunctionCallee runtimeFn(Module &M, StringRef Name, Type *Ret,
                         ArrayRef<Type *> Params) {
  return M.getOrInsertFunction(Name, FunctionType::get(Ret, Params, false));
}

/// Runs \p C only when \p Cond holds; its uses see 0 otherwise.
void guardCall(CallInst *C, Value *Cond) {
  Instruction *Then = SplitBlockAndInsertIfThen(Cond, C, false);
  BasicBlock *Before = Then->getParent()->getSinglePredecessor();
  accel::moveBefore(C, Then);
  if (C->getType()->isVoidTy() || C->use_empty())
    return;
  BasicBlock *Join = Then->getParent()->getSingleSuccessor();
  PHINode *P =
      PHINode::Create(C->getType(), 2, "", accel::firstNonPHIIt(*Join));
  C->replaceAllUsesWith(P);
  P->addIncoming(C, Then->getParent());
  P->addIncoming(Constant::getNullValue(C->getType()), Before);
}

void captureLoop(Loop &L, LaunchLoop &LL) {
  Function &F = *L.getHeader()->getParent();
  Module &M = *F.getParent();
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  Type *Ptr = PointerType::get(Ctx, 0);
  const Runtime &RT = *LL.RT;
  FunctionCallee Begin = runtimeFn(M, RT.BeginCapture, I32, {Ptr, I32});
  FunctionCallee End = runtimeFn(M, RT.EndCapture, I32, {Ptr, Ptr});
  FunctionCallee Inst = runtimeFn(M, RT.Instantiate, I32, {Ptr, Ptr, I64});
  FunctionCallee Destroy = runtimeFn(M, RT.GraphDestroy, I32, {Ptr});
  FunctionCallee Launch = runtimeFn(M, RT.GraphLaunch, I32, {Ptr, Ptr});
  FunctionCallee ExecDestroy = runtimeFn(M, RT.ExecDestroy, I32, {Ptr});

  BasicBlock &Entry = F.getEntryBlock();
  IRBuilder<> EB(&Entry, Entry.getFirstInsertionPt());
  AllocaInst *State = EB.CreateAlloca(I32, nullptr, "accel.graph.state");
  AllocaInst *Exec = EB.CreateAlloca(Ptr, nullptr, "accel.graph.exec");
  AllocaInst *Graph = EB.CreateAlloca(Ptr, nullptr, "accel.graph");

  BasicBlock *Pre = preheaderOf(L);
  BasicBlock *Header = L.getHeader();
  IRBuilder<> B(Pre->getTerminator());
  B.CreateStore(B.getInt32(0), State);
  B.CreateStore(ConstantPointerNull::get(cast<PointerType>(Ptr)), Exec);

  // Exit edges first (SplitEdge needs the loop's blocks as they are).
  SmallVector<std::pair<BasicBlock *, BasicBlock *>, 4> ExitEdges;
  L.getExitEdges(ExitEdges);
  for (auto [From, To] : ExitEdges) {
    BasicBlock *E = SplitEdge(From, To);
    B.SetInsertPoint(E->getTerminator());
    Value *Ready = B.CreateICmpEQ(B.CreateLoad(I32, State), B.getInt32(1));
    Instruction *T =
        SplitBlockAndInsertIfThen(Ready, E->getTerminator(), false);
    B.SetInsertPoint(T);
    B.CreateCall(ExecDestroy, {B.CreateLoad(Ptr, Exec)});
  }

  // Launch calls run while no graph is ready.
  for (CallInst *C : LL.Calls) {
    B.SetInsertPoint(C);
    guardCall(C, B.CreateICmpNE(B.CreateLoad(I32, State), B.getInt32(1)));
  }

  // Latch: finish the capture after the first iteration, then replay. The
  // guards above may have split the latch: take the block of the backedge.
  BasicBlock *Latch = nullptr;
  for (BasicBlock *P : predecessors(Header))
    if (P != Pre)
      Latch = P;
  B.SetInsertPoint(Latch->getTerminator());
  Value *Fresh = B.CreateICmpEQ(B.CreateLoad(I32, State), B.getInt32(0));
  Instruction *T =
      SplitBlockAndInsertIfThen(Fresh, Latch->getTerminator(), false);
  B.SetInsertPoint(T);
  BasicBlock *Tail = T->getParent()->getSingleSuccessor();
  // state = 1 when the graph is ready; 2 (launch directly from now on) when
  // ending the capture or instantiating failed.
  B.CreateStore(B.getInt32(2), State);
  Value *Ended =
      B.CreateICmpEQ(B.CreateCall(End, {LL.Stream, Graph}), B.getInt32(0));
  Instruction *EndedT = SplitBlockAndInsertIfThen(Ended, T, false);
  B.SetInsertPoint(EndedT);
  Value *G = B.CreateLoad(Ptr, Graph);
  Value *Made = B.CreateCall(Inst, {Exec, G, B.getInt64(0)});
  B.CreateCall(Destroy, {G});
  B.CreateStore(B.CreateSelect(B.CreateICmpEQ(Made, B.getInt32(0)),
                               B.getInt32(1), B.getInt32(2)),
                State);
  B.SetInsertPoint(Tail->getTerminator());
  Value *Ready = B.CreateICmpEQ(B.CreateLoad(I32, State), B.getInt32(1));
  Instruction *R =
      SplitBlockAndInsertIfThen(Ready, Tail->getTerminator(), false);
  B.SetInsertPoint(R);
  B.CreateCall(Launch, {B.CreateLoad(Ptr, Exec), LL.Stream});

  // Header: begin the capture in the first iteration (mode 2: relaxed).
  B.SetInsertPoint(Header, accel::firstNonPHIIt(*Header));
  Value *First = B.CreateICmpEQ(B.CreateLoad(I32, State), B.getInt32(0));
  Instruction *H =
      SplitBlockAndInsertIfThen(First, &*B.GetInsertPoint(), false);
  B.SetInsertPoint(H);
  Value *RC = B.CreateCall(Begin, {LL.Stream, B.getInt32(2)});
  B.CreateStore(B.CreateSelect(B.CreateICmpEQ(RC, B.getInt32(0)), B.getInt32(0),
                               B.getInt32(2)),
                State);
}

//===----------------------------------------------------------------------===//
// Level Zero: record a command list once, execute it every iteration
//===----------------------------------------------------------------------===//

/// Level Zero calls that build a command list (recorded once) and that run
/// it (kept every iteration).
bool isZeRecordCall(StringRef N) {
  return N == "zeCommandListReset" || N == "zeKernelSetArgumentValue" ||
         N == "zeKernelSetGroupSize" ||
         N == "zeCommandListAppendLaunchKernel" ||
         N == "zeCommandListAppendBarrier" || N == "zeCommandListClose";
}
bool isZeRunCall(StringRef N) {
  return N == "zeCommandQueueExecuteCommandLists" ||
         N == "zeCommandQueueSynchronize";
}

struct ZeLoop {
  SmallVector<CallInst *, 8> Record;
  unsigned NumLaunches = 0;
};

StringRef calleeName(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  return F ? F->getName() : StringRef();
}

/// Collects the command-list building calls of \p L, or says why the list
/// cannot be recorded once: other effects, changing arguments, no reset and
/// close of one list around the appends in one block, no host wait after the
/// execution (the next iteration would submit a list still running).
std::string analyzeZeLoop(Loop &L, ZeLoop &ZL, const DominatorTree &DT) {
  CallInst *Exec = nullptr, *Sync = nullptr;
  // Stack slots the loop stores to; a load of any other slot reads the same
  // value every iteration (the Level Zero calls only read through their
  // pointer arguments).
  SmallVector<StoreInst *, 16> Stores;
  SmallPtrSet<const Value *, 8> Stored;
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB)
      if (auto *SI = dyn_cast<StoreInst>(&I))
        Stored.insert(getUnderlyingObject(SI->getPointerOperand()));
  // The value \p V stands for across iterations, or null if it changes.
  auto Key = [&](Value *V) -> Value * {
    if (L.isLoopInvariant(V))
      return V;
    if (auto *LI = dyn_cast<LoadInst>(V)) {
      Value *Obj = getUnderlyingObject(LI->getPointerOperand());
      if (isa<AllocaInst>(Obj) && !Stored.count(Obj) && !LI->isVolatile() &&
          L.isLoopInvariant(LI->getPointerOperand()))
        return Obj;
    }
    if (isa<AllocaInst>(getUnderlyingObject(V)))
      return V;
    return nullptr;
  };
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB) {
      if (auto *CB = dyn_cast<CallInst>(&I)) {
        StringRef N = calleeName(*CB);
        if (isZeRecordCall(N)) {
          // A barrier between the launches orders them within the list; one
          // that signals or waits for events would need the events reset
          // between executions.
          if (N == "zeCommandListAppendBarrier" &&
              (CB->arg_size() != 4 ||
               !isa<ConstantPointerNull>(CB->getArgOperand(1)) ||
               !match(CB->getArgOperand(2), m_Zero())))
            return "a barrier of the command list signals or waits for events";
          for (Value *Op : CB->args())
            if (!Key(Op))
              return "an argument of @" + N.str() +
                     " changes from iteration to iteration";
          ZL.Record.push_back(CB);
          ZL.NumLaunches += N == "zeCommandListAppendLaunchKernel";
          continue;
        }
        if (isZeRunCall(N)) {
          (N == "zeCommandQueueSynchronize" ? Sync : Exec) = CB;
          continue;
        }
        if (isa<DbgInfoIntrinsic>(CB) || CB->isLifetimeStartOrEnd() ||
            !CB->mayHaveSideEffects())
          continue;
        return "the loop makes " + describeCall(*CB);
      }
      if (auto *SI = dyn_cast<StoreInst>(&I)) {
        if (!isa<AllocaInst>(getUnderlyingObject(SI->getPointerOperand())) ||
            SI->isVolatile())
          return "the loop stores to memory other than launch arguments";
        Stores.push_back(SI);
        continue;
      }
      if (I.mayWriteToMemory() || I.isAtomic() || isa<InvokeInst>(&I))
        return "the loop writes memory";
      if (auto *LI = dyn_cast<LoadInst>(&I))
        if (!isa<AllocaInst>(getUnderlyingObject(LI->getPointerOperand())))
          return "the loop reads memory (a launch argument may change)";
    }
  SmallPtrSet<const Value *, 8> Slots = launchSlots(L, ZL.Record);
  for (StoreInst *SI : Stores)
    if (Slots.count(getUnderlyingObject(SI->getPointerOperand())) &&
        !Key(SI->getValueOperand()))
      return "a launch argument changes from iteration to iteration";
  auto Named = [&](size_t I, StringRef N) {
    return calleeName(*ZL.Record[I]) == N;
  };
  if (ZL.Record.empty() || !Named(0, "zeCommandListReset") ||
      !Named(ZL.Record.size() - 1, "zeCommandListClose"))
    return "the loop does not reset, append to and close one command list";
  BasicBlock *BB = ZL.Record.front()->getParent();
  // The list is recorded in the first iteration and executed in every later
  // one: it must be built in every iteration.
  if (!runsEveryIteration(L, BB, DT))
    return "the command list is built in some iterations only";
  Value *List = Key(ZL.Record.front()->getArgOperand(0));
  for (CallInst *C : ZL.Record) {
    if (C->getParent() != BB)
      return "the command list is built across several blocks";
    StringRef N = calleeName(*C);
    if (N.starts_with("zeCommandList") && Key(C->getArgOperand(0)) != List)
      return "the loop builds more than one command list";
  }
  if (!Exec || !Sync || Exec->getParent() != BB || Sync->getParent() != BB ||
      !ZL.Record.back()->comesBefore(Exec) || !Exec->comesBefore(Sync))
    return "the list is not executed and waited for after it is closed";
  if (!L.getLoopPredecessor() || !L.getLoopLatch())
    return "the loop has more than one entry or more than one latch";
  return "";
}

void recordZeLoopOnce(Loop &L, ZeLoop &ZL);

/// Level Zero loops: decides, reports, transforms.
bool recordZeLoop(Loop &L, const DominatorTree &DT,
                  OptimizationRemarkEmitter &ORE) {
  ZeLoop ZL;
  std::string Why = analyzeZeLoop(L, ZL, DT);
  if (!Why.empty()) {
    ORE.emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "CommandListKept",
                                      L.getStartLoc(), L.getHeader())
             << "the command list is rebuilt every iteration: " << Why;
    });
    return false;
  }
  ORE.emit([&] {
    return OptimizationRemark(DEBUG_TYPE, "CommandListOnce", L.getStartLoc(),
                              L.getHeader())
           << "recorded the command list of "
           << ore::NV("Launches", ZL.NumLaunches)
           << " kernel launch(es) once; it is executed every iteration";
  });
  recordZeLoopOnce(L, ZL);
  ++NumGraphLoops;
  return true;
}

void recordZeLoopOnce(Loop &L, ZeLoop &ZL) {
  Function &F = *L.getHeader()->getParent();
  BasicBlock &Entry = F.getEntryBlock();
  IRBuilder<> EB(&Entry, Entry.getFirstInsertionPt());
  Type *I8 = EB.getInt8Ty();
  AllocaInst *Recorded = EB.CreateAlloca(I8, nullptr, "accel.list.recorded");
  IRBuilder<> B(preheaderOf(L)->getTerminator());
  B.CreateStore(B.getInt8(0), Recorded);
  BasicBlock *Latch = L.getLoopLatch();
  B.SetInsertPoint(Latch->getTerminator());
  B.CreateStore(B.getInt8(1), Recorded);
  for (CallInst *C : ZL.Record) {
    B.SetInsertPoint(C);
    guardCall(C, B.CreateICmpEQ(B.CreateLoad(I8, Recorded), B.getInt8(0)));
  }
}

} // namespace

bool asyncfusion::captureLaunchLoops(Function &F, LoopInfo &LI,
                                     DominatorTree &DT,
                                     OptimizationRemarkEmitter &ORE) {
  bool Changed = false;
  for (Loop *L : LI.getLoopsInPreorder()) {
    if (!L->isInnermost())
      continue;
    bool Launches = any_of(L->blocks(), [](BasicBlock *BB) {
      return any_of(*BB, [](Instruction &I) {
        auto *CB = dyn_cast<CallBase>(&I);
        return CB && classify(*CB) == LaunchCall::Launch;
      });
    });
    if (!Launches) {
      // Before inlining, clang's launches are calls of device stubs.
      const Function *Stub = nullptr;
      for (BasicBlock *BB : L->blocks())
        for (Instruction &I : *BB)
          if (auto *CB = dyn_cast<CallBase>(&I))
            if (const Function *Callee = CB->getCalledFunction();
                Callee && !Callee->isDeclaration() &&
                any_of(instructions(*Callee), [](const Instruction &J) {
                  auto *C = dyn_cast<CallBase>(&J);
                  return C && classify(*C) == LaunchCall::Launch;
                }))
              Stub = Callee;
      if (Stub)
        ORE.emit([&] {
          return OptimizationRemarkMissed(DEBUG_TYPE, "LaunchStub",
                                          L->getStartLoc(), L->getHeader())
                 << "kernel launches go through the device stub @"
                 << Stub->getName()
                 << "; they are recognized once it is inlined (run "
                    "accel-async-fusion on optimized IR)";
        });
      if (any_of(L->blocks(), [](BasicBlock *BB) {
            return any_of(*BB, [](Instruction &I) {
              auto *CB = dyn_cast<CallBase>(&I);
              return CB && calleeName(*CB) == "zeCommandListAppendLaunchKernel";
            });
          }))
        Changed |= recordZeLoop(*L, DT, ORE);
      continue;
    }
    LaunchLoop LL;
    std::string Why = analyzeLoop(*L, LL, DT);
    if (!Why.empty()) {
      LLVM_DEBUG(dbgs() << DEBUG_TYPE ": launch loop in " << F.getName()
                        << " declined: " << Why << "\n");
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "LaunchLoopKept",
                                        L->getStartLoc(), L->getHeader())
               << "kernel launches stay per iteration: " << Why;
      });
      continue;
    }
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "LaunchGraph", L->getStartLoc(),
                                L->getHeader())
             << "captured " << ore::NV("Launches", LL.NumLaunches)
             << " kernel launch(es) per iteration into a "
             << (LL.RT == &HIP ? "HIP" : "CUDA")
             << " graph replayed once per iteration";
    });
    captureLoop(*L, LL);
    ++NumGraphLoops;
    Changed = true;
  }
  return Changed;
}
