//===- AccelMaskedLoad.cpp - Bounds-checked accesses made fast ------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-masked-load rewrites loops with loads and stores guarded by a range
/// check on their index, `if (0 <= j && j < n) v = x[j]` (padding, fill-mode
/// gathers, ragged lengths), so that the loop vectorizer, which runs next,
/// sees vectorizable loops.
///
/// Discovery. A guard is a conditional branch (or a select) in a loop whose
/// one side holds a load or store (a select: an operand) whose address
/// depends on a compared value. Its condition is split into leaves through
/// `and`/`or`/`not` (logical or bitwise): on the access side every leaf of
/// an `and` holds, every leaf of an `or` fails. A leaf `icmp` compares an
/// index (the operand that varies in more loops) with a bound; it is
/// normalized to `Index Pred Bound`, the fact that holds on the access side.
///
/// Strategies, per check, each with a remark:
///  1. Implied: SCEV proves the compare at its position (loop bounds and the
///     index's range, llvm.assume, !range, dominating conditions). It becomes
///     a constant.
///  2. Split (index-set splitting): the index is an AddRec {X,+,s} of loop L
///     with s = +-1 and no signed wrap, the bound is invariant in L. At
///     iteration k of L the index is exactly X + s*k, so the check holds for
///     k in an interval, computed in a type twice as wide as the index and the
///     trip count (no wrap): [kLo, kHi) is the intersection of all checks'
///     intervals with [0, TC), TC = backedge-taken count + 1. L becomes up to
///     three loops run one after the other, over [0, kLo), [kLo, kHi) and
///     [kHi, TC), each driven by its own counter; the middle ("main") copy has
///     the checks replaced by the constant they take there, the edge copies
///     keep them. Loop-carried values (header phis) and values used after the
///     loop pass from one copy to the next through phis in bridge blocks,
///     and each copy is skipped when its interval is empty. Checks nested in
///     inner loops split the outer loop whose AddRec their index is (2-D
///     padding: rows split the row loop, columns the column loop).
///  3. Gathers (non-affine index): with `masked`, where TTI says the target
///     has masked gathers (scatters for stores) of the element type, the
///     guarded access is left to the loop vectorizer, which if-converts it
///     into llvm.masked.gather/scatter with the check as the mask. Otherwise,
///     with `clamp`, a guarded load becomes an unconditional load of
///     x[clamp(j, 0, n-1)] in the guard's block; the original phi or select
///     still picks the default when the check fails. A guarded store is never
///     made unconditional.
///
/// Legality of the clamped load. It reads x[c], c in [0, n-1], where the
/// program reads x[j] only when 0 <= j < n: the pass takes the check's bound
/// as the extent of x (the premise of every bounds check it recognizes). It
/// also needs the object to hold at least one element: proven when n > 0 is
/// known at the loop entry or x is dereferenceable for one element;
/// otherwise the base becomes `n > 0 ? x : &slot`, a one-element stack slot
/// in x's address space (declined when x lives in another address space).
///
//===----------------------------------------------------------------------===//

#include "AccelMaskedLoad.h"
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

#define DEBUG_TYPE "accel-masked-load"

STATISTIC(NumChecksImplied, "Range checks removed as implied");
STATISTIC(NumLoopsSplit, "Loops split into pre/main/post loops");
STATISTIC(NumChecksSplit, "Range checks removed from split main loops");
STATISTIC(NumLoadsClamped, "Guarded gathers turned into clamped loads");
STATISTIC(NumLeftMasked, "Guarded accesses left to masked vector operations");
STATISTIC(NumDeclined, "Guarded accesses or loops left alone");

namespace {

/// Largest value of `max-growth=N`.
constexpr unsigned MaxGrowthParam = 1000000;
/// Depth of the operand walk that decides whether an address depends on an
/// index.
constexpr unsigned MaxDependDepth = 8;
/// Blocks scanned below a guard's successor for the accesses it guards.
constexpr unsigned MaxGuardedBlocks = 64;

//===----------------------------------------------------------------------===//
// Access discovery: guards, their leaves, range checks
//===----------------------------------------------------------------------===//

/// One leaf of a guard: `Index Pred Bound` holds on the access side.
struct RangeCheck {
  ICmpInst *Cmp = nullptr;
  /// The value Cmp takes on the access side.
  bool Want = true;
  Value *Index = nullptr;
  Value *Bound = nullptr;
  CmpInst::Predicate Pred = CmpInst::BAD_ICMP_PREDICATE;
};

/// A load or store behind a guard.
struct GuardedAccess {
  Instruction *Access = nullptr;
  /// The guard's branch, or null for a select.
  BranchInst *Guard = nullptr;
  SmallVector<RangeCheck, 4> Checks;
};

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

/// Finds every guarded access of the loops of a function.
class GuardFinder {
public:
  GuardFinder(LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE)
      : LI(LI), DT(DT), SE(SE) {}

