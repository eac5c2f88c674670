//===- AccelPrefetch.cpp - Prefetch for indirect and strided loads --------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-prefetch inserts llvm.prefetch calls for loads whose addresses the
/// hardware prefetcher cannot predict, after Ainsworth & Jones, "Software
/// Prefetching for Indirect Memory Accesses" (CGO 2017).
///
/// Algorithm, per loop L (visited outermost first):
///  1. Collect the accesses of L: loads (and stores with `writes`) in L's own
///     blocks, the sources (and with `writes` the destinations) of memcpy and
///     memmove calls of constant length there (gathers of rows that loop
///     idiom recognition turned into copies), plus "rows": loads in an
///     innermost child loop S whose address is an affine AddRec of S with a
///     start that varies in L. The row is the access of L (embedding bags:
///     the row T + idx[j] * D is summed by S). And "chased" accesses: loads
///     in any loop nested in L whose address is a pointer that inner loop
///     chases (a header phi: bucket chains `do { ... b = b->next; } while
///     (b)`), seen from L at its first-iteration value (the phi's entry
///     value, AddRecs of the inner loops at their starts); an element of an
///     array of objects counts as the object's type size, whatever field or
///     vector window reads it. Vector gathers and scatters of L are handled
///     apart (analyzeGathers): their pointer vectors are recomputed ahead
///     lane by lane from the wide index loads, and every lane is prefetched.
///  2. Describe each address as a SCEV and find the loads of L it depends on
///     (through SCEV arithmetic, casts, GEPs, selects, bit operations). No
///     such load: the access is affine ("strided"); otherwise it is indirect
///     and its level is the longest chain of loads leading to it.
///  3. Group accesses whose addresses differ by a constant (unrolled copies,
///     the elements of a row) and cover each group with at most max-lines
///     cache-line prefetches.
///  4. Distance d: `distance=N`, or the target's prefetch distance (TTI, in
///     instructions) / TTI cost of one iteration where the target gives one,
///     else ceil(latency / cycles per iteration) where cycles = TTI cost of
///     one iteration (inner loops weighted by their trip count) / an assumed
///     issue width; at most in-flight / (accesses per iteration) and the
///     target's getMaxPrefetchIterationsAhead, within [MinDistance,
///     MaxDistance].
///  5. Strided groups with |stride| >= min-stride are prefetched d iterations
///     ahead, straight from their AddRec (a prefetch never faults).
///  6. Indirect groups: in the loop header, K = it + umin(BTC - it, D) is the
///     iteration D ahead clamped to the last one the loop runs (BTC is the
///     backedge-taken count, expanded in the preheader). The address is
///     recomputed at K: AddRecs of L become Start + K * Step, the loads it
///     depends on are re-issued at K, other instructions are cloned. The final
///     access is prefetched at D = d, a load at level l of a chain of t loads
///     at D = d * (t + 2 - l), so each link is in cache when its successor's
///     look-ahead load needs it. The index stream itself (level 1) is only
///     prefetched when its stride reaches min-stride: sequential index arrays
///     are covered by the hardware prefetcher.
///
/// Legality: a prefetch never faults, but the look-ahead loads are real loads.
/// A look-ahead load of X at iteration K <= BTC is safe because the original
/// loop loads X at iteration K too: we require that (a) X's block dominates
/// the latch and every exiting block (X executes on every iteration that
/// runs), (b) the loop runs all BTC + 1 iterations (every instruction is
/// guaranteed to transfer execution, no call may change memory), and (c) for
/// chains, no store in the loop may write the arrays whose loaded values feed
/// another look-ahead load (an early read would see an older index). Index
/// values are recomputed from K exactly as the loop computes them, so link
/// loads B[C[K]] load an address the loop dereferences at iteration K.
/// Loops without a computable backedge-taken count cannot be clamped and are
/// left alone.
///
/// Look-ahead across a CSR loop nest: when L (induction {X,+,U}, walking
/// [X, E) of an index space) is nested in O and E is a load of O at
/// {P+s,+,s}_O while X is the same load one O step earlier (o_b = X(b),
/// E(b) = o_{b+1}: CSR offsets), the ranges tile and the look-ahead may run
/// into the following bags, up to GlobalEnd = o_N, the end loaded at O's last
/// iteration (computed in O's preheader: the program loads it there too).
/// The look-ahead index is K = min(j + d, max(j, o_N - 1)), as an iteration
/// of L: (smax(o_N, E) - X) /u U - 1 replaces BTC. Legality: the program
/// loads idx[k] for every k in U = union of [o_b, o_{b+1}) over the
/// iterations O runs. [j, o_{b+1}) is in U, and every k in [o_{b+1}, o_N) is
/// crossed upward by some step o_c -> o_{c+1} (discrete values), so it is in
/// U even for non-monotone offsets; the smax keeps K >= j when o_N <= j. So a
/// look-ahead load at K is a load the program performs, given: O runs all its
/// iterations (the checks above applied to O), the end load runs on every O
/// iteration, L is entered on every O iteration with X < E (its preheader runs
/// every iteration, or is guarded by X < E), the look-ahead loads address
/// their arrays by the global index only (A - (c / U) * X invariant in O for
/// each {A,+,c}_L, other values invariant in O), no store of O may write the
/// offsets (read early) or, for chains, the index arrays. Otherwise the
/// look-ahead stops at L's own last iteration, with a remark.
///
/// Nests of blocks (analyzeBlockNest): when L runs the same trip count T on
/// every outer iteration and its index loads walk one index space in blocks
/// of T (g = T * b + j), the look-ahead continues into the next blocks up to
/// T * (BTC_O + 1) - 1, computed in a type twice as wide; when every outer
/// iteration reads the same indices again (HPCC's streams advanced in
/// place), it wraps around to iteration j + d - T of the next outer
/// iteration. Both lift the work gate, like CSR nests.
///
/// Runtime-unrolled CSR nests: -O3 splits the walk of a tile [S, E) into a
/// remainder loop P over [S, X) with step 1 and the loop M unrolled by U
/// over [X, E), X = S + R (a phi of S and P's exit value). Both P and M get
/// the nest look-ahead (each as L above, with M's tile end E, found from
/// M's exit `j + U == E` when SCEV cannot fold X + U * (BTC + 1)). The tiles
/// are still walked whole, which is all the argument above needs, when
/// (matchPrologue): S is the tiled start; R = (E - S) mod 2^k with U | 2^k
/// (so S <= X <= E and E - X is a multiple of U); P runs all its
/// iterations, walks {S,+,1} and leaves only through its latch to X's
/// block; X = S only on an edge taken when R == 0 and P is entered
/// otherwise, from a block that runs whenever S < E; M is skipped only when
/// the compared value puts E - S in [0, 2^k), where X = E. Then every index
/// of [S, E) is loaded by P or by M. Because M's look-ahead index
/// g = X + U * K need not be aligned to a later tile's X_b, the look-ahead
/// loads must be element-wise (loadsMissing): each reads element g + c,
/// c < U, of an array frame F + Size * e (F invariant in O), M reads all U
/// elements of each step and P every element in that frame, and chains are
/// not followed (level 1 only). With K <= (smax(o_N, E) - X) /u U - 1, the
/// elements g + c stay below smax(o_N, E). The remainder loop looks ahead as
/// many indices as M, so that together they prefetch every index once.
///
/// Profitability: an out-of-order core already overlaps many misses of a
/// tight gather loop (`s += T[idx[i]]`): its reorder buffer spans many
/// iterations, hence many independent misses. Prefetching still gains there
/// when the table is far larger than the caches, but costs instructions when
/// it fits in them, and the pass cannot know the table's size. Indirect
/// prefetching within one loop therefore requires `min-work`
/// units of TTI cost per indirect cache line and iteration, where few misses
/// fit in the window. A look-ahead across the iterations of an outer loop
/// (CSR nests) is exempt: it runs past the inner loop's exits, which bound
/// what the window overlaps (a row end is a data-dependent branch, often
/// mispredicted), and CSR SpMV (5 units per access) gains like hand
/// prefetching.
/// Strided accesses below min-stride are left to the hardware prefetcher;
/// strided and indirect accesses to an object known to be at most
/// `resident-bytes` large are left alone, and so are the sources of packing
/// copies (loads only stored into one local buffer, at least two lines per
/// iteration: GEMM panels), which are read once in row segments the
/// hardware prefetcher follows.
///
//===----------------------------------------------------------------------===//

#include "AccelPrefetch.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/LoopIterator.h"
#include "llvm/Analysis/MemoryBuiltins.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/ConstantRange.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#include <algorithm>
#include <map>

using namespace llvm;

#define DEBUG_TYPE "accel-prefetch"

STATISTIC(NumIndirectPrefetches, "Prefetches of indirect accesses");
STATISTIC(NumLinkPrefetches, "Prefetches of intermediate loads of chains");
STATISTIC(NumIndexPrefetches, "Prefetches of large-stride index arrays");
STATISTIC(NumStridedPrefetches, "Prefetches of large-stride accesses");
STATISTIC(NumLookaheadLoads, "Look-ahead index loads inserted");
STATISTIC(NumLoopsPrefetched, "Loops given prefetches");
STATISTIC(NumLoopsDeclined, "Loops with candidates left alone");
STATISTIC(NumAccessesDeclined, "Candidate accesses left alone");

namespace {

/// Memory latency in cycles when neither `latency=` nor the target gives one
/// (TTI has no latency hook): a DRAM access on a current server core.
constexpr unsigned DefaultLatency = 300;
/// Cache line size when neither `cache-line=` nor TTI gives one.
constexpr unsigned DefaultCacheLine = 64;
/// Smallest stride prefetched when neither `min-stride=` nor TTI gives one.
/// The L2 streamers train within a 4 KiB page; with 2 KiB strides they see
/// at most two accesses per page and cannot follow.
constexpr unsigned DefaultMinStride = 2048;
/// Instructions a core is assumed to retire per cycle in a loop whose misses
/// are covered, to turn TTI cost into cycles per iteration.
constexpr unsigned AssumedIPC = 4;
/// Bounds of the computed distance. Below 4 iterations a prefetch hardly
/// overlaps anything, beyond 256 the line is likely evicted before its use.
constexpr unsigned MinDistance = 4;
constexpr unsigned MaxDistance = 256;
/// Ranges of the numeric parameters (`accel-prefetch<distance=N;...>`): wide
/// enough for any machine, narrow enough that no arithmetic on them wraps.
constexpr unsigned MaxDistanceParam = 65536;
constexpr unsigned MaxLatencyParam = 100000;
constexpr unsigned MinCacheLineParam = 16;
constexpr unsigned MaxCacheLineParam = 4096;
constexpr unsigned MaxMinStrideParam = 1u << 30;
constexpr unsigned MaxLinesParam = 64;
/// Trip count assumed for an inner loop whose trip count is unknown, when
/// weighting its cost in the cost of one outer iteration.
constexpr unsigned DefaultInnerTripCount = 16;
/// The defaults of the cost gates (`min-work`, `in-flight`,
/// `resident-bytes`; AccelPrefetchOptions says what each means and why).
constexpr unsigned MaxMinWorkParam = 1000000;
constexpr unsigned MaxInFlightParam = 1024;
constexpr unsigned MaxResidentBytesParam = 1u << 30;

/// Loops known to run at most this many iterations are left alone (runtime
/// unrolling remainders, short fixed loops): every look-ahead would clamp.
constexpr unsigned MaxShortTripCount = 4;
/// Accesses considered per loop; beyond this the loop is not analyzed.
constexpr unsigned MaxAccessesPerLoop = 256;

/// Units of a cost for the cost model: 1 for an invalid cost, 0 for a
/// negative one.
uint64_t costValue(InstructionCost Cost) {
  if (!Cost.isValid())
    return 1;
  int64_t V = accel::costValue(Cost);
  return V > 0 ? uint64_t(V) : 0;
}

/// The name of the array \p Ptr points into, for remarks.
std::string arrayName(ScalarEvolution &SE, const SCEV *Ptr) {
  if (!Ptr->getType()->isPointerTy())
    return "<unknown>";
  auto *Base = dyn_cast<SCEVUnknown>(SE.getPointerBase(Ptr));
  if (!Base)
    return "<unknown>";
  // The source variable where debug information names it (clang -g), else
  // the IR name; unnamed values (clang without -fno-discard-value-names)
  // print as %0, %1, ...
  std::string Source = accel::sourceVariableName(Base->getValue());
  if (!Source.empty())
    return Source;
  if (Base->getValue()->hasName())
    return Base->getValue()->getName().str();
  std::string Name;
  raw_string_ostream OS(Name);
  Base->getValue()->printAsOperand(OS, /*PrintType=*/false);
  return OS.str();
}

/// One access of a loop L: a load or store, or a row an inner loop walks.
struct Access {
  Instruction *I;
  /// The address as seen from L (for a row: where the row starts).
  const SCEV *Addr;
  /// Bytes touched from Addr in one iteration of L.
  uint64_t Bytes;
  bool IsWrite;
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

/// Finds the loads of loop L an address depends on, and whether the address
/// can be recomputed at another iteration. See the file comment for the
/// legality conditions checked here.
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

/// Collects the instructions of L that a SCEV refers to, and rejects the
/// parts that cannot be evaluated at another iteration.
struct UnknownCollector {
  const Loop &L;
  SmallVector<Instruction *, 4> Insts;
  const char *Failure = nullptr;

