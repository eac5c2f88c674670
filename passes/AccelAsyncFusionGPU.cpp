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
/// CUDA and HIP host code: the runtime API as clang emits it for
/// `kernel<<<grid, block, shmem, stream>>>(args)` once the device stubs are
/// inlined (`__cudaPushCallConfiguration`, argument slots on the stack,
/// `__cudaPopCallConfiguration`, `cudaLaunchKernel`; the same with `hip`
/// names), and the driver and module APIs (`cuLaunchKernel`,
/// `hipModuleLaunchKernel`, with their `kernelParams` on the stack).
///
/// A loop whose only effects are kernel launches on one stream, with
/// loop-invariant configurations and arguments, launches the same sequence of
/// kernels every iteration. The pass captures the first iteration's launches
/// into a CUDA graph and replays it once per iteration:
///
///   preheader: state = 0 (fresh); exec = null
///              [cache: if (try-lock(cache) && cache.exec && cache.key == key)
///                        state = 1 (graph ready), exec = cache.exec
///                      else if (locked && cache.exec) destroy it]
///   header:    if (state == 0 && cudaStreamBeginCapture(s, relaxed) != 0)
///                state = 2 (capture refused: launch directly)
///   launches:  each runs only while state != 1 (graph ready)
///   latch:     if (state == 0) { state = 2;
///                if (cudaStreamEndCapture(s, &g) == 0) {
///                  ok = cudaGraphInstantiateWithFlags(&exec, g, 0) == 0;
///                  cudaGraphDestroy(g); state = ok ? 1 : 2 } }
///              if (state == 1) cudaGraphLaunch(exec, s)
///   exits:     [cache locked: if (state == 1) cache = {exec, key}; unlock]
///              otherwise: if (state == 1) cudaGraphExecDestroy(exec)
///
/// (If ending the capture or instantiating fails, the kernels of the first
/// iteration were recorded but not run, and the later iterations launch
/// directly: the legality rules leave nothing in the loop that can break the
/// capture, so this takes a runtime fault.)
///
/// The executable graph is cached per call site: the next execution of the
/// loop (the next call of the function) replays it without capturing again
/// when every launch parameter that is not a constant (the stream, grid and
/// block sizes, the values stored into the argument slots) equals the one it
/// was captured with; a different key destroys it and captures anew. The
/// cache is one internal global per loop, taken with a try-lock for the
/// whole execution of the loop: a thread that finds it taken captures a
/// private graph (as without the cache), so threads never share or race on
/// an entry. It applies when the key determines the launches: the argument
/// slots are written only inside the loop and the launches read no other
/// memory (`graph-cache`; otherwise, or with `no-graph-cache`, the graph is
/// built once per execution of the loop, with a remark saying why). A cached
/// graph belongs to the context it was captured in: a program that resets
/// the device between executions of the loop needs `no-graph-cache`.
///
/// Legality: nothing else in the loop may have an effect (a host
/// synchronization, a memory copy, any other call, a store outside the
/// launches' argument slots), every launch uses the same stream, which is not
/// the legacy default stream (null), and every value the launches read is
/// loop-invariant. Otherwise the loop is left alone with a missed remark.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusionAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
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

#include <optional>
#include <string>

using namespace llvm;
using namespace llvm::PatternMatch;

#define DEBUG_TYPE "accel-async-fusion"

STATISTIC(NumGraphLoops, "Launch loops replayed from a graph or a command "
                         "list recorded once");
STATISTIC(NumGraphLoopsCached, "Launch loops whose graph is cached for the "
                               "next execution of the loop");