  /// The guarded accesses in the blocks of \p L (inner loops included).
  SmallVector<GuardedAccess, 8> find(Loop &L);

private:
  void fromBranch(Loop &L, BranchInst *Br, SmallVectorImpl<GuardedAccess> &);
  void fromSelect(SelectInst *Sel, SmallVectorImpl<GuardedAccess> &Out);
  bool indexes(Value *Ptr, Value *Index);
  void addChecks(GuardedAccess &GA, Value *Ptr,
                 ArrayRef<std::pair<ICmpInst *, bool>> Leaves);

  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
};

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

//===----------------------------------------------------------------------===//
// Strategy 1: checks implied by what SCEV knows
//===----------------------------------------------------------------------===//

/// Replaces \p I by \p V and folds the users that become constant (the
/// `and`/`or`/`select` of a guard). Branches that become unconditional are
/// left in \p Decided for the caller, which folds them once the analyses it
/// walks with are no longer needed.
void replaceAndFold(Instruction *I, Value *V,
                    SmallVectorImpl<WeakTrackingVH> &Decided) {
  const DataLayout &DL = I->getDataLayout();
  SmallVector<Instruction *, 8> Users;
  for (User *U : I->users())
    Users.push_back(cast<Instruction>(U));
  I->replaceAllUsesWith(V);
  I->eraseFromParent();
  for (Instruction *U : Users) {
    if (isa<BranchInst>(U)) {
      Decided.push_back(U->getParent()->getTerminator());
      continue;
    }
    if (isa<PHINode>(U) || U->mayHaveSideEffects())
      continue;
    if (Value *S = simplifyInstruction(U, SimplifyQuery(DL, U)))
      if (S != U)
        replaceAndFold(U, S, Decided);
  }
}

/// Replaces the compares of \p Accesses that SCEV proves at their position.
bool removeImpliedChecks(ArrayRef<GuardedAccess> Accesses, ScalarEvolution &SE,
                         OptimizationRemarkEmitter &ORE,
                         SmallVectorImpl<WeakTrackingVH> &Decided) {
  SmallPtrSet<ICmpInst *, 8> Done;
  SmallVector<std::pair<ICmpInst *, bool>, 8> Implied;
  for (const GuardedAccess &GA : Accesses)
    for (const RangeCheck &RC : GA.Checks) {
      ICmpInst *Cmp = RC.Cmp;
      if (!Done.insert(Cmp).second)
        continue;
      const SCEV *A = SE.getSCEV(Cmp->getOperand(0));
      const SCEV *B = SE.getSCEV(Cmp->getOperand(1));
      std::optional<bool> Known;
      if (SE.isKnownPredicateAt(Cmp->getPredicate(), A, B, Cmp))
        Known = true;
      else if (SE.isKnownPredicateAt(Cmp->getInversePredicate(), A, B, Cmp))
        Known = false;
      if (!Known)
        continue;
      LLVM_DEBUG(dbgs() << DEBUG_TYPE ": implied " << *Cmp << " = " << *Known
                        << "\n");
      ORE.emit([&] {
        return OptimizationRemark(DEBUG_TYPE, "CheckImplied", Cmp)
               << "range check " << describe(RC) << " is always "
               << (*Known == RC.Want ? "true" : "false")
               << " here (implied by the loop bounds, assumptions or "
                  "dominating conditions): removed";
      });
      Implied.push_back({Cmp, *Known});
      ++NumChecksImplied;
    }
  // Accesses name the compares: replace them only now (the caller finds the
  // accesses again).
  for (auto [Cmp, Known] : Implied) {
    SE.forgetValue(Cmp);
    replaceAndFold(Cmp, ConstantInt::getBool(Cmp->getContext(), Known),
                   Decided);
  }
  return !Implied.empty();
}

//===----------------------------------------------------------------------===//
// Strategy 3: gathers (masked operations or clamped loads)
//===----------------------------------------------------------------------===//

/// The clamp range [0, Bound) of an access, from its checks on one index.
struct ClampRange {
  Value *Index = nullptr;
  Value *Bound = nullptr;
  bool Unsigned = false;
};

/// Finds in \p GA's checks a lower bound 0 and an upper bound on one index.
std::optional<ClampRange> clampRange(const GuardedAccess &GA,
                                     ScalarEvolution &SE) {
  for (const RangeCheck &Upper : GA.Checks) {
    bool Unsigned = Upper.Pred == ICmpInst::ICMP_ULT;
    if (Upper.Pred != ICmpInst::ICMP_SLT && !Unsigned)
      continue;
    bool HasLower =
        Unsigned || SE.isKnownNonNegative(SE.getSCEV(Upper.Index)) ||
        any_of(GA.Checks, [&](const RangeCheck &Lower) {
          if (Lower.Index != Upper.Index)
            return false;
          auto *C = dyn_cast<ConstantInt>(Lower.Bound);
          return C && ((Lower.Pred == ICmpInst::ICMP_SGE && C->isZero()) ||
                       (Lower.Pred == ICmpInst::ICMP_SGT && C->isMinusOne()));
        });
    if (HasLower)
      return ClampRange{Upper.Index, Upper.Bound, Unsigned};
  }
  return std::nullopt;
}

/// Rewrites guarded gathers: leaves them to masked vector operations or
/// clamps their index.
class GatherRewriter {
public:
  GatherRewriter(Loop &L, LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE,
                 const TargetTransformInfo &TTI, OptimizationRemarkEmitter &ORE,
                 const AccelMaskedLoadOptions &Opts)
      : L(L), LI(LI), DT(DT), SE(SE), TTI(TTI), ORE(ORE), Opts(Opts),
        DL(L.getHeader()->getDataLayout()) {}

