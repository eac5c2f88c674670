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
/// Discovery (AccelMaskedLoadAnalysis.cpp). First, phis merging the same
/// `i + 1` computed on both sides of a check (jump threading's copies in an
/// unrolled body) become one instruction, so SCEV sees the AddRecs again.
/// A guard is a conditional branch (or a select) in a loop whose
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
///  2. Split (index-set splitting, AccelMaskedLoadSplit.cpp): the index is
///     an AddRec {X,+,s} of loop L with s = +-1 that does not wrap (SCEV's
///     flags, its last value bounded through the loop's guards, or the
///     nsw/nuw of an add whose wrap would make the program undefined; signed
///     or unsigned as the compare is), the bound is invariant in L. At
///     iteration k of L the index is exactly X + s*k, so the check holds for
///     k in an interval, computed in the loop's own type (the widest of the
///     index and the trip count; each difference only where it is exact,
///     clamped to TC): [kLo, kHi) is the intersection of all checks'
///     intervals with [0, TC), TC = backedge-taken count + 1 (where TC may
///     not fit, a flag set before the loop runs the guarded copy for every
///     iteration). L becomes up to
///     three loops run one after the other, over [0, kLo), [kLo, kHi) and
///     [kHi, TC), each stopped by its own exit test (on the loop's unit
///     induction, or a new counter); the middle ("main") copy has the checks
///     replaced by the constant they take there, its decided branches folded,
///     its blocks merged and its now unconditional invariant loads hoisted
///     into a preheader of its own; the edge copies keep the checks.
///     Loop-carried values (header phis) and values used after the loop pass
///     from one copy to the next through phis in bridge blocks, and each copy
///     is skipped when its interval is empty. Checks nested in
///     inner loops split the outer loop whose AddRec their index is (2-D
///     padding: rows split the row loop, columns the column loop).
///  3. Gathers (non-affine index): with `masked`, where TTI says the target
///     has masked gathers (scatters for stores) of the element type, the
///     guarded access is left to the loop vectorizer, which if-converts it
///     into llvm.masked.gather/scatter with the check as the mask. Otherwise,
///     with `clamp`, a guarded load becomes an unconditional load in the
///     guard's block; the original phi or select still picks the default
///     when the check fails. A guarded store is never made unconditional.
///
/// Legality of the clamped load. The program reads x[j] only when the check
/// holds, and a bounds check says nothing of the object's size (a program may
/// guard with a bound larger than its object and never reach the end), so
/// x[clamp(j, 0, n-1)] is only read where x is known to hold n elements: x
/// is dereferenceable for K elements and n <= K is known at the loop entry
/// (SCEV's range of n, a dominating condition or an `llvm.assume`), or an
/// `llvm.assume` "dereferenceable" bundle gives x at least n * size bytes (as
/// llvmaccel's frontends state for their buffers). Otherwise the gather is
/// left alone with a missed remark. (`check ? &x[j] : &slot` would be safe
/// too, but measured slower than the branch on AVX2: its per-lane pointer
/// selects.) The clamped load also needs the object to hold at least one
/// element: proven when n > 0 is known at the loop entry or x is
/// dereferenceable for one element; otherwise the base becomes
/// `n > 0 ? x : &slot`, a one-element stack slot (declined when x lives in an
/// address space other than the stack's, where no slot can stand in for it).
///
//===----------------------------------------------------------------------===//

#include "AccelMaskedLoad.h"
#include "AccelMaskedLoadAnalysis.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
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
#include "llvm/IR/ValueHandle.h"
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

STATISTIC(NumChecksImplied, "Range checks removed as implied");
STATISTIC(NumLoadsClamped, "Guarded gathers turned into clamped loads");
STATISTIC(NumLeftMasked, "Guarded accesses left to masked vector operations");
STATISTIC(NumDeclined, "Guarded accesses or loops left alone");

