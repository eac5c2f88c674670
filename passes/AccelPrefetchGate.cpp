//===- AccelPrefetchGate.cpp - The work gate and object sizes -------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The work gate of accel-prefetch's cost model (applyWorkGate), the size
/// of the object an indirect access indexes, as far as the IR tells it, and
/// the copy of a loop that runs without prefetches when the object turns
/// out, at run time, to fit in cache.
///
/// The work gate (`min-work`) declines tight indirect loops because over a
/// cache-resident table their prefetches only add instructions, while over
/// a table far larger than the caches they gain (a key histogram over 128
/// MiB of counters: 1.10x with the gate open, 0.81x over 64 KiB, the same
/// code on a Zen 3 EPYC). The gate stands aside for an access whose object
/// is known to exceed `resident-bytes`. Two facts bound that size:
///  - the range of the index (ObjectSpan's index kinds): `h & mask`,
///    `h >> shift` and `h % n` with loop-invariant right-hand sides (hash
///    tables, random-access updates) read elements [0, max] only, which
///    for a hash spreading its keys is the footprint;
///  - the object's own extent (ObjectBytes), at least: a memset, memcpy or
///    memmove of it, an `llvm.assume` "dereferenceable" bundle (llvmaccel's
///    frontends emit them for tensors of symbolic shape), `dereferenceable`
///    parameters, allocas and globals; each must dominate the loop.
/// A constant decides at compile time. A value known only at run time
/// (`memset(count, 0, nbuckets * 4)`) is compared in the preheader, and the
/// loop is versioned: the prefetching loop runs when the object exceeds
/// `resident-bytes`, an unchanged copy otherwise (`no-size-check` turns
/// this off). The copy is made only when every prefetch of the loop
/// depends on that comparison, for innermost loops that can be duplicated
/// in functions not optimized for size.
///
//===----------------------------------------------------------------------===//

#include "AccelPrefetchAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;
using namespace llvm::PatternMatch;
using namespace llvm::accel::prefetch;

#define DEBUG_TYPE "accel-prefetch"

STATISTIC(NumLoopsVersioned,
          "Loops copied to run without prefetches over small objects");

/// A value for remarks: a constant's value, else its source or IR name, else
/// a small expression of named values (`nbuckets * 4`, `64 - bits`: what
/// clang makes of a size or a shift), else an empty string.
static std::string valueText(const Value *V, unsigned Depth = 0) {
  if (const auto *C = dyn_cast<ConstantInt>(V))
    return std::to_string(C->getZExtValue());
  std::string Name = accel::sourceVariableName(const_cast<Value *>(V));
  if (!Name.empty())
    return Name;
  if (V->hasName())
    return V->getName().str();
  const auto *I = dyn_cast<Instruction>(V);
  if (!I || Depth > 2)
    return "";
  if (isa<CastInst>(I))
    return valueText(I->getOperand(0), Depth + 1);
  const char *Op = nullptr;
  switch (I->getOpcode()) {
  case Instruction::Add:
    Op = " + ";
    break;
  case Instruction::Sub:
    Op = " - ";
    break;
  case Instruction::Mul:
    Op = " * ";
    break;
  case Instruction::Shl:
    if (const auto *C = dyn_cast<ConstantInt>(I->getOperand(1));
        C && C->getValue().ult(63)) {
      std::string L = valueText(I->getOperand(0), Depth + 1);
      std::string Text = L + " * " + std::to_string(1ull << C->getZExtValue());
      return L.empty() ? "" : Depth ? "(" + Text + ")" : Text;
    }
    return "";
  default:
    return "";
  }
  std::string L = valueText(I->getOperand(0), Depth + 1);
  std::string R = valueText(I->getOperand(1), Depth + 1);
  if (L.empty() || R.empty())
    return "";
  return Depth ? "(" + L + Op + R + ")" : L + Op + R;
}

/// The scalar a vector operand splats, or \p V itself.
static Value *scalarOf(Value *V) {
  if (!V->getType()->isVectorTy())
    return V;
  return getSplatValue(V);
}

//===----------------------------------------------------------------------===//
// The gate
//===----------------------------------------------------------------------===//

