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
///     cache-line prefetches. A row an inner loop walks for a trip count
///     known only at run time but the same in every iteration of L (an
///     embedding table's width as an argument) spans that count times its
///     step: its lines past the first are prefetched under branches on
///     conditions computed in the preheader (emitLines).
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
/// The legality and profitability of the look-ahead are described in
/// AccelPrefetchAnalysis.cpp (within one loop) and AccelPrefetchNest.cpp
/// (across loop nests).
///
//===----------------------------------------------------------------------===//

#include "AccelPrefetchAnalysis.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/DomTreeUpdater.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#include <algorithm>

using namespace llvm;
using namespace llvm::accel::prefetch;

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

/// Ranges of the numeric parameters (`accel-prefetch<distance=N;...>`): wide
/// enough for any machine, narrow enough that no arithmetic on them wraps.
constexpr unsigned MaxDistanceParam = 65536;
constexpr unsigned MaxLatencyParam = 100000;
constexpr unsigned MinCacheLineParam = 16;
constexpr unsigned MaxCacheLineParam = 4096;
constexpr unsigned MaxMinStrideParam = 1u << 30;
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
  P.flag("size-check", Opts.SizeCheck);
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
  if (Opts.MinWork)
    OS << "min-work=" << *Opts.MinWork << ';';
  if (Opts.InFlight)
    OS << "in-flight=" << *Opts.InFlight << ';';
  OS << "resident-bytes=" << Opts.ResidentBytes << ';';
  OS << (Opts.Indirect ? "" : "no-") << "indirect;";
  OS << (Opts.Strided ? "" : "no-") << "strided;";
  OS << (Opts.Writes ? "" : "no-") << "writes;";
  OS << (Opts.SizeCheck ? "" : "no-") << "size-check>";
}

//===----------------------------------------------------------------------===//
// Transformation
//===----------------------------------------------------------------------===//

