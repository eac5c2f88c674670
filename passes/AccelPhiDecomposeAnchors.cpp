//===- AccelPhiDecomposeAnchors.cpp - Static shape anchors at phis --------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The shape anchors of accel-phi-decompose (the analysis half of the pass;
/// AccelPhiDecompose.cpp splits the phis): sizes merged by a phi that are
/// equal on every path by llvm.assume are folded to one value, and what every
/// path knows of a size-like phi or select -- a power-of-two divisibility, an
/// unsigned range -- that the merged value is not known to have is stated
/// once, as llvm.assume, where the paths converge. SCEV (applyLoopGuards),
/// ValueTracking and so the loop vectorizer and InstCombine see it there:
/// with the trip count known to be a multiple of the vector step, the
/// vectorized loop needs no remainder.
///
//===----------------------------------------------------------------------===//

#include "AccelPhiDecompose.h"
#include "Compat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/ConstantRange.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/KnownBits.h"

#include <optional>
#include <string>

using namespace llvm;
using namespace llvm::PatternMatch;

#define DEBUG_TYPE "accel-phi-decompose"

STATISTIC(NumEqualFolds, "Phis folded because their incoming values are equal");
STATISTIC(NumDivisibilityAnchors, "Divisibility facts stated at phis");
STATISTIC(NumRangeAnchors, "Range facts stated at phis");

/// Whether replacing \p PN by \p V keeps the IR valid and in LCSSA form: \p V
/// dominates the phi's block, and is not defined in a loop the block is not
/// in.
bool llvm::accel::replacementKeepsLCSSA(PHINode &PN, Value *V,
                                        DominatorTree &DT, LoopInfo &LI) {
  auto *I = dyn_cast<Instruction>(V);
  if (!I)
    return true;
  BasicBlock *BB = PN.getParent();
  if (I->getParent() == BB || !DT.dominates(I->getParent(), BB))
    return false;
  if (Loop *L = LI.getLoopFor(I->getParent()))
    return L->contains(BB);
  return true;
}

namespace {

class ShapeAnchors {
public:
  ShapeAnchors(Function &F, DominatorTree &DT, LoopInfo &LI,
               AssumptionCache &AC, OptimizationRemarkEmitter &ORE)
      : F(F), DT(DT), LI(LI), AC(AC), ORE(ORE),
        DL(F.getParent()->getDataLayout()) {}

  bool run();

private:
  bool foldEqualByAssume(PHINode &PN);
  bool isSizeLike(Instruction &V);
  bool decidesBranch(Instruction &V);
  bool stateFacts(Instruction &V);

  Function &F;
  DominatorTree &DT;
  LoopInfo &LI;
  AssumptionCache &AC;
  OptimizationRemarkEmitter &ORE;
  const DataLayout &DL;
};

} // namespace

/// Whether llvm.assume(A == B) holds where \p PN's block starts.
static bool equalByAssume(Value *A, Value *B, PHINode &PN, AssumptionCache &AC,
                          DominatorTree &DT) {
  Instruction *Ctx = &*PN.getParent()->getFirstInsertionPt();
  for (auto &VH : AC.assumptionsFor(A)) {
    auto *Assume =
        dyn_cast_or_null<AssumeInst>(static_cast<Value *>(VH.Assume));
    if (!Assume)
      continue;
    auto *Cmp = dyn_cast<ICmpInst>(Assume->getArgOperand(0));
    if (!Cmp || Cmp->getPredicate() != ICmpInst::ICMP_EQ)
      continue;
    Value *X = Cmp->getOperand(0), *Y = Cmp->getOperand(1);
    if (!((X == A && Y == B) || (X == B && Y == A)))
      continue;
    if (isValidAssumeForContext(Assume, Ctx, &DT))
      return true;
  }
  return false;
}

/// Folds \p PN when its incoming values are equal by llvm.assume facts (the
/// same value or the same constant are folded when parts are made, and by
/// InstSimplify for any other phi). Integers only: pointers that compare
/// equal may still differ in provenance.
bool ShapeAnchors::foldEqualByAssume(PHINode &PN) {
  if (!PN.getType()->isIntegerTy() || PN.getNumIncomingValues() < 2)
    return false;
  SmallVector<Value *, 4> Distinct;
  for (Value *In : PN.incoming_values())
    if (In != &PN && !is_contained(Distinct, In))
      Distinct.push_back(In);
  if (Distinct.size() < 2)
    return false;
  for (Value *R : Distinct) {
    if (!accel::replacementKeepsLCSSA(PN, R, DT, LI))
      continue;
    if (!all_of(Distinct, [&](Value *X) {
          return X == R || equalByAssume(X, R, PN, AC, DT);
        }))
      continue;
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": equal incoming values, folded " << PN
                      << " to " << *R << "\n");
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "EqualIncoming", &PN)
             << "folded phi " << ore::NV("Phi", PN.getName())
             << ": its incoming values are equal by llvm.assume";
    });
    PN.replaceAllUsesWith(R);
    PN.eraseFromParent();
    ++NumEqualFolds;
    return true;
  }
  return false;
}