  bool run(ArrayRef<GuardedAccess> Accesses);

private:
  bool isAffine(const GuardedAccess &GA) const;
  bool hasMaskedOps(Instruction *I) const;
  bool clamp(const GuardedAccess &GA, const ClampRange &R);
  Value *safeBase(Value *Base, const ClampRange &R, Type *EltTy, IRBuilder<> &B,
                  std::string &Why);
  void missed(Instruction *I, StringRef Name, const Twine &Why);

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  const TargetTransformInfo &TTI;
  OptimizationRemarkEmitter &ORE;
  const AccelMaskedLoadOptions &Opts;
  const DataLayout &DL;
};

void GatherRewriter::missed(Instruction *I, StringRef Name, const Twine &Why) {
  std::string Text = Why.str();
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": declined " << *I << ": " << Text << "\n");
  ORE.emit(
      [&] { return OptimizationRemarkMissed(DEBUG_TYPE, Name, I) << Text; });
  ++NumDeclined;
}

/// Whether some check of \p GA is on an AddRec (the splitter's business).
bool GatherRewriter::isAffine(const GuardedAccess &GA) const {
  return any_of(GA.Checks, [&](const RangeCheck &RC) {
    return isa<SCEVAddRecExpr>(SE.getSCEV(RC.Index));
  });
}

/// Whether the target has masked gathers (scatters) for \p I's type, at the
/// vectorizer's widest fixed or scalable width.
bool GatherRewriter::hasMaskedOps(Instruction *I) const {
  Type *Ty = isa<StoreInst>(I) ? I->getOperand(0)->getType() : I->getType();
  if (!VectorType::isValidElementType(Ty))
    return false;
  Align A = getLoadStoreAlignment(I);
  bool Store = isa<StoreInst>(I);
  unsigned EltBits = DL.getTypeSizeInBits(Ty).getFixedValue();
  auto Legal = [&](ElementCount EC) {
    if (EC.getKnownMinValue() < 2)
      return false;
    auto *VT = VectorType::get(Ty, EC);
    return Store ? TTI.isLegalMaskedScatter(VT, A)
                 : TTI.isLegalMaskedGather(VT, A);
  };
  if (!EltBits)
    return false;
  unsigned Fixed =
      TTI.getRegisterBitWidth(TargetTransformInfo::RGK_FixedWidthVector)
          .getFixedValue();
  if (Legal(ElementCount::getFixed(Fixed / EltBits)))
    return true;
  if (!TTI.supportsScalableVectors())
    return false;
  unsigned Scalable =
      TTI.getRegisterBitWidth(TargetTransformInfo::RGK_ScalableVector)
          .getKnownMinValue();
  return Legal(ElementCount::getScalable(Scalable / EltBits));
}