/// The work gate: declines the indirect accesses of a loop that looks ahead
/// within itself when it does less than `min-work` units of work per
/// access, except an access whose loaded value decides a branch (each
/// misprediction discards the out-of-order window), one whose object is
/// known to exceed `resident-bytes`, and one whose object's size is known
/// only at run time, where the loop can be copied for small objects (all
/// its prefetches must then depend on that size). A look-ahead across the
/// iterations of an outer loop is exempt.
void LoopPrefetcher::applyWorkGate(
    uint64_t Work, bool HasStrided, SmallVectorImpl<AccessGroup *> &Chosen,
    SmallVectorImpl<GatherAccess> &ChosenGathers) {
  // A look-ahead across the outer loop's iterations runs past the inner
  // loop's exit, which the reorder buffer cannot (a row end is a taken
  // branch, often mispredicted): it pays off even when the work per access
  // is small.
  // Each lane of a gather is an access of its own. An access whose value
  // decides a branch is exempt too: every misprediction of that branch
  // discards the window that would have overlapped the next misses.
  uint64_t GatherLanes = 0;
  for (const GatherAccess &GA : ChosenGathers)
    GatherLanes += GA.Lanes;
  uint64_t IndirectAccesses = Chosen.size() + GatherLanes;
  WorkPerAccess = IndirectAccesses ? Work / IndirectAccesses : 0;
  if (IndirectAccesses && !Nest && WorkPerAccess < Gate.get().MinWork) {
    const WorkGate &WG = Gate.get();
    std::string GateWhy = WG.Source.empty() ? "" : ": " + WG.Source;
    // Sorts an access the gate would decline by what is known of its
    // object's size; returns whether it stays a candidate.
    auto BySize = [&](Instruction *Leader, Value *Ptr) {
      std::optional<ObjectSpan> Span = objectSpan(Ptr);
      if (!Span)
        return false;
      std::optional<bool> Large = spanIsLarge(*Span);
      if (Large && *Large)
        LargeExempt[Leader] = Span->Source;
      else if (!Large) {
        SizeChecked[Leader] = Span->Source;
        SizeChecks.push_back(std::move(*Span));
      }
      return Large.value_or(true);
    };
    SmallVector<AccessGroup *, 4> Declined;
    for (AccessGroup *G : Chosen)
      if (decidesBranch(*G))
        BranchExempt.insert(G);
      else if (!BySize(G->Leader, getLoadStorePointerOperand(G->Leader)))
        Declined.push_back(G);
    SmallVector<GatherAccess, 4> DeclinedGathers;
    llvm::erase_if(ChosenGathers, [&](GatherAccess &GA) {
      if (BySize(GA.I, GA.Ptrs))
        return false;
      DeclinedGathers.push_back(GA);
      return true;
    });
    // A copy for small objects needs every prefetch of the loop to depend
    // on their size.
    const char *NoCopy = nullptr;
    if (!SizeChecks.empty()) {
      NoCopy = cannotVersion();
      if (!NoCopy &&
          (HasStrided || !BranchExempt.empty() || !LargeExempt.empty()))
        NoCopy = "the loop has prefetches that do not depend on it";
    }
    if (NoCopy) {
      for (AccessGroup *G : Chosen)
        if (SizeChecked.contains(G->Leader))
          Declined.push_back(G);
      llvm::erase_if(ChosenGathers, [&](GatherAccess &GA) {
        if (!SizeChecked.contains(GA.I))
          return false;
        DeclinedGathers.push_back(GA);
        return true;
      });
    }
    // Why an access whose object's size is known only at run time has no
    // copy of the loop to run in.
    auto NoCopyWhy = [&](const Instruction *Leader) -> std::string {
      auto It = SizeChecked.find(Leader);
      if (It == SizeChecked.end() || !NoCopy)
        return "";
      return "; its object's size, from " + It->second +
             ", is known only at run time, and the loop is not copied for "
             "smaller objects: " +
             NoCopy;
    };
    for (AccessGroup *G : Declined)
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "TooLittleWork", G->Leader)
               << "not prefetching " << ore::NV("Array", arrayName(SE, G->Base))
               << "[...] via " << ore::NV("Index", chainNames(*G))
               << ": the loop does " << ore::NV("Work", WorkPerAccess)
               << " units of work per indirect access (needs "
               << ore::NV("MinWork", WG.MinWork) << GateWhy
               << "): out-of-order execution already overlaps these misses"
               << NoCopyWhy(G->Leader);
      });
    for (const GatherAccess &GA : DeclinedGathers)
      ORE.emit([&] {
        return OptimizationRemarkMissed(DEBUG_TYPE, "TooLittleWork", GA.I)
               << "not prefetching the lanes of a gather from "
               << ore::NV("Array", gatherName(GA)) << " via "
               << ore::NV("Index", chainNames(GA.G)) << ": the loop does "
               << ore::NV("Work", WorkPerAccess)
               << " units of work per indirect access (needs "
               << ore::NV("MinWork", WG.MinWork) << GateWhy
               << "): out-of-order execution already overlaps these misses"
               << NoCopyWhy(GA.I);
      });
    countDeclined(Declined.size() + DeclinedGathers.size());
    SmallPtrSet<const AccessGroup *, 4> Dropped(Declined.begin(),
                                                Declined.end());
    llvm::erase_if(Chosen, [&](AccessGroup *G) { return Dropped.contains(G); });
    if (NoCopy)
      SizeChecks.clear();
  }
}

