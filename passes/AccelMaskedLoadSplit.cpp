//===- AccelMaskedLoadSplit.cpp - Index-set splitting ---------------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Index-set splitting for accel-masked-load (strategy 2 of
/// AccelMaskedLoad.cpp): a loop whose guarded accesses have affine range checks
/// becomes pre / main / post loops, the main loop without the checks.
///
//===----------------------------------------------------------------------===//

#include "AccelMaskedLoadAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/InstSimplifyFolder.h"
#include "llvm/Analysis/InstructionSimplify.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;
using namespace llvm::accel::maskedload;

#define DEBUG_TYPE "accel-masked-load"

STATISTIC(NumLoopsSplit, "Loops split into pre/main/post loops");
STATISTIC(NumChecksSplit, "Range checks removed from split main loops");
STATISTIC(NumSplitsDeclined, "Loops or checks not split");
STATISTIC(NumAllGuarded, "Split loops whose trip count may not fit its type "
                         "(the guarded copy runs them whole when it does not)");

namespace {

//===----------------------------------------------------------------------===//
// Strategy 2: index-set splitting
//===----------------------------------------------------------------------===//

/// Where a copy of the split loop starts or ends: iteration 0, the lower or
/// upper limit of the iterations where every check holds, the trip count.
enum class Edge { Zero, Lo, Hi, Trip };

/// One copy of the split loop, run for the iterations [Start, End).
struct Segment {
  Edge Start = Edge::Zero, End = Edge::Trip;
  bool Main = false;
  // Filled by the transformation.
  Value *StartV = nullptr, *EndV = nullptr, *Run = nullptr;
  Value *IVEndV = nullptr;
  BasicBlock *Entry = nullptr; // the block that branches to Header
  ValueToValueMapTy *Map = nullptr;
  BasicBlock *Header = nullptr, *Latch = nullptr;
};

/// One side of the iterations where a range check holds. The iterations k of
/// [0, TC) with `Q + k < P` (Strict) or `Q + k <= P`, P and Q compared as
/// signed or unsigned values of the index's type, are a prefix [0, Count):
/// the check holds for k < Count (an upper limit) or for k >= Count (a lower
/// limit). Count lies in [0, TC] and P - Q is exact where P >= Q, so nothing
/// needs a type wider than the index's or the trip count's.
struct Limit {
  const SCEV *P = nullptr, *Q = nullptr;
  bool Strict = false, Signed = false, Upper = false;
  /// An unsigned compare taken on signed values (those of the index that are
  /// non-negative, where both orders agree): when Neg is negative, the check
  /// holds for every such index (NegHolds) or for none.
  const SCEV *Neg = nullptr;
  bool NegHolds = false;
};

class LoopSplitter {
public:
  LoopSplitter(Loop &L, LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE,
               AssumptionCache &AC, AAResults &AA,
               OptimizationRemarkEmitter &ORE,
               const AccelMaskedLoadOptions &Opts)
      : L(L), LI(LI), DT(DT), SE(SE), AC(AC), AA(AA), ORE(ORE), Opts(Opts) {}

  bool run();

private:
  /// A check of this loop's AddRec, with the limits of the iterations where
  /// it holds (none: it holds in the whole loop).
  struct Candidate {
    RangeCheck RC;
    SmallVector<Limit, 2> Limits;
  };
  std::optional<Candidate> candidate(const RangeCheck &RC, Instruction *At);
  bool legal();
  bool noWrap(const SCEVAddRecExpr *AR, bool Signed);
  bool unitStepExact(PHINode &Phi, bool Signed);
  bool tripCountFits();
  bool exactByFlags(Value *V, bool Signed, unsigned Depth = 0);
  void missed(StringRef Name, const Twine &Why, Instruction *At = nullptr);
  SmallVector<BasicBlock *, 16> foldCopy(ArrayRef<BasicBlock *> Blocks,
                                         Function &F);
  void hoistInvariantLoads(BasicBlock *Header, BasicBlock *Entry,
                           ArrayRef<BasicBlock *> Blocks, Function &F);
  Value *emitCount(IRBuilderBase &B, SCEVExpander &Exp, const Limit &Lim,
                   Value *BTC, Value *TC);
  void transform(SmallVectorImpl<Segment> &Segs, ArrayRef<Candidate> Cands,
                 bool MayOverflow);

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  AssumptionCache &AC;
  AAResults &AA;
  OptimizationRemarkEmitter &ORE;
  const AccelMaskedLoadOptions &Opts;
  /// The type of the split bounds: the widest of the trip count and the
  /// checked indices.
  IntegerType *Ty = nullptr;
  /// Twice as wide: only for the proofs of noWrap, never computed in.
  Type *ProofTy = nullptr;
};

void LoopSplitter::missed(StringRef Name, const Twine &Why, Instruction *At) {
  std::string Text = Why.str();
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": not splitting " << L.getName() << ": "
                    << Text << "\n");
  ORE.emit([&] {
    if (At)
      return OptimizationRemarkMissed(DEBUG_TYPE, Name, At) << Text;
    return OptimizationRemarkMissed(DEBUG_TYPE, Name, L.getStartLoc(),
                                    L.getHeader())
           << Text;
  });
  ++NumSplitsDeclined;
}