  bool follow(const SCEV *S) {
    if (auto *AR = dyn_cast<SCEVAddRecExpr>(S)) {
      if (AR->getLoop() == &L) {
        if (!AR->isAffine())
          Failure = "the address is not affine in the loop";
        return false; // Its operands are invariant in L.
      }
      if (L.contains(AR->getLoop()))
        Failure = "the address varies in an inner loop";
      return false; // An outer AddRec is invariant in L.
    }
    if (auto *Div = dyn_cast<SCEVUDivExpr>(S)) {
      auto *C = dyn_cast<SCEVConstant>(Div->getRHS());
      if (!C || C->getValue()->isZero())
        Failure = "the address divides by a value that may be zero";
    }
    if (auto *U = dyn_cast<SCEVUnknown>(S))
      if (auto *I = dyn_cast<Instruction>(U->getValue()))
        if (L.contains(I))
          Insts.push_back(I);
    return true;
  }
  bool isDone() const { return Failure != nullptr; }
};

} // namespace

bool DependenceFinder::runsEveryIteration(const BasicBlock *BB) const {
  if (!DT.dominates(BB, L.getLoopLatch()))
    return false;
  SmallVector<BasicBlock *, 4> Exiting;
  L.getExitingBlocks(Exiting);
  return all_of(Exiting, [&](BasicBlock *E) { return DT.dominates(BB, E); });
}

std::optional<unsigned> DependenceFinder::levelOf(const SCEV *S) {
  UnknownCollector Collector{L, {}};
  SCEVTraversal<UnknownCollector> Walker(Collector);
  Walker.visitAll(S);
  if (Collector.Failure)
    return fail(Collector.Failure);
  unsigned Level = 0;
  for (Instruction *I : Collector.Insts) {
    std::optional<unsigned> IL = levelOf(I);
    if (!IL)
      return std::nullopt;
    Level = std::max(Level, *IL);
  }
  return Level;
}

std::optional<unsigned> DependenceFinder::levelOfOperand(Value *V) {
  auto *I = dyn_cast<Instruction>(V);
  if (!I || !L.contains(I))
    return 0;
  if (SE.isSCEVable(I->getType())) {
    const SCEV *S = SE.getSCEV(I);
    if (!isa<SCEVUnknown>(S) || cast<SCEVUnknown>(S)->getValue() != I)
      return levelOf(S);
  }
  return levelOf(I);
}

std::optional<unsigned> DependenceFinder::levelOf(Instruction *I) {
  auto It = Levels.find(I);
  if (It != Levels.end())
    return It->second;
  if (!Visiting.insert(I).second)
    return fail("the address depends on itself");

  std::optional<unsigned> Level;
  if (auto *Load = dyn_cast<LoadInst>(I)) {
    if (LI.getLoopFor(Load->getParent()) != &L)
      return fail("the address depends on a load in an inner loop");
    if (!Load->isSimple())
      return fail("the address depends on a volatile or atomic load");
    if (Load->getPointerOperandType()->isVectorTy())
      return fail("the address depends on a gather");
    if (!runsEveryIteration(Load->getParent()))
      return fail("the index load from " +
                  arrayName(SE, SE.getSCEV(Load->getPointerOperand())) +
                  " is not executed on every iteration");
    Level = levelOf(SE.getSCEV(Load->getPointerOperand()));
    if (!Level)
      return std::nullopt;
    Level = *Level + 1;
    Loads[Load] = *Level;
  } else if (isa<PHINode>(I)) {
    return fail("the address depends on a loop-carried value");
  } else if (AllowVectors &&
             (isa<ShuffleVectorInst>(I) || isa<InsertElementInst>(I) ||
              isa<ExtractElementInst>(I))) {
    Level = 0;
    for (Value *Op : I->operands()) {
      std::optional<unsigned> OL = levelOfOperand(Op);
      if (!OL)
        return std::nullopt;
      Level = std::max(*Level, *OL);
    }
  } else if (isa<CallBase>(I)) {
    return fail("the address depends on a call");
  } else if (isa<CastInst>(I) || isa<BinaryOperator>(I) ||
             isa<GetElementPtrInst>(I) || isa<SelectInst>(I) ||
             isa<CmpInst>(I) || isa<FreezeInst>(I) || isa<UnaryOperator>(I)) {
    if (I->getType()->isVectorTy() && !AllowVectors)
      return fail("the address is a vector of pointers");
    if (I->isIntDivRem()) {
      auto *C = dyn_cast<ConstantInt>(I->getOperand(1));
      if (!C || C->isZero() || C->isMinusOne())
        return fail("the address depends on a division that may trap");
    }
    Level = 0;
    for (Value *Op : I->operands()) {
      std::optional<unsigned> OL = levelOfOperand(Op);
      if (!OL)
        return std::nullopt;
      Level = std::max(*Level, *OL);
    }
  } else {
    return fail(Twine("the address depends on a '") + I->getOpcodeName() +
                "' instruction");
  }
  Visiting.erase(I);
  Levels[I] = *Level;
  return Level;
}

namespace {

/// Rewrites an address of loop L into its value at iteration K: AddRecs of L
/// become Start + K * Step and instructions of L are recomputed at K.
class AtIterationRewriter : public SCEVRewriteVisitor<AtIterationRewriter> {
public:
  AtIterationRewriter(ScalarEvolution &SE, const Loop &L, const SCEV *K,
                      function_ref<Value *(Instruction *)> AtK)
      : SCEVRewriteVisitor(SE), L(L), K(K), AtK(AtK) {}

  const SCEV *visitAddRecExpr(const SCEVAddRecExpr *AR) {
    if (AR->getLoop() != &L)
      return AR;
    const SCEV *Step = AR->getStepRecurrence(SE);
    const SCEV *Iter = SE.getTruncateOrZeroExtend(K, Step->getType());
    return SE.getAddExpr(AR->getStart(), SE.getMulExpr(Iter, Step));
  }

  const SCEV *visitUnknown(const SCEVUnknown *U) {
    auto *I = dyn_cast<Instruction>(U->getValue());
    if (!I || !L.contains(I))
      return U;
    return SE.getUnknown(AtK(I));
  }

private:
  const Loop &L;
  const SCEV *K;
  function_ref<Value *(Instruction *)> AtK;
};

/// Prefetches for the accesses of one loop.
class LoopPrefetcher {
public:
  LoopPrefetcher(Loop &L, LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE,
                 const TargetTransformInfo &TTI, AAResults &AA,
                 OptimizationRemarkEmitter &ORE,
                 const AccelPrefetchOptions &Opts)
      : L(L), LI(LI), DT(DT), SE(SE), TTI(TTI), AA(AA), ORE(ORE), Opts(Opts),
        DL(L.getHeader()->getModule()->getDataLayout()) {}

  /// Returns true if the loop was changed.
  bool run();

private:
  // Analysis.
  void collectAccesses(SmallVectorImpl<Access> &Accesses);
  void addTransfer(MemTransferInst &Copy, SmallVectorImpl<Access> &Accesses);
  void declineVolatile(Instruction &I);
  bool declineCacheResident(const AccessGroup &G, const char *What);
  AllocaInst *packingBuffer(const AccessGroup &G) const;
  std::optional<Access> rowAccess(Instruction &I, Loop &Inner);
  std::optional<Access> firstIterationAccess(Instruction &I);
  uint64_t rowBytes(const SCEVAddRecExpr *AR, Loop &Inner, uint64_t Size);
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
  std::optional<uint64_t> knownObjectSize(const SCEV *Ptr) const;
  std::string analyzeNest(ArrayRef<AccessGroup *> Chosen);
  std::string analyzeBlockNest(ArrayRef<AccessGroup *> Chosen);
  const SCEV *exitBound(const Loop &Lp, const SCEVAddRecExpr *AR) const;
  const SCEVAddRecExpr *mainAfterPrologue(const SCEVAddRecExpr *AR) const;
  bool enteredWhenNotEmpty(BasicBlock *BB, const Loop &O, const SCEV *Start,
                           const SCEV *End) const;
  const char *matchPrologue(const Loop &Main, const SCEV *X, const SCEV *E,
                            uint64_t U,
                            function_ref<bool(const SCEV *)> IsTiled);
  const char *loadsMissing(ArrayRef<AccessGroup *> Chosen, const Loop &Other,
                           const SCEV *OtherStart, uint64_t OtherStep) const;
  const char *notGloballyIndexed(const SCEV *Ptr) const;
  bool runsEveryIteration(const BasicBlock *BB, const Loop &Lp) const;

  // Transformation.
  Value *nestLastIteration();
  Value *blockNestLastIteration();
  Value *iterationAhead(uint64_t D);
  Value *valueAt(Value *V, uint64_t D);
  Value *instructionAt(Instruction *I, uint64_t D);
  Value *expandAt(const SCEV *S, uint64_t D, Type *Ty);
  void emitPrefetch(const SCEV *Addr, bool IsWrite);
  unsigned emitStrided(const AccessGroup &G, int64_t Stride, unsigned D);
  unsigned emitIndirect(const AccessGroup &G, unsigned D);
  void emitLinks(const AccessGroup &G, unsigned D);
  unsigned emitGather(const GatherAccess &GA, unsigned D);
  void analyzeGathers(SmallVectorImpl<GatherAccess> &Chosen);
  std::string gatherName(const GatherAccess &GA) const;

