//===- AccelMaskedLoadAnalysis.cpp - Guarded accesses and their checks ----===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Discovery for accel-masked-load (see AccelMaskedLoad.cpp for the whole
/// algorithm): the guards of a loop's loads and stores, the leaves of their
/// conditions and the range checks among them; and the clean-up of the shape
/// jump threading leaves behind unrolled checks.
///
//===----------------------------------------------------------------------===//

#include "AccelMaskedLoadAnalysis.h"
#include "Compat.h"
#include "PassParams.h"

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
using namespace llvm::PatternMatch;
using namespace llvm::accel::maskedload;

#define DEBUG_TYPE "accel-masked-load"

namespace {

/// Depth of the operand walk that decides whether an address depends on an
/// index.
constexpr unsigned MaxDependDepth = 8;
/// Blocks scanned below a guard's successor for the accesses it guards.
constexpr unsigned MaxGuardedBlocks = 64;

/// Whether \p U is \p V or computed from it (through non-phi instructions).
bool dependsOn(Value *U, Value *V, unsigned Depth = 0) {
  if (U == V)
    return true;
  auto *I = dyn_cast<Instruction>(U);
  if (!I || isa<PHINode>(I) || Depth >= MaxDependDepth)
    return false;
  return any_of(I->operands(),
                [&](Value *Op) { return dependsOn(Op, V, Depth + 1); });
}

/// The leaves of \p C that hold (\p Want) or fail (!Want) whenever C does.
void collectLeaves(Value *C, bool Want,
                   SmallVectorImpl<std::pair<ICmpInst *, bool>> &Leaves) {
  Value *A, *B;
  if (match(C, m_Not(m_Value(A))))
    return collectLeaves(A, !Want, Leaves);
  if (Want && match(C, m_LogicalAnd(m_Value(A), m_Value(B)))) {
    collectLeaves(A, true, Leaves);
    return collectLeaves(B, true, Leaves);
  }
  if (!Want && match(C, m_LogicalOr(m_Value(A), m_Value(B)))) {
    collectLeaves(A, false, Leaves);
    return collectLeaves(B, false, Leaves);
  }
  if (auto *Cmp = dyn_cast<ICmpInst>(C))
    if (Cmp->getOperand(0)->getType()->isIntegerTy())
      Leaves.push_back({Cmp, Want});
}

/// The number of loops around \p I, innermost first, in which \p V is
/// invariant for SCEV (constants: all of them).
unsigned invariantDepth(Value *V, Instruction *I, LoopInfo &LI,
                        ScalarEvolution &SE) {
  const SCEV *S = SE.getSCEV(V);
  unsigned Depth = 0;
  for (Loop *L = LI.getLoopFor(I->getParent()); L; L = L->getParentLoop()) {
    if (!SE.isLoopInvariant(S, L))
      break;
    ++Depth;
  }
  return Depth;
}

/// The range check of leaf \p Cmp (taking \p Want on the access side), or
/// none when neither operand is clearly the index.
std::optional<RangeCheck> makeCheck(ICmpInst *Cmp, bool Want, LoopInfo &LI,
                                    ScalarEvolution &SE) {
  Value *A = Cmp->getOperand(0), *B = Cmp->getOperand(1);
  unsigned DA = invariantDepth(A, Cmp, LI, SE);
  unsigned DB = invariantDepth(B, Cmp, LI, SE);
  RangeCheck RC;
  RC.Cmp = Cmp;
  RC.Want = Want;
  RC.Pred = Want ? Cmp->getPredicate() : Cmp->getInversePredicate();
  if (DA < DB) {
    RC.Index = A;
    RC.Bound = B;
  } else if (DB < DA) {
    RC.Index = B;
    RC.Bound = A;
    RC.Pred = CmpInst::getSwappedPredicate(RC.Pred);
  } else if (isa<SCEVAddRecExpr>(SE.getSCEV(A)) &&
             !isa<SCEVAddRecExpr>(SE.getSCEV(B))) {
    // Both vary in the loop: an affine index against a changing bound.
    RC.Index = A;
    RC.Bound = B;
  } else if (isa<SCEVAddRecExpr>(SE.getSCEV(B)) &&
             !isa<SCEVAddRecExpr>(SE.getSCEV(A))) {
    RC.Index = B;
    RC.Bound = A;
    RC.Pred = CmpInst::getSwappedPredicate(RC.Pred);
  } else {
    return std::nullopt;
  }
  if (ICmpInst::isEquality(RC.Pred))
    return std::nullopt;
  return RC;
}

/// The pointer operand of a load or store that may be rewritten: simple
/// (neither volatile nor atomic).
Value *accessPointer(Instruction *I) {
  if (auto *LD = dyn_cast<LoadInst>(I))
    return LD->isSimple() ? LD->getPointerOperand() : nullptr;
  if (auto *ST = dyn_cast<StoreInst>(I))
    return ST->isSimple() ? ST->getPointerOperand() : nullptr;
  return nullptr;
}

} // namespace

