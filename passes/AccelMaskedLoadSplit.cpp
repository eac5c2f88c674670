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

namespace {

//===----------------------------------------------------------------------===//
// Strategy 2: index-set splitting
//===----------------------------------------------------------------------===//

/// One copy of the split loop, run for the iterations [Start, End).
struct Segment {
  const SCEV *Start = nullptr, *End = nullptr;
  bool Main = false;
  // Filled by the transformation.
  Value *StartV = nullptr, *EndV = nullptr, *Run = nullptr;
  Value *IVEndV = nullptr;
  BasicBlock *Entry = nullptr; // the block that branches to Header
  ValueToValueMapTy *Map = nullptr;
  BasicBlock *Header = nullptr, *Latch = nullptr;
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
  /// A check of this loop's AddRec, with its k-interval.
  struct Candidate {
    RangeCheck RC;
    const SCEV *KLo = nullptr, *KHi = nullptr; // null: unbounded
  };
  std::optional<Candidate> candidate(const RangeCheck &RC, Instruction *At);
  bool legal();
  bool noWrap(const SCEVAddRecExpr *AR, bool Signed);
  bool exactByFlags(Value *V, bool Signed, unsigned Depth = 0);
  void missed(StringRef Name, const Twine &Why, Instruction *At = nullptr);
  SmallVector<BasicBlock *, 16> foldCopy(ArrayRef<BasicBlock *> Blocks,
                                         Function &F);
  void hoistInvariantLoads(BasicBlock *Header, BasicBlock *Entry,
                           ArrayRef<BasicBlock *> Blocks, Function &F);
  void transform(SmallVectorImpl<Segment> &Segs, ArrayRef<Candidate> Cands,
                 const SCEV *TC);

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  AssumptionCache &AC;
  AAResults &AA;
  OptimizationRemarkEmitter &ORE;
  const AccelMaskedLoadOptions &Opts;
  Type *Wide = nullptr;
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
  // The index takes exactly the values in [VLo, VHi) on the access side, in
  // the signedness of the compare (null: unbounded).
  unsigned Bits = RC.Index->getType()->getIntegerBitWidth();
  unsigned WBits = Wide->getIntegerBitWidth();
  const SCEV *B = SignedPred ? SE.getSignExtendExpr(Bound, Wide)
                             : SE.getZeroExtendExpr(Bound, Wide);
  const SCEV *One = SE.getOne(Wide);
  const SCEV *VLo = nullptr, *VHi = nullptr;
  switch (ICmpInst::getSignedPredicate(RC.Pred)) {
  case ICmpInst::ICMP_SLT:
    VHi = B;
    break;
  case ICmpInst::ICMP_SLE:
    VHi = SE.getAddExpr(B, One);
    break;
  case ICmpInst::ICMP_SGT:
    VLo = SE.getAddExpr(B, One);
    break;
  case ICmpInst::ICMP_SGE:
    VLo = B;
    break;
  default:
    return std::nullopt;
  }
  // Unsigned compares: the index as an unsigned value lies in [0, 2^Bits),
  // or, compared as a signed value, only [0, 2^(Bits-1)) agrees.
  if (!SignedPred) {
    if (!VLo)
      VLo = SE.getZero(Wide);
    if (!VHi)
      VHi =
          SE.getConstant(APInt::getOneBitSet(WBits, Signed ? Bits - 1 : Bits));
    if (Signed)
      VLo = SE.getSMaxExpr(VLo, SE.getZero(Wide));
  }
  // Index = X + s*k exactly (no wrap): turn [VLo, VHi) into a k-interval.
  const SCEV *X = Signed ? SE.getSignExtendExpr(AR->getStart(), Wide)
                         : SE.getZeroExtendExpr(AR->getStart(), Wide);
  Candidate C;
  C.RC = RC;
  if (Step->getAPInt().isOne()) {
    C.KLo = VLo ? SE.getMinusSCEV(VLo, X) : nullptr;
    C.KHi = VHi ? SE.getMinusSCEV(VHi, X) : nullptr;
  } else {
    C.KLo = VHi ? SE.getAddExpr(SE.getMinusSCEV(X, VHi), One) : nullptr;
    C.KHi = VLo ? SE.getAddExpr(SE.getMinusSCEV(X, VLo), One) : nullptr;
  }
  // A lower limit that is never positive bounds nothing.
  if (C.KLo && SE.isKnownNonPositive(C.KLo))
    C.KLo = nullptr;
  return C;
}

/// Whether \p AR takes the values X + s*k, k in [0, BTC], without wrapping
/// as a signed (\p Signed) or unsigned value: its flag, or its last value
/// proven in range in the wide type.
bool LoopSplitter::noWrap(const SCEVAddRecExpr *AR, bool Signed) {
  if (Signed ? AR->hasNoSignedWrap() : AR->hasNoUnsignedWrap())
    return true;
  unsigned Bits = AR->getType()->getIntegerBitWidth();
  unsigned WBits = Wide->getIntegerBitWidth();
  const SCEV *X = Signed ? SE.getSignExtendExpr(AR->getStart(), Wide)
                         : SE.getZeroExtendExpr(AR->getStart(), Wide);
  const SCEV *BTC = SE.getZeroExtendExpr(SE.getBackedgeTakenCount(&L), Wide);
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
/// it cannot prove that.
bool LoopSplitter::exactByFlags(Value *V, bool Signed, unsigned Depth) {
  if (auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(V)))
    if (AR->getLoop() == &L &&
        (Signed ? AR->hasNoSignedWrap() : AR->hasNoUnsignedWrap()))
      return true;
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

bool LoopSplitter::legal() {
  if (!L.getLoopPreheader() || !L.getLoopLatch() ||
      L.getExitingBlock() != L.getLoopLatch() || !L.getUniqueExitBlock() ||
      L.getUniqueExitBlock()->getSinglePredecessor() != L.getLoopLatch()) {
    missed("Shape", "loop not split: it needs a preheader and a single exit "
                    "at its latch");
    return false;
  }
  if (isa<SCEVCouldNotCompute>(SE.getBackedgeTakenCount(&L))) {
    missed("TripCount", "loop not split: its trip count cannot be computed");
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
  Wide = IntegerType::get(L.getHeader()->getContext(), 2 * Bits);

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

  const SCEV *TC =
      SE.getAddExpr(SE.getZeroExtendExpr(BTC, Wide), SE.getOne(Wide));
  const SCEV *KLo = nullptr, *KHi = nullptr;
  for (const Candidate &C : Cands) {
    if (C.KLo)
      KLo = KLo ? SE.getSMaxExpr(KLo, C.KLo) : C.KLo;
    if (C.KHi)
      KHi = KHi ? SE.getSMinExpr(KHi, C.KHi) : C.KHi;
  }
  // Clamp into [0, TC] with KLo <= KHi.
  SmallVector<Segment, 3> Segs;
  const SCEV *Zero = SE.getZero(Wide);
  if (KLo)
    KLo = SE.getSMinExpr(SE.getSMaxExpr(KLo, Zero), TC);
  const SCEV *MainStart = KLo ? KLo : Zero;
  if (KHi)
    KHi = SE.getSMaxExpr(SE.getSMinExpr(KHi, TC), MainStart);
  if (KHi && SE.isKnownPredicate(ICmpInst::ICMP_SGE, KHi, TC))
    KHi = nullptr;
  if (KLo)
    Segs.push_back({Zero, KLo, false});
  Segs.push_back({MainStart, KHi ? KHi : TC, true});
  if (KHi)
    Segs.push_back({KHi, TC, false});
  if (Segs.size() < 2)
    return Formed; // every check is implied: strategy 1's business

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
  transform(Segs, Cands, TC);
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
  return true;
}

void LoopSplitter::transform(SmallVectorImpl<Segment> &Segs,
                             ArrayRef<Candidate> Cands, const SCEV *TC) {
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

  // The iteration bounds, before the loop.
  Instruction *PT = Preheader->getTerminator();
  auto Exp = accel::createSCEVExpander(SE, F.getParent()->getDataLayout(),
                                       "accel.split");
  IRBuilder<> B(PT);
  for (Segment &S : Segs) {
    Value *Start = Exp->expandCodeFor(S.Start, Wide, PT);
    Value *End = Exp->expandCodeFor(S.End, Wide, PT);
    B.SetInsertPoint(PT);
    S.Run = B.CreateICmpSGT(End, Start, "accel.run");
    S.StartV = B.CreateTrunc(Start, CountTy, "accel.start");
    S.EndV = B.CreateTrunc(End, CountTy, "accel.end");
    if (IVNext)
      S.IVEndV = IVStart->isZero()
                     ? S.EndV
                     : B.CreateAdd(Exp->expandCodeFor(IVStart, CountTy, PT),
                                   S.EndV, "accel.iv.end");
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