  // Remarks.
  void declineLoop(StringRef Name, const Twine &Why);
  void declineGroup(const AccessGroup &G, StringRef Name, const Twine &Why);
  std::string chainNames(const AccessGroup &G) const;

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  const TargetTransformInfo &TTI;
  AAResults &AA;
  OptimizationRemarkEmitter &ORE;
  const AccelPrefetchOptions &Opts;
  const DataLayout &DL;
  unsigned LineSize = DefaultCacheLine;

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

} // namespace

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

Expected<AccelPrefetchOptions>
llvm::parseAccelPrefetchOptions(StringRef Params) {
  AccelPrefetchOptions Opts;
  accel::PassParamParser P("accel-prefetch");
  P.integer("distance", Opts.Distance, 1, MaxDistanceParam);
  P.integer("latency", Opts.Latency, 1, MaxLatencyParam);
  P.integer("cache-line", Opts.CacheLine, MinCacheLineParam, MaxCacheLineParam,
            /*PowerOf2=*/true);
  P.integer("min-stride", Opts.MinStride, 0, MaxMinStrideParam);
  P.integer("max-lines", Opts.MaxLines, 1, MaxLinesParam);
  P.integer("min-work", Opts.MinWork, 0, MaxMinWorkParam);
  P.integer("in-flight", Opts.InFlight, 1, MaxInFlightParam);
  P.integer("resident-bytes", Opts.ResidentBytes, 0, MaxResidentBytesParam);
  P.flag("indirect", Opts.Indirect);
  P.flag("strided", Opts.Strided);
  P.flag("writes", Opts.Writes);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelPrefetchPass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-prefetch<";
  if (Opts.Distance)
    OS << "distance=" << *Opts.Distance << ';';
  if (Opts.Latency)
    OS << "latency=" << *Opts.Latency << ';';
  if (Opts.CacheLine)
    OS << "cache-line=" << *Opts.CacheLine << ';';
  if (Opts.MinStride)
    OS << "min-stride=" << *Opts.MinStride << ';';
  OS << "max-lines=" << Opts.MaxLines << ';';
  OS << "min-work=" << Opts.MinWork << ';';
  OS << "in-flight=" << Opts.InFlight << ';';
  OS << "resident-bytes=" << Opts.ResidentBytes << ';';
  OS << (Opts.Indirect ? "" : "no-") << "indirect;";
  OS << (Opts.Strided ? "" : "no-") << "strided;";
  OS << (Opts.Writes ? "" : "no-") << "writes>";
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

uint64_t LoopPrefetcher::rowBytes(const SCEVAddRecExpr *AR, Loop &Inner,
                                  uint64_t Size) {
  uint64_t Step =
      cast<SCEVConstant>(AR->getStepRecurrence(SE))->getAPInt().getZExtValue();
  if (unsigned TC = SE.getSmallConstantTripCount(&Inner))
    return (TC - 1) * Step + Size;
  // Unknown row length: T + idx * D with a constant D spans D bytes.
  if (auto *Add = dyn_cast<SCEVAddExpr>(AR->getStart()))
    for (const SCEV *Op : Add->operands())
      if (auto *Mul = dyn_cast<SCEVMulExpr>(Op))
        if (auto *C = dyn_cast<SCEVConstant>(Mul->getOperand(0)))
          if (!SE.isLoopInvariant(Mul, &L) &&
              C->getAPInt().isStrictlyPositive())
            return std::max<uint64_t>(C->getAPInt().getLimitedValue(), Size);
  return Size;
}

/// A load of the innermost child loop \p Inner that walks a row starting at
/// an address that varies in L: the row is an access of L.
std::optional<Access> LoopPrefetcher::rowAccess(Instruction &I, Loop &Inner) {
  auto *AR =
      dyn_cast<SCEVAddRecExpr>(SE.getSCEV(getLoadStorePointerOperand(&I)));
  if (!AR || AR->getLoop() != &Inner || !AR->isAffine())
    return std::nullopt;
  auto *Step = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
  if (!Step || !Step->getAPInt().isStrictlyPositive() ||
      SE.isLoopInvariant(AR->getStart(), &L))
    return std::nullopt;
  uint64_t Size = DL.getTypeStoreSize(getLoadStoreType(&I));
  return Access{&I, AR->getStart(), rowBytes(AR, Inner, Size),
                isa<StoreInst>(I)};
}

namespace {
/// Rewrites an address of an access in a loop nested in L into its value in
/// the first iteration of every loop between the access and L: AddRecs of
/// those loops become their starts, their header phis the value they enter
/// with. Records whether a header phi (a pointer chased across the inner
/// loop's iterations) was looked through.
class FirstIterationRewriter
    : public SCEVRewriteVisitor<FirstIterationRewriter> {
public:
  FirstIterationRewriter(ScalarEvolution &SE, const Loop &L, LoopInfo &LI)
      : SCEVRewriteVisitor(SE), L(L), LI(LI) {}

  const SCEV *visitAddRecExpr(const SCEVAddRecExpr *AR) {
    if (AR->getLoop() == &L || !L.contains(AR->getLoop()))
      return AR;
    return visit(AR->getStart());
  }

  const SCEV *visitUnknown(const SCEVUnknown *U) {
    auto *Phi = dyn_cast<PHINode>(U->getValue());
    Loop *Inner = Phi ? LI.getLoopFor(Phi->getParent()) : nullptr;
    if (!Inner || Inner == &L || !L.contains(Inner) ||
        Phi->getParent() != Inner->getHeader() ||
        !SE.isSCEVable(Phi->getType()))
      return U;
    BasicBlock *Pre = Inner->getLoopPreheader();
    if (!Pre || Phi->getBasicBlockIndex(Pre) < 0)
      return U;
    LookedThroughPhi = true;
    Object = Phi->getIncomingValueForBlock(Pre);
    return visit(SE.getSCEV(Object));
  }

  bool LookedThroughPhi = false;
  /// The pointer the outermost chase looked through starts from.
  Value *Object = nullptr;

private:
  const Loop &L;
  LoopInfo &LI;
};
} // namespace

/// A load in a loop nested in L whose address is a pointer chased by that
/// loop (a header phi, as in bucket chains `do { ... b = b->next; } while
/// (b)`), seen from L: the address the chase starts from. Its footprint is
/// the scalar access (one element of a vector load: a vectorized window may
/// not run), and accesses of the same object at constant offsets group with
/// it, so a bucket costs the lines its fields span.
std::optional<Access> LoopPrefetcher::firstIterationAccess(Instruction &I) {
  Value *Ptr = getLoadStorePointerOperand(&I);
  if (!Ptr || !Ptr->getType()->isPointerTy() ||
      (isa<LoadInst>(I) ? !cast<LoadInst>(I).isSimple()
                        : !cast<StoreInst>(I).isSimple()))
    return std::nullopt;
  FirstIterationRewriter Rewriter(SE, L, LI);
  const SCEV *Start = Rewriter.visit(SE.getSCEV(Ptr));
  if (!Rewriter.LookedThroughPhi || SE.isLoopInvariant(Start, &L))
    return std::nullopt;
  // An element of an array of objects (`&buckets[h]`): the object, whatever
  // field or vector window of it the access reads.
  if (auto *GEP = dyn_cast<GetElementPtrInst>(Rewriter.Object)) {
    Type *ObjTy = GEP->getResultElementType();
    const SCEV *Base = SE.getSCEV(GEP);
    if (ObjTy->isSized() && !ObjTy->isIntegerTy(8) &&
        !isa<ScalableVectorType>(ObjTy) &&
        isa<SCEVConstant>(SE.getMinusSCEV(Start, Base)))
      return Access{&I, Base, DL.getTypeAllocSize(ObjTy).getFixedValue(),
                    isa<StoreInst>(I)};
  }
  Type *Ty = getLoadStoreType(&I);
  if (auto *VT = dyn_cast<VectorType>(Ty))
    Ty = VT->getElementType();
  return Access{&I, Start, DL.getTypeStoreSize(Ty).getFixedValue(),
                isa<StoreInst>(I)};
}

/// Declines \p G, with a remark naming it \p What, when it accesses an
/// object known to be at most `resident-bytes` large.
bool LoopPrefetcher::declineCacheResident(const AccessGroup &G,
                                          const char *What) {
  std::optional<uint64_t> Size = knownObjectSize(G.Base);
  if (!Size || *Size > Opts.ResidentBytes)
    return false;
  declineGroup(G, "CacheResident",
               Twine(What) + " is only " + Twine(*Size) +
                   " bytes: it stays in cache");
  return true;
}

/// The local buffer \p G's loads are copied into, when the loop is a packing
/// copy (GEMM codegen packs blocks of its operands into a stack panel that
/// the micro-kernel then reads many times): every loaded value is only
/// stored (or scattered) into one alloca, and each iteration reads at least
/// two adjacent lines. Such a source is read once, in row segments that the
/// hardware prefetcher follows; software prefetches only add work to a loop
/// that is bound by its stores.
AllocaInst *LoopPrefetcher::packingBuffer(const AccessGroup &G) const {
  if (linePoints(G).size() < 2)
    return nullptr;
  AllocaInst *Buffer = nullptr;
  for (Instruction *M : G.Members) {
    auto *Load = dyn_cast<LoadInst>(M);
    if (!Load || Load->use_empty())
      return nullptr;
    for (User *U : Load->users()) {
      Value *Dest = nullptr;
      if (auto *Store = dyn_cast<StoreInst>(U);
          Store && Store->getValueOperand() == Load)
        Dest = Store->getPointerOperand();
      else if (auto *II = dyn_cast<IntrinsicInst>(U);
               II && II->getIntrinsicID() == Intrinsic::masked_scatter &&
               II->getArgOperand(0) == Load)
        Dest = II->getArgOperand(1);
      if (!Dest)
        return nullptr;
      // A scatter's pointers: a GEP of the buffer with vector offsets.
      if (auto *GEP = dyn_cast<GetElementPtrInst>(Dest))
        Dest = GEP->getPointerOperand();
      if (!Dest->getType()->isPointerTy())
        return nullptr;
      auto *A = dyn_cast<AllocaInst>(getUnderlyingObject(Dest));
      if (!A || (Buffer && A != Buffer))
        return nullptr;
      Buffer = A;
    }
  }
  return Buffer;
}

void LoopPrefetcher::declineVolatile(Instruction &I) {
  ++NumAccessesDeclined;
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, "Volatile", &I)
           << "volatile and atomic accesses are not prefetched";
  });
}

void LoopPrefetcher::collectAccesses(SmallVectorImpl<Access> &Accesses) {
  for (BasicBlock *BB : L.blocks()) {
    Loop *Owner = LI.getLoopFor(BB);
    bool Direct = Owner == &L;
    bool RowLoop = Owner->getParentLoop() == &L && Owner->isInnermost();
    for (Instruction &I : *BB) {
      if (auto *Copy = dyn_cast<MemTransferInst>(&I)) {
        if (Direct)
          addTransfer(*Copy, Accesses);
        continue;
      }
      if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
        Intrinsic::ID ID = II->getIntrinsicID();
        if (Direct && (ID == Intrinsic::masked_gather ||
                       (Opts.Writes && ID == Intrinsic::masked_scatter)))
          Gathers.push_back(II);
        continue;
      }
      bool IsWrite = isa<StoreInst>(I);
      if (!isa<LoadInst>(I) && !(IsWrite && Opts.Writes))
        continue;
      if (Direct && !(IsWrite ? cast<StoreInst>(I).isSimple()
                              : cast<LoadInst>(I).isSimple())) {
        declineVolatile(I);
        continue;
      }
      Value *Ptr = getLoadStorePointerOperand(&I);
      if (Ptr->getType()->isVectorTy() || !Ptr->getType()->isPointerTy())
        continue;
      if (Direct)
        Accesses.push_back(
            {&I, SE.getSCEV(Ptr),
             DL.getTypeStoreSize(getLoadStoreType(&I)).getKnownMinValue(),
             IsWrite});
      else if (std::optional<Access> Row =
                   RowLoop ? rowAccess(I, *Owner) : std::nullopt)
        Accesses.push_back(*Row);
      else if (std::optional<Access> Chased = firstIterationAccess(I))
        Accesses.push_back(*Chased);
    }
  }
}

/// The source (and, when writes are prefetched, the destination) of a
/// memcpy or memmove of constant length, such as the row copies LLVM's loop
/// idiom recognition makes of a gather loop, as accesses of that length.
void LoopPrefetcher::addTransfer(MemTransferInst &Copy,
                                 SmallVectorImpl<Access> &Accesses) {
  if (Copy.isVolatile()) {
    declineVolatile(Copy);
    return;
  }
  auto *Len = dyn_cast<ConstantInt>(Copy.getLength());
  if (!Len || Len->isZero() || Len->getValue().getActiveBits() > 32)
    return;
  uint64_t Bytes = Len->getZExtValue();
  Accesses.push_back({&Copy, SE.getSCEV(Copy.getRawSource()), Bytes, false});
  if (Opts.Writes)
    Accesses.push_back({&Copy, SE.getSCEV(Copy.getRawDest()), Bytes, true});
}

void LoopPrefetcher::addToGroups(const Access &A,
                                 SmallVectorImpl<AccessGroup> &Groups) {
  for (AccessGroup &G : Groups) {
    if (G.Base->getType() != A.Addr->getType())
      continue;
    if (auto *Diff = dyn_cast<SCEVConstant>(SE.getMinusSCEV(A.Addr, G.Base))) {
      G.Ranges.push_back({Diff->getAPInt().getSExtValue(), A.Bytes});
      G.Members.push_back(A.I);
      G.IsWrite |= A.IsWrite;
      return;
    }
  }
  AccessGroup G;
  G.Leader = A.I;
  G.Base = A.Addr;
  G.Ranges.push_back({0, A.Bytes});
  G.Members.push_back(A.I);
  G.IsWrite = A.IsWrite;
  Groups.push_back(std::move(G));
}

/// The TTI cost of the instructions of \p BB.
static uint64_t blockCost(const BasicBlock &BB,
                          const TargetTransformInfo &TTI) {
  uint64_t Cost = 0;
  for (const Instruction &I : BB)
    if (!isa<PHINode>(I) && !I.isDebugOrPseudoInst())
      Cost += costValue(
          TTI.getInstructionCost(&I, TargetTransformInfo::TCK_SizeAndLatency));
  return Cost;
}

/// The TTI cost of everything one iteration of \p Lp may do: all its blocks,
/// an inner loop counting as its own work times its trip count.
uint64_t LoopPrefetcher::iterationWork(const Loop &Lp) const {
  uint64_t Work = 0;
  for (BasicBlock *BB : Lp.blocks())
    if (LI.getLoopFor(BB) == &Lp)
      Work += blockCost(*BB, TTI);
  for (const Loop *Inner : Lp.getSubLoops()) {
    unsigned TC = SE.getSmallConstantTripCount(Inner);
    Work += iterationWork(*Inner) * (TC ? TC : DefaultInnerTripCount);
  }
  return std::max<uint64_t>(Work, 1);
}

/// The TTI cost of one iteration of \p Lp: the cheapest path from the header
/// to the latch, an inner loop counting as its own cost times its trip count.
/// The cheapest path is the work every iteration does; a rarely taken path
/// (a runtime alias check's scalar fallback, an error branch) must not make
/// the loop look slower than it is.
uint64_t LoopPrefetcher::iterationCost(const Loop &Lp) const {
  DenseMap<const BasicBlock *, uint64_t> Out; // Cost up to the end of a block.
  LoopBlocksRPO RPO(const_cast<Loop *>(&Lp));
  RPO.perform(&LI);
  for (BasicBlock *BB : RPO) {
    Loop *Owner = LI.getLoopFor(BB);
    Loop *Inner = Owner == &Lp ? nullptr : Owner;
    while (Inner && Inner->getParentLoop() != &Lp)
      Inner = Inner->getParentLoop();
    if (Inner && BB != Inner->getHeader()) {
      // Counted once, at the inner loop's header.
      Out[BB] = Out.lookup(Inner->getHeader());
      continue;
    }
    std::optional<uint64_t> In;
    if (BB == Lp.getHeader())
      In = 0;
    else
      for (BasicBlock *Pred : predecessors(BB))
        if (Lp.contains(Pred) && !(Inner && Inner->contains(Pred)))
          if (auto It = Out.find(Pred); It != Out.end())
            In = std::min(In.value_or(It->second), It->second);
    if (!In)
      continue;
    uint64_t Here;
    if (Inner) {
      unsigned TC = SE.getSmallConstantTripCount(Inner);
      Here = iterationCost(*Inner) * (TC ? TC : DefaultInnerTripCount);
    } else {
      Here = blockCost(*BB, TTI);
    }
    Out[BB] = *In + Here;
  }
  return std::max<uint64_t>(Out.lookup(Lp.getLoopLatch()), 1);
}

/// Iterations ahead: enough to cover the memory latency at the loop's pace,
/// but no more accesses in flight than the core can track (\p Groups random
/// accesses are prefetched per iteration).
unsigned LoopPrefetcher::computeDistance(uint64_t Cost, unsigned Groups) const {
  if (Opts.Distance)
    return *Opts.Distance;
  uint64_t D;
  if (unsigned TargetDistance = TTI.getPrefetchDistance();
      TargetDistance && !Opts.Latency) {
    // The target's own figure (AArch64 cores such as Kryo, Falkor, A64FX):
    // how many instructions ahead a prefetch must be issued, as
    // loop-data-prefetch reads it; TTI cost units count instructions.
    D = divideCeil(TargetDistance, std::max<uint64_t>(Cost, 1));
  } else {
    unsigned Latency = Opts.Latency ? *Opts.Latency : DefaultLatency;
    uint64_t Cycles = std::max<uint64_t>(divideCeil(Cost, AssumedIPC), 1);
    D = divideCeil(Latency, Cycles);
  }
  D = std::min<uint64_t>(D, Opts.InFlight / std::max(Groups, 1u));
  D = std::clamp<uint64_t>(D, MinDistance, MaxDistance);
  return std::min<uint64_t>(D, TTI.getMaxPrefetchIterationsAhead());
}

unsigned LoopPrefetcher::minStride() const {
  if (Opts.MinStride)
    return *Opts.MinStride;
  // Most targets answer 1 ("any stride"), which says nothing about what
  // their hardware prefetchers miss.
  unsigned TargetStride = TTI.getMinPrefetchStride(
      /*NumMemAccesses=*/1, /*NumStridedMemAccesses=*/1, /*NumPrefetches=*/1,
      /*HasCall=*/false);
  return TargetStride > 1 ? TargetStride : DefaultMinStride;
}