/// For the passed remark: why the gate let \p Leader's access through for its
/// object's size, or an empty string.
std::string LoopPrefetcher::sizeExemptWhy(const Instruction *Leader) const {
  if (auto It = LargeExempt.find(Leader); It != LargeExempt.end())
    return "; its object's size, from " + It->second +
           ", exceeds resident-bytes (" + std::to_string(Opts.ResidentBytes) +
           "), so the loop's " + std::to_string(WorkPerAccess) +
           " units of work per indirect access (below " +
           std::to_string(Gate.get().MinWork) + ") leave its misses exposed";
  if (auto It = SizeChecked.find(Leader); It != SizeChecked.end())
    return "; its object's size, from " + It->second +
           ", is compared with resident-bytes (" +
           std::to_string(Opts.ResidentBytes) +
           ") at run time: a copy of the loop without prefetches runs "
           "over smaller objects";
  return "";
}

//===----------------------------------------------------------------------===//
// Spans
//===----------------------------------------------------------------------===//

/// The range of the index of \p GEP when a loop-invariant mask, shift or
/// modulus bounds it: `T[h & m]`, `T[h >> s]`, `T[h % n]` (zero-extended,
/// scalar or a vector splat), with every other index a constant.
std::optional<ObjectSpan> LoopPrefetcher::indexSpan(GEPOperator &GEP) const {
  if (GEP.getNumIndices() < 1 || !L.isLoopInvariant(GEP.getPointerOperand()))
    return std::nullopt;
  for (const Use &Idx : drop_begin(GEP.indices()))
    if (!isa<Constant>(Idx))
      return std::nullopt;
  Type *ElemTy = GEP.getSourceElementType();
  if (!ElemTy->isSized() || isa<ScalableVectorType>(ElemTy))
    return std::nullopt;
  uint64_t ElemBytes = DL.getTypeAllocSize(ElemTy).getFixedValue();
  if (!ElemBytes)
    return std::nullopt;

  Value *Index = *GEP.idx_begin();
  while (auto *Ext = dyn_cast<ZExtInst>(Index))
    Index = Ext->getOperand(0);
  // The loop-invariant operand of an and, or the right-hand side of a
  // shift or remainder.
  Value *A, *B, *Bound = nullptr;
  ObjectSpan S;
  if (match(Index, m_And(m_Value(A), m_Value(B)))) {
    S.Kind = ObjectSpan::MaskIndex;
    Bound = L.isLoopInvariant(B) ? B : L.isLoopInvariant(A) ? A : nullptr;
  } else if (match(Index, m_LShr(m_Value(A), m_Value(B)))) {
    S.Kind = ObjectSpan::ShiftIndex;
    Bound = L.isLoopInvariant(B) ? B : nullptr;
  } else if (match(Index, m_URem(m_Value(A), m_Value(B)))) {
    S.Kind = ObjectSpan::ModuloIndex;
    Bound = L.isLoopInvariant(B) ? B : nullptr;
  }
  S.V = Bound ? scalarOf(Bound) : nullptr;
  if (!S.V || !S.V->getType()->isIntegerTy())
    return std::nullopt;
  std::string Text = valueText(S.V);
  switch (S.Kind) {
  case ObjectSpan::MaskIndex:
    S.Source = Text.empty() ? "its index range (a mask known at run time)"
                            : "its index range [0, " + Text + "]";
    break;
  case ObjectSpan::ShiftIndex:
    S.Source = Text.empty()
                   ? "its index range (a shift known at run time)"
                   : "its index range [0, 2^(" +
                         std::to_string(S.V->getType()->getIntegerBitWidth()) +
                         " - " + Text + "))";
    break;
  default:
    S.Source = Text.empty() ? "its index range (a modulus known at run time)"
                            : "its index range [0, " + Text + ")";
    break;
  }
  S.ElemBytes = ElemBytes;
  S.Source += " of " + std::to_string(ElemBytes) + "-byte elements";
  return S;
}