std::optional<LoopSplitter::Candidate>
LoopSplitter::candidate(const RangeCheck &RC, Instruction *At) {
  auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(RC.Index));
  if (!AR || AR->getLoop() != &L)
    return std::nullopt; // not this loop's business
  auto *Step = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
  if (!AR->isAffine() || !Step ||
      !(Step->getAPInt().isOne() || Step->getAPInt().isAllOnes())) {
    missed("Step",
           "range check " + describe(RC) +
               " not split: its index does not step by +1 or -1",
           At);
    return std::nullopt;
  }
  // Signed checks need the index not to wrap as a signed value. Unsigned
  // checks work on unsigned values when those do not wrap, else on the
  // non-negative signed values (where both orders agree).
  bool SignedPred = ICmpInst::isSigned(RC.Pred);
  auto Exact = [&](bool S) {
    return noWrap(AR, S) || exactByFlags(RC.Index, S);
  };
  bool Signed = SignedPred || !Exact(/*Signed=*/false);
  if (!Exact(Signed)) {
    missed("MayWrap",
           "range check " + describe(RC) +
               " not split: SCEV cannot prove that its index does not wrap",
           At);
    return std::nullopt;
  }
  const SCEV *Bound = SE.getSCEV(RC.Bound);
  if (!SE.isLoopInvariant(Bound, &L)) {
    missed("BoundVaries",
           "range check " + describe(RC) +
               " not split: the bound changes inside the loop",
           At);
    return std::nullopt;
  }
  Instruction *PH = L.getLoopPreheader()->getTerminator();
  auto Exp = accel::createSCEVExpander(SE, PH->getModule()->getDataLayout(),
                                       "accel.split");
  if (!Exp->isSafeToExpandAt(Bound, PH) ||
      !Exp->isSafeToExpandAt(AR->getStart(), PH)) {
    missed("NotExpandable",
           "range check " + describe(RC) +
               " not split: its bound or start cannot be "
               "computed before the loop",
           At);
    return std::nullopt;
  }
  // Index = X + s*k exactly for k in [0, BTC], in the order chosen; Last is
  // its value in the last iteration.
  Candidate C;
  C.RC = RC;
  Type *IdxTy = AR->getType();
  const SCEV *X = AR->getStart();
  bool Up = Step->getAPInt().isOne();
  const SCEV *K =
      SE.getTruncateOrZeroExtend(SE.getBackedgeTakenCount(&L), IdxTy);
  const SCEV *Last = Up ? SE.getAddExpr(X, K) : SE.getMinusSCEV(X, K);
  // `Index Pred B` in the order chosen (Pred signed: the signed form of an
  // unsigned compare taken on signed values).
  auto Add = [&](ICmpInst::Predicate Pred, const SCEV *B, const SCEV *Neg,
                 bool NegHolds) {
    auto In = [&](ICmpInst::Predicate SP) {
      return Signed ? SP : ICmpInst::getUnsignedPredicate(SP);
    };
    auto Known = [&](ICmpInst::Predicate SP, const SCEV *LHS, const SCEV *RHS) {
      return SE.isKnownPredicate(In(SP), LHS, RHS);
    };
    bool Less = Pred == ICmpInst::ICMP_SLT || Pred == ICmpInst::ICMP_SLE;
    bool StrictPred = Pred == ICmpInst::ICMP_SLT || Pred == ICmpInst::ICMP_SGT;
    Limit Lim;
    Lim.Signed = Signed;
    // Stepping up, `X + k < B` holds below a limit, `X + k > B` from one on
    // (it fails while X + k <= B); stepping down, `X - k > B` (B + k < X)
    // holds below one, `X - k < B` from one on (it fails while B + k <= X).
    Lim.Upper = Up == Less;
    Lim.Strict = Lim.Upper ? StrictPred : !StrictPred;
    Lim.P = Up ? B : X;
    Lim.Q = Up ? X : B;
    Lim.Neg = Neg;
    Lim.NegHolds = NegHolds;
    // Whether the limit bounds nothing: Count is 0 for a lower one, TC
    // (P - Q > BTC, or >= BTC when not strict) for an upper one.
    bool Trivial;
    if (!Lim.Upper)
      Trivial = Lim.Strict ? Known(ICmpInst::ICMP_SLE, Lim.P, Lim.Q)
                           : Known(ICmpInst::ICMP_SLT, Lim.P, Lim.Q);
    else if (Up)
      Trivial = Lim.Strict ? Known(ICmpInst::ICMP_SGT, Lim.P, Last)
                           : Known(ICmpInst::ICMP_SGE, Lim.P, Last);
    else
      Trivial = Lim.Strict ? Known(ICmpInst::ICMP_SLT, Lim.Q, Last)
                           : Known(ICmpInst::ICMP_SLE, Lim.Q, Last);
    if (Neg) {
      bool IsNeg = SE.isKnownNegative(Neg);
      bool NonNeg = SE.isKnownNonNegative(Neg);
      Trivial = (NegHolds || NonNeg) && (Trivial || IsNeg);
      if (NonNeg)
        Lim.Neg = nullptr;
    }
    if (Trivial) {
      LLVM_DEBUG(dbgs() << DEBUG_TYPE ": " << describe(RC) << " in "
                        << L.getName() << ": its "
                        << (Lim.Upper ? "upper" : "lower")
                        << " limit bounds nothing\n");
      return;
    }
    C.Limits.push_back(Lim);
  };
  if (SignedPred || !Signed) {
    Add(ICmpInst::getSignedPredicate(RC.Pred), Bound, nullptr, false);
  } else {
    // An unsigned compare taken on signed values: only the non-negative
    // indices agree, and a negative B is above all of them.
    ICmpInst::Predicate SP = ICmpInst::getSignedPredicate(RC.Pred);
    Add(ICmpInst::ICMP_SGE, SE.getZero(IdxTy), nullptr, false);
    Add(SP, Bound, Bound,
        /*NegHolds=*/SP == ICmpInst::ICMP_SLT || SP == ICmpInst::ICMP_SLE);
  }
  return C;
}