/// Whether the byte ranges of \p G cover a whole stride: then consecutive
/// iterations touch adjacent memory and the accesses form one stream.
bool LoopPrefetcher::coversStride(const AccessGroup &G, uint64_t Stride) const {
  SmallVector<std::pair<int64_t, uint64_t>, 4> Ranges(G.Ranges);
  llvm::sort(Ranges);
  int64_t Start = Ranges.front().first;
  int64_t Reached = Start;
  for (auto [Offset, Bytes] : Ranges) {
    if (Offset > Reached)
      return false;
    Reached = std::max<int64_t>(Reached, Offset + int64_t(Bytes));
  }
  return uint64_t(Reached - Start) >= Stride;
}

std::optional<int64_t> LoopPrefetcher::constantStride(const SCEV *S) const {
  auto *AR = dyn_cast<SCEVAddRecExpr>(S);
  if (!AR || AR->getLoop() != &L || !AR->isAffine())
    return std::nullopt;
  if (auto *C = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE)))
    return C->getAPInt().getSExtValue();
  return std::nullopt;
}

/// Offsets from the group base to prefetch: one per cache line the group's
/// ranges touch, at most max-lines. Assumes the base is line-aligned (rows of
/// allocated tables are); otherwise the last partial line is left out.
SmallVector<int64_t, 8> LoopPrefetcher::linePoints(const AccessGroup &G) const {
  SmallVector<std::pair<int64_t, uint64_t>, 4> Ranges(G.Ranges);
  llvm::sort(Ranges);
  SmallVector<int64_t, 8> Points;
  std::optional<int64_t> Covered;
  for (auto [Offset, Bytes] : Ranges) {
    int64_t End = Offset + int64_t(Bytes);
    int64_t P = Covered ? std::max(Offset, *Covered) : Offset;
    for (; P < End && Points.size() < Opts.MaxLines; P += LineSize) {
      Points.push_back(P);
      Covered = P + LineSize;
    }
  }
  return Points;
}

/// Why the look-ahead index cannot be clamped to an iteration \p Lp runs, or
/// nullptr if it can.
const char *LoopPrefetcher::loopCannotClamp(const Loop &Lp) const {
  const SCEV *BTC = SE.getBackedgeTakenCount(&Lp);
  if (isa<SCEVCouldNotCompute>(BTC))
    return "loop trip count is unknown: cannot clamp the look-ahead index";
  if (!accel::createSCEVExpander(SE, DL, "accel.prefetch")
           ->isSafeToExpandAt(BTC, Lp.getLoopPreheader()->getTerminator()))
    return "loop trip count cannot be computed before the loop: cannot clamp "
           "the look-ahead index";
  for (BasicBlock *BB : Lp.blocks())
    for (Instruction &I : *BB) {
      if (!isGuaranteedToTransferExecutionToSuccessor(&I))
        return "loop may stop before its trip count (an instruction may not "
               "return): look-ahead loads could run past the data";
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (!isa<IntrinsicInst>(Call) && Call->mayWriteToMemory())
          return "loop calls a function that may change memory: look-ahead "
                 "loads may not be safe";
      // An early read across a fence or an atomic access could race with a
      // write the original program orders before its own read.
      if (I.isAtomic() || isa<FenceInst>(I) ||
          (isa<LoadInst>(I) && cast<LoadInst>(I).isVolatile()) ||
          (isa<StoreInst>(I) && cast<StoreInst>(I).isVolatile()))
        return "loop synchronizes with other threads (atomic, volatile or "
               "fence): look-ahead loads could race";
    }
  return nullptr;
}

/// Whether a store of the loop may write an array whose loaded values feed
/// another look-ahead load: that load, issued early, could then read a stale
/// index and leave the data the loop accesses.
/// The size of the object \p Ptr points into, when the IR says it: an
/// alloca, a global, or a dereferenceable(N) argument.
std::optional<uint64_t> LoopPrefetcher::knownObjectSize(const SCEV *Ptr) const {
  auto *Base = dyn_cast<SCEVUnknown>(SE.getPointerBase(Ptr));
  if (!Base)
    return std::nullopt;
  const Value *Object = getUnderlyingObject(Base->getValue());
  ObjectSizeOpts SizeOpts;
  uint64_t Size;
  if (getObjectSize(Object, Size, DL, /*TLI=*/nullptr, SizeOpts) && Size)
    return Size;
  if (auto *Arg = dyn_cast<Argument>(Object))
    if (uint64_t Bytes = Arg->getDereferenceableBytes())
      return Bytes;
  return std::nullopt;
}

bool LoopPrefetcher::chainsMayBeOverwritten(const AccessGroup &G,
                                            const Loop &Lp) const {
  if (G.Level < 2)
    return false;
  for (auto [Link, Level] : G.Loads) {
    if (Level >= G.Level)
      continue;
    MemoryLocation Loc =
        MemoryLocation::getBeforeOrAfter(Link->getPointerOperand());
    for (BasicBlock *BB : Lp.blocks())
      for (Instruction &I : *BB)
        if (I.mayWriteToMemory() && isModSet(AA.getModRefInfo(&I, Loc)))
          return true;
  }
  return false;
}

/// The load \p S is (through casts), or nullptr.
static LoadInst *strippedLoad(const SCEV *S) {
  while (auto *Cast = dyn_cast<SCEVCastExpr>(S))
    S = Cast->getOperand(0);
  auto *U = dyn_cast<SCEVUnknown>(S);
  return U ? dyn_cast<LoadInst>(U->getValue()) : nullptr;
}

bool LoopPrefetcher::runsEveryIteration(const BasicBlock *BB,
                                        const Loop &Lp) const {
  if (!Lp.contains(BB) || !DT.dominates(BB, Lp.getLoopLatch()))
    return false;
  SmallVector<BasicBlock *, 4> Exiting;
  Lp.getExitingBlocks(Exiting);
  return all_of(Exiting, [&](BasicBlock *E) { return DT.dominates(BB, E); });
}

/// Why the load address \p Ptr of L is not a function of the global index
/// g = NestStart + NestStep * it alone (and of values invariant in the outer
/// loop), or nullptr if it is: only then is the address at an iteration past
/// L's own last one the address the program loads at index g.
const char *LoopPrefetcher::notGloballyIndexed(const SCEV *Ptr) const {
  const Loop &O = *Nest;
  int64_t U = cast<SCEVConstant>(NestStep)->getAPInt().getSExtValue();
  SmallVector<const SCEV *, 8> Work{Ptr};
  SmallPtrSet<const void *, 16> Seen;
  while (!Work.empty()) {
    const SCEV *S = Work.pop_back_val();
    if (!Seen.insert(S).second)
      continue;
    if (auto *AR = dyn_cast<SCEVAddRecExpr>(S)) {
      if (AR->getLoop() != &L) {
        if (!SE.isLoopInvariant(AR, &O))
          return "an index address varies in the outer loop";
        continue;
      }
      auto *C = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
      if (!AR->isAffine() || !C || C->getAPInt().getSExtValue() % U != 0)
        return "an index address does not follow the loop's induction";
      // {A,+,c} at iteration i is A + (c / U) * (g - NestStart): A -
      // (c / U) * NestStart must not depend on the outer iteration.
      Type *Ty = C->getType();
      const SCEV *Scaled = SE.getMulExpr(
          SE.getConstant(Ty, C->getAPInt().getSExtValue() / U, true),
          SE.getTruncateOrSignExtend(NestStart, Ty));
      const SCEV *Base =
          SE.getAddExpr(AR->getStart(), SE.getNegativeSCEV(Scaled));
      if (!SE.isLoopInvariant(Base, &O))
        return "an index array is not addressed by the global index of the "
               "loop nest";
      continue;
    }
    if (auto *Op = dyn_cast<SCEVNAryExpr>(S)) {
      append_range(Work, Op->operands());
      continue;
    }
    if (auto *Cast = dyn_cast<SCEVCastExpr>(S)) {
      Work.push_back(Cast->getOperand(0));
      continue;
    }
    if (auto *Div = dyn_cast<SCEVUDivExpr>(S)) {
      Work.push_back(Div->getLHS());
      Work.push_back(Div->getRHS());
      continue;
    }
    auto *Unknown = dyn_cast<SCEVUnknown>(S);
    if (!Unknown)
      continue;
    auto *I = dyn_cast<Instruction>(Unknown->getValue());
    if (!I || !L.contains(I)) {
      if (!SE.isLoopInvariant(S, &O))
        return "an index address depends on a value of the outer loop";
      continue;
    }
    // Loads of L are links: their own addresses are checked by the caller.
    if (isa<LoadInst>(I))
      continue;
    for (Value *V : I->operands()) {
      if (SE.isSCEVable(V->getType()))
        Work.push_back(SE.getSCEV(V));
      else if (isa<Instruction>(V) && !Seen.insert(V).second)
        continue;
      else if (auto *OpI = dyn_cast<Instruction>(V))
        if (!L.contains(OpI))
          return "an index address depends on a value of the outer loop";
    }
  }
  return nullptr;
}

/// The bound E of L's exit `{X,+,U} + U == E` (or `!= E`) when the latch is
/// L's only exiting block, or nullptr. Whenever L exits, its induction has
/// reached E exactly, so L walks [X, E) even when SCEV cannot fold
/// X + U * (BTC + 1) back into E (E - X is then a multiple of U).
const SCEV *LoopPrefetcher::exitBound(const Loop &Lp,
                                      const SCEVAddRecExpr *AR) const {
  BasicBlock *Latch = Lp.getLoopLatch();
  if (!Latch || Lp.getExitingBlock() != Latch)
    return nullptr;
  auto *Br = dyn_cast<BranchInst>(Latch->getTerminator());
  auto *Cmp = Br && Br->isConditional() ? dyn_cast<ICmpInst>(Br->getCondition())
                                        : nullptr;
  if (!Cmp || !Cmp->isEquality())
    return nullptr;
  // The exit is taken when the compare is equal.
  bool ExitOnEq = (Cmp->getPredicate() == CmpInst::ICMP_EQ) ==
                  !Lp.contains(Br->getSuccessor(0));
  if (!ExitOnEq)
    return nullptr;
  const SCEV *Next = AR->getPostIncExpr(SE);
  const SCEV *LHS = SE.getSCEV(Cmp->getOperand(0));
  const SCEV *RHS = SE.getSCEV(Cmp->getOperand(1));
  if (RHS == Next)
    std::swap(LHS, RHS);
  if (LHS != Next || !SE.isLoopInvariant(RHS, &Lp))
    return nullptr;
  return RHS;
}

/// The block \p BB falls through to when it has a single predecessor and a
/// single successor (a loop exit block where LICM sinks the stores of values
/// it promoted in the loop; its phis are LCSSA phis), else nullptr.
static BasicBlock *fallThroughExit(BasicBlock *BB) {
  return BB->getSinglePredecessor() ? BB->getSingleSuccessor() : nullptr;
}

/// When L, with induction \p AR, may be the remainder loop of a runtime
/// unrolled loop M (M's start is a phi of L's exit value, in L's only exit
/// block or in the block that one falls through to, right before M), M's
/// induction; else nullptr. matchPrologue checks the shape.
const SCEVAddRecExpr *
LoopPrefetcher::mainAfterPrologue(const SCEVAddRecExpr *AR) const {
  BasicBlock *Exit = L.getUniqueExitBlock();
  Loop *O = L.getParentLoop();
  if (!Exit || LI.getLoopFor(Exit) != O)
    return nullptr;
  // The block holding the phi and its predecessor on the edge from L.
  BasicBlock *From = L.getLoopLatch();
  if (BasicBlock *Next = fallThroughExit(Exit);
      Next && Exit->getSinglePredecessor() == From) {
    From = Exit;
    Exit = Next;
  }
  const SCEV *Next = AR->getPostIncExpr(SE);
  for (PHINode &XPhi : Exit->phis()) {
    if (XPhi.getBasicBlockIndex(From) < 0 ||
        SE.getSCEV(XPhi.getIncomingValueForBlock(From)) != Next)
      continue;
    for (Loop *M : O->getSubLoops()) {
      BasicBlock *Pre = M->getLoopPreheader();
      if (M == &L || !Pre ||
          (Pre != Exit && Pre->getUniquePredecessor() != Exit))
        continue;
      for (PHINode &Phi : M->getHeader()->phis()) {
        if (!SE.isSCEVable(Phi.getType()))
          continue;
        auto *MAR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&Phi));
        if (MAR && MAR->getLoop() == M && MAR->isAffine() &&
            MAR->getStart() == SE.getSCEV(&XPhi) &&
            isa<SCEVConstant>(MAR->getStepRecurrence(SE)))
          return MAR;
      }
    }
  }
  return nullptr;
}