bool GatherRewriter::run(ArrayRef<GuardedAccess> Accesses) {
  bool Changed = false;
  SmallPtrSet<Instruction *, 8> Done;
  for (const GuardedAccess &GA : Accesses) {
    Instruction *I = GA.Access;
    // An access may have several guards: the first rewrite wins (and may
    // erase it).
    if (!Done.insert(I).second || LI.getLoopFor(I->getParent()) != &L ||
        isAffine(GA))
      continue;
    bool Store = isa<StoreInst>(I);
    if (Opts.Masked && hasMaskedOps(I)) {
      ORE.emit([&] {
        return OptimizationRemark(DEBUG_TYPE, "LeftToMaskedOps", I)
               << "guarded " << (Store ? "store" : "load")
               << " left to the loop vectorizer: the target has masked "
               << (Store ? "scatters" : "gathers")
               << ", the check becomes their mask";
      });
      ++NumLeftMasked;
      continue;
    }
    if (Store) {
      missed(I, "GuardedStore",
             "guarded store with a non-affine index left alone: a store is "
             "only rewritten to a masked store or by splitting, and the "
             "target has no masked scatter" +
                 Twine(Opts.Masked ? "" : " (or no-masked was given)"));
      continue;
    }
    if (!GA.Guard) {
      missed(I, "AlreadyUnconditional",
             "load behind a select is already unconditional: nothing to do");
      continue;
    }
    if (!Opts.Clamp) {
      missed(I, "ClampDisabled",
             "guarded gather left alone: no-clamp was given and the target "
             "has no masked gather");
      continue;
    }
    std::optional<ClampRange> R = clampRange(GA, SE);
    if (!R) {
      missed(I, "NoClampRange",
             "guarded gather left alone: its checks do not bound the index "
             "to [0, n)");
      continue;
    }
    Changed |= clamp(GA, *R);
  }
  return Changed;
}

Value *GatherRewriter::safeBase(Value *Base, const ClampRange &R, Type *EltTy,
                                IRBuilder<> &B, std::string &Why) {
  // At least one element: proven by n > 0 (unsigned checks: n != 0) at the
  // loop entry, or by the object's dereferenceable size.
  Value *Bound = R.Bound;
  const SCEV *N = SE.getSCEV(Bound);
  const SCEV *Zero = SE.getZero(N->getType());
  ICmpInst::Predicate NonEmpty =
      R.Unsigned ? ICmpInst::ICMP_UGT : ICmpInst::ICMP_SGT;
  if (SE.isKnownPredicate(NonEmpty, N, Zero) ||
      SE.isLoopEntryGuardedByCond(&L, NonEmpty, N, Zero))
    return Base;
  if (isDereferenceablePointer(Base, EltTy, DL))
    return Base;
  // Otherwise a one-element slot stands in for x when n <= 0 (the check
  // then always fails, so its value is never used).
  auto *PtrTy = cast<PointerType>(Base->getType());
  if (PtrTy->getAddressSpace() != DL.getAllocaAddrSpace()) {
    Why = "the object may hold no element and lives in address space " +
          std::to_string(PtrTy->getAddressSpace()) +
          ", where no stack slot can stand in for it";
    return nullptr;
  }
  Function &F = *L.getHeader()->getParent();
  IRBuilder<> Entry(&F.getEntryBlock(), F.getEntryBlock().begin());
  AllocaInst *Slot = Entry.CreateAlloca(EltTy, nullptr, "accel.slot");
  Slot->setAlignment(std::max(Slot->getAlign(), Align(16)));
  Value *Pos = B.CreateICmp(
      NonEmpty, Bound, ConstantInt::get(Bound->getType(), 0), "accel.nonempty");
  return B.CreateSelect(Pos, Base, Slot, "accel.base");
}