/// Whether \p AR takes the values X + s*k, k in [0, BTC], without wrapping
/// as a signed (\p Signed) or unsigned value: its flag, or its last value
/// proven in range (in a type twice as wide: a proof, no code).
bool LoopSplitter::noWrap(const SCEVAddRecExpr *AR, bool Signed) {
  if (Signed ? AR->hasNoSignedWrap() : AR->hasNoUnsignedWrap())
    return true;
  unsigned Bits = AR->getType()->getIntegerBitWidth();
  unsigned WBits = ProofTy->getIntegerBitWidth();
  const SCEV *X = Signed ? SE.getSignExtendExpr(AR->getStart(), ProofTy)
                         : SE.getZeroExtendExpr(AR->getStart(), ProofTy);
  const SCEV *BTC = SE.getZeroExtendExpr(SE.getBackedgeTakenCount(&L), ProofTy);
  APInt Max = Signed ? APInt::getSignedMaxValue(Bits).sext(WBits)
                     : APInt::getMaxValue(Bits).zext(WBits);
  APInt Min = Signed ? APInt::getSignedMinValue(Bits).sext(WBits)
                     : APInt::getZero(WBits);
  // The last value, with what the conditions guarding the loop say about
  // its terms (`h > 0` bounds zext(h) by the signed maximum of h's type).
  bool Up = cast<SCEVConstant>(AR->getStepRecurrence(SE))->getAPInt().isOne();
  const SCEV *Last = Up ? SE.getAddExpr(X, BTC) : SE.getMinusSCEV(X, BTC);
  for (const SCEV *E : {Last, SE.applyLoopGuards(Last, &L)}) {
    if (Up ? SE.isKnownPredicate(ICmpInst::ICMP_SLE, E, SE.getConstant(Max))
           : SE.isKnownPredicate(ICmpInst::ICMP_SGE, E, SE.getConstant(Min)))
      return true;
    if (Up ? SE.getSignedRangeMax(E).sle(Max)
           : SE.getSignedRangeMin(E).sge(Min))
      return true;
  }
  return false;
}

/// Whether \p V equals its AddRec without wrap (as a signed or unsigned
/// value) because its own flags say so: `add nsw A, C` with C invariant, A
/// exact, where a wrapped (poison) V would make the program undefined (it
/// decides a branch or an address on every path). SCEV drops such flags when
/// it cannot prove that. A is exact by its AddRec's flag, or proven so
/// (noWrap: `zext i8 %i to i32` of an 8-bit induction as a signed value), or
/// an induction whose own increment is exact (unitStepExact).
bool LoopSplitter::exactByFlags(Value *V, bool Signed, unsigned Depth) {
  if (auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(V));
      AR && AR->getLoop() == &L) {
    if (Signed ? AR->hasNoSignedWrap() : AR->hasNoUnsignedWrap())
      return true;
    auto *Step = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
    if (Depth > 0 && AR->isAffine() && Step &&
        (Step->getAPInt().isOne() || Step->getAPInt().isAllOnes()) &&
        noWrap(AR, Signed))
      return true;
  }
  if (auto *Phi = dyn_cast<PHINode>(V))
    return unitStepExact(*Phi, Signed);
  auto *BO = dyn_cast<BinaryOperator>(V);
  if (!BO || Depth > 4 ||
      (BO->getOpcode() != Instruction::Add &&
       BO->getOpcode() != Instruction::Sub))
    return false;
  if (Signed ? !BO->hasNoSignedWrap() : !BO->hasNoUnsignedWrap())
    return false;
  if (!programUndefinedIfPoison(BO))
    return false;
  Value *A = BO->getOperand(0), *C = BO->getOperand(1);
  if (BO->getOpcode() == Instruction::Add &&
      SE.isLoopInvariant(SE.getSCEV(A), &L))
    std::swap(A, C);
  return SE.isLoopInvariant(SE.getSCEV(C), &L) &&
         exactByFlags(A, Signed, Depth + 1);
}

/// Whether \p Phi, a header phi, steps by 1 (or -1) without wrapping as a
/// signed (\p Signed) or unsigned value in every iteration, the last one
/// included: its latch value is `add nsw %Phi, 1` (`sub nuw %Phi, 1`, ...),
/// computed in every iteration (the latch is the only exit) and making the
/// program undefined were it poison. All its values, from the start to the
/// one after the last iteration, are then exact.
bool LoopSplitter::unitStepExact(PHINode &Phi, bool Signed) {
  if (Phi.getParent() != L.getHeader())
    return false;
  auto *Inc =
      dyn_cast<BinaryOperator>(Phi.getIncomingValueForBlock(L.getLoopLatch()));
  const APInt *C;
  if (!Inc || Inc->getOperand(0) != &Phi ||
      !(Inc->getOpcode() == Instruction::Add ||
        Inc->getOpcode() == Instruction::Sub) ||
      !PatternMatch::match(Inc->getOperand(1), PatternMatch::m_APInt(C)))
    return false;
  // Unsigned, adding -1 is not a step of -1.
  if (Signed ? !Inc->hasNoSignedWrap() || !(C->isOne() || C->isAllOnes())
             : !Inc->hasNoUnsignedWrap() || !C->isOne())
    return false;
  return programUndefinedIfPoison(Inc);
}

