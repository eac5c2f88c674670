//===- AccelPrefetchAnalysis.h - accel-prefetch internals ------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the source files of accel-prefetch share: the accesses of a loop and
/// their groups, the dependence walk of addresses, and the per-loop state
/// (LoopPrefetcher) whose analysis (AccelPrefetchAnalysis.cpp: access
/// discovery, cost model, legality), look-ahead across loop nests
/// (AccelPrefetchNest.cpp), and transformation, remarks and driver
/// (AccelPrefetch.cpp) live in separate files. Not an interface of the
/// plugin.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELPREFETCHANALYSIS_H
#define LLVMACCEL_ACCELPREFETCHANALYSIS_H

#include "AccelPrefetch.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace llvm {

class AAResults;
class OptimizationRemarkEmitter;
class TargetTransformInfo;

namespace accel {
namespace prefetch {

/// Cache line size when neither `cache-line=` nor TTI gives one.
constexpr unsigned DefaultCacheLine = 64;
/// The upper end of `max-lines=` (cache-line prefetches per group), also the
/// most lanes of one gather that are prefetched.
constexpr unsigned MaxLinesParam = 64;

/// The name of the array \p Ptr points into, for remarks.
std::string arrayName(ScalarEvolution &SE, const SCEV *Ptr);

/// One access of a loop L: a load or store, or a row an inner loop walks.
struct Access {
  Instruction *I;
  /// The address as seen from L (for a row: where the row starts).
  const SCEV *Addr;
  /// Bytes touched from Addr in one iteration of L (a row of run-time
  /// length: the most that max-lines prefetches cover).
  uint64_t Bytes;
  bool IsWrite;
  /// A row of run-time length: the bytes it spans, invariant in L.
  const SCEV *Span = nullptr;
};

/// Accesses whose addresses differ by constants; they share prefetches.
struct AccessGroup {
  Instruction *Leader;
  const SCEV *Base;
  /// Byte ranges [Offset, Offset + Bytes) relative to Base.
  SmallVector<std::pair<int64_t, uint64_t>, 4> Ranges;
  /// The accesses grouped.
  SmallVector<Instruction *, 4> Members;
  bool IsWrite = false;
  /// Longest chain of loads of L leading to the address (0: affine).
  unsigned Level = 0;
  /// The loads of L the address depends on, with their own levels.
  SmallVector<std::pair<LoadInst *, unsigned>, 4> Loads;
  /// With a row of run-time length among the members: the end of the
  /// group's bytes relative to Base, invariant in L (the prefetched offsets
  /// are clamped below it).
  const SCEV *End = nullptr;
};

/// A vector gather (or scatter) of L: its lanes are prefetched. G describes
/// the chain of loads its pointer vector depends on (G.Base: the base
/// pointer of its GEP when scalar, for remarks).
struct GatherAccess {
  IntrinsicInst *I;
  Instruction *Ptrs;
  unsigned Lanes;
  AccessGroup G;
};

/// How large the object an indirect access indexes is, as far as the IR
/// says (LoopPrefetcher::objectSpan, AccelPrefetchGate.cpp): the largest
/// index of its address (`h & mask`, `h >> shift`, `h % n`: elements [0,
/// max] of ElemBytes each are read) or at least how many bytes the object
/// is (ObjectBytes: a memset of it, a "dereferenceable" assume bundle).
/// V, the mask, shift, modulus or byte count, is a constant or a
/// loop-invariant value known only at run time.
struct ObjectSpan {
  enum KindTy { ObjectBytes, MaskIndex, ShiftIndex, ModuloIndex };
  KindTy Kind = ObjectBytes;
  Value *V = nullptr;
  uint64_t ElemBytes = 1;
  /// Where the size comes from, for remarks ("a memset of bytes bytes").
  std::string Source;
};

/// Finds the loads of loop L an address depends on, and whether the address
/// can be recomputed at another iteration. See the file comment of
/// AccelPrefetchAnalysis.cpp for the legality conditions checked here.
class DependenceFinder {
public:
  DependenceFinder(Loop &L, LoopInfo &LI, DominatorTree &DT,
                   ScalarEvolution &SE)
      : L(L), LI(LI), DT(DT), SE(SE) {}