bool GatherRewriter::clamp(const GuardedAccess &GA, const ClampRange &R) {
  auto *LD = cast<LoadInst>(GA.Access);
  BasicBlock *Guard = GA.Guard->getParent();
  if (LD->getParent()->getSinglePredecessor() != Guard) {
    missed(LD, "NotAtGuard",
           "guarded gather left alone: it is not in the block the check "
           "branches to");
    return false;
  }
  for (Instruction &I : *LD->getParent()) {
    if (&I == LD)
      break;
    if (I.mayWriteToMemory() ||
        !isGuaranteedToTransferExecutionToSuccessor(&I)) {
      missed(LD, "WriteBeforeLoad",
             "guarded gather left alone: the guarded block writes memory or "
             "may not continue before the load");
      return false;
    }
  }
  // The address must be x + ext(j) * size, x invariant in the loop.
  auto *GEP = dyn_cast<GetElementPtrInst>(LD->getPointerOperand());
  Value *Idx = GEP && GEP->getNumIndices() == 1 ? GEP->getOperand(1) : nullptr;
  Value *Inner = Idx;
  if (Idx && (isa<SExtInst>(Idx) || isa<ZExtInst>(Idx)))
    Inner = cast<Instruction>(Idx)->getOperand(0);
  if (!GEP || Inner != R.Index ||
      !L.isLoopInvariant(GEP->getPointerOperand()) ||
      !DT.dominates(R.Index, GA.Guard) || !DT.dominates(R.Bound, GA.Guard)) {
    missed(LD, "AddressShape",
           "guarded gather left alone: its address is not x[j] with x "
           "invariant and j the checked index");
    return false;
  }
  IRBuilder<> B(GA.Guard);
  std::string Why;
  Value *Base = safeBase(GEP->getPointerOperand(), R,
                         GEP->getSourceElementType(), B, Why);
  if (!Base) {
    missed(LD, "MayBeEmpty", "guarded gather left alone: " + Why);
    return false;
  }
  // c = clamp(j, 0, max(n, 1) - 1): in range whenever n >= 1, and 0 else.
  Type *Ty = R.Index->getType();
  Value *One = ConstantInt::get(Ty, 1);
  Value *Last;
  Value *C;
  if (R.Unsigned) {
    Last = B.CreateSub(B.CreateBinaryIntrinsic(Intrinsic::umax, R.Bound, One),
                       One, "accel.last");
    C = B.CreateBinaryIntrinsic(Intrinsic::umin, R.Index, Last, nullptr,
                                "accel.clamp");
  } else {
    Last = B.CreateSub(B.CreateBinaryIntrinsic(Intrinsic::smax, R.Bound, One),
                       One, "accel.last");
    Value *Lo = B.CreateBinaryIntrinsic(Intrinsic::smax, R.Index,
                                        ConstantInt::get(Ty, 0));
    C = B.CreateBinaryIntrinsic(Intrinsic::smin, Lo, Last, nullptr,
                                "accel.clamp");
  }
  Value *NewIdx = Idx == Inner ? C : B.CreateZExt(C, Idx->getType());
  Value *Ptr = B.CreateGEP(GEP->getSourceElementType(), Base, NewIdx,
                           "accel.addr", GEP->isInBounds());
  LoadInst *NewLD =
      B.CreateAlignedLoad(LD->getType(), Ptr, LD->getAlign(), "accel.load");
  // Aliasing facts still hold; value facts (!range, !noundef, ...) do not
  // for the lanes whose check fails.
  AAMDNodes AA = LD->getAAMetadata();
  NewLD->setAAMetadata(AA);
  NewLD->setDebugLoc(LD->getDebugLoc());
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": clamped " << *LD << "\n");
  ORE.emit([&] {
    return OptimizationRemark(DEBUG_TYPE, "Clamped", LD)
           << "guarded gather made unconditional: loads x[clamp(j, 0, n-1)] "
              "and keeps the default when the check fails"
           << (Base != GEP->getPointerOperand()
                   ? " (x stands in for a one-element slot when n <= 0)"
                   : "");
  });
  LD->replaceAllUsesWith(NewLD);
  LD->eraseFromParent();
  RecursivelyDeleteTriviallyDeadInstructions(GEP);
  ++NumLoadsClamped;
  return true;
}

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
  ++NumDeclined;
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
  if (!Any || !legal())
    return false;

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
    return false;

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
    return false; // every check is implied: strategy 1's business

  unsigned Size = 0;
  for (BasicBlock *BB : L.blocks())
    Size += BB->size();
  unsigned Growth = Size * (Segs.size() - 1);
  if (Growth > Opts.MaxGrowth) {
    missed("TooLarge", "loop not split: the copies would add " + Twine(Growth) +
                           " instructions, more than "
                           "max-growth=" +
                           Twine(Opts.MaxGrowth));
    return false;
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

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

} // namespace