/// Whether the trip count BTC + 1 fits in the type of BTC (BTC is not all
/// ones): by the ranges SCEV knows, or because an induction of that type
/// steps by 1 without wrap (unitStepExact): its start and its value after
/// the last iteration, TC apart, are in the type's range.
bool LoopSplitter::tripCountFits() {
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  for (const SCEV *E : {BTC, SE.applyLoopGuards(BTC, &L)})
    if (!SE.getUnsignedRangeMax(E).isAllOnes())
      return true;
  for (PHINode &Phi : L.getHeader()->phis())
    if (Phi.getType() == BTC->getType() &&
        (unitStepExact(Phi, /*Signed=*/true) ||
         unitStepExact(Phi, /*Signed=*/false)))
      return true;
  return false;
}

bool LoopSplitter::legal() {
  if (!L.getLoopPreheader() || !L.getLoopLatch() ||
      L.getExitingBlock() != L.getLoopLatch() || !L.getUniqueExitBlock() ||
      L.getUniqueExitBlock()->getSinglePredecessor() != L.getLoopLatch()) {
    missed("Shape", "loop not split: it needs a preheader and a single exit "
                    "at its latch");
    return false;
  }
  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  Instruction *PT = L.getLoopPreheader()->getTerminator();
  if (isa<SCEVCouldNotCompute>(BTC) ||
      !accel::createSCEVExpander(SE, PT->getModule()->getDataLayout(),
                                 "accel.split")
           ->isSafeToExpandAt(BTC, PT)) {
    missed("TripCount", "loop not split: its trip count cannot be computed "
                        "before the loop");
    return false;
  }
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB)
      if (I.getType()->isTokenTy() ||
          (isa<CallBase>(I) && cast<CallBase>(I).cannotDuplicate())) {
        missed("NotDuplicable",
               "loop not split: it holds an instruction that cannot be "
               "duplicated",
               &I);
        return false;
      }
  return true;
}

bool LoopSplitter::run() {
  if (!Opts.Split)
    return false;
  GuardFinder Finder(LI, DT, SE);
  SmallVector<GuardedAccess, 8> Accesses = Finder.find(L);
  if (Accesses.empty())
    return false;
  // Only checks on this loop's AddRecs matter here.
  bool Any = any_of(Accesses, [&](const GuardedAccess &GA) {
    return any_of(GA.Checks, [&](const RangeCheck &RC) {
      auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(RC.Index));
      return AR && AR->getLoop() == &L;
    });
  });
  if (!Any)
    return false;
  // Loop-simplify and LCSSA form (the exit's phis carry every value used
  // after the loop), only for loops that may be split.
  bool Formed = simplifyLoop(&L, &DT, &LI, &SE, &AC, nullptr, false);
  Formed |= formLCSSARecursively(L, DT, &LI, &SE);
  if (Formed)
    Accesses = Finder.find(L);
  if (!legal())
    return Formed;

  const SCEV *BTC = SE.getBackedgeTakenCount(&L);
  unsigned Bits = BTC->getType()->getIntegerBitWidth();
  for (const GuardedAccess &GA : Accesses)
    for (const RangeCheck &RC : GA.Checks)
      Bits = std::max(Bits, RC.Index->getType()->getIntegerBitWidth());
  Ty = IntegerType::get(L.getHeader()->getContext(), Bits);
  ProofTy = IntegerType::get(L.getHeader()->getContext(), 2 * Bits);

  SmallVector<Candidate, 8> Cands;
  SmallPtrSet<ICmpInst *, 8> Seen;
  for (const GuardedAccess &GA : Accesses)
    for (const RangeCheck &RC : GA.Checks) {
      if (!Seen.insert(RC.Cmp).second)
        continue;
      if (std::optional<Candidate> C = candidate(RC, GA.Access))
        Cands.push_back(*C);
    }
  // A compare taking both values on access sides is not a check.
  erase_if(Cands, [&](const Candidate &C) {
    return any_of(Accesses, [&](const GuardedAccess &GA) {
      return any_of(GA.Checks, [&](const RangeCheck &RC) {
        return RC.Cmp == C.RC.Cmp && RC.Want != C.RC.Want;
      });
    });
  });
  if (Cands.empty())
    return Formed;

  // The main loop runs from the largest lower limit to the smallest upper
  // one (clamped into [0, TC] when the bounds are computed).
  bool HasLo = false, HasHi = false;
  for (const Candidate &C : Cands)
    for (const Limit &Lim : C.Limits)
      (Lim.Upper ? HasHi : HasLo) = true;
  SmallVector<Segment, 3> Segs;
  if (HasLo)
    Segs.push_back({Edge::Zero, Edge::Lo, false});
  Segs.push_back(
      {HasLo ? Edge::Lo : Edge::Zero, HasHi ? Edge::Hi : Edge::Trip, true});
  if (HasHi)
    Segs.push_back({Edge::Hi, Edge::Trip, false});
  if (Segs.size() < 2)
    return Formed; // every check is implied: strategy 1's business
  // TC = BTC + 1 is 2^Bits when BTC is all ones, where it does not fit: the
  // guarded loop runs all of it then (decided before the loop).
  bool MayOverflow = BTC->getType() == Ty && !tripCountFits();
  unsigned Size = 0;
  for (BasicBlock *BB : L.blocks())
    Size += BB->size();
  unsigned Growth = Size * (Segs.size() - 1);
  if (Growth > Opts.MaxGrowth) {
    missed("TooLarge", "loop not split: the copies would add " + Twine(Growth) +
                           " instructions, more than "
                           "max-growth=" +
                           Twine(Opts.MaxGrowth));
    return Formed;
  }
  transform(Segs, Cands, MayOverflow);
  ++NumLoopsSplit;
  NumChecksSplit += Cands.size();
  ORE.emit([&] {
    OptimizationRemark R(DEBUG_TYPE, "Split", L.getStartLoc(), L.getHeader());
    R << "loop split into " << Twine(Segs.size()).str()
      << " loops; the main loop runs without the range checks ";
    ListSeparator LS;
    for (const Candidate &C : Cands)
      R << LS << describe(C.RC);
    return R;
  });
  if (MayOverflow) {
    ++NumAllGuarded;
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": " << L.getName()
                      << ": the trip count may be 2^" << Bits
                      << ": the guarded loop runs all of it then\n");
    ORE.emit([&] {
      return OptimizationRemarkAnalysis(DEBUG_TYPE, "AllGuarded",
                                        L.getStartLoc(), L.getHeader())
             << "the trip count may be 2^" << Twine(Bits).str()
             << " (more than its type holds): the loop runs with its checks "
                "for all iterations when it is";
    });
  }
  return true;
}