  /// Level of \p S: the longest chain of loads of L it depends on, or
  /// std::nullopt (with Failure set) if it cannot be recomputed ahead.
  std::optional<unsigned> levelOf(const SCEV *S);
  /// Level of a value of L that SCEV cannot describe (a vector of pointers).
  std::optional<unsigned> levelOfValue(Value *V) { return levelOfOperand(V); }

  /// Whether vector arithmetic (the lanes of a vectorized loop's index
  /// vectors, computed from wide loads) may be recomputed ahead.
  bool AllowVectors = false;
  std::string Failure;
  /// Loads found, with their levels (1: the address is affine in L).
  MapVector<LoadInst *, unsigned> Loads;

private:
  std::optional<unsigned> levelOf(Instruction *I);
  std::optional<unsigned> levelOfOperand(Value *V);
  std::optional<unsigned> fail(const Twine &Why) {
    if (Failure.empty())
      Failure = Why.str();
    return std::nullopt;
  }
  bool runsEveryIteration(const BasicBlock *BB) const;

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  DenseMap<Instruction *, unsigned> Levels;
  SmallPtrSet<Instruction *, 8> Visiting;
};

/// The work gate (`min-work`) of one function and where its value comes
/// from, with the accesses its CPU keeps in flight (`in-flight`).
struct WorkGate {
  unsigned MinWork;
  /// What the value was derived from, for remarks: empty when it was given
  /// as a parameter.
  std::string Source;
  unsigned InFlight;
};

/// The work gate for \p F: `min-work` when given, else derived from the
/// reorder buffer of \p F's CPU (AccelPrefetchOptions::MinWork); and its
/// accesses in flight (AccelPrefetchOptions::InFlight).
WorkGate workGate(const Function &F, const AccelPrefetchOptions &Opts);

/// The work gate of one function, derived when a loop first asks for it
/// (only loops with indirect accesses do; deriving it builds the CPU's
/// subtarget for its scheduling model).
class FunctionWorkGate {
public:
  FunctionWorkGate(const Function &F, const AccelPrefetchOptions &Opts)
      : F(F), Opts(Opts) {}
  const WorkGate &get() {
    if (!Gate)
      Gate = workGate(F, Opts);
    return *Gate;
  }

private:
  const Function &F;
  const AccelPrefetchOptions &Opts;
  std::optional<WorkGate> Gate;
};

/// Prefetches for the accesses of one loop.
class LoopPrefetcher {
public:
  LoopPrefetcher(Loop &L, LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE,
                 const TargetTransformInfo &TTI, AAResults &AA,
                 OptimizationRemarkEmitter &ORE,
                 const AccelPrefetchOptions &Opts, FunctionWorkGate &Gate)
      : L(L), LI(LI), DT(DT), SE(SE), TTI(TTI), AA(AA), ORE(ORE), Opts(Opts),
        Gate(Gate), DL(L.getHeader()->getModule()->getDataLayout()) {}

  /// Returns true if the loop was changed.
  bool run();
  /// Whether run() changed the CFG (a copy of the loop for small objects).
  bool changedCFG() const { return CFGChanged; }

private:
  // Analysis (AccelPrefetchAnalysis.cpp).
  void collectAccesses(SmallVectorImpl<Access> &Accesses);
  void addTransfer(MemTransferInst &Copy, SmallVectorImpl<Access> &Accesses);
  bool declineCacheResident(const AccessGroup &G, const char *What);
  AllocaInst *packingBuffer(const AccessGroup &G) const;
  std::optional<Access> rowAccess(Instruction &I, Loop &Inner);
  std::optional<Access> firstIterationAccess(Instruction &I);
  uint64_t rowBytes(const SCEVAddRecExpr *AR, Loop &Inner, uint64_t Size);
  const SCEV *rowSpan(const SCEVAddRecExpr *AR, Loop &Inner,
                      uint64_t Size) const;
  void extendEnd(AccessGroup &G, const Access &A, int64_t Offset);
  void addToGroups(const Access &A, SmallVectorImpl<AccessGroup> &Groups);
  uint64_t iterationCost(const Loop &Lp) const;
  uint64_t iterationWork(const Loop &Lp) const;
  unsigned computeDistance(uint64_t Cost, unsigned Groups) const;
  unsigned minStride() const;
  SmallVector<int64_t, 8> linePoints(const AccessGroup &G) const;
  std::optional<int64_t> constantStride(const SCEV *S) const;
  bool coversStride(const AccessGroup &G, uint64_t Stride) const;
  const char *loopCannotClamp(const Loop &Lp) const;
  bool chainsMayBeOverwritten(const AccessGroup &G, const Loop &Lp) const;
  bool decidesBranch(const AccessGroup &G) const;
  std::optional<uint64_t> knownObjectSize(const SCEV *Ptr) const;
  void analyzeGathers(SmallVectorImpl<GatherAccess> &Chosen);