/// Whether \p BB runs on every iteration of \p O whose range [Start, End) is
/// not empty: it runs every iteration, or its only predecessor does and
/// branches to it when Start < End.
bool LoopPrefetcher::enteredWhenNotEmpty(BasicBlock *BB, const Loop &O,
                                         const SCEV *Start,
                                         const SCEV *End) const {
  if (runsEveryIteration(BB, O))
    return true;
  BasicBlock *Guard = BB->getUniquePredecessor();
  auto *Br = Guard ? dyn_cast<BranchInst>(Guard->getTerminator()) : nullptr;
  auto *Cmp = Br && Br->isConditional() ? dyn_cast<ICmpInst>(Br->getCondition())
                                        : nullptr;
  if (!Cmp || LI.getLoopFor(Guard) != &O || !runsEveryIteration(Guard, O) ||
      (Br->getSuccessor(0) == BB) == (Br->getSuccessor(1) == BB))
    return false;
  CmpInst::Predicate Pred = Br->getSuccessor(0) == BB
                                ? Cmp->getPredicate()
                                : Cmp->getInversePredicate();
  const SCEV *LHS = SE.getSCEV(Cmp->getOperand(0));
  const SCEV *RHS = SE.getSCEV(Cmp->getOperand(1));
  if (Pred == CmpInst::ICMP_SGT || Pred == CmpInst::ICMP_UGT ||
      Pred == CmpInst::ICMP_NE) {
    std::swap(LHS, RHS);
    Pred = CmpInst::getSwappedPredicate(Pred);
  }
  if (Pred == CmpInst::ICMP_NE && LHS == End && RHS == Start)
    std::swap(LHS, RHS);
  // Offsets narrower than the index (int32 row pointers): the loop compares
  // the narrow values, X and E are their extensions. a < b is sext(a) <
  // sext(b) (signed), and zext(a) < zext(b) (unsigned, and then signed too);
  // a != b is either extension's inequality.
  auto Narrow = [&](const SCEV *Wide, bool Signed) -> const SCEV * {
    if (Signed)
      if (auto *Ext = dyn_cast<SCEVSignExtendExpr>(Wide))
        return Ext->getOperand();
    if (!Signed)
      if (auto *Ext = dyn_cast<SCEVZeroExtendExpr>(Wide))
        return Ext->getOperand();
    return nullptr;
  };
  if (LHS == Start && RHS == End)
    return Pred == CmpInst::ICMP_SLT || Pred == CmpInst::ICMP_NE;
  for (bool Signed : {true, false}) {
    const SCEV *NS = Narrow(Start, Signed), *NE = Narrow(End, Signed);
    if (!NS || !NE || LHS != NS || RHS != NE)
      continue;
    if (Pred == CmpInst::ICMP_NE ||
        Pred == (Signed ? CmpInst::ICMP_SLT : CmpInst::ICMP_ULT))
      return true;
  }
  return false;
}

/// Matches the runtime-unrolled shape of a tile [S, E): L (step \p U) starts
/// at X = S + R, R = (E - S) mod 2^k with U dividing 2^k, after a prologue
/// loop P of O that walks [S, X) with step 1; L is skipped only when
/// E - S < 2^k, that is when X = E. Sets NestPrologue and NestTileStart, or
/// returns why the shape does not match. \p IsTiled checks S.
const char *
LoopPrefetcher::matchPrologue(const Loop &Main, const SCEV *X, const SCEV *E,
                              uint64_t U,
                              function_ref<bool(const SCEV *)> IsTiled) {
  const char *NoMatch = "the ranges of the inner loop do not tile: its start "
                        "is not the previous end (offsets[b] .. offsets[b+1])";
  auto *XU = dyn_cast<SCEVUnknown>(X);
  auto *XPhi = XU ? dyn_cast<PHINode>(XU->getValue()) : nullptr;
  Loop *O = Main.getParentLoop();
  if (!XPhi || LI.getLoopFor(XPhi->getParent()) != O)
    return NoMatch;
  BasicBlock *Bx = XPhi->getParent();
  Type *Ty = X->getType();

  // The incoming value from the prologue P: its induction {S+1,+,1}_P after
  // P's last iteration, with P leaving through its latch only, to Bx or to
  // an exit block that only falls through to Bx (where LICM sinks the
  // stores of values it promoted in P).
  auto PrologueEdge = [&](BasicBlock *In) -> std::pair<Loop *, BasicBlock *> {
    if (Loop *Inner = LI.getLoopFor(In); Inner != O)
      return {Inner, Bx};
    if (fallThroughExit(In) == Bx)
      if (Loop *Inner = LI.getLoopFor(In->getSinglePredecessor());
          Inner && Inner != O)
        return {Inner, In};
    return {O, nullptr};
  };
  Loop *P = nullptr;
  BasicBlock *PExit = nullptr;
  const SCEV *S = nullptr, *R = nullptr;
  for (unsigned I = 0, N = XPhi->getNumIncomingValues(); I != N; ++I) {
    auto [In, ExitBB] = PrologueEdge(XPhi->getIncomingBlock(I));
    if (In == O)
      continue;
    BasicBlock *Exiting = ExitBB == Bx ? XPhi->getIncomingBlock(I)
                                       : ExitBB->getSinglePredecessor();
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(XPhi->getIncomingValue(I)));
    if (P || !In || In->getParentLoop() != O || !AR || AR->getLoop() != In ||
        !AR->isAffine() || !AR->getStepRecurrence(SE)->isOne() ||
        In->getExitingBlock() != Exiting || In->getLoopLatch() != Exiting ||
        In->getUniqueExitBlock() != ExitBB || !In->getLoopPreheader())
      return NoMatch;
    PExit = XPhi->getIncomingBlock(I);
    const SCEV *Exit = SE.getSCEVAtScope(AR, O);
    if (!SE.isLoopInvariant(Exit, In) || loopCannotClamp(*In))
      return NoMatch;
    P = In;
    S = SE.getMinusSCEV(AR->getStart(), SE.getOne(Ty));
    R = SE.getMinusSCEV(Exit, S);
  }
  if (!P || !IsTiled(S))
    return NoMatch;

  // R = (E - S) mod 2^k, with U dividing 2^k.
  const SCEV *D = SE.getMinusSCEV(E, S);
  auto *ZExt = dyn_cast<SCEVZeroExtendExpr>(R);
  unsigned K = ZExt ? ZExt->getOperand()->getType()->getScalarSizeInBits() : 0;
  if (!ZExt || K >= 63 || !isPowerOf2_64(U) || (uint64_t(1) << K) % U ||
      SE.getZeroExtendExpr(SE.getTruncateExpr(D, ZExt->getOperand()->getType()),
                           Ty) != R)
    return "the remainder loop does not walk (end - start) mod 2^k iterations";

  // The other incoming values are S, on edges taken only when R == 0, from
  // a block H that otherwise enters P, whose only exit is Bx.
  for (unsigned I = 0, N = XPhi->getNumIncomingValues(); I != N; ++I) {
    BasicBlock *H = XPhi->getIncomingBlock(I);
    if (H == PExit)
      continue;
    auto *Br = dyn_cast<BranchInst>(H->getTerminator());
    auto *Cmp = Br && Br->isConditional()
                    ? dyn_cast<ICmpInst>(Br->getCondition())
                    : nullptr;
    if (SE.getSCEV(XPhi->getIncomingValue(I)) != S || !Cmp ||
        !Cmp->isEquality() || !isa<ConstantInt>(Cmp->getOperand(1)) ||
        !cast<ConstantInt>(Cmp->getOperand(1))->isZero() ||
        SE.getSCEV(Cmp->getOperand(0)) != R)
      return NoMatch;
    unsigned ToBx = Cmp->getPredicate() == CmpInst::ICMP_EQ ? 0 : 1;
    if (Br->getSuccessor(ToBx) != Bx ||
        Br->getSuccessor(1 - ToBx) != P->getLoopPreheader() ||
        P->getLoopPreheader()->getUniquePredecessor() != H ||
        !enteredWhenNotEmpty(H, *O, S, E))
      return NoMatch;
  }
  if (XPhi->getNumIncomingValues() != 2)
    return NoMatch;

  // Main is entered from Bx unless E - S < 2^k (then R = E - S and X = E).
  BasicBlock *Pre = Main.getLoopPreheader();
  if (Pre != Bx) {
    auto *Br = dyn_cast<BranchInst>(Bx->getTerminator());
    if (Pre->getUniquePredecessor() != Bx || !Br)
      return NoMatch;
    if (Br->isConditional()) {
      auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
      auto *C = Cmp ? dyn_cast<ConstantInt>(Cmp->getOperand(1)) : nullptr;
      if (!C || (Br->getSuccessor(0) == Pre) == (Br->getSuccessor(1) == Pre))
        return NoMatch;
      CmpInst::Predicate Skip = Br->getSuccessor(0) == Pre
                                    ? Cmp->getInversePredicate()
                                    : Cmp->getPredicate();
      // The compared value is k0 + D or k0 - D: the skip region of D.
      const SCEV *A = SE.getSCEV(Cmp->getOperand(0));
      if (A->getType() != D->getType())
        return NoMatch;
      ConstantRange Region =
          ConstantRange::makeExactICmpRegion(Skip, C->getValue());
      ConstantRange DRange = ConstantRange::getFull(Region.getBitWidth());
      if (auto *K0 = dyn_cast<SCEVConstant>(SE.getMinusSCEV(A, D)))
        DRange = Region.sub(ConstantRange(K0->getAPInt()));
      else if (auto *K0 = dyn_cast<SCEVConstant>(SE.getAddExpr(A, D)))
        DRange = ConstantRange(K0->getAPInt()).sub(Region);
      unsigned BW = DRange.getBitWidth();
      if (!ConstantRange(APInt(BW, 0), APInt(BW, uint64_t(1) << K))
               .contains(DRange))
        return "the unrolled loop may be skipped on a range it does not "
               "leave to its remainder loop";
    }
  }
  NestPrologue = P;
  NestTileStart = S;
  return nullptr;
}

/// Why the look-ahead loads of L may read indices of the tile that the
/// program does not load, or nullptr, when L and \p Other (the remainder
/// loop and the unrolled loop, in either role) split each tile: Other walks
/// its part from \p OtherStart with step \p OtherStep. Each look-ahead load
/// of L reads element g + k (0 <= k < L's step) of an array frame F (address
/// F + Size * e, F invariant in the outer loop), and both loops read all the
/// elements of their steps in that frame.
const char *LoopPrefetcher::loadsMissing(ArrayRef<AccessGroup *> Chosen,
                                         const Loop &Other,
                                         const SCEV *OtherStart,
                                         uint64_t OtherStep) const {
  uint64_t U = cast<SCEVConstant>(NestStep)->getAPInt().getZExtValue();
  // The frame of a load of \p Lp from {A,+,Size*Step}_Lp, whose walk starts
  // at element Start: A - Size * Start, if invariant in the outer loop.
  auto Frame = [&](LoadInst *Load, const Loop &Lp, const SCEV *Start,
                   uint64_t Step) -> const SCEV * {
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(Load->getPointerOperand()));
    uint64_t Size = DL.getTypeStoreSize(Load->getType()).getFixedValue();
    if (!AR || AR->getLoop() != &Lp || !AR->isAffine() || !Load->isSimple() ||
        !runsEveryIteration(Load->getParent(), Lp))
      return nullptr;
    auto *C = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
    if (!C || C->getAPInt() != Size * Step)
      return nullptr;
    Type *IntTy = C->getType();
    const SCEV *Base = SE.getAddExpr(
        AR->getStart(), SE.getNegativeSCEV(SE.getMulExpr(
                            SE.getConstant(IntTy, Size),
                            SE.getTruncateOrSignExtend(Start, IntTy))));
    return SE.isLoopInvariant(Base, Nest) ? Base : nullptr;
  };
  using FrameList = SmallVector<std::pair<Type *, const SCEV *>, 8>;
  auto FramesOf = [&](const Loop &Lp, const SCEV *Start, uint64_t Step) {
    FrameList Out;
    for (BasicBlock *BB : Lp.blocks())
      if (LI.getLoopFor(BB) == &Lp)
        for (Instruction &I : *BB)
          if (auto *Load = dyn_cast<LoadInst>(&I))
            if (const SCEV *B = Frame(Load, Lp, Start, Step))
              Out.push_back({Load->getType(), B});
    return Out;
  };
  // Whether \p Frames hold F + Size * c for every c < Copies.
  auto ReadsAll = [&](const FrameList &Frames, Type *Ty, const SCEV *F,
                      uint64_t Size, uint64_t Copies) {
    for (uint64_t Copy = 0; Copy != Copies; ++Copy) {
      const SCEV *Want =
          SE.getAddExpr(F, SE.getConstant(SE.getEffectiveSCEVType(F->getType()),
                                          Size * Copy));
      if (!is_contained(Frames, std::make_pair(Ty, Want)))
        return false;
    }
    return true;
  };
  FrameList Mine = FramesOf(L, NestStart, U);
  FrameList Others = FramesOf(Other, OtherStart, OtherStep);
  for (AccessGroup *G : Chosen) {
    if (G->Level > 1)
      return "chains of loads across a remainder loop are not supported";
    for (auto [Load, Level] : G->Loads) {
      const SCEV *B = Frame(Load, L, NestStart, U);
      if (!B)
        return "an index load does not walk its array element by element";
      uint64_t Size = DL.getTypeStoreSize(Load->getType()).getFixedValue();
      bool Covered = any_of(Mine, [&](const auto &Candidate) {
        auto [Ty, F] = Candidate;
        auto *K = dyn_cast<SCEVConstant>(SE.getMinusSCEV(B, F));
        return Ty == Load->getType() && K && !K->getAPInt().isNegative() &&
               K->getAPInt().ult(Size * U) && !K->getAPInt().urem(Size) &&
               ReadsAll(Mine, Ty, F, Size, U) &&
               ReadsAll(Others, Ty, F, Size, OtherStep);
      });
      if (!Covered)
        return "the remainder and unrolled loops do not load all the indices "
               "the look-ahead may read";
    }
  }
  return nullptr;
}