/// Whether \p V is a size, bound, index or stride of some loop that does
/// not contain it: it reaches (directly or through one cast or arithmetic
/// step) a compare, a GEP or a multiply inside such a loop.
bool ShapeAnchors::isSizeLike(Instruction &V) {
  BasicBlock *BB = V.getParent();
  auto InOuterLoopUse = [&](Instruction *U) {
    Loop *L = LI.getLoopFor(U->getParent());
    return L && !L->contains(BB);
  };
  auto IsSizeUse = [](Instruction *U) {
    return isa<ICmpInst>(U) || isa<GetElementPtrInst>(U) ||
           match(U, m_Mul(m_Value(), m_Value())) ||
           match(U, m_Shl(m_Value(), m_Value()));
  };
  for (User *U1 : V.users()) {
    auto *I1 = dyn_cast<Instruction>(U1);
    if (!I1)
      continue;
    if (IsSizeUse(I1) && InOuterLoopUse(I1))
      return true;
    if (!isa<CastInst>(I1) && !isa<BinaryOperator>(I1))
      continue;
    for (User *U2 : I1->users())
      if (auto *I2 = dyn_cast<Instruction>(U2);
          I2 && IsSizeUse(I2) && InOuterLoopUse(I2))
        return true;
  }
  return false;
}

/// Whether, once \p V is computed, execution surely reaches a conditional
/// branch on a compare of \p V (within its block and the chain of unique
/// successors after it, as a loop bound is compared in the loop header): a
/// poison or undef \p V then makes the program undefined anyway, so a fact
/// stated about it adds no undefined behaviour.
bool ShapeAnchors::decidesBranch(Instruction &V) {
  BasicBlock *BB = V.getParent();
  BasicBlock::iterator It = isa<PHINode>(V)
                                ? BB->getFirstNonPHIOrDbg()->getIterator()
                                : std::next(V.getIterator());
  for (unsigned Blocks = 0; BB && Blocks < 4; ++Blocks) {
    for (Instruction &I : make_range(It, BB->end())) {
      if (auto *Br = dyn_cast<BranchInst>(&I); Br && Br->isConditional()) {
        auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
        return Cmp && is_contained(Cmp->operands(), &V);
      }
      if (!isGuaranteedToTransferExecutionToSuccessor(&I))
        return false;
    }
    BB = BB->getUniqueSuccessor();
    if (BB)
      It = BB->begin();
  }
  return false;
}