  // The work gate, object sizes and the copy for small objects
  // (AccelPrefetchGate.cpp).
  void applyWorkGate(uint64_t Work, bool HasStrided,
                     SmallVectorImpl<AccessGroup *> &Chosen,
                     SmallVectorImpl<GatherAccess> &ChosenGathers);
  std::string sizeExemptWhy(const Instruction *Leader) const;
  std::optional<ObjectSpan> objectSpan(Value *Ptr) const;
  std::optional<ObjectSpan> indexSpan(GEPOperator &GEP) const;
  std::optional<ObjectSpan> objectExtent(const Value *Object) const;
  std::optional<bool> spanIsLarge(const ObjectSpan &S) const;
  Value *emitSpanIsLarge(const ObjectSpan &S, IRBuilder<> &B) const;
  const char *cannotVersion() const;
  void versionOnSize(ArrayRef<ObjectSpan> Spans);

  // Look-ahead across loop nests (AccelPrefetchNest.cpp).
  std::string analyzeNest(ArrayRef<AccessGroup *> Chosen);
  std::string analyzeBlockNest(ArrayRef<AccessGroup *> Chosen);
  const SCEV *exitBound(const Loop &Lp, const SCEVAddRecExpr *AR) const;
  const SCEVAddRecExpr *mainAfterPrologue(const SCEVAddRecExpr *AR) const;
  bool enteredWhenNotEmpty(BasicBlock *BB, const Loop &O, const SCEV *Start,
                           const SCEV *End) const;
  const char *matchPrologue(const Loop &Main, const SCEV *X, const SCEV *E,
                            uint64_t U,
                            function_ref<bool(const SCEV *)> IsTiled);
  const char *loadsMissing(ArrayRef<AccessGroup *> Chosen, const Loop *Other,
                           BasicBlock *OtherBlock, const SCEV *OtherStart,
                           uint64_t OtherStep) const;
  const char *notGloballyIndexed(const SCEV *Ptr) const;
  bool runsEveryIteration(const BasicBlock *BB, const Loop &Lp) const;

  // Transformation (AccelPrefetch.cpp).
  Value *nestLastIteration();
  Value *blockNestLastIteration();
  Value *iterationAhead(uint64_t D);
  Value *valueAt(Value *V, uint64_t D);
  Value *instructionAt(Instruction *I, uint64_t D);
  Value *expandAt(const SCEV *S, uint64_t D, Type *Ty);
  void emitPrefetch(const SCEV *Addr, bool IsWrite);
  unsigned emitLines(const AccessGroup &G,
                     function_ref<const SCEV *(int64_t)> At);
  unsigned emitStrided(const AccessGroup &G, int64_t Stride, unsigned D);
  unsigned emitIndirect(const AccessGroup &G, unsigned D);
  void emitLinks(const AccessGroup &G, unsigned D);
  unsigned emitGather(const GatherAccess &GA, unsigned D);