/// Whether the look-ahead of L may run past L's own iterations into the
/// following iterations of the outer loop O (CSR nests, see the file
/// comment). Returns why not, or an empty string and sets the Nest* members.
std::string LoopPrefetcher::analyzeNest(ArrayRef<AccessGroup *> Chosen) {
  Loop *O = L.getParentLoop();
  Nest = O; // The checks below refer to it; run() resets it on failure.
  if (!O->getLoopPreheader() || !O->getLoopLatch())
    return "the outer loop has no preheader or no single latch";
  // O must run all its iterations, so that every later bag is walked.
  if (const char *OuterWhy = loopCannotClamp(*O))
    return std::string("the outer loop: ") + OuterWhy;
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  if (SE.isLoopInvariant(BTC, O))
    return analyzeBlockNest(Chosen);

  // L's induction {X,+,U} walks [X, E) with E = X + U * (BTC + 1); E must be
  // a load of O at {P+s,+,s}_O and X the same load one outer step earlier.
  const char *Why = "the inner loop's bound is not a value loaded by the "
                    "outer loop";
  for (PHINode &Phi : L.getHeader()->phis()) {
    if (Phi.getType() != BTC->getType())
      continue;
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&Phi));
    if (!AR || AR->getLoop() != &L || !AR->isAffine())
      continue;
    auto *Step = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
    if (!Step || !Step->getAPInt().isStrictlyPositive() ||
        Step->getAPInt().getBitWidth() > 64)
      continue;
    const SCEV *X = AR->getStart();
    const SCEV *E = SE.getAddExpr(
        X, SE.getMulExpr(Step, SE.getAddExpr(BTC, SE.getOne(BTC->getType()))));
    // An unrolled loop's X + U * (BTC + 1) does not fold back into E; a
    // remainder loop ends where the unrolled loop after it starts.
    const SCEVAddRecExpr *MainAR = AR;
    if (!strippedLoad(E)) {
      if (const SCEV *Bound = exitBound(L, AR))
        E = Bound;
      else if (const SCEVAddRecExpr *After =
                   Step->isOne() ? mainAfterPrologue(AR) : nullptr)
        if (const SCEV *Bound = exitBound(*After->getLoop(), After)) {
          MainAR = After;
          E = Bound;
        }
    }
    const Loop *Main = MainAR->getLoop();
    uint64_t MainStep = cast<SCEVConstant>(MainAR->getStepRecurrence(SE))
                            ->getAPInt()
                            .getLimitedValue();
    LoadInst *EndLoad = strippedLoad(E);
    if (!EndLoad || !EndLoad->isSimple() ||
        LI.getLoopFor(EndLoad->getParent()) != O)
      continue;
    auto *EndPtr =
        dyn_cast<SCEVAddRecExpr>(SE.getSCEV(EndLoad->getPointerOperand()));
    if (!EndPtr || EndPtr->getLoop() != O || !EndPtr->isAffine())
      continue;
    const SCEV *OStep = EndPtr->getStepRecurrence(SE);
    Why = "the ranges of the inner loop do not tile: its start is not the "
          "previous end (offsets[b] .. offsets[b+1])";
    // Whether Start is the previous end: a load of offsets[b], or, once GVN
    // has reused the end load of the previous outer iteration, a header phi
    // of that load and of offsets[first] loaded before the outer loop.
    auto IsTiled = [&](const SCEV *Start) {
      const SCEV *Core = Start;
      while (auto *Cast = dyn_cast<SCEVCastExpr>(Core))
        Core = Cast->getOperand(0);
      auto *SU = dyn_cast<SCEVUnknown>(Core);
      if (!SU)
        return false;
      auto *StartLoad = dyn_cast<LoadInst>(SU->getValue());
      const SCEV *StartPtrNext = EndPtr;
      if (auto *SPhi = dyn_cast<PHINode>(SU->getValue());
          SPhi && SPhi->getParent() == O->getHeader() &&
          SPhi->getNumIncomingValues() == 2 &&
          SPhi->getIncomingValueForBlock(O->getLoopLatch()) == EndLoad) {
        StartLoad = dyn_cast<LoadInst>(
            SPhi->getIncomingValueForBlock(O->getLoopPreheader()));
        StartPtrNext = EndPtr->getStart();
      }
      if (!StartLoad || StartLoad->getType() != EndLoad->getType())
        return false;
      // Start must be E with the end load replaced by the start value (the
      // same casts), and the start load one outer step before the end load.
      ValueToSCEVMapTy Map;
      Map[EndLoad] = SU;
      return SCEVParameterRewriter::rewrite(E, SE, Map) == Start &&
             SE.getAddExpr(SE.getSCEV(StartLoad->getPointerOperand()), OStep) ==
                 StartPtrNext;
    };
    NestPrologue = nullptr;
    if (Main != &L || !IsTiled(X)) {
      // Runtime unrolling: a remainder loop walks the start of the tile.
      if (const char *PWhy =
              matchPrologue(*Main, MainAR->getStart(), E, MainStep, IsTiled)) {
        if (PWhy != StringRef(Why))
          Why = PWhy;
        continue;
      }
      if (Main != &L && NestPrologue != &L)
        continue;
    }
    NestMain = Main;
    NestMainStart = MainAR->getStart();
    NestMainStep = MainStep;
    NestEndLoad = EndLoad;
    NestEndAtLast =
        EndPtr->evaluateAtIteration(SE.getBackedgeTakenCount(O), SE);
    NestStart = X;
    NestEnd = E;
    NestStep = Step;
    Why = nullptr;
    break;
  }
  if (Why)
    return Why;

  // The tiles must all be walked: the end load on every outer iteration, L
  // entered on every outer iteration whose range is not empty, and O must
  // run all its iterations.
  if (!runsEveryIteration(NestEndLoad->getParent(), *O))
    return "the inner loop's bound is not loaded on every outer iteration";
  // (With a remainder loop, matchPrologue checked the same for both loops.)
  BasicBlock *Pre = L.getLoopPreheader();
  if (!NestPrologue && !enteredWhenNotEmpty(Pre, *O, NestStart, NestEnd))
    return "the inner loop is not entered on every outer iteration whose "
           "range is not empty";
  auto Expander = accel::createSCEVExpander(SE, DL, "accel.prefetch");
  if (!Expander->isSafeToExpandAt(NestEndAtLast,
                                  O->getLoopPreheader()->getTerminator()) ||
      !Expander->isSafeToExpandAt(NestStart, Pre->getTerminator()) ||
      !Expander->isSafeToExpandAt(NestEnd, Pre->getTerminator()))
    return "the end of the loop nest cannot be computed before the outer loop";
  // The last end is read before the outer loop: nothing in it may write it.
  MemoryLocation EndLoc = MemoryLocation::getBeforeOrAfter(
      NestEndLoad->getPointerOperand(), NestEndLoad->getAAMetadata());
  for (BasicBlock *BB : O->blocks())
    for (Instruction &I : *BB)
      if (I.mayWriteToMemory() && isModSet(AA.getModRefInfo(&I, EndLoc)))
        return "the outer loop may store to the array of the inner loop's "
               "bounds";
  for (AccessGroup *G : Chosen) {
    for (auto [Load, Level] : G->Loads)
      if (const char *LoadWhy =
              notGloballyIndexed(SE.getSCEV(Load->getPointerOperand())))
        return LoadWhy;
    if (chainsMayBeOverwritten(*G, *O))
      return "the outer loop may store to the index arrays of a chain";
  }
  if (NestPrologue)
    if (const char *LoadWhy =
            NestMain == &L
                ? loadsMissing(Chosen, *NestPrologue, NestTileStart, 1)
                : loadsMissing(Chosen, *NestMain, NestMainStart, NestMainStep))
      return LoadWhy;
  return {};
}

/// Whether the look-ahead of L, which runs the same number of iterations T
/// on every iteration of the outer loop O, may continue into O's following
/// iterations: the nest walks one index space in blocks of T (g = T * b + j
/// for O's iteration b and L's iteration j). Legality, as for CSR nests:
/// the look-ahead loads address their arrays by g alone ({A,+,c}_L with
/// A - c * T * b invariant in O, everything else invariant in O), so the
/// look-ahead at L's iteration j + d past T is the load the program does at
/// g + d; O runs all its iterations and enters L on each, so the program
/// loads every g below T * (BTC_O + 1), where the look-ahead is clamped.
/// When instead every outer iteration reads the same indices ({A,+,c}_L
/// with A invariant in O: HPCC's 128 update values advanced in place), the
/// look-ahead past L's last iteration wraps around to iteration
/// j + d - T <= BTC (the next outer iteration loads it), unless O is in its
/// last iteration. The index value read then may be one the loop has yet
/// to overwrite: for the final access of a chain that only aims a prefetch
/// elsewhere; links of chains are not followed when O may store to them.
std::string LoopPrefetcher::analyzeBlockNest(ArrayRef<AccessGroup *> Chosen) {
  Loop *O = Nest;
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  if (!runsEveryIteration(L.getLoopPreheader(), *O))
    return "the inner loop is not entered on every outer iteration";
  Type *Ty = BTC->getType();
  const SCEV *Trips = SE.getAddExpr(BTC, SE.getOne(Ty));
  auto Expander = accel::createSCEVExpander(SE, DL, "accel.prefetch");
  if (!Expander->isSafeToExpandAt(Trips, L.getLoopPreheader()->getTerminator()))
    return "the inner loop's trip count cannot be computed before it";
  // g = T * b + j: L's canonical induction in the global index space; or,
  // when each outer iteration reads the same indices, g = j (wrap around).
  auto IndexedBy = [&](const SCEV *Start) {
    NestStart = Start;
    NestStep = SE.getOne(Ty);
    return all_of(Chosen, [&](AccessGroup *G) {
      return all_of(G->Loads, [&](auto LoadLevel) {
        return !notGloballyIndexed(
            SE.getSCEV(LoadLevel.first->getPointerOperand()));
      });
    });
  };
  NestWrap = false;
  if (!IndexedBy(
          SE.getAddRecExpr(SE.getZero(Ty), Trips, O, SCEV::FlagAnyWrap))) {
    if (!IndexedBy(SE.getZero(Ty)))
      return "the index arrays are neither walked in blocks of the inner "
             "loop's trip count nor read again by each outer iteration";
    NestWrap = true;
  }
  for (AccessGroup *G : Chosen)
    if (chainsMayBeOverwritten(*G, *O))
      return "the outer loop may store to the index arrays of a chain";
  NestBlockTrips = Trips;
  NestMain = &L;
  NestMainStep = 1;
  return {};
}

/// The array a gather reads, for remarks: its GEP's scalar base.
std::string LoopPrefetcher::gatherName(const GatherAccess &GA) const {
  return GA.G.Base ? arrayName(SE, GA.G.Base) : std::string("<vector>");
}

/// Vector gathers and scatters (the loop vectorizer's form of T[f(B[i])]
/// on targets with gathers: AVX2, AVX-512, SVE): the pointer vector is
/// recomputed ahead lane by lane from the wide loads of the index vectors,
/// under the same legality as scalar indirect accesses (the wide loads run
/// on every iteration, the look-ahead is clamped to an iteration the loop
/// runs; a gather feeding an address is never re-issued). Every lane is
/// prefetched (of a scalable vector, its known minimum number of lanes).
void LoopPrefetcher::analyzeGathers(SmallVectorImpl<GatherAccess> &Chosen) {
  const char *ClampWhy = loopCannotClamp(L);
  for (IntrinsicInst *II : Gathers) {
    bool IsScatter = II->getIntrinsicID() == Intrinsic::masked_scatter;
    Value *Ptrs = II->getArgOperand(IsScatter ? 1 : 0);
    GatherAccess GA{II, dyn_cast<Instruction>(Ptrs), 0, {}};
    GA.G.Leader = II;
    GA.G.IsWrite = IsScatter;
    Value *BasePtr = Ptrs;
    if (auto *GEP = dyn_cast<GetElementPtrInst>(Ptrs))
      BasePtr = GEP->getPointerOperand();
    if (BasePtr->getType()->isPointerTy())
      GA.G.Base = SE.getSCEV(BasePtr);
    GA.Lanes = std::min<unsigned>(
        cast<VectorType>(Ptrs->getType())->getElementCount().getKnownMinValue(),
        MaxLinesParam);
    if (!GA.Ptrs || !L.contains(GA.Ptrs))
      continue;
    auto Decline = [&](StringRef Name, const Twine &Why) {
      ++NumAccessesDeclined;
      std::string Text = Why.str();
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, Name, II)
               << "not prefetching the lanes of a "
               << (IsScatter ? "scatter to " : "gather from ")
               << ore::NV("Array", gatherName(GA)) << ": " << Text;
      });
    };
    DependenceFinder Finder(L, LI, DT, SE);
    Finder.AllowVectors = true;
    std::optional<unsigned> Level = Finder.levelOfValue(GA.Ptrs);
    if (!Level) {
      Decline("Gather",
              "cannot compute the addresses ahead: " + Finder.Failure);
      continue;
    }
    if (*Level == 0)
      continue; // Lanes at affine addresses: a strided access.
    if (ClampWhy) {
      Decline("UnknownTripCount", ClampWhy);
      continue;
    }
    GA.G.Level = *Level;
    GA.G.Loads.assign(Finder.Loads.begin(), Finder.Loads.end());
    if (chainsMayBeOverwritten(GA.G, L)) {
      Decline("IndexMayChange",
              "the loop may store to the index arrays of the chain");
      continue;
    }
    if (std::optional<uint64_t> Size =
            GA.G.Base ? knownObjectSize(GA.G.Base) : std::nullopt;
        Size && *Size <= Opts.ResidentBytes) {
      Decline("CacheResident", "the indexed object is only " + Twine(*Size) +
                                   " bytes: it stays in cache");
      continue;
    }
    Chosen.push_back(std::move(GA));
  }
}

//===----------------------------------------------------------------------===//
// Transformation
//===----------------------------------------------------------------------===//