namespace {

//===----------------------------------------------------------------------===//
// Launch discovery
//===----------------------------------------------------------------------===//

enum class LaunchCall { None, Push, Pop, Launch };

/// The graph entry points of a runtime.
struct GraphAPI {
  StringRef Name; ///< "CUDA" or "HIP", for remarks.
  StringRef BeginCapture, EndCapture, Instantiate, GraphDestroy, GraphLaunch,
      ExecDestroy;
};
const GraphAPI CUDAGraphs = {"CUDA",
                             "cudaStreamBeginCapture",
                             "cudaStreamEndCapture",
                             "cudaGraphInstantiateWithFlags",
                             "cudaGraphDestroy",
                             "cudaGraphLaunch",
                             "cudaGraphExecDestroy"};
// cuda.h maps cuStreamBeginCapture to its _v2 entry point.
const GraphAPI CUDADriverGraphs = {"CUDA",
                                   "cuStreamBeginCapture_v2",
                                   "cuStreamEndCapture",
                                   "cuGraphInstantiateWithFlags",
                                   "cuGraphDestroy",
                                   "cuGraphLaunch",
                                   "cuGraphExecDestroy"};
const GraphAPI HIPGraphs = {"HIP",
                            "hipStreamBeginCapture",
                            "hipStreamEndCapture",
                            "hipGraphInstantiateWithFlags",
                            "hipGraphDestroy",
                            "hipGraphLaunch",
                            "hipGraphExecDestroy"};

/// The launch entry point of one API and the graph entry points of its
/// runtime: CUDA's runtime and driver APIs, HIP's runtime and module APIs.
struct Runtime {
  /// Launch configuration pushed and popped around the launch (runtime APIs;
  /// empty for the driver and module APIs, whose launch takes it directly).
  StringRef Push, Pop;
  StringRef Launch;
  /// The launch's stream operand, counted from its last operand (1: last).
  unsigned StreamFromEnd;
  const GraphAPI &Graphs;
};
const Runtime CUDA = {"__cudaPushCallConfiguration",
                      "__cudaPopCallConfiguration", "cudaLaunchKernel", 1,
                      CUDAGraphs};
// cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra).
const Runtime CUDADriver = {"", "", "cuLaunchKernel", 3, CUDADriverGraphs};
const Runtime HIP = {"__hipPushCallConfiguration", "__hipPopCallConfiguration",
                     "hipLaunchKernel", 1, HIPGraphs};
// hipModuleLaunchKernel has cuLaunchKernel's operands.
const Runtime HIPModule = {"", "", "hipModuleLaunchKernel", 3, HIPGraphs};
const Runtime *const Runtimes[] = {&CUDA, &CUDADriver, &HIP, &HIPModule};

LaunchCall classify(const CallBase &CB, const Runtime **RT = nullptr) {
  const Function *F = CB.getCalledFunction();
  if (!F || !F->hasName())
    return LaunchCall::None;
  StringRef N = F->getName();
  for (const Runtime *R : Runtimes) {
    LaunchCall K = N == R->Launch                     ? LaunchCall::Launch
                   : !R->Push.empty() && N == R->Push ? LaunchCall::Push
                   : !R->Pop.empty() && N == R->Pop   ? LaunchCall::Pop
                                                      : LaunchCall::None;
    if (K != LaunchCall::None) {
      if (RT)
        *RT = R;
      return K;
    }
  }
  return LaunchCall::None;
}

/// The stream operand of a push or launch call \p C of runtime \p RT.
Value *streamOf(const CallInst &C, LaunchCall K, const Runtime &RT) {
  unsigned FromEnd = K == LaunchCall::Launch ? RT.StreamFromEnd : 1;
  return C.getArgOperand(C.arg_size() - FromEnd);
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
SmallPtrSet<Value *, 8> launchSlots(Loop &L, ArrayRef<CallInst *> Calls) {
  SmallPtrSet<Value *, 8> Slots;
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

/// True when \p V is an address on this function's stack (an argument slot
/// or an array of pointers to argument slots).
bool isStackAddress(const Value *V) {
  return V->getType()->isPointerTy() && isa<AllocaInst>(getUnderlyingObject(V));
}

/// Which values of a launch loop are the same in every iteration: values
/// defined outside the loop, loads of stack slots the loop does not write
/// (clang reloads a parameter whose address a launch takes, `&n`, after each
/// launch), and side-effect-free instructions of such values.
class IterationValues {
  const Loop &L;
  SmallPtrSet<const Value *, 8> Written; ///< Stack slots the loop writes.
  DenseMap<const Value *, bool> Memo;

public:
  IterationValues(const Loop &L, ArrayRef<CallInst *> Calls) : L(L) {
    for (BasicBlock *BB : L.blocks())
      for (Instruction &I : *BB)
        if (auto *SI = dyn_cast<StoreInst>(&I))
          Written.insert(getUnderlyingObject(SI->getPointerOperand()));
    for (CallInst *C : Calls)
      if (classify(*C) == LaunchCall::Pop)
        for (Value *Op : C->args())
          Written.insert(getUnderlyingObject(Op));
  }

  /// The stack slot \p V loads, when it is a load of one the loop does not
  /// write.
  AllocaInst *unwrittenSlotLoad(Value *V) const {
    auto *LI = dyn_cast<LoadInst>(V);
    if (!LI || !LI->isSimple() || !L.isLoopInvariant(LI->getPointerOperand()))
      return nullptr;
    auto *A =
        dyn_cast<AllocaInst>(getUnderlyingObject(LI->getPointerOperand()));
    return A && !Written.count(A) ? A : nullptr;
  }

  bool same(Value *V) {
    if (L.isLoopInvariant(V))
      return true;
    if (auto It = Memo.find(V); It != Memo.end())
      return It->second;
    bool Same = false;
    if (unwrittenSlotLoad(V))
      Same = true;
    else if (auto *I = dyn_cast<Instruction>(V); I && !isa<PHINode>(I) &&
                                                 !I->mayReadOrWriteMemory() &&
                                                 !I->mayHaveSideEffects())
      Same = all_of(I->operands(), [&](Use &U) { return same(U.get()); });
    return Memo[V] = Same;
  }

  /// Calls \p Leaf for each value outside the loop and \p Slot for each
  /// unwritten slot a value the same every iteration, \p V, is made of.
  void roots(Value *V, function_ref<void(Value *)> Leaf,
             function_ref<void(AllocaInst *)> Slot) const {
    if (L.isLoopInvariant(V))
      return Leaf(V);
    if (AllocaInst *A = unwrittenSlotLoad(V))
      return Slot(A);
    for (Value *Op : cast<Instruction>(V)->operands())
      roots(Op, Leaf, Slot);
  }
};

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

/// True for the legacy default stream: null, or the `cudaStreamLegacy` /
/// `CU_STREAM_LEGACY` handle 0x1 (the per-thread stream, 0x2, can be
/// captured).
bool isLegacyDefaultStream(const Value *S) {
  if (!S || isa<ConstantPointerNull>(S))
    return true;
  if (const auto *CE = dyn_cast<ConstantExpr>(S))
    if (CE->getOpcode() == Instruction::IntToPtr)
      if (const auto *CI = dyn_cast<ConstantInt>(CE->getOperand(0)))
        return CI->isOne();
  return false;
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
            return ("the loop mixes @" + LL.RT->Launch + " and @" + RT->Launch +
                    " launches")
                .str();
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
  SmallPtrSet<Value *, 8> Slots = launchSlots(L, LL.Calls);
  IterationValues Iter(L, LL.Calls);
  for (StoreInst *SI : Stores)
    if (Slots.count(getUnderlyingObject(SI->getPointerOperand())) &&
        !Iter.same(SI->getValueOperand()))
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
    Value *S = streamOf(*C, K, *LL.RT);
    for (Value *Op : C->args())
      if (!Iter.same(Op) && !isStackAddress(Op))
        return "a launch configuration changes from iteration to iteration";
    // The capture begins and ends on the stream outside the launches.
    if (!L.isLoopInvariant(S))
      return "the stream is read inside the loop";
    if (LL.Stream && LL.Stream != S)
      return "the launches use more than one stream";
    LL.Stream = S;
  }
  if (isLegacyDefaultStream(LL.Stream))
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
// Cache key
//===----------------------------------------------------------------------===//

/// True for the key types the cache compares bit for bit.
bool isComparableKey(Type *T) {
  if (auto *VT = dyn_cast<FixedVectorType>(T))
    T = VT->getElementType();
  return T->isIntegerTy() || T->isPointerTy() || T->isFloatingPointTy();
}

/// Adds the values stored into the argument slot \p Slot before \p L
/// (clang spills a parameter whose address the launch takes, `&n`, at the
/// function's entry) to the key through \p Add, and the stack slots its
/// address is stored into through \p Reach. Returns why the slot's content
/// at the loop's entry is not known from such stores, or "": every use
/// outside the loop is an address computation, a lifetime marker, a load of
/// a non-pointer value, a store of its address into a stack slot, or a plain
/// store into it that executes before each entry of the loop.
std::string keysStoredBefore(const Loop &L, AllocaInst *Slot,
                             const DominatorTree &DT,
                             function_ref<std::string(Value *)> Add,
                             function_ref<void(AllocaInst *)> Reach) {
  SmallVector<Value *, 8> Work = {Slot};
  SmallPtrSet<Value *, 8> Seen;
  while (!Work.empty()) {
    Value *V = Work.pop_back_val();
    if (!Seen.insert(V).second)
      continue;
    for (Use &U : V->uses()) {
      auto *I = dyn_cast<Instruction>(U.getUser());
      if (!I || L.contains(I))
        continue;
      if (isa<GetElementPtrInst>(I) || isa<CastInst>(I)) {
        Work.push_back(I);
        continue;
      }
      if (I->isLifetimeStartOrEnd() || isa<DbgInfoIntrinsic>(I))
        continue;
      if (isa<LoadInst>(I)) {
        // A pointer read back could be written through unseen.
        if (I->getType()->isPtrOrPtrVectorTy())
          return "a pointer to a launch argument is read outside the loop";
        continue;
      }
      auto *SI = dyn_cast<StoreInst>(I);
      if (!SI || !SI->isSimple())
        return "a launch argument slot is used outside the loop";
      if (U.getOperandNo() != SI->getPointerOperandIndex()) {
        // Its address, stored into an array of arguments.
        auto *To =
            dyn_cast<AllocaInst>(getUnderlyingObject(SI->getPointerOperand()));
        if (!To)
          return "the address of a launch argument escapes";
        Reach(To);
        continue;
      }
      if (!DT.dominates(SI->getParent(), L.getHeader()))
        return "a launch argument slot is written on some paths to the "
               "loop only";
      if (std::string Why = Add(SI->getValueOperand()); !Why.empty())
        return Why;
    }
  }
  return "";
}

/// The values that decide what the launches of \p L capture, beside
/// constants: the operands of the launch calls that are not stack addresses
/// (the stream, the driver API's function handle, grid and block sizes) and
/// the values stored into the argument slots, in the loop or before it.
/// Returns why the graph cannot be cached across executions of the loop, or
/// "".
std::string cacheKeys(Loop &L, const LaunchLoop &LL, const DominatorTree &DT,
                      SmallSetVector<Value *, 8> &Keys) {
  auto Add = [&](Value *V) -> std::string {
    if (isa<Constant>(V) || isStackAddress(V))
      return "";
    if (!isComparableKey(V->getType())) {
      std::string T;
      raw_string_ostream OS(T);
      V->getType()->print(OS);
      return "a launch parameter has type " + T +
             ", which the cache does not compare";
    }
    Keys.insert(V);
    return "";
  };
  IterationValues Iter(L, LL.Calls);
  SmallSetVector<AllocaInst *, 8> Slots;
  for (Value *S : launchSlots(L, LL.Calls))
    Slots.insert(cast<AllocaInst>(S));
  std::string Why;
  // Values made in the loop of what the loop does not change: their roots.
  auto AddRoots = [&](Value *V) {
    Iter.roots(
        V,
        [&](Value *Leaf) {
          if (Why.empty())
            Why = Add(Leaf);
        },
        [&](AllocaInst *A) { Slots.insert(A); });
  };
  for (CallInst *C : LL.Calls) {
    LaunchCall K = classify(*C);
    for (Use &U : C->args()) {
      Value *Op = U.get();
      if (!L.isLoopInvariant(Op)) {
        // Values loaded from the popped configuration's slots are not the
        // same every iteration: the pushed configuration is the key.
        if (Iter.same(Op))
          AddRoots(Op);
        continue;
      }
      bool Handle = Op == streamOf(*C, K, *LL.RT) || U.getOperandNo() == 0;
      if (Op->getType()->isPointerTy() && !Handle && !isa<Constant>(Op) &&
          !isStackAddress(Op))
        return "the launches read their arguments from memory other than "
               "this function's stack";
      AddRoots(Op);
    }
  }
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB)
      if (auto *SI = dyn_cast<StoreInst>(&I))
        if (Slots.count(dyn_cast<AllocaInst>(
                getUnderlyingObject(SI->getPointerOperand()))))
          AddRoots(SI->getValueOperand());
  if (!Why.empty())
    return Why;
  // Slots read by the launches or by the loop: what was stored into them
  // before the loop; a slot whose address was stored is read too.
  auto Reach = [&](AllocaInst *A) { Slots.insert(A); };
  auto AddBefore = [&](Value *V) -> std::string {
    if (!isStackAddress(V))
      return Add(V);
    Reach(cast<AllocaInst>(getUnderlyingObject(V)));
    return "";
  };
  for (size_t I = 0; I < Slots.size(); ++I)
    if (std::string W = keysStoredBefore(L, Slots[I], DT, AddBefore, Reach);
        !W.empty())
      return W;
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

/// The per-call-site cache of a loop's executable graph: an internal global
/// { i32 lock, ptr exec, key... }, zero-initialized (unlocked, empty).
struct GraphCache {
  GlobalVariable *GV;
  StructType *Ty;
  ArrayRef<Value *> Keys;

  Value *field(IRBuilder<> &B, unsigned I) const {
    return B.CreateStructGEP(Ty, GV, I);
  }
};

GraphCache makeGraphCache(Module &M, ArrayRef<Value *> Keys) {
  LLVMContext &Ctx = M.getContext();
  SmallVector<Type *, 8> Fields = {Type::getInt32Ty(Ctx),
                                   PointerType::get(Ctx, 0)};
  for (Value *K : Keys)
    Fields.push_back(K->getType());
  StructType *Ty = StructType::get(Ctx, Fields);
  auto *GV = new GlobalVariable(
      M, Ty, /*isConstant=*/false, GlobalValue::InternalLinkage,
      Constant::getNullValue(Ty), "accel.graph.cache");
  return {GV, Ty, Keys};
}

/// \p A == \p B, bit for bit (floating-point keys as integers).
Value *sameBits(IRBuilder<> &B, Value *A, Value *Bv) {
  Type *T = A->getType();
  if (T->isPtrOrPtrVectorTy() || T->isIntOrIntVectorTy()) {
    Value *Eq = B.CreateICmpEQ(A, Bv);
    return T->isVectorTy() ? B.CreateAndReduce(Eq) : Eq;
  }
  Type *I = B.getIntNTy(T->getPrimitiveSizeInBits().getFixedValue());
  return B.CreateICmpEQ(B.CreateBitCast(A, I), B.CreateBitCast(Bv, I));
}

/// In the preheader: takes the cache if no other thread holds it; a cached
/// graph captured with the same key is ready (state 1), one with another
/// key is destroyed. Returns whether this execution holds the cache.
Value *lookUpGraph(IRBuilder<> &B, const GraphCache &C, AllocaInst *State,
                   AllocaInst *Exec, FunctionCallee ExecDestroy) {
  Type *Ptr = B.getPtrTy();
  Value *Own = B.CreateExtractValue(
      B.CreateAtomicCmpXchg(C.field(B, 0), B.getInt32(0), B.getInt32(1),
                            MaybeAlign(4), AtomicOrdering::Acquire,
                            AtomicOrdering::Monotonic),
      1, "accel.graph.own");
  Instruction *T = SplitBlockAndInsertIfThen(Own, &*B.GetInsertPoint(), false);
  B.SetInsertPoint(T);
  Value *Cached = B.CreateLoad(Ptr, C.field(B, 1), "accel.graph.cached");
  Value *Has = B.CreateIsNotNull(Cached);
  Value *Hit = Has;
  for (auto [I, K] : enumerate(C.Keys))
    Hit = B.CreateAnd(
        Hit, sameBits(B, K, B.CreateLoad(K->getType(), C.field(B, I + 2))));
  Instruction *HitT = nullptr, *MissT = nullptr;
  SplitBlockAndInsertIfThenElse(Hit, T, &HitT, &MissT);
  B.SetInsertPoint(HitT);
  B.CreateStore(B.getInt32(1), State);
  B.CreateStore(Cached, Exec);
  B.SetInsertPoint(MissT);
  Instruction *Evict = SplitBlockAndInsertIfThen(Has, MissT, false);
  B.SetInsertPoint(Evict);
  B.CreateCall(ExecDestroy, {Cached});
  B.CreateStore(ConstantPointerNull::get(cast<PointerType>(Ptr)),
                C.field(B, 1));
  return Own;
}

/// At an exit: a ready graph goes into the cache this execution holds (which
/// is then released) or, without it, is destroyed.
void keepOrDestroyGraph(IRBuilder<> &B, const GraphCache *C, Value *Own,
                        AllocaInst *State, AllocaInst *Exec,
                        FunctionCallee ExecDestroy) {
  Type *Ptr = B.getPtrTy();
  Value *Ready =
      B.CreateICmpEQ(B.CreateLoad(B.getInt32Ty(), State), B.getInt32(1));
  if (!C) {
    B.SetInsertPoint(
        SplitBlockAndInsertIfThen(Ready, &*B.GetInsertPoint(), false));
    B.CreateCall(ExecDestroy, {B.CreateLoad(Ptr, Exec)});
    return;
  }
  Instruction *OwnT = nullptr, *OtherT = nullptr;
  SplitBlockAndInsertIfThenElse(Own, &*B.GetInsertPoint(), &OwnT, &OtherT);
  B.SetInsertPoint(SplitBlockAndInsertIfThen(Ready, OwnT, false));
  B.CreateStore(B.CreateLoad(Ptr, Exec), C->field(B, 1));
  for (auto [I, K] : enumerate(C->Keys))
    B.CreateStore(K, C->field(B, I + 2));
  B.SetInsertPoint(OwnT);
  B.CreateAlignedStore(B.getInt32(0), C->field(B, 0), MaybeAlign(4))
      ->setAtomic(AtomicOrdering::Release);
  B.SetInsertPoint(SplitBlockAndInsertIfThen(Ready, OtherT, false));
  B.CreateCall(ExecDestroy, {B.CreateLoad(Ptr, Exec)});
}

/// Replays the launches of \p L from a graph captured in its first
/// iteration; with \p Keys, the graph is cached for the next execution of
/// the loop under those keys.
void captureLoop(Loop &L, LaunchLoop &LL,
                 std::optional<ArrayRef<Value *>> Keys) {
  Function &F = *L.getHeader()->getParent();
  Module &M = *F.getParent();
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  Type *Ptr = PointerType::get(Ctx, 0);
  const GraphAPI &RT = LL.RT->Graphs;
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
  std::optional<GraphCache> Cache;
  Value *Own = nullptr;
  if (Keys) {
    Cache = makeGraphCache(M, *Keys);
    Own = lookUpGraph(B, *Cache, State, Exec, ExecDestroy);
  }
  // The lookup split the preheader: the loop is entered from its last block.
  Pre = L.getLoopPreheader();

  // Exit edges first (SplitEdge needs the loop's blocks as they are).
  SmallVector<std::pair<BasicBlock *, BasicBlock *>, 4> ExitEdges;
  L.getExitEdges(ExitEdges);
  for (auto [From, To] : ExitEdges) {
    BasicBlock *E = SplitEdge(From, To);
    // SplitEdge copies the latch's loop metadata onto the new branch, which
    // is no latch.
    E->getTerminator()->setMetadata(LLVMContext::MD_loop, nullptr);
    B.SetInsertPoint(E->getTerminator());
    keepOrDestroyGraph(B, Cache ? &*Cache : nullptr, Own, State, Exec,
                       ExecDestroy);
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
  SmallVector<StoreInst *, 16> Stores;
  // The Level Zero calls only read through their pointer arguments: what a
  // recorded call reads is the same in every iteration when its arguments
  // are (a stack address the same every iteration, whose slot the loop does
  // not write or writes with a value the same every iteration).
  IterationValues Iter(L, {});
  // The value \p V stands for across iterations (the slot of a load of an
  // unwritten slot), or null: which command list a call appends to.
  auto Key = [&](Value *V) -> Value * {
    if (L.isLoopInvariant(V))
      return V;
    return Iter.unwrittenSlotLoad(V);
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
            if (!Iter.same(Op))
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
  SmallPtrSet<Value *, 8> Slots = launchSlots(L, ZL.Record);
  for (StoreInst *SI : Stores)
    if (Slots.count(getUnderlyingObject(SI->getPointerOperand())) &&
        !Iter.same(SI->getValueOperand()))
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
                                     OptimizationRemarkEmitter &ORE,
                                     bool GraphCache) {
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
    SmallSetVector<Value *, 8> Keys;
    std::string NoCache =
        GraphCache ? cacheKeys(*L, LL, DT, Keys) : "the graph cache is off";
    ORE.emit([&] {
      OptimizationRemark R(DEBUG_TYPE, "LaunchGraph", L->getStartLoc(),
                           L->getHeader());
      R << "captured " << ore::NV("Launches", LL.NumLaunches)
        << " kernel launch(es) per iteration into a " << LL.RT->Graphs.Name
        << " graph replayed once per iteration; ";
      if (NoCache.empty())
        R << "the graph is kept for the next execution of the loop while its "
          << ore::NV("Keys", unsigned(Keys.size()))
          << " launch parameter(s) stay the same";
      else
        R << "it is built once per execution of the loop: " << NoCache;
      return R;
    });
    std::optional<ArrayRef<Value *>> CacheKeys;
    if (NoCache.empty()) {
      CacheKeys = Keys.getArrayRef();
      ++NumGraphLoopsCached;
    }
    captureLoop(*L, LL, CacheKeys);
    ++NumGraphLoops;
    Changed = true;
  }
  return Changed;
}