/// Count (see Limit) of \p Lim, in [0, TC] when TC fits in Ty: P - Q is
/// exact in the index's type where P is ahead of Q, and is clamped to TC (or
/// to BTC, plus one: TC itself would not do when P - Q + 1 does not fit).
Value *LoopSplitter::emitCount(IRBuilderBase &B, SCEVExpander &Exp,
                               const Limit &Lim, Value *BTC, Value *TC) {
  Instruction *PT = L.getLoopPreheader()->getTerminator();
  Type *IdxTy = Lim.P->getType();
  Value *P = Exp.expandCodeFor(Lim.P, IdxTy, PT);
  Value *Q = Exp.expandCodeFor(Lim.Q, IdxTy, PT);
  Value *Neg = Lim.Neg ? Exp.expandCodeFor(Lim.Neg, IdxTy, PT) : nullptr;
  B.SetInsertPoint(PT);
  ICmpInst::Predicate Pred =
      Lim.Strict ? ICmpInst::ICMP_SGT : ICmpInst::ICMP_SGE;
  if (!Lim.Signed)
    Pred = ICmpInst::getUnsignedPredicate(Pred);
  Value *Ahead = B.CreateICmp(Pred, P, Q, "accel.ahead");
  Value *Diff = B.CreateZExt(B.CreateSub(P, Q, "accel.diff"), Ty);
  Value *N =
      Lim.Strict
          ? B.CreateBinaryIntrinsic(Intrinsic::umin, Diff, TC)
          : B.CreateAdd(B.CreateBinaryIntrinsic(Intrinsic::umin, Diff, BTC),
                        ConstantInt::get(Ty, 1));
  const char *Name = Lim.Upper ? "accel.hi" : "accel.lo";
  Value *Zero = ConstantInt::get(Ty, 0);
  Value *Count = B.CreateSelect(Ahead, N, Zero, Name);
  if (Neg) {
    // Where the check holds for every index (or none), an upper limit is TC
    // (or 0), a lower one 0 (or TC).
    Value *IsNeg =
        B.CreateICmpSLT(Neg, ConstantInt::get(IdxTy, 0), "accel.neg");
    Count = B.CreateSelect(IsNeg, Lim.NegHolds == Lim.Upper ? TC : Zero, Count,
                           Name);
  }
  return Count;
}