/// The last iteration of L the look-ahead may reach in a nest of blocks:
/// T * (BTC_O - b) + BTC, for O's iteration b, saturated to the type of L's
/// trip count (the look-ahead then stops short of the nest's end, never
/// beyond it). Computed in that type: with Left = BTC_O - b, the value fits
/// exactly when Left <= (max - BTC) / T (T = BTC + 1, at least 1 there: T
/// is 0 only when BTC is max, and Left * 0 + max is max) and is max
/// otherwise. A Left beyond max (BTC_O of a wider type) saturates it too.
Value *LoopPrefetcher::blockNestLastIteration() {
  Type *Ty = NestBlockTrips->getType();
  unsigned Bits = Ty->getIntegerBitWidth();
  const SCEV *OBTC = SE.getBackedgeTakenCount(Nest);
  Type *OTy = OBTC->getType();
  const SCEV *OIter =
      SE.getAddRecExpr(SE.getZero(OTy), SE.getOne(OTy), Nest, SCEV::FlagNUW);
  const SCEV *Left = SE.getMinusSCEV(OBTC, OIter);
  const SCEV *Max = SE.getConstant(APInt::getMaxValue(Bits));
  Left = OTy->getIntegerBitWidth() > Bits
             ? SE.getTruncateExpr(
                   SE.getUMinExpr(Left, SE.getZeroExtendExpr(Max, OTy)), Ty)
             : SE.getNoopOrZeroExtend(Left, Ty);
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  const SCEV *Room = SE.getUDivExpr(
      SE.getMinusSCEV(Max, BTC), SE.getUMaxExpr(NestBlockTrips, SE.getOne(Ty)));
  const SCEV *Last = SE.getAddExpr(SE.getMulExpr(Left, NestBlockTrips), BTC);
  BasicBlock::iterator At =
      L.getLoopPreheader()->getTerminator()->getIterator();
  Value *LeftV = Expander->expandCodeFor(Left, Ty, At);
  Value *RoomV = Expander->expandCodeFor(Room, Ty, At);
  Value *LastV = Expander->expandCodeFor(Last, Ty, At);
  IRBuilder<> B(L.getLoopPreheader()->getTerminator());
  Value *Over = B.CreateICmpUGT(LeftV, RoomV, "accel.past.max");
  return B.CreateSelect(Over, ConstantInt::get(Ty, APInt::getMaxValue(Bits)),
                        LastV, "accel.last");
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

/// Prefetches \p G's lines, at the addresses \p At gives for their offsets
/// from its base. For a row of run-time length (G.End), a line past the
/// least the row can span is prefetched only when the row reaches it: a
/// branch on a condition computed in the preheader. (Rows shorter than
/// max-lines would otherwise repeat a prefetch of their last line, and on
/// an Emerald Rapids Xeon four repeated prefetches per 256-byte row cost
/// most of what prefetching the row gained.) Returns the prefetches emitted.
unsigned LoopPrefetcher::emitLines(const AccessGroup &G,
                                   function_ref<const SCEV *(int64_t)> At) {
  SmallVector<int64_t, 8> Points = linePoints(G);
  Value *End = nullptr;
  int64_t Least = 0;
  if (G.End) {
    Instruction *PreTerm = L.getLoopPreheader()->getTerminator();
    End = Expander->expandCodeFor(G.End, nullptr, PreTerm->getIterator());
    Least = SE.getSignedRangeMin(G.End).getSExtValue();
  }
  DomTreeUpdater DTU(DT, DomTreeUpdater::UpdateStrategy::Eager);
  // The conditional lines nest (`if (reaches 1) { 1; if (reaches 2) ...`):
  // a row stops at one branch past its last line.
  Instruction *Resume = &*Builder->GetInsertPoint();
  for (int64_t Offset : Points) {
    if (End && Offset != Points.front() && Offset >= Least) {
      IRBuilder<> Pre(L.getLoopPreheader()->getTerminator());
      Value *Reaches = Pre.CreateICmpSGT(
          End, ConstantInt::get(End->getType(), Offset), "accel.row.reaches");
      Instruction *Then = SplitBlockAndInsertIfThen(
          Reaches, &*Builder->GetInsertPoint(), /*Unreachable=*/false,
          /*BranchWeights=*/nullptr, &DTU, &LI);
      Builder->SetInsertPoint(Then);
      CFGChanged = true;
    }
    emitPrefetch(At(Offset), G.IsWrite);
  }
  Builder->SetInsertPoint(Resume);
  return Points.size();
}

unsigned LoopPrefetcher::emitStrided(const AccessGroup &G, int64_t Stride,
                                     unsigned D) {
  Type *IntTy = SE.getEffectiveSCEVType(G.Base->getType());
  // Stride * D + Offset in SCEV's wrapping arithmetic: a prefetch of a
  // wrapped address is harmless, an overflowing int64_t is not.
  const SCEV *Jump =
      SE.getMulExpr(SE.getConstant(IntTy, Stride), SE.getConstant(IntTy, D));
  unsigned Lines = emitLines(G, [&](int64_t Offset) {
    return SE.getAddExpr(SE.getAddExpr(G.Base, Jump),
                         SE.getConstant(IntTy, Offset));
  });
  NumStridedPrefetches += Lines;
  return Lines;
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
  unsigned Lines = emitLines(G, [&](int64_t Offset) {
    return SE.getAddExpr(BaseAtS, SE.getConstant(IntTy, Offset));
  });
  NumIndirectPrefetches += Lines;
  return Lines;
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

/// Counts \p N accesses declined with remarks emitted elsewhere.
void LoopPrefetcher::countDeclined(unsigned N) { NumAccessesDeclined += N; }

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

void LoopPrefetcher::declineVolatile(Instruction &I) {
  ++NumAccessesDeclined;
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, "Volatile", &I)
           << "volatile and atomic accesses are not prefetched";
  });
}

/// The array a gather reads, for remarks: its GEP's scalar base.
std::string LoopPrefetcher::gatherName(const GatherAccess &GA) const {
  return GA.G.Base ? arrayName(SE, GA.G.Base) : std::string("<vector>");
}