namespace llvm {
namespace accel {
namespace maskedload {

/// Whether the address \p Ptr is indexed by \p Index: computed from it, or,
/// for an affine index, varying in the index's loop (x[r*W + c - 1] guarded
/// by r - 1 >= 0 after instcombine recomputed the address from r).
bool GuardFinder::indexes(Value *Ptr, Value *Index) {
  if (dependsOn(Ptr, Index))
    return true;
  auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(Index));
  return AR && !SE.isLoopInvariant(SE.getSCEV(Ptr), AR->getLoop());
}

void GuardFinder::addChecks(GuardedAccess &GA, Value *Ptr,
                            ArrayRef<std::pair<ICmpInst *, bool>> Leaves) {
  for (auto [Cmp, Want] : Leaves)
    if (std::optional<RangeCheck> RC = makeCheck(Cmp, Want, LI, SE))
      if (indexes(Ptr, RC->Index))
        GA.Checks.push_back(*RC);
}

void GuardFinder::fromBranch(Loop &L, BranchInst *Br,
                             SmallVectorImpl<GuardedAccess> &Out) {
  BasicBlock *From = Br->getParent();
  for (unsigned Side = 0; Side < 2; ++Side) {
    BasicBlock *To = Br->getSuccessor(Side);
    if (To->getSinglePredecessor() != From || !L.contains(To))
      continue;
    SmallVector<std::pair<ICmpInst *, bool>, 4> Leaves;
    collectLeaves(Br->getCondition(), Side == 0, Leaves);
    if (Leaves.empty())
      continue;
    // The blocks dominated by To, in the loop: they run only on this side.
    SmallVector<DomTreeNode *, 16> Work{DT.getNode(To)};
    unsigned Seen = 0;
    while (!Work.empty() && Seen++ < MaxGuardedBlocks) {
      DomTreeNode *N = Work.pop_back_val();
      BasicBlock *BB = N->getBlock();
      if (!L.contains(BB))
        continue;
      for (Instruction &I : *BB) {
        Value *Ptr = accessPointer(&I);
        if (!Ptr)
          continue;
        GuardedAccess GA;
        GA.Access = &I;
        GA.Guard = Br;
        addChecks(GA, Ptr, Leaves);
        if (!GA.Checks.empty())
          Out.push_back(std::move(GA));
      }
      append_range(Work, N->children());
    }
  }
}

void GuardFinder::fromSelect(SelectInst *Sel,
                             SmallVectorImpl<GuardedAccess> &Out) {
  for (unsigned Side = 0; Side < 2; ++Side) {
    Value *Op = Sel->getOperand(1 + Side);
    // A select of the loaded value, or of the pointer that is loaded.
    Instruction *Access = dyn_cast<LoadInst>(Op);
    Value *Ptr = Access ? accessPointer(Access) : nullptr;
    if (!Access && Op->getType()->isPointerTy()) {
      Ptr = Op;
      for (User *U : Sel->users())
        if (auto *LD = dyn_cast<LoadInst>(U))
          if (LD->isSimple() && LD->getPointerOperand() == Sel)
            Access = LD;
    }
    if (!Access || !Ptr)
      continue;
    SmallVector<std::pair<ICmpInst *, bool>, 4> Leaves;
    collectLeaves(Sel->getCondition(), Side == 0, Leaves);
    GuardedAccess GA;
    GA.Access = Access;
    addChecks(GA, Ptr, Leaves);
    if (!GA.Checks.empty())
      Out.push_back(std::move(GA));
  }
}

SmallVector<GuardedAccess, 8> GuardFinder::find(Loop &L) {
  SmallVector<GuardedAccess, 8> Out;
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB) {
      if (auto *Br = dyn_cast<BranchInst>(&I)) {
        if (Br->isConditional())
          fromBranch(L, Br, Out);
      } else if (auto *Sel = dyn_cast<SelectInst>(&I)) {
        if (Sel->getCondition()->getType()->isIntegerTy(1))
          fromSelect(Sel, Out);
      }
    }
  return Out;
}

/// A short description of a check for remarks: "j < n".
std::string describe(const RangeCheck &RC) {
  std::string S;
  raw_string_ostream OS(S);
  auto Name = [&](Value *V) {
    if (auto *C = dyn_cast<ConstantInt>(V))
      OS << C->getValue();
    else if (V->hasName())
      OS << V->getName();
    else
      V->printAsOperand(OS, /*PrintType=*/false);
  };
  Name(RC.Index);
  OS << ' ' << CmpInst::getPredicateName(RC.Pred) << ' ';
  Name(RC.Bound);
  return S;
}

/// Undoes what jump threading does to an unrolled bounds-checked body: the
/// same `i + 1` computed on both sides of a check and merged by a phi (even
/// the induction's increment), which hides the AddRec from SCEV. A phi whose
/// incoming values are identical speculatable instructions on operands
/// available at its block's immediate dominator becomes one instruction
/// there. Returns whether anything changed.
bool mergeDuplicatedIncomings(Loop &L, DominatorTree &DT) {
  bool Changed = false, Again = true;
  while (Again) {
    Again = false;
    for (BasicBlock *BB : L.blocks()) {
      if (BB == L.getHeader())
        continue;
      DomTreeNode *IDom = DT.getNode(BB)->getIDom();
      if (!IDom)
        continue;
      Instruction *At = IDom->getBlock()->getTerminator();
      for (PHINode &Phi : make_early_inc_range(BB->phis())) {
        auto *First = dyn_cast<Instruction>(Phi.getIncomingValue(0));
        if (!First || isa<PHINode>(First) || First->mayReadOrWriteMemory() ||
            !isSafeToSpeculativelyExecute(First))
          continue;
        bool Same = all_of(Phi.incoming_values(), [&](Value *V) {
          auto *I = dyn_cast<Instruction>(V);
          return I && I->isIdenticalToWhenDefined(First);
        });
        bool Available = all_of(First->operands(), [&](Value *Op) {
          auto *I = dyn_cast<Instruction>(Op);
          return !I || DT.dominates(I, At);
        });
        if (!Same || !Available)
          continue;
        Instruction *Merged = First->clone();
        Merged->insertInto(At->getParent(), At->getIterator());
        Merged->setName(First->getName());
        // Every path computes the same operation on the same operands, so
        // the flags all copies carry hold for the merged one.
        for (Value *V : Phi.incoming_values())
          Merged->andIRFlags(V);
        Merged->dropUnknownNonDebugMetadata();
        Phi.replaceAllUsesWith(Merged);
        Phi.eraseFromParent();
        Changed = Again = true;
      }
    }
  }
  return Changed;
}

} // namespace maskedload
} // namespace accel
} // namespace llvm