/// The last iteration of L the look-ahead may reach in a nest of blocks:
/// T * (BTC_O - b) + BTC, for O's iteration b, computed at twice the width
/// of L's trip count (it cannot wrap there) and saturated to its type (the
/// look-ahead then stops short of the nest's end, never beyond it).
Value *LoopPrefetcher::blockNestLastIteration() {
  Type *Ty = NestBlockTrips->getType();
  const SCEV *OBTC = SE.getBackedgeTakenCount(Nest);
  unsigned Bits = Ty->getIntegerBitWidth();
  unsigned WideBits =
      std::max(2 * Bits, OBTC->getType()->getIntegerBitWidth() + Bits);
  Type *Wide = IntegerType::get(Ty->getContext(), WideBits);
  const SCEV *OIter =
      SE.getAddRecExpr(SE.getZero(OBTC->getType()), SE.getOne(OBTC->getType()),
                       Nest, SCEV::FlagNUW);
  const SCEV *BlocksLeft =
      SE.getZeroExtendExpr(SE.getMinusSCEV(OBTC, OIter), Wide);
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  const SCEV *Last = SE.getAddExpr(
      SE.getMulExpr(BlocksLeft, SE.getZeroExtendExpr(NestBlockTrips, Wide)),
      SE.getZeroExtendExpr(BTC, Wide));
  const SCEV *Max = SE.getConstant(APInt::getMaxValue(Bits).zext(WideBits));
  const SCEV *Clamped = SE.getTruncateExpr(SE.getUMinExpr(Last, Max), Ty);
  Value *V = Expander->expandCodeFor(
      Clamped, Ty, L.getLoopPreheader()->getTerminator()->getIterator());
  if (auto *I = dyn_cast<Instruction>(V); I && !I->hasName())
    I->setName("accel.last");
  return V;
}

/// The last iteration of L the look-ahead may reach in a CSR nest:
/// (smax(GlobalEnd, E) - X) /u U - 1, where GlobalEnd, the end of the last
/// outer iteration, is loaded in the outer preheader. It is at least BTC.
Value *LoopPrefetcher::nestLastIteration() {
  Instruction *OuterTerm = Nest->getLoopPreheader()->getTerminator();
  Value *Ptr = Expander->expandCodeFor(NestEndAtLast,
                                       NestEndLoad->getPointerOperandType(),
                                       OuterTerm->getIterator());
  IRBuilder<> OuterBuilder(OuterTerm);
  LoadInst *Last = OuterBuilder.CreateAlignedLoad(
      NestEndLoad->getType(), Ptr, NestEndLoad->getAlign(), "accel.nest.end");
  Last->setAAMetadata(NestEndLoad->getAAMetadata());
  ++NumLookaheadLoads;
  ValueToSCEVMapTy Map;
  Map[NestEndLoad] = SE.getUnknown(Last);
  const SCEV *GlobalEnd = SCEVParameterRewriter::rewrite(NestEnd, SE, Map);
  const SCEV *Span =
      SE.getMinusSCEV(SE.getSMaxExpr(GlobalEnd, NestEnd), NestStart);
  const SCEV *LastIter = SE.getMinusSCEV(SE.getUDivExpr(Span, NestStep),
                                         SE.getOne(Span->getType()));
  Value *V = Expander->expandCodeFor(
      LastIter, nullptr, L.getLoopPreheader()->getTerminator()->getIterator());
  if (auto *I = dyn_cast<Instruction>(V); I && !I->hasName())
    I->setName("accel.last");
  return V;
}

/// K = it + umin(BTC - it, D): the iteration \p D ahead, clamped to the last
/// one the loop runs. Emitted once per distance in the header.
Value *LoopPrefetcher::iterationAhead(uint64_t D) {
  Type *Ty = BackedgeCount->getType();
  // D may not fit the trip count's type: umin(Left, D) is then Left.
  unsigned Bits = Ty->getIntegerBitWidth();
  D = std::min(D, Bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << Bits) - 1);
  Value *&K = Ahead[D];
  if (K)
    return K;
  if (!Iteration)
    Iteration = Expander->expandCodeFor(
        SE.getAddRecExpr(SE.getZero(Ty), SE.getOne(Ty), &L, SCEV::FlagNUW), Ty,
        Builder->GetInsertPoint());
  if (!Left)
    Left = Builder->CreateSub(BackedgeCount, Iteration, "accel.left",
                              /*HasNUW=*/true);
  Value *Step = Builder->CreateBinaryIntrinsic(
      Intrinsic::umin, Left, ConstantInt::get(Ty, D), nullptr, "accel.step");
  K = Builder->CreateAdd(Iteration, Step, "accel.iter", /*HasNUW=*/true);
  if (NestWrap) {
    // Past the last iteration, while the outer loop has another one:
    // iteration D - 1 - Left of the next pass (j + D - T), at most BTC.
    Value *Over =
        Builder->CreateICmpULT(Left, ConstantInt::get(Ty, D), "accel.over");
    Value *Wrapped = Builder->CreateBinaryIntrinsic(
        Intrinsic::umin, Builder->CreateSub(ConstantInt::get(Ty, D - 1), Left),
        BackedgeCount, nullptr, "accel.wrapped");
    K = Builder->CreateSelect(Builder->CreateAnd(Over, NestHasNext), Wrapped, K,
                              "accel.iter.next");
  }
  return K;
}

/// \p S (an address or index of L) evaluated at iteration iterationAhead(D).
Value *LoopPrefetcher::expandAt(const SCEV *S, uint64_t D, Type *Ty) {
  const SCEV *K = SE.getUnknown(iterationAhead(D));
  auto AtK = [&](Instruction *I) { return instructionAt(I, D); };
  AtIterationRewriter Rewriter(SE, L, K, AtK);
  return Expander->expandCodeFor(Rewriter.visit(S), Ty,
                                 Builder->GetInsertPoint());
}

Value *LoopPrefetcher::valueAt(Value *V, uint64_t D) {
  auto *I = dyn_cast<Instruction>(V);
  if (!I || !L.contains(I))
    return V;
  if (SE.isSCEVable(I->getType())) {
    const SCEV *S = SE.getSCEV(I);
    if (!isa<SCEVUnknown>(S) || cast<SCEVUnknown>(S)->getValue() != I)
      return expandAt(S, D, I->getType());
  }
  return instructionAt(I, D);
}

/// \p I, an instruction the DependenceFinder accepted, recomputed at
/// iterationAhead(D): loads become look-ahead loads, the rest is cloned.
Value *LoopPrefetcher::instructionAt(Instruction *I, uint64_t D) {
  auto Key = std::make_pair(static_cast<Value *>(I), D);
  auto It = ValuesAt.find(Key);
  if (It != ValuesAt.end())
    return It->second;
  Value *Result;
  if (auto *Load = dyn_cast<LoadInst>(I)) {
    Value *Ptr = Load->getPointerOperand();
    const SCEV *PtrS = SE.getSCEV(Ptr);
    // Unrolled copies read the same array at constant offsets: address them
    // from one expanded pointer, as the loop does, rather than from one
    // loop-invariant base each (which would not fit in registers).
    Value *PtrAt = nullptr;
    for (auto &[OtherD, OtherS, OtherAt] : AheadPtrs)
      if (OtherD == D && OtherS->getType() == PtrS->getType())
        if (auto *Diff =
                dyn_cast<SCEVConstant>(SE.getMinusSCEV(PtrS, OtherS))) {
          PtrAt = Builder->CreatePtrAdd(OtherAt, Diff->getValue(),
                                        Ptr->getName() + ".ahead");
          break;
        }
    if (!PtrAt) {
      PtrAt = expandAt(PtrS, D, Ptr->getType());
      AheadPtrs.push_back({D, PtrS, PtrAt});
    }
    Result = Builder->CreateAlignedLoad(
        Load->getType(), PtrAt, Load->getAlign(), Load->getName() + ".ahead");
    ++NumLookaheadLoads;
  } else {
    SmallVector<Value *, 4> Ops;
    for (Value *Op : I->operands())
      Ops.push_back(valueAt(Op, D));
    Instruction *Clone = I->clone();
    Clone->dropPoisonGeneratingFlags();
    for (auto [Idx, Op] : enumerate(Ops))
      Clone->setOperand(Idx, Op);
    Result = Builder->Insert(Clone, I->getName() + ".ahead");
  }
  ValuesAt[Key] = Result;
  return Result;
}

void LoopPrefetcher::emitPrefetch(const SCEV *Addr, bool IsWrite) {
  Value *Ptr =
      Expander->expandCodeFor(Addr, Addr->getType(), Builder->GetInsertPoint());
  Type *I32 = Builder->getInt32Ty();
  Builder->CreateIntrinsic(Intrinsic::prefetch, {Ptr->getType()},
                           {Ptr, ConstantInt::get(I32, IsWrite ? 1 : 0),
                            ConstantInt::get(I32, 3),
                            ConstantInt::get(I32, 1)});
}

unsigned LoopPrefetcher::emitStrided(const AccessGroup &G, int64_t Stride,
                                     unsigned D) {
  Type *IntTy = SE.getEffectiveSCEVType(G.Base->getType());
  SmallVector<int64_t, 8> Points = linePoints(G);
  // Stride * D + Offset in SCEV's wrapping arithmetic: a prefetch of a
  // wrapped address is harmless, an overflowing int64_t is not.
  const SCEV *Jump =
      SE.getMulExpr(SE.getConstant(IntTy, Stride), SE.getConstant(IntTy, D));
  for (int64_t Offset : Points)
    emitPrefetch(SE.getAddExpr(SE.getAddExpr(G.Base, Jump),
                               SE.getConstant(IntTy, Offset)),
                 G.IsWrite);
  NumStridedPrefetches += Points.size();
  return Points.size();
}

/// The links of \p G's chain, furthest ahead: level l of a chain of G.Level
/// loads is prefetched D * (G.Level + 2 - l) iterations ahead.
void LoopPrefetcher::emitLinks(const AccessGroup &G, unsigned D) {
  for (auto [Link, Level] : G.Loads) {
    const SCEV *Ptr = SE.getSCEV(Link->getPointerOperand());
    uint64_t LinkD = SaturatingMultiply<uint64_t>(D, G.Level + 2 - Level);
    if (Level == 1) {
      std::optional<int64_t> Stride = constantStride(Ptr);
      if (!Stride || uint64_t(std::abs(*Stride)) < minStride())
        continue;
      ++NumIndexPrefetches;
    } else {
      ++NumLinkPrefetches;
    }
    if (!PrefetchedLinks.insert(Link).second)
      continue;
    Value *PtrAt = expandAt(Ptr, LinkD, Ptr->getType());
    emitPrefetch(SE.getUnknown(PtrAt), /*IsWrite=*/false);
  }
}

/// Prefetches every lane of \p GA's pointer vector, recomputed \p D vector
/// iterations ahead (the wide index loads re-issued there, the vector
/// arithmetic cloned). Returns the prefetches emitted.
unsigned LoopPrefetcher::emitGather(const GatherAccess &GA, unsigned D) {
  emitLinks(GA.G, D);
  Value *PtrsAt = valueAt(GA.Ptrs, D);
  for (unsigned Lane = 0; Lane != GA.Lanes; ++Lane)
    emitPrefetch(SE.getUnknown(Builder->CreateExtractElement(
                     PtrsAt, Builder->getInt64(Lane), "accel.lane")),
                 GA.G.IsWrite);
  NumIndirectPrefetches += GA.Lanes;
  return GA.Lanes;
}

unsigned LoopPrefetcher::emitIndirect(const AccessGroup &G, unsigned D) {
  emitLinks(G, D);
  Value *BaseAt = expandAt(G.Base, D, G.Base->getType());
  const SCEV *BaseAtS = SE.getUnknown(BaseAt);
  Type *IntTy = SE.getEffectiveSCEVType(G.Base->getType());
  SmallVector<int64_t, 8> Points = linePoints(G);
  for (int64_t Offset : Points)
    emitPrefetch(SE.getAddExpr(BaseAtS, SE.getConstant(IntTy, Offset)),
                 G.IsWrite);
  NumIndirectPrefetches += Points.size();
  return Points.size();
}

//===----------------------------------------------------------------------===//
// Remarks
//===----------------------------------------------------------------------===//

void LoopPrefetcher::declineLoop(StringRef Name, const Twine &Why) {
  ++NumLoopsDeclined;
  std::string Text = Why.str();
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, Name, L.getStartLoc(),
                                    L.getHeader())
           << Text;
  });
}

void LoopPrefetcher::declineGroup(const AccessGroup &G, StringRef Name,
                                  const Twine &Why) {
  ++NumAccessesDeclined;
  std::string Text = Why.str();
  ORE.emit([&] {
    OptimizationRemarkMissed R(DEBUG_TYPE, Name, G.Leader);
    R << "not prefetching " << ore::NV("Array", arrayName(SE, G.Base));
    if (G.Level)
      R << "[...] via " << ore::NV("Index", chainNames(G));
    return R << ": " << Text;
  });
}