/// Declines the gather or scatter \p GA with a remark saying \p Why.
void LoopPrefetcher::declineGather(const GatherAccess &GA, StringRef Name,
                                   const Twine &Why) {
  ++NumAccessesDeclined;
  bool IsScatter = GA.I->getIntrinsicID() == Intrinsic::masked_scatter;
  std::string Text = Why.str();
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, Name, GA.I)
           << "not prefetching the lanes of a "
           << (IsScatter ? "scatter to " : "gather from ")
           << ore::NV("Array", gatherName(GA)) << ": " << Text;
  });
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
  // A short loop's look-ahead within itself would always clamp. A nested
  // one may still be the remainder loop of a runtime-unrolled CSR nest,
  // whose look-ahead runs across the nest (decided after analyzeNest).
  unsigned MaxTrips = SE.getSmallConstantMaxTripCount(&L);
  bool Short = MaxTrips && MaxTrips <= MaxShortTripCount;
  auto DeclineShort = [&] {
    declineLoop("ShortLoop",
                "loop runs at most " + Twine(MaxTrips) + " iterations");
    return false;
  };
  if (Short && !L.getParentLoop())
    return DeclineShort();
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

  // Of short loops only the remainder loop of an unrolled nest goes on: it
  // looks ahead as far as the unrolled loop, and without it the indices it
  // walks (a 4-way unrolled row loop's len % 4) would not be prefetched.
  if (Short && !(Nest && NestMain != &L))
    return DeclineShort();

  // Say why the look-ahead of a nested loop stops at its own last iteration.
  if (!Chosen.empty() && !NestWhy.empty())
    ORE.emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "LoopNestLookahead",
                                      L.getStartLoc(), L.getHeader())
             << "look-ahead stops at the loop's last iteration, not at the "
                "end of the loop nest: "
             << NestWhy;
    });

  applyWorkGate(Work, !Strided.empty(), Chosen, ChosenGathers);
  GatherLanes = 0;
  for (const GatherAccess &GA : ChosenGathers)
    GatherLanes += GA.Lanes;
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

  // The copy of the loop that runs over small objects is made before any
  // prefetch exists.
  if (!SizeChecks.empty())
    versionOnSize(SizeChecks);

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
      if (G->End)
        R << " at most (a row of run-time length)";
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
      if (G->End)
        R << " at most (a row of run-time length)";
      if (G->IsWrite)
        R << " (for writing)";
      if (Nest)
        R << ", across the iterations of the outer loop";
      if (BranchExempt.contains(G))
        R << "; its value decides a branch, so the loop's "
          << ore::NV("Work", WorkPerAccess)
          << " units of work per indirect access (below "
          << ore::NV("MinWork", Gate.get().MinWork)
          << ") do not let out-of-order execution overlap the misses";
      R << sizeExemptWhy(G->Leader);
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
        << " vector iterations ahead" << sizeExemptWhy(GA.I);
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

/// Folds back the preheaders given to loops that got no code there, so that
/// a loop the pass declines leaves as it came (an extra block and jump would
/// be the only trace of a pass that did nothing; only the order of the
/// header phis' operands may differ).
static void removeUnusedPreheaders(ArrayRef<BasicBlock *> Inserted,
                                   DominatorTree &DT, LoopInfo &LI) {
  // Lazy: a folded block stays allocated until DTU flushes, after LoopInfo
  // has forgotten it.
  DomTreeUpdater DTU(DT, DomTreeUpdater::UpdateStrategy::Lazy);
  for (BasicBlock *Pre : Inserted) {
    auto *Br = dyn_cast<BranchInst>(Pre->getTerminator());
    if (!Br || Br->isConditional() || any_of(*Pre, [&](Instruction &I) {
          return &I != Br && !isa<PHINode>(I);
        }))
      continue; // The pass put code here.
    if (TryToSimplifyUncondBranchFromEmptyBlock(Pre, &DTU))
      LI.removeBlock(Pre);
  }
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
  FunctionWorkGate Gate(F, Opts);

  // The pass runs late (OptimizerLast), after SimplifyCFG may have folded
  // preheaders into their predecessors: give back a preheader (where the trip
  // count is computed) to the loops that read memory.
  bool CFGChanged = false;
  SmallVector<BasicBlock *, 8> Inserted;
  for (Loop *L : LI.getLoopsInPreorder())
    if (!L->getLoopPreheader() && readsMemory(*L))
      if (BasicBlock *Pre = InsertPreheaderForLoop(
              L, &DT, &LI, /*MSSAU=*/nullptr, /*PreserveLCSSA=*/false)) {
        Inserted.push_back(Pre);
        CFGChanged = true;
      }

  // Outer loops first: their prefetches go to their own headers, so an inner
  // loop analyzed later still sees only the original code.
  bool Changed = false;
  // A copy made for small objects (AccelPrefetchGate.cpp) is not in this
  // list: it stays without prefetches.
  for (Loop *L : LI.getLoopsInPreorder()) {
    LoopPrefetcher LP(*L, LI, DT, SE, TTI, AA, ORE, Opts, Gate);
    Changed |= LP.run();
    CFGChanged |= LP.changedCFG();
  }
  removeUnusedPreheaders(Inserted, DT, LI);
  if (!Changed && !CFGChanged)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  if (!CFGChanged)
    PA.preserveSet<CFGAnalyses>();
  PA.preserve<DominatorTreeAnalysis>();
  PA.preserve<LoopAnalysis>();
  return PA;
}