/// At least how many bytes the object \p Object is: its own size (alloca,
/// global, dereferenceable(N)), or a memset, memcpy or memmove of it or a
/// "dereferenceable" assume bundle on it that dominates L. A size that
/// exceeds `resident-bytes` wins; else one known only at run time; else the
/// largest constant.
std::optional<ObjectSpan>
LoopPrefetcher::objectExtent(const Value *Object) const {
  const Instruction *PreheaderEnd = L.getLoopPreheader()->getTerminator();
  std::optional<ObjectSpan> Best;
  // "a memset of nb bytes", "a memset of a size known at run time".
  auto Of = [](StringRef What, Value *Bytes) {
    std::string Text = valueText(Bytes);
    return (What + " of " +
            (Text.empty() ? std::string("a size known at run time")
                          : Text + " bytes"))
        .str();
  };
  auto Consider = [&](Value *Bytes, std::string Source) {
    if (!Bytes->getType()->isIntegerTy())
      return;
    ObjectSpan S{ObjectSpan::ObjectBytes, Bytes, 1, std::move(Source)};
    auto Rank = [&](const ObjectSpan &Span) {
      std::optional<bool> Large = spanIsLarge(Span);
      return !Large ? 1 : *Large ? 2 : 0;
    };
    if (!Best || Rank(S) > Rank(*Best) ||
        (Rank(S) == 0 && Rank(*Best) == 0 &&
         cast<ConstantInt>(Bytes)->getValue().ugt(
             cast<ConstantInt>(Best->V)->getValue())))
      Best = std::move(S);
  };
  LLVMContext &Ctx = Object->getContext();
  if (std::optional<uint64_t> Size =
          knownObjectSize(SE.getUnknown(const_cast<Value *>(Object))))
    Consider(ConstantInt::get(Type::getInt64Ty(Ctx), *Size),
             "its declared size of " + std::to_string(*Size) + " bytes");
  for (const User *U : Object->users()) {
    auto *I = dyn_cast<Instruction>(U);
    if (!I || !DT.dominates(I, PreheaderEnd))
      continue;
    if (auto *MS = dyn_cast<MemSetInst>(I)) {
      if (MS->getDest()->stripPointerCasts() == Object)
        Consider(MS->getLength(), Of("a memset", MS->getLength()));
    } else if (auto *MT = dyn_cast<MemTransferInst>(I)) {
      if (MT->getDest()->stripPointerCasts() == Object ||
          MT->getSource()->stripPointerCasts() == Object)
        Consider(MT->getLength(), Of("a copy", MT->getLength()));
    } else if (auto *A = dyn_cast<AssumeInst>(I)) {
      for (unsigned B = 0, E = A->getNumOperandBundles(); B != E; ++B) {
        OperandBundleUse Bundle = A->getOperandBundleAt(B);
        if (Bundle.getTagName() == "dereferenceable" &&
            Bundle.Inputs.size() == 2 &&
            Bundle.Inputs[0]->stripPointerCasts() == Object)
          Consider(Bundle.Inputs[1],
                   Of("a dereferenceable assume", Bundle.Inputs[1]));
      }
    }
  }
  return Best;
}