/// The arrays of the loads a group depends on, index array first.
std::string LoopPrefetcher::chainNames(const AccessGroup &G) const {
  SmallVector<std::pair<unsigned, std::string>, 4> Names;
  for (auto [Load, Level] : G.Loads)
    Names.push_back(
        {Level, arrayName(SE, SE.getSCEV(Load->getPointerOperand()))});
  llvm::stable_sort(
      Names, [](const auto &A, const auto &B) { return A.first < B.first; });
  std::string Out;
  for (auto &[Level, Name] : Names) {
    if (StringRef(Out).contains(Name))
      continue;
    Out += Out.empty() ? Name : ", " + Name;
  }
  return Out;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

bool LoopPrefetcher::run() {
  LineSize = Opts.CacheLine ? *Opts.CacheLine : TTI.getCacheLineSize();
  if (!LineSize)
    LineSize = DefaultCacheLine;

  SmallVector<Access, 16> Accesses;
  collectAccesses(Accesses);
  if (Accesses.empty() && Gathers.empty())
    return false;
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB)
      if (auto *II = dyn_cast<IntrinsicInst>(&I))
        if (II->getIntrinsicID() == Intrinsic::prefetch) {
          declineLoop("AlreadyPrefetched",
                      "loop already contains software prefetches");
          return false;
        }
  if (!L.getLoopPreheader() || !L.getLoopLatch()) {
    declineLoop("NotSimplified", "loop has no preheader or no single latch");
    return false;
  }
  unsigned MaxTrips = SE.getSmallConstantMaxTripCount(&L);
  if (MaxTrips && MaxTrips <= MaxShortTripCount) {
    declineLoop("ShortLoop",
                "loop runs at most " + Twine(MaxTrips) + " iterations");
    return false;
  }
  if (Accesses.size() > MaxAccessesPerLoop) {
    declineLoop("TooManyAccesses", "loop has too many memory accesses");
    return false;
  }

  SmallVector<AccessGroup, 8> Groups;
  for (const Access &A : Accesses)
    addToGroups(A, Groups);

  // Classify: affine (level 0) groups are strided candidates, the others
  // indirect. Loads that feed indirect addresses are handled with them.
  SmallVector<AccessGroup *, 4> Indirect;
  SmallVector<AccessGroup *, 8> Affine;
  SmallPtrSet<Instruction *, 8> IndexLoads;
  for (AccessGroup &G : Groups) {
    DependenceFinder Finder(L, LI, DT, SE);
    std::optional<unsigned> Level = Finder.levelOf(G.Base);
    bool IsRow = LI.getLoopFor(G.Leader->getParent()) != &L;
    if (!Level) {
      if (Opts.Indirect)
        declineGroup(G, "UnsupportedAddress",
                     "cannot compute the address ahead: " + Finder.Failure);
      continue;
    }
    G.Level = *Level;
    G.Loads.assign(Finder.Loads.begin(), Finder.Loads.end());
    if (G.Level == 0) {
      if (!IsRow)
        Affine.push_back(&G);
    } else if (Opts.Indirect) {
      Indirect.push_back(&G);
      for (auto [Load, LoadLevel] : G.Loads)
        IndexLoads.insert(Load);
    }
  }

  // A load that is a link of a longer chain is prefetched with that chain,
  // at its staggered distance, not as an access of its own.
  llvm::erase_if(Indirect, [&](AccessGroup *G) {
    return G->Ranges.size() == 1 && IndexLoads.contains(G->Leader);
  });

  uint64_t Cost = iterationCost(L);
  uint64_t Work = iterationWork(L);

  // Strided candidates.
  SmallVector<std::pair<AccessGroup *, int64_t>, 4> Strided;
  if (Opts.Strided)
    for (AccessGroup *G : Affine) {
      std::optional<int64_t> Stride = constantStride(G->Base);
      if (!Stride || IndexLoads.contains(G->Leader))
        continue;
      if (uint64_t(std::abs(*Stride)) < minStride()) {
        declineGroup(*G, "SmallStride",
                     "stride of " + Twine(std::abs(*Stride)) +
                         " bytes is covered by the hardware prefetcher");
        continue;
      }
      if (coversStride(*G, std::abs(*Stride))) {
        declineGroup(*G, "Contiguous",
                     "each iteration reads the " + Twine(std::abs(*Stride)) +
                         " bytes up to the next one: a contiguous stream "
                         "the hardware prefetcher covers");
        continue;
      }
      if (declineCacheResident(*G, "the object"))
        continue;
      if (AllocaInst *Buffer = packingBuffer(*G)) {
        std::string BufferName =
            accel::sourceVariableName(Buffer).empty()
                ? (Buffer->hasName() ? Buffer->getName().str()
                                     : "a stack array")
                : accel::sourceVariableName(Buffer);
        declineGroup(*G, "PackingCopy",
                     "a packing copy into " + BufferName +
                         " reads its source once, in row segments the "
                         "hardware prefetcher follows");
        continue;
      }
      Strided.push_back({G, *Stride});
    }

  // Indirect candidates: legality for the loop, then for each group, then
  // profitability.
  SmallVector<AccessGroup *, 4> Chosen;
  if (!Indirect.empty()) {
    if (const char *Why = loopCannotClamp(L)) {
      declineLoop("UnknownTripCount", Why);
      NumAccessesDeclined += Indirect.size();
      Indirect.clear();
    }
    for (AccessGroup *G : Indirect) {
      if (chainsMayBeOverwritten(*G, L)) {
        declineGroup(*G, "IndexMayChange",
                     "the loop may store to the index arrays of the chain");
        continue;
      }
      if (declineCacheResident(*G, "the indexed object"))
        continue;
      Chosen.push_back(G);
    }
  }

  SmallVector<GatherAccess, 4> ChosenGathers;
  if (Opts.Indirect)
    analyzeGathers(ChosenGathers);
  unsigned GatherLanes = 0;
  for (const GatherAccess &GA : ChosenGathers)
    GatherLanes += GA.Lanes;

  // Look ahead across the outer loop's iterations when the nest walks one
  // index space (CSR), else clamp to L's own last iteration.
  std::string NestWhy;
  if (!Chosen.empty() && ChosenGathers.empty() && L.getParentLoop()) {
    NestWhy = analyzeNest(Chosen);
    Nest = NestWhy.empty() ? L.getParentLoop() : nullptr;
  }

  // Say why the look-ahead of a nested loop stops at its own last iteration.
  if (!Chosen.empty() && !NestWhy.empty())
    ORE.emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "LoopNestLookahead",
                                      L.getStartLoc(), L.getHeader())
             << "look-ahead stops at the loop's last iteration, not at the "
                "end of the loop nest: "
             << NestWhy;
    });

  // A look-ahead across the outer loop's iterations runs past the inner
  // loop's exit, which the reorder buffer cannot (a row end is a taken
  // branch, often mispredicted): it pays off even when the work per access
  // is small.
  // Each lane of a gather is an access of its own.
  uint64_t IndirectAccesses = Chosen.size() + GatherLanes;
  uint64_t WorkPerAccess = IndirectAccesses ? Work / IndirectAccesses : 0;
  if (IndirectAccesses && !Nest && WorkPerAccess < Opts.MinWork) {
    for (AccessGroup *G : Chosen)
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "TooLittleWork", G->Leader)
               << "not prefetching " << ore::NV("Array", arrayName(SE, G->Base))
               << "[...] via " << ore::NV("Index", chainNames(*G))
               << ": the loop does " << ore::NV("Work", WorkPerAccess)
               << " units of work per indirect access (needs "
               << ore::NV("MinWork", Opts.MinWork)
               << "): out-of-order execution already overlaps these misses";
      });
    for (const GatherAccess &GA : ChosenGathers)
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "TooLittleWork", GA.I)
               << "not prefetching the lanes of a gather from "
               << ore::NV("Array", gatherName(GA)) << " via "
               << ore::NV("Index", chainNames(GA.G)) << ": the loop does "
               << ore::NV("Work", WorkPerAccess)
               << " units of work per indirect access (needs "
               << ore::NV("MinWork", Opts.MinWork)
               << "): out-of-order execution already overlaps these misses";
      });
    NumAccessesDeclined += Chosen.size() + ChosenGathers.size();
    Chosen.clear();
    ChosenGathers.clear();
    GatherLanes = 0;
  }
  if (Strided.empty() && Chosen.empty() && ChosenGathers.empty())
    return false;

  unsigned Targets = Strided.size() + Chosen.size() + GatherLanes;
  unsigned D = computeDistance(Cost, Targets);
  // A remainder loop looks ahead as many indices as the unrolled loop after
  // it (whose groups are the remainder's unrolled copies): otherwise the
  // indices just past the unrolled loop's look-ahead at the end of a tile,
  // as many as the next tile's remainder, would not be prefetched.
  if (Nest && NestMain != &L)
    D = std::min<uint64_t>(uint64_t(computeDistance(iterationCost(*NestMain),
                                                    Targets * NestMainStep)) *
                               NestMainStep,
                           TTI.getMaxPrefetchIterationsAhead());
  LLVM_DEBUG(dbgs() << "accel-prefetch: loop " << L.getHeader()->getName()
                    << ": cost " << Cost << " (work " << Work
                    << ") per iteration, distance " << D << ", "
                    << Chosen.size() << " indirect and " << Strided.size()
                    << " strided groups\n");

  // Transform: all new code goes to the top of the header, the trip count
  // to the preheader.
  Expander = accel::createSCEVExpander(SE, DL, "accel.prefetch");
  Builder.emplace(L.getHeader(), accel::firstNonPHIIt(*L.getHeader()));
  if (!Chosen.empty() || !ChosenGathers.empty())
    BackedgeCount =
        Nest && !NestWrap
            ? (NestBlockTrips ? blockNestLastIteration() : nestLastIteration())
            : Expander->expandCodeFor(
                  SE.getBackedgeTakenCount(&L), nullptr,
                  L.getLoopPreheader()->getTerminator()->getIterator());
  if (!Chosen.empty() && Nest && NestWrap) {
    const SCEV *OBTC = SE.getBackedgeTakenCount(Nest);
    const SCEV *OIter =
        SE.getAddRecExpr(SE.getZero(OBTC->getType()),
                         SE.getOne(OBTC->getType()), Nest, SCEV::FlagNUW);
    Instruction *PreTerm = L.getLoopPreheader()->getTerminator();
    Value *OLast =
        Expander->expandCodeFor(OBTC, nullptr, PreTerm->getIterator());
    Value *OIt =
        Expander->expandCodeFor(OIter, OBTC->getType(), PreTerm->getIterator());
    NestHasNext =
        IRBuilder<>(PreTerm).CreateICmpULT(OIt, OLast, "accel.has.next");
  }

  for (auto [G, Stride] : Strided) {
    unsigned Lines = emitStrided(*G, Stride, D);
    ORE.emit([&] {
      OptimizationRemark R(DEBUG_TYPE, "StridedPrefetch", G->Leader);
      R << "prefetched " << ore::NV("Array", arrayName(SE, G->Base))
        << " with stride " << ore::NV("Stride", Stride) << " bytes, "
        << ore::NV("Distance", D) << " iterations ahead, "
        << ore::NV("Lines", Lines) << (Lines == 1 ? " line" : " lines");
      if (G->IsWrite)
        R << " (for writing)";
      return R;
    });
  }
  for (AccessGroup *G : Chosen) {
    unsigned Lines = emitIndirect(*G, D);
    ORE.emit([&] {
      OptimizationRemark R(DEBUG_TYPE, "IndirectPrefetch", G->Leader);
      R << "prefetched " << ore::NV("Array", arrayName(SE, G->Base))
        << "[...] via " << ore::NV("Index", chainNames(*G)) << ", "
        << ore::NV("Distance", D) << " iterations ahead, "
        << ore::NV("Lines", Lines) << (Lines == 1 ? " line" : " lines");
      if (G->IsWrite)
        R << " (for writing)";
      if (Nest)
        R << ", across the iterations of the outer loop";
      return R;
    });
  }
  for (const GatherAccess &GA : ChosenGathers) {
    unsigned Lines = emitGather(GA, D);
    ORE.emit([&] {
      OptimizationRemark R(DEBUG_TYPE, "GatherPrefetch", GA.I);
      R << "prefetched the " << ore::NV("Lines", Lines) << " lanes of a "
        << (GA.G.IsWrite ? "scatter to " : "gather from ")
        << ore::NV("Array", gatherName(GA)) << " via "
        << ore::NV("Index", chainNames(GA.G)) << ", " << ore::NV("Distance", D)
        << " vector iterations ahead";
      return R;
    });
  }
  ++NumLoopsPrefetched;
  return true;
}

static bool isGPUTarget(const Function &F) {
  Triple T(accel::tripleString(*F.getParent()));
  return T.isNVPTX() || T.isAMDGPU() || T.isSPIRV();
}

static bool readsMemory(const Loop &L) {
  return any_of(L.blocks(), [](const BasicBlock *BB) {
    return any_of(*BB, [](const Instruction &I) { return isa<LoadInst>(I); });
  });
}

PreservedAnalyses AccelPrefetchPass::run(Function &F,
                                         FunctionAnalysisManager &AM) {
  if (F.isDeclaration() || F.hasOptNone())
    return PreservedAnalyses::all();
  auto &LI = AM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return PreservedAnalyses::all();
  if (isGPUTarget(F) && !Opts.CacheLine) {
    // GPU threads hide memory latency by switching warps, not by look-ahead,
    // and SPIR-V cannot express llvm.prefetch at all.
    AM.getResult<OptimizationRemarkEmitterAnalysis>(F).emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "GPUTarget",
                                      F.getSubprogram(), &F.getEntryBlock())
             << "not prefetching on a GPU target: threads hide memory "
                "latency (give cache-line=N to prefetch anyway)";
    });
    return PreservedAnalyses::all();
  }
  auto &DT = AM.getResult<DominatorTreeAnalysis>(F);
  auto &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
  auto &TTI = AM.getResult<TargetIRAnalysis>(F);
  auto &AA = AM.getResult<AAManager>(F);
  auto &ORE = AM.getResult<OptimizationRemarkEmitterAnalysis>(F);

  // The pass runs late (OptimizerLast), after SimplifyCFG may have folded
  // preheaders into their predecessors: give back a preheader (where the trip
  // count is computed) to the loops that read memory.
  bool CFGChanged = false;
  for (Loop *L : LI.getLoopsInPreorder())
    if (!L->getLoopPreheader() && readsMemory(*L))
      CFGChanged |= InsertPreheaderForLoop(L, &DT, &LI, /*MSSAU=*/nullptr,
                                           /*PreserveLCSSA=*/false) != nullptr;

  // Outer loops first: their prefetches go to their own headers, so an inner
  // loop analyzed later still sees only the original code.
  bool Changed = false;
  for (Loop *L : LI.getLoopsInPreorder())
    Changed |= LoopPrefetcher(*L, LI, DT, SE, TTI, AA, ORE, Opts).run();
  if (!Changed && !CFGChanged)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  if (!CFGChanged)
    PA.preserveSet<CFGAnalyses>();
  PA.preserve<DominatorTreeAnalysis>();
  PA.preserve<LoopAnalysis>();
  return PA;
}