namespace {

/// Largest value of `max-growth=N`.
constexpr unsigned MaxGrowthParam = 1000000;
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
  // Each user once, tracked: folding one user may erase another (a user of
  // it that also uses I), and a user may use I twice.
  SmallSetVector<User *, 8> Unique(I->user_begin(), I->user_end());
  SmallVector<WeakVH, 8> Users(Unique.begin(), Unique.end());
  I->replaceAllUsesWith(V);
  I->eraseFromParent();
  for (WeakVH &H : Users) {
    auto *U = cast_or_null<Instruction>(H);
    if (!U)
      continue;
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
  // Tracked: folding the users of one compare may fold away another that
  // uses it (a compare of compares).
  SmallVector<std::pair<WeakVH, bool>, 8> Implied;
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
  for (auto &[H, Known] : Implied) {
    auto *Cmp = cast_or_null<Instruction>(H);
    if (!Cmp)
      continue;
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
                 AssumptionCache &AC, const TargetTransformInfo &TTI,
                 OptimizationRemarkEmitter &ORE,
                 const AccelMaskedLoadOptions &Opts)
      : L(L), LI(LI), DT(DT), SE(SE), AC(AC), TTI(TTI), ORE(ORE), Opts(Opts),
        DL(L.getHeader()->getDataLayout()) {}

  bool run(ArrayRef<GuardedAccess> Accesses);

private:
  bool isAffine(const GuardedAccess &GA) const;
  bool hasMaskedOps(Instruction *I) const;
  bool clamp(const GuardedAccess &GA, const ClampRange &R);
  bool boundIsExtent(Value *Base, const ClampRange &R, Type *EltTy,
                     Instruction *CtxI);
  Value *stackSlot(Type *EltTy, PointerType *PtrTy, std::string &Why);
  Value *safeBase(Value *Base, const ClampRange &R, Type *EltTy, IRBuilder<> &B,
                  std::string &Why);
  void missed(Instruction *I, StringRef Name, const Twine &Why);

  Loop &L;
  LoopInfo &LI;
  DominatorTree &DT;
  ScalarEvolution &SE;
  AssumptionCache &AC;
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

/// Whether \p Base is known to hold the check's bound n elements of \p EltTy
/// at \p CtxI (whenever n > 0): dereferenceable for the largest n SCEV
/// allows, or by an `llvm.assume` "dereferenceable" bundle of at least
/// n * size bytes.
bool GatherRewriter::boundIsExtent(Value *Base, const ClampRange &R,
                                   Type *EltTy, Instruction *CtxI) {
  uint64_t EltSize = DL.getTypeAllocSize(EltTy).getFixedValue();
  if (!EltSize)
    return false;
  const SCEV *N = SE.getSCEV(R.Bound);
  // x dereferenceable for K elements, and n <= K at the loop entry.
  bool CanBeNull = false, CanBeFreed = false;
  uint64_t K =
      accel::dereferenceableBytes(Base, DL, CanBeNull, CanBeFreed) / EltSize;
  if (K && SE.getTypeSizeInBits(N->getType()) <= 64) {
    ICmpInst::Predicate LE =
        R.Unsigned ? ICmpInst::ICMP_ULE : ICmpInst::ICMP_SLE;
    const SCEV *KS = SE.getConstant(N->getType(), K, /*isSigned=*/false);
    bool Fits = !SE.getUnsignedRangeMax(KS).ult(K) && // K fits n's type
                (SE.isKnownPredicate(LE, N, KS) ||
                 SE.isLoopEntryGuardedByCond(&L, LE, N, KS));
    if (Fits && accel::isDereferenceableAt(
                    Base, Align(1), APInt(64, K * EltSize), DL, CtxI, &AC, &DT))
      return true;
  }
  for (auto &Elem : AC.assumptionsFor(Base)) {
    auto *Assume = dyn_cast_or_null<AssumeInst>(Elem.Assume);
    if (!Assume || Elem.Index == AssumptionCache::ExprResultIdx ||
        !isValidAssumeForContext(Assume, CtxI, &DT))
      continue;
    OperandBundleUse BU = Assume->getOperandBundleAt(Elem.Index);
    if (BU.getTagName() != "dereferenceable" || BU.Inputs.size() != 2 ||
        BU.Inputs[0] != Base || !BU.Inputs[1]->getType()->isIntegerTy())
      continue;
    const SCEV *Bytes = SE.getSCEV(BU.Inputs[1]);
    if (SE.getTypeSizeInBits(N->getType()) >
        SE.getTypeSizeInBits(Bytes->getType()))
      continue;
    const SCEV *Need =
        SE.getMulExpr(SE.getNoopOrZeroExtend(N, Bytes->getType()),
                      SE.getConstant(Bytes->getType(), EltSize));
    if (Bytes == Need || SE.isKnownPredicate(ICmpInst::ICMP_UGE, Bytes, Need))
      return true;
  }
  return false;
}

/// A one-element stack slot of \p EltTy that can stand in for an object of
/// pointer type \p PtrTy, or null (with the reason) when the object lives in
/// another address space.
Value *GatherRewriter::stackSlot(Type *EltTy, PointerType *PtrTy,
                                 std::string &Why) {
  if (PtrTy->getAddressSpace() != DL.getAllocaAddrSpace()) {
    Why = "lives in address space " + std::to_string(PtrTy->getAddressSpace()) +
          ", where no stack slot can stand in for it";
    return nullptr;
  }
  Function &F = *L.getHeader()->getParent();
  IRBuilder<> Entry(&F.getEntryBlock(), F.getEntryBlock().begin());
  AllocaInst *Slot = Entry.CreateAlloca(EltTy, nullptr, "accel.slot");
  Slot->setAlignment(std::max(Slot->getAlign(), Align(16)));
  return Slot;
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
  Value *Slot = stackSlot(EltTy, cast<PointerType>(Base->getType()), Why);
  if (!Slot) {
    Why = "the object may hold no element and " + Why;
    return nullptr;
  }
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
  if (!boundIsExtent(GEP->getPointerOperand(), R, GEP->getSourceElementType(),
                     GA.Guard)) {
    missed(LD, "UnknownExtent",
           "guarded gather left alone: x is not known to hold n elements, so "
           "x[clamp(j, 0, n-1)] could read past it (give x dereferenceable "
           "bytes with n bounded by them, or an llvm.assume "
           "\"dereferenceable\" bundle of n * size bytes)");
    return false;
  }
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
    auto &AC = AM.getResult<AssumptionAnalysis>(F);
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
      Changed |=
          GatherRewriter(*L, LI, DT, SE, AC, TTI, ORE, Opts).run(Accesses);
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
    auto &AA = AM.getResult<AAManager>(F);
    if (splitLoop(*L, LI, DT, SE, AC, AA, ORE, Opts)) {
      Changed = true;
      AM.invalidate(F, PreservedAnalyses::none());
    }
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