void LoopSplitter::transform(SmallVectorImpl<Segment> &Segs,
                             ArrayRef<Candidate> Cands, bool MayOverflow) {
  BasicBlock *Preheader = L.getLoopPreheader();
  BasicBlock *Header = L.getHeader();
  BasicBlock *Latch = L.getLoopLatch();
  BasicBlock *Exit = L.getUniqueExitBlock();
  Function &F = *Header->getParent();
  LLVMContext &Ctx = F.getContext();
  Type *CountTy = SE.getBackedgeTakenCount(&L)->getType();

  // Values carried from one copy to the next: header phis' latch values and
  // the values used after the loop (LCSSA phis of the exit block).
  SmallVector<Value *, 8> Carried;
  SmallVector<Value *, 8> Initial;
  for (PHINode &Phi : Header->phis()) {
    Carried.push_back(Phi.getIncomingValueForBlock(Latch));
    Initial.push_back(Phi.getIncomingValueForBlock(Preheader));
  }
  for (PHINode &Phi : Exit->phis()) {
    Carried.push_back(Phi.getIncomingValueForBlock(Latch));
    Initial.push_back(PoisonValue::get(Phi.getType()));
  }

  // A unit induction of the trip count's type counts the iterations: its
  // latch value is IVStart + k + 1 after iteration k.
  Value *IVNext = nullptr;
  const SCEV *IVStart = nullptr;
  for (PHINode &Phi : Header->phis()) {
    auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&Phi));
    if (Phi.getType() != CountTy || !AR || AR->getLoop() != &L ||
        !AR->isAffine() || !AR->getStepRecurrence(SE)->isOne())
      continue;
    IVNext = Phi.getIncomingValueForBlock(Latch);
    IVStart = AR->getStart();
    break;
  }

  // The iteration bounds, before the loop, in Ty: the largest lower limit
  // and the smallest upper one (at least the lower one), each in [0, TC].
  Instruction *PT = Preheader->getTerminator();
  auto Exp = accel::createSCEVExpander(SE, F.getParent()->getDataLayout(),
                                       "accel.split");
  IRBuilder<InstSimplifyFolder> B(Ctx, InstSimplifyFolder(F.getDataLayout()));
  const SCEV *BTCS = SE.getNoopOrZeroExtend(SE.getBackedgeTakenCount(&L), Ty);
  bool NeedBTC =
      MayOverflow || any_of(Cands, [](const Candidate &C) {
        return any_of(C.Limits, [](const Limit &Lim) { return !Lim.Strict; });
      });
  Value *BTC = NeedBTC ? Exp->expandCodeFor(BTCS, Ty, PT) : nullptr;
  Value *TC = Exp->expandCodeFor(SE.getAddExpr(BTCS, SE.getOne(Ty)), Ty, PT);
  Value *KLo = nullptr, *KHi = nullptr;
  SmallVector<const Limit *, 8> Done;
  for (const Candidate &C : Cands)
    for (const Limit &Lim : C.Limits) {
      // Two unsigned checks on signed values share `Index >= 0`.
      if (any_of(Done, [&](const Limit *D) {
            return D->P == Lim.P && D->Q == Lim.Q && D->Strict == Lim.Strict &&
                   D->Signed == Lim.Signed && D->Upper == Lim.Upper &&
                   D->Neg == Lim.Neg && D->NegHolds == Lim.NegHolds;
          }))
        continue;
      Done.push_back(&Lim);
      Value *Count = emitCount(B, *Exp, Lim, BTC, TC);
      Value *&K = Lim.Upper ? KHi : KLo;
      K = K ? B.CreateBinaryIntrinsic(
                  Lim.Upper ? Intrinsic::umin : Intrinsic::umax, K, Count, {},
                  Lim.Upper ? "accel.hi" : "accel.lo")
            : Count;
    }
  B.SetInsertPoint(PT);
  Value *Zero = ConstantInt::get(Ty, 0);
  if (KLo && KHi)
    KHi = B.CreateBinaryIntrinsic(Intrinsic::umax, KHi, KLo, {}, "accel.hi");
  auto At = [&](Edge E) -> Value * {
    switch (E) {
    case Edge::Zero:
      return Zero;
    case Edge::Lo:
      return KLo;
    case Edge::Hi:
      return KHi;
    case Edge::Trip:
      return TC;
    }
    llvm_unreachable("unknown edge");
  };
  // When TC may be 2^Bits (BTC all ones, TC then 0 in Ty and the limits
  // meaningless), the first guarded copy runs all iterations and the others
  // none: from 0 to 2^Bits, 0 again in Bits bits, which its exit test (k + 1
  // == End, in Bits bits) reaches after 2^Bits iterations.
  Value *AllGuarded =
      MayOverflow ? B.CreateICmpEQ(BTC, ConstantInt::getAllOnesValue(Ty),
                                   "accel.all.guarded")
                  : nullptr;
  unsigned Guarded = Segs.front().Main ? Segs.size() - 1 : 0;
  for (unsigned I = 0; I < Segs.size(); ++I) {
    Segment &S = Segs[I];
    Value *Start = At(S.Start), *End = At(S.End);
    S.Run = B.CreateICmpUGT(End, Start, "accel.run");
    if (AllGuarded && I == Guarded) {
      S.Run = B.CreateOr(AllGuarded, S.Run, "accel.run");
      Start = B.CreateSelect(AllGuarded, Zero, Start, "accel.from");
      if (S.End != Edge::Trip)
        End = B.CreateSelect(AllGuarded, Zero, End, "accel.to");
    } else if (AllGuarded) {
      S.Run = B.CreateAnd(B.CreateNot(AllGuarded), S.Run, "accel.run");
    }
    S.StartV = B.CreateTrunc(Start, CountTy, "accel.start");
    S.EndV = B.CreateTrunc(End, CountTy, "accel.end");
    if (IVNext) {
      Value *IVStartV = IVStart->isZero()
                            ? nullptr
                            : Exp->expandCodeFor(IVStart, CountTy, PT);
      B.SetInsertPoint(PT);
      S.IVEndV =
          IVStartV ? B.CreateAdd(IVStartV, S.EndV, "accel.iv.end") : S.EndV;
    }
  }

  // Clone the loop for every segment but the first.
  SmallVector<std::unique_ptr<ValueToValueMapTy>, 3> Maps;
  SmallVector<BasicBlock *, 16> LoopBlocks(L.blocks());
  for (unsigned I = 0; I < Segs.size(); ++I) {
    Maps.push_back(std::make_unique<ValueToValueMapTy>());
    Segment &S = Segs[I];
    S.Map = Maps.back().get();
    if (I == 0) {
      S.Header = Header;
      S.Latch = Latch;
      continue;
    }
    SmallVector<BasicBlock *, 16> NewBlocks;
    const char *Suffix = S.Main ? ".main" : ".post";
    for (BasicBlock *BB : LoopBlocks) {
      BasicBlock *NB = CloneBasicBlock(BB, *S.Map, Suffix, &F);
      NB->moveBefore(Exit);
      (*S.Map)[BB] = NB;
      NewBlocks.push_back(NB);
    }
    remapInstructionsInBlocks(NewBlocks, *S.Map);
    S.Header = cast<BasicBlock>((*S.Map)[Header]);
    S.Latch = cast<BasicBlock>((*S.Map)[Latch]);
  }
  auto Mapped = [&](Segment &S, Value *V) -> Value * {
    if (Value *M = S.Map->lookup(V))
      return M;
    return V;
  };

  // Bridges: Dispatch[I] decides whether segment I runs; Dispatch[0] is the
  // preheader, the block after the last segment is the exit.
  SmallVector<BasicBlock *, 4> Dispatch{Preheader};
  SmallVector<SmallVector<Value *, 8>, 4> Incoming{Initial};
  for (unsigned I = 1; I < Segs.size(); ++I) {
    BasicBlock *D = BasicBlock::Create(Ctx, "accel.bridge", &F, Exit);
    IRBuilder<> DB(D);
    SmallVector<Value *, 8> Vals;
    for (unsigned V = 0; V < Carried.size(); ++V) {
      PHINode *P = DB.CreatePHI(Carried[V]->getType(), 2, "accel.carry");
      P->addIncoming(Incoming.back()[V], Dispatch.back());
      P->addIncoming(Mapped(Segs[I - 1], Carried[V]), Segs[I - 1].Latch);
      Vals.push_back(P);
    }
    Dispatch.push_back(D);
    Incoming.push_back(std::move(Vals));
  }

  unsigned NumHeaderPhis = 0;
  for (PHINode &Phi : Header->phis()) {
    (void)Phi;
    ++NumHeaderPhis;
  }
  for (unsigned I = 0; I < Segs.size(); ++I) {
    Segment &S = Segs[I];
    BasicBlock *Next = I + 1 < Segs.size() ? Dispatch[I + 1] : Exit;
    // Entry: from the dispatch block, with the carried values.
    if (I > 0) {
      unsigned V = 0;
      for (PHINode &Phi : S.Header->phis()) {
        if (V == NumHeaderPhis)
          break;
        int Idx = Phi.getBasicBlockIndex(Preheader);
        Phi.setIncomingBlock(Idx, Dispatch[I]);
        Phi.setIncomingValue(Idx, Incoming[I][V]);
        ++V;
      }
    }
    if (I == 0)
      Dispatch[I]->getTerminator()->eraseFromParent();
    IRBuilder<> DB(Dispatch[I]);
    DB.CreateCondBr(S.Run, S.Header, Next);
    S.Entry = Dispatch[I];
    // Exit: after End - Start iterations, counted by the loop's own unit
    // induction when it has one (its next value is IVStart + k + 1), else
    // by a new counter from Start.
    auto *OldBr = cast<BranchInst>(S.Latch->getTerminator());
    IRBuilder<> LB(OldBr);
    Value *More;
    if (IVNext) {
      More = LB.CreateICmpNE(Mapped(S, IVNext), S.IVEndV, "accel.more");
    } else {
      IRBuilder<> HB(S.Header, S.Header->begin());
      PHINode *K = HB.CreatePHI(CountTy, 2, "accel.k");
      K->addIncoming(S.StartV, Dispatch[I]);
      Value *KNext =
          LB.CreateAdd(K, ConstantInt::get(CountTy, 1), "accel.k.next");
      K->addIncoming(KNext, S.Latch);
      More = LB.CreateICmpNE(KNext, S.EndV, "accel.more");
    }
    BranchInst *NewBr = LB.CreateCondBr(More, S.Header, Next);
    NewBr->copyMetadata(*OldBr, {LLVMContext::MD_loop, LLVMContext::MD_dbg});
    Value *OldCond = OldBr->getCondition();
    OldBr->eraseFromParent();
    RecursivelyDeleteTriviallyDeadInstructions(OldCond);
  }

  // The exit's LCSSA phis now come from the last bridge or the last copy.
  unsigned V = NumHeaderPhis;
  Segment &LastSeg = Segs.back();
  for (PHINode &Phi : Exit->phis()) {
    Phi.removeIncomingValue(Latch, /*DeletePHIIfEmpty=*/false);
    Phi.addIncoming(Incoming.back()[V], Dispatch.back());
    Phi.addIncoming(Mapped(LastSeg, Carried[V]), LastSeg.Latch);
    ++V;
  }

  // The main copy runs without the checks.
  for (Segment &S : Segs) {
    if (!S.Main)
      continue;
    for (const Candidate &C : Cands) {
      auto *Cmp = cast<ICmpInst>(Mapped(S, C.RC.Cmp));
      Cmp->replaceAllUsesWith(ConstantInt::getBool(Ctx, C.RC.Want));
      RecursivelyDeleteTriviallyDeadInstructions(Cmp);
    }
    SmallVector<BasicBlock *, 16> Blocks;
    for (BasicBlock *BB : LoopBlocks)
      Blocks.push_back(cast<BasicBlock>(Mapped(S, BB)));
    SmallVector<BasicBlock *, 16> Left = foldCopy(Blocks, F);
    // Alias queries may look at dominance: give them the current CFG.
    DT.recalculate(F);
    hoistInvariantLoads(S.Header, S.Entry, Left, F);
  }
  (void)AC;
}