Expected<AccelMaskedLoadOptions>
llvm::parseAccelMaskedLoadOptions(StringRef Params) {
  AccelMaskedLoadOptions Opts;
  accel::PassParamParser P("accel-masked-load");
  P.flag("split", Opts.Split);
  P.flag("masked", Opts.Masked);
  P.flag("clamp", Opts.Clamp);
  P.integer("max-growth", Opts.MaxGrowth, 0, MaxGrowthParam);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelMaskedLoadPass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-masked-load<";
  OS << (Opts.Split ? "" : "no-") << "split;";
  OS << (Opts.Masked ? "" : "no-") << "masked;";
  OS << (Opts.Clamp ? "" : "no-") << "clamp;";
  OS << "max-growth=" << Opts.MaxGrowth << '>';
}

PreservedAnalyses AccelMaskedLoadPass::run(Function &F,
                                           FunctionAnalysisManager &AM) {
  if (F.isDeclaration() || F.hasOptNone())
    return PreservedAnalyses::all();
  if (AM.getResult<LoopAnalysis>(F).empty())
    return PreservedAnalyses::all();

  // Strategies 1 and 3 change instructions; the branches they decide are
  // folded after them.
  bool Changed = false;
  SmallVector<WeakTrackingVH, 8> Decided;
  {
    auto &LI = AM.getResult<LoopAnalysis>(F);
    auto &DT = AM.getResult<DominatorTreeAnalysis>(F);
    auto &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
    auto &TTI = AM.getResult<TargetIRAnalysis>(F);
    auto &ORE = AM.getResult<OptimizationRemarkEmitterAnalysis>(F);
    for (Loop *L : LI.getLoopsInPreorder())
      if (mergeDuplicatedIncomings(*L, DT)) {
        Changed = true;
        SE.forgetLoop(L);
      }
    for (Loop *L : LI.getLoopsInPreorder()) {
      GuardFinder Finder(LI, DT, SE);
      SmallVector<GuardedAccess, 8> Accesses = Finder.find(*L);
      if (removeImpliedChecks(Accesses, SE, ORE, Decided)) {
        Changed = true;
        SE.forgetLoop(L);
        Accesses = Finder.find(*L);
      }
      Changed |= GatherRewriter(*L, LI, DT, SE, TTI, ORE, Opts).run(Accesses);
    }
  }
  for (WeakTrackingVH &H : Decided)
    if (auto *Br = dyn_cast_or_null<BranchInst>(H))
      ConstantFoldTerminator(Br->getParent(), /*DeleteDeadConditions=*/true);
  if (!Decided.empty())
    removeUnreachableBlocks(F);
  if (Changed)
    AM.invalidate(F, PreservedAnalyses::none());

  // Strategy 2, innermost loops first: a split rebuilds the analyses.
  SmallVector<BasicBlock *, 8> Headers;
  SmallVector<Loop *, 8> Preorder =
      AM.getResult<LoopAnalysis>(F).getLoopsInPreorder();
  for (Loop *L : reverse(Preorder))
    Headers.push_back(L->getHeader());
  for (BasicBlock *H : Headers) {
    auto &LI = AM.getResult<LoopAnalysis>(F);
    Loop *L = LI.getLoopFor(H);
    if (!L || L->getHeader() != H)
      continue;
    auto &DT = AM.getResult<DominatorTreeAnalysis>(F);
    auto &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
    auto &AC = AM.getResult<AssumptionAnalysis>(F);
    auto &ORE = AM.getResult<OptimizationRemarkEmitterAnalysis>(F);
    bool Formed = simplifyLoop(L, &DT, &LI, &SE, &AC, nullptr, false);
    Formed |= formLCSSARecursively(*L, DT, &LI, &SE);
    auto &AA = AM.getResult<AAManager>(F);
    bool Split = LoopSplitter(*L, LI, DT, SE, AC, AA, ORE, Opts).run();
    if (Formed || Split) {
      Changed = true;
      AM.invalidate(F, PreservedAnalyses::none());
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