/// States at \p V (a phi, or a select: where two paths converge without a
/// branch) what holds for every incoming value in its own context and is not
/// known of \p V itself: a power-of-two divisibility and an unsigned range.
bool ShapeAnchors::stateFacts(Instruction &V) {
  SmallVector<std::pair<Value *, Instruction *>, 4> Incoming;
  BasicBlock::iterator Where;
  if (auto *PN = dyn_cast<PHINode>(&V)) {
    for (unsigned I = 0, E = PN->getNumIncomingValues(); I != E; ++I)
      if (PN->getIncomingValue(I) != PN)
        Incoming.push_back({PN->getIncomingValue(I),
                            PN->getIncomingBlock(I)->getTerminator()});
    Where = PN->getParent()->getFirstInsertionPt();
  } else {
    auto *Sel = cast<SelectInst>(&V);
    Incoming.push_back({Sel->getTrueValue(), Sel});
    Incoming.push_back({Sel->getFalseValue(), Sel});
    Where = std::next(Sel->getIterator());
  }
  if (Incoming.empty())
    return false;
  // llvm.assume of a poison or undef condition is undefined behaviour: state
  // nothing of a value that may be poison or undef where the program would
  // not be undefined anyway (a size that decides a branch is fine).
  if (!isGuaranteedNotToBeUndefOrPoison(&V, &AC, &*Where, &DT) &&
      !decidesBranch(V)) {
    ORE.emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "MaybePoison", &V)
             << "size " << ore::NV("Size", V.getName())
             << ": may be poison or undef where no branch depends on it, so "
                "no fact is stated";
    });
    return false;
  }

  unsigned BW = V.getType()->getIntegerBitWidth();
  std::optional<KnownBits> Known;
  std::optional<ConstantRange> Range;
  for (auto [In, Ctx] : Incoming) {
    KnownBits K = accel::knownBitsAt(In, DL, &AC, Ctx, &DT);
    ConstantRange CR =
        accel::constantRangeAt(In, /*ForSigned=*/false, DL, &AC, Ctx, &DT)
            .intersectWith(ConstantRange::fromKnownBits(K, /*IsSigned=*/false));
    Known = Known ? Known->intersectWith(K) : K;
    Range = Range ? Range->unionWith(CR) : CR;
  }

  // What is known of V itself where it is used (the end of its block, after
  // any fact stated before).
  Instruction *Here = V.getParent()->getTerminator();
  KnownBits VKnown = accel::knownBitsAt(&V, DL, &AC, Here, &DT);
  unsigned TZ = std::min(Known->countMinTrailingZeros(), BW - 1);
  bool NewDivisibility = TZ > 0 && TZ > VKnown.countMinTrailingZeros();
  // A range is worth stating only where it says more than V's range and more
  // than the divisibility does (a multiple of 16 is at most -16 anyway).
  KnownBits Stated = VKnown;
  Stated.Zero.setLowBits(TZ);
  ConstantRange VRange =
      accel::constantRangeAt(&V, /*ForSigned=*/false, DL, &AC, Here, &DT)
          .intersectWith(ConstantRange::fromKnownBits(Stated, false));
  APInt Lo = Range->getUnsignedMin(), Hi = Range->getUnsignedMax();
  bool NewUpper = Hi.ult(VRange.getUnsignedMax());
  bool NewLower = Lo.ugt(VRange.getUnsignedMin());

  if (!NewDivisibility && !NewUpper && !NewLower) {
    ORE.emit([&] {
      return OptimizationRemarkMissed(DEBUG_TYPE, "NoNewFact", &V)
             << "size " << ore::NV("Size", V.getName())
             << ": its incoming values share no divisibility or range fact "
                "that it is not already known to have";
    });
    return false;
  }

  IRBuilder<> B(Where->getParent(), Where);
  std::string Name = V.hasName() ? V.getName().str() : "size";
  Type *Ty = V.getType();
  auto Assume = [&](Value *Cond) {
    CallInst *CI = B.CreateAssumption(Cond);
    AC.registerAssumption(cast<AssumeInst>(CI));
  };
  if (NewDivisibility) {
    Value *Low = B.CreateAnd(
        &V, ConstantInt::get(Ty, APInt::getLowBitsSet(BW, TZ)), Name + ".low");
    Assume(B.CreateICmpEQ(Low, ConstantInt::get(Ty, 0), Name + ".multiple"));
    ++NumDivisibilityAnchors;
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": " << Name << " is a multiple of 2^" << TZ
                      << "\n");
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "DivisibilityAnchor", &V)
             << "stated that " << ore::NV("Size", Name) << " is a multiple of "
             << ore::NV("Multiple", uint64_t(1) << std::min(TZ, 63u))
             << " where its paths converge";
    });
  }
  if (NewUpper || NewLower) {
    if (NewUpper)
      Assume(B.CreateICmpULE(&V, ConstantInt::get(Ty, Hi), Name + ".max"));
    if (NewLower)
      Assume(B.CreateICmpUGE(&V, ConstantInt::get(Ty, Lo), Name + ".min"));
    ++NumRangeAnchors;
    LLVM_DEBUG(dbgs() << DEBUG_TYPE ": " << Name << " lies in [" << Lo << ", "
                      << Hi << "]\n");
    ORE.emit([&] {
      return OptimizationRemark(DEBUG_TYPE, "RangeAnchor", &V)
             << "stated that " << ore::NV("Size", Name) << " lies in ["
             << ore::NV("Min", Lo.getZExtValue()) << ", "
             << ore::NV("Max", Hi.getZExtValue())
             << "] where its paths converge";
    });
  }
  return true;
}

bool ShapeAnchors::run() {
  bool Changed = false;
  SmallVector<PHINode *, 32> Phis;
  SmallVector<Instruction *, 32> Sizes;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      if (auto *PN = dyn_cast<PHINode>(&I))
        Phis.push_back(PN);
      else if (isa<SelectInst>(I))
        Sizes.push_back(&I);
    }
  for (PHINode *PN : Phis) {
    if (foldEqualByAssume(*PN)) {
      Changed = true;
      continue;
    }
    // Facts about loop-carried values are SCEV's business; sizes are merged
    // where forward paths converge.
    if (!LI.isLoopHeader(PN->getParent()) && PN->getNumIncomingValues() >= 2)
      Sizes.push_back(PN);
  }
  for (Instruction *I : Sizes)
    if (I->getType()->isIntegerTy() &&
        I->getType()->getIntegerBitWidth() <= 64 && isSizeLike(*I))
      Changed |= stateFacts(*I);
  return Changed;
}

bool llvm::accel::anchorShapes(Function &F, DominatorTree &DT, LoopInfo &LI,
                               AssumptionCache &AC,
                               OptimizationRemarkEmitter &ORE) {
  return ShapeAnchors(F, DT, LI, AC, ORE).run();
}