/// Folds what the removed checks decided in the blocks of a loop copy: the
/// vectorizer runs next, before any SimplifyCFG, and would otherwise see
/// branches on constants.
SmallVector<BasicBlock *, 16>
LoopSplitter::foldCopy(ArrayRef<BasicBlock *> Blocks, Function &F) {
  const DataLayout &DL = F.getDataLayout();
  bool Folded = true;
  while (Folded) {
    Folded = false;
    for (BasicBlock *BB : Blocks)
      for (Instruction &I : make_early_inc_range(*BB)) {
        if (isa<PHINode>(I) || I.isTerminator())
          continue;
        if (I.use_empty() || I.mayHaveSideEffects())
          continue;
        if (Value *V = simplifyInstruction(&I, SimplifyQuery(DL, &I))) {
          if (V == &I)
            continue;
          I.replaceAllUsesWith(V);
          I.eraseFromParent();
          Folded = true;
        }
      }
    for (BasicBlock *BB : Blocks)
      Folded |= ConstantFoldTerminator(BB, /*DeleteDeadConditions=*/true);
  }
  SmallPtrSet<BasicBlock *, 16> Live(Blocks.begin(), Blocks.end());
  removeUnreachableBlocks(F);
  // Chains of blocks left with one predecessor become one block: the
  // vectorizer's cost model counts every branch, and a body that looks
  // larger than it is is not interleaved.
  SmallVector<WeakVH, 16> Left;
  for (BasicBlock &BB : F)
    if (Live.count(&BB))
      Left.push_back(&BB);
  for (WeakVH &H : Left)
    if (auto *BB = dyn_cast_or_null<BasicBlock>(H))
      if (BasicBlock *Pred = BB->getSinglePredecessor())
        if (Pred != BB && Pred->getSingleSuccessor() == BB)
          MergeBlockIntoPredecessor(BB);
  SmallVector<BasicBlock *, 16> Survivors;
  for (WeakVH &H : Left)
    if (auto *BB = dyn_cast_or_null<BasicBlock>(H))
      Survivors.push_back(BB);
  return Survivors;
}