/// How large the object the access at \p Ptr (a pointer, or a vector of
/// them) indexes is: its index range when a mask, shift or modulus bounds
/// it, else the object's extent.
std::optional<ObjectSpan> LoopPrefetcher::objectSpan(Value *Ptr) const {
  if (!Ptr || !L.getLoopPreheader())
    return std::nullopt;
  Value *Stripped = Ptr;
  if (Ptr->getType()->isPointerTy())
    Stripped = Ptr->stripInBoundsConstantOffsets();
  if (auto *GEP = dyn_cast<GEPOperator>(Stripped))
    if (std::optional<ObjectSpan> S = indexSpan(*GEP))
      return S;
  Value *Base = Stripped;
  if (auto *GEP = dyn_cast<GEPOperator>(Stripped))
    Base = GEP->getPointerOperand();
  if (!Base->getType()->isPointerTy() || !L.isLoopInvariant(Base))
    return std::nullopt;
  return objectExtent(getUnderlyingObject(Base));
}

/// Whether \p S exceeds `resident-bytes`, when its value is a constant.
std::optional<bool> LoopPrefetcher::spanIsLarge(const ObjectSpan &S) const {
  auto *C = dyn_cast<ConstantInt>(S.V);
  if (!C)
    return std::nullopt;
  const APInt &X = C->getValue();
  uint64_t Limit = Opts.ResidentBytes / S.ElemBytes;
  switch (S.Kind) {
  case ObjectSpan::ObjectBytes:
    return X.ugt(Opts.ResidentBytes);
  case ObjectSpan::MaskIndex: // (X + 1) * E > R, i.e. X >= R / E.
    return X.uge(Limit);
  case ObjectSpan::ModuloIndex: // X * E > R, i.e. X > R / E.
    return X.ugt(Limit);
  case ObjectSpan::ShiftIndex: {
    unsigned Width = X.getBitWidth();
    if (X.uge(Width))
      return false;
    return APInt::getAllOnes(Width).lshr(X.getZExtValue()).uge(Limit);
  }
  }
  llvm_unreachable("unknown span kind");
}

/// Computes at \p B whether \p S exceeds `resident-bytes` (frozen: the loop
/// might never have computed the value it compares).
Value *LoopPrefetcher::emitSpanIsLarge(const ObjectSpan &S,
                                       IRBuilder<> &B) const {
  auto *Ty = cast<IntegerType>(S.V->getType());
  uint64_t Limit = S.Kind == ObjectSpan::ObjectBytes
                       ? Opts.ResidentBytes
                       : Opts.ResidentBytes / S.ElemBytes;
  if (Ty->getBitWidth() < 64 && Limit > maxUIntN(Ty->getBitWidth()))
    return B.getFalse();
  Value *Bound = ConstantInt::get(Ty, Limit);
  Value *Cmp;
  switch (S.Kind) {
  case ObjectSpan::ObjectBytes:
  case ObjectSpan::ModuloIndex:
    Cmp = B.CreateICmpUGT(S.V, Bound);
    break;
  case ObjectSpan::MaskIndex:
    Cmp = B.CreateICmpUGE(S.V, Bound);
    break;
  case ObjectSpan::ShiftIndex:
    Cmp = B.CreateICmpUGE(B.CreateLShr(Constant::getAllOnesValue(Ty), S.V),
                          Bound);
    break;
  }
  return B.CreateFreeze(Cmp);
}

//===----------------------------------------------------------------------===//
// The copy without prefetches
//===----------------------------------------------------------------------===//

/// Why L cannot get a copy that runs without prefetches, or nullptr.
const char *LoopPrefetcher::cannotVersion() const {
  if (!Opts.SizeCheck)
    return "size checks are off (no-size-check)";
  if (!L.isInnermost())
    return "the loop has inner loops";
  if (L.getHeader()->getParent()->hasOptSize())
    return "the function is optimized for size";
  for (BasicBlock *BB : L.blocks()) {
    for (Instruction &I : *BB) {
      if (auto *CB = dyn_cast<CallBase>(&I))
        if (CB->cannotDuplicate() || CB->isConvergent())
          return "the loop has a call that cannot be duplicated";
      if (I.getType()->isTokenTy())
        return "the loop defines a token";
    }
    for (BasicBlock *Pred : predecessors(BB))
      if (!isa<BranchInst, SwitchInst>(Pred->getTerminator()))
        return "the loop is entered or left by an unusual branch";
  }
  SmallVector<BasicBlock *, 4> Exits;
  L.getUniqueExitBlocks(Exits);
  for (BasicBlock *Exit : Exits)
    for (BasicBlock *Pred : predecessors(Exit))
      if (!isa<BranchInst, SwitchInst>(Pred->getTerminator()))
        return "the loop is entered or left by an unusual branch";
  return nullptr;
}