  // Remarks (AccelPrefetch.cpp).
  void declineLoop(StringRef Name, const Twine &Why);
  void declineGroup(const AccessGroup &G, StringRef Name, const Twine &Why);
  void declineVolatile(Instruction &I);
  void countDeclined(unsigned N);
  void declineGather(const GatherAccess &GA, StringRef Name, const Twine &Why);
  std::string chainNames(const AccessGroup &G) const;
  std::string gatherName(const GatherAccess &GA) const;

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  const TargetTransformInfo &TTI;
  AAResults &AA;
  OptimizationRemarkEmitter &ORE;
  const AccelPrefetchOptions &Opts;
  FunctionWorkGate &Gate;
  const DataLayout &DL;
  unsigned LineSize = DefaultCacheLine;
  bool CFGChanged = false;

  // Set by applyWorkGate: the work per indirect access, the accesses it let
  // through for a branch or for their object's size (known, or compared at
  // run time: SizeChecks, one per access, for the copy of the loop), with
  // the size's source for remarks.
  uint64_t WorkPerAccess = 0;
  SmallPtrSet<const AccessGroup *, 4> BranchExempt;
  DenseMap<const Instruction *, std::string> LargeExempt, SizeChecked;
  SmallVector<ObjectSpan, 2> SizeChecks;

  // Set while transforming.
  std::unique_ptr<SCEVExpander> Expander;
  std::optional<IRBuilder<>> Builder;
  Value *Iteration = nullptr;
  Value *BackedgeCount = nullptr;
  /// BTC - it: iterations left after this one.
  Value *Left = nullptr;

  // Set by analyzeNest when the look-ahead may cross the iterations of the
  // outer loop: L's induction {NestStart,+,NestStep} walks [NestStart,
  // NestEnd) of the index space, NestEnd is NestEndLoad (through casts) and
  // NestEndAtLast the end pointer at the outer loop's last iteration.
  Loop *Nest = nullptr;
  LoadInst *NestEndLoad = nullptr;
  const SCEV *NestEndAtLast = nullptr;
  const SCEV *NestStart = nullptr;
  const SCEV *NestEnd = nullptr;
  const SCEV *NestStep = nullptr;
  /// Set by analyzeBlockNest: L runs NestBlockTrips iterations on every
  /// iteration of the outer loop and the nest walks one index space in
  /// blocks of that many (`for b: for j < 128: idx[b * 128 + j]`).
  const SCEV *NestBlockTrips = nullptr;
  /// Set by analyzeBlockNest when every outer iteration walks the same
  /// indices again (`for b: for j < 128: ran[j]`): the look-ahead past L's
  /// last iteration wraps around to L's first ones, which the next outer
  /// iteration loads (NestHasNext: O has one).
  bool NestWrap = false;
  Value *NestHasNext = nullptr;
  // Set with the Nest* members when L is the main loop of a runtime-unrolled
  // inner loop: NestPrologue walks [NestTileStart, NestStart) of each tile.
  // NestMain walks [NestMainStart, NestEnd) with step NestMainStep: L
  // itself, or the unrolled loop after L when L is NestPrologue.
  Loop *NestPrologue = nullptr;
  /// Instead of NestPrologue, the one-iteration remainder block of a loop
  /// unrolled by 2 (it loads element NestTileStart).
  BasicBlock *NestPrologueBlock = nullptr;
  const SCEV *NestTileStart = nullptr;
  const Loop *NestMain = nullptr;
  const SCEV *NestMainStart = nullptr;
  uint64_t NestMainStep = 0;
  /// Iteration ahead per distance. An ordered map: a DenseMap<unsigned> must
  /// never see ~0u or ~0u - 1 (its empty and tombstone keys) as a key.
  std::map<uint64_t, Value *> Ahead;
  std::map<std::pair<Value *, uint64_t>, Value *> ValuesAt;
  /// Pointers of look-ahead loads: distance, address in L, address ahead.
  SmallVector<std::tuple<unsigned, const SCEV *, Value *>, 8> AheadPtrs;
  SmallPtrSet<LoadInst *, 4> PrefetchedLinks;
  /// Vector gathers (and, with `writes`, scatters) of L, and those chosen:
  /// their lanes are prefetched.
  SmallVector<IntrinsicInst *, 4> Gathers;
};

} // namespace prefetch
} // namespace accel
} // namespace llvm

#endif // LLVMACCEL_ACCELPREFETCHANALYSIS_H