/// Hoists the loads of the main copy that were conditional in the original
/// loop and are invariant now (a convolution's weights): in a new preheader
/// that runs only when the main loop does, since the header loads them on its
/// first iteration. The vectorizer's cost model (and its interleaving
/// decision) would count them in the loop.
void LoopSplitter::hoistInvariantLoads(BasicBlock *Header, BasicBlock *Entry,
                                       ArrayRef<BasicBlock *> Blocks,
                                       Function &F) {
  SmallPtrSet<BasicBlock *, 16> InCopy(Blocks.begin(), Blocks.end());
  SmallVector<Instruction *, 8> Writes;
  for (BasicBlock *BB : Blocks)
    for (Instruction &I : *BB)
      if (I.mayWriteToMemory())
        Writes.push_back(&I);
  auto Invariant = [&](Value *V) {
    auto *I = dyn_cast<Instruction>(V);
    return !I || !InCopy.count(I->getParent());
  };
  SmallVector<LoadInst *, 8> Hoist;
  for (Instruction &I : *Header) {
    if (auto *LD = dyn_cast<LoadInst>(&I)) {
      MemoryLocation Loc = MemoryLocation::get(LD);
      if (LD->isSimple() && Invariant(LD->getPointerOperand()) &&
          all_of(Writes, [&](Instruction *W) {
            auto *ST = dyn_cast<StoreInst>(W);
            return ST && AA.isNoAlias(MemoryLocation::get(ST), Loc);
          }))
        Hoist.push_back(LD);
    }
    if (!isGuaranteedToTransferExecutionToSuccessor(&I))
      break;
  }
  if (Hoist.empty())
    return;
  BasicBlock *PH =
      BasicBlock::Create(F.getContext(), "accel.main.ph", &F, Header);
  BranchInst::Create(Header, PH);
  Entry->getTerminator()->replaceSuccessorWith(Header, PH);
  for (PHINode &Phi : Header->phis())
    Phi.replaceIncomingBlockWith(Entry, PH);
  for (LoadInst *LD : Hoist)
    LD->moveBefore(*PH, PH->getTerminator()->getIterator());
}

} // namespace

bool llvm::accel::maskedload::splitLoop(Loop &L, LoopInfo &LI,
                                        DominatorTree &DT, ScalarEvolution &SE,
                                        AssumptionCache &AC, AAResults &AA,
                                        OptimizationRemarkEmitter &ORE,
                                        const AccelMaskedLoadOptions &Opts) {
  return LoopSplitter(L, LI, DT, SE, AC, AA, ORE, Opts).run();
}