/// Gives \p Copy and the loops in it loop IDs of their own: a clone's latch
/// still names its original's `llvm.loop` node, and a loop ID names one loop
/// (a later pass that marks one copy, `llvm.loop.isvectorized` say, must not
/// mark the other). The properties are kept.
static void giveDistinctLoopIDs(Loop &Copy) {
  SmallVector<Loop *, 4> Loops = Copy.getLoopsInPreorder();
  for (Loop *CL : Loops) {
    MDNode *ID = CL->getLoopID();
    if (!ID)
      continue;
    SmallVector<Metadata *, 4> Ops{nullptr};
    Ops.append(ID->op_begin() + 1, ID->op_end());
    MDNode *NewID = MDNode::getDistinct(ID->getContext(), Ops);
    NewID->replaceOperandWith(0, NewID);
    CL->setLoopID(NewID);
  }
}

/// Copies L and branches in its preheader to L when any of \p Spans exceeds
/// `resident-bytes`, else to the copy, which L's prefetches will not reach.
/// L keeps its identity (and its analyses); the copy is left for later
/// passes.
void LoopPrefetcher::versionOnSize(ArrayRef<ObjectSpan> Spans) {
  Function &F = *L.getHeader()->getParent();
  formDedicatedExitBlocks(&L, &DT, &LI, /*MSSAU=*/nullptr,
                          /*PreserveLCSSA=*/false);
  formLCSSA(L, DT, &LI, &SE);

  BasicBlock *Check = L.getLoopPreheader();
  BasicBlock *Preheader =
      SplitBlock(Check, Check->getTerminator()->getIterator(), &DT, &LI,
                 /*MSSAU=*/nullptr, L.getHeader()->getName() + ".ph");
  IRBuilder<> B(Check->getTerminator());
  Value *Large = nullptr;
  SmallSet<std::tuple<unsigned, Value *, uint64_t>, 4> Seen;
  for (const ObjectSpan &S : Spans) {
    // Unrolled copies of an access share one span.
    if (!Seen.insert({S.Kind, S.V, S.ElemBytes}).second)
      continue;
    Value *IsLarge = emitSpanIsLarge(S, B);
    Large = Large ? B.CreateOr(Large, IsLarge) : IsLarge;
  }
  Large->setName("accel.prefetch.large");

  ValueToValueMapTy VMap;
  SmallVector<BasicBlock *, 16> CopyBlocks;
  Loop *Copy = cloneLoopWithPreheader(Preheader, Check, &L, VMap, ".noprefetch",
                                      &LI, &DT, CopyBlocks);
  remapInstructionsInBlocks(CopyBlocks, VMap);
  giveDistinctLoopIDs(*Copy);

  // The exits (LCSSA phis only, after formLCSSA) take the copy's values
  // from the copy's exiting blocks.
  SmallVector<BasicBlock *, 4> Exits;
  L.getUniqueExitBlocks(Exits);
  for (BasicBlock *Exit : Exits)
    for (PHINode &Phi : Exit->phis())
      for (unsigned I = 0, E = Phi.getNumIncomingValues(); I != E; ++I) {
        BasicBlock *In = Phi.getIncomingBlock(I);
        if (!L.contains(In))
          continue;
        Value *V = Phi.getIncomingValue(I);
        Value *Mapped = VMap.lookup(V);
        Phi.addIncoming(Mapped ? Mapped : V, cast<BasicBlock>(VMap[In]));
      }

  Check->getTerminator()->eraseFromParent();
  BranchInst::Create(Preheader, cast<BasicBlock>(VMap[Preheader]), Large,
                     Check);
  DT.recalculate(F);
  formDedicatedExitBlocks(&L, &DT, &LI, /*MSSAU=*/nullptr,
                          /*PreserveLCSSA=*/true);
  formDedicatedExitBlocks(Copy, &DT, &LI, /*MSSAU=*/nullptr,
                          /*PreserveLCSSA=*/true);
  CFGChanged = true;
  ++NumLoopsVersioned;
  LLVM_DEBUG(dbgs() << "accel-prefetch: loop " << L.getHeader()->getName()
                    << " copied for small objects\n");
}
