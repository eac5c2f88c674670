//===- AccelPrefetchAnalysis.cpp - Accesses, cost model, legality ---------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Analysis for accel-prefetch (see AccelPrefetch.cpp for the whole
/// algorithm): the accesses of a loop and their groups, the loads an address
/// depends on, the cost model that picks the distance, and the legality of
/// the look-ahead loads within one loop (AccelPrefetchNest.cpp extends it
/// across loop nests).
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
/// Profitability: an out-of-order core already overlaps many misses of a
/// tight gather loop (`s += T[idx[i]]`): its reorder buffer spans many
/// iterations, hence many independent misses. Prefetching still gains there
/// when the table is far larger than the caches, but costs instructions when
/// it fits in them. Indirect prefetching within one loop therefore requires
/// `min-work` units of TTI cost per indirect cache line and iteration, where
/// few misses fit in the window, unless the IR says the table exceeds
/// `resident-bytes` (AccelPrefetchGate.cpp: an index range, a memset of the
/// table, a dereferenceable size; a size known only at run time is compared
/// in the preheader of a loop copied for small tables). A look-ahead across the
/// iterations of an outer loop (CSR nests) is exempt: it runs past the inner
/// loop's exits, which bound what the window overlaps (a row end is a
/// data-dependent branch, often mispredicted), and CSR SpMV (5 units per
/// access) gains like hand prefetching. Strided accesses below min-stride are
/// left to the hardware prefetcher; strided and indirect accesses to an object
/// known to be at most `resident-bytes` large are left alone, and so are the
/// sources of packing copies (loads only stored into one local buffer, at least
/// two lines per iteration: GEMM panels), which are read once in row segments
/// the hardware prefetcher follows.
///
//===----------------------------------------------------------------------===//

#include "AccelPrefetchAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/LoopIterator.h"
#include "llvm/Analysis/MemoryBuiltins.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/MC/MCSchedule.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#include <algorithm>

using namespace llvm;
using namespace llvm::accel::prefetch;

#define DEBUG_TYPE "accel-prefetch"

namespace {

/// Memory latency in cycles when neither `latency=` nor the target gives one
/// (TTI has no latency hook): a DRAM access on a current server core.
constexpr unsigned DefaultLatency = 300;
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
/// Trip count assumed for an inner loop whose trip count is unknown, when
/// weighting its cost in the cost of one outer iteration.
constexpr unsigned DefaultInnerTripCount = 16;

/// Units of a cost for the cost model: 1 for an invalid cost, 0 for a
/// negative one.
uint64_t costValue(InstructionCost Cost) {
  if (!Cost.isValid())
    return 1;
  int64_t V = accel::costValue(Cost);
  return V > 0 ? uint64_t(V) : 0;
}

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

/// The name of the array \p Ptr points into, for remarks.
std::string llvm::accel::prefetch::arrayName(ScalarEvolution &SE,
                                             const SCEV *Ptr) {
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
  Access Row{&I, AR->getStart(), rowBytes(AR, Inner, Size), isa<StoreInst>(I)};
  if (Row.Bytes == Size && !SE.getSmallConstantTripCount(&Inner))
    if ((Row.Span = rowSpan(AR, Inner, Size)))
      Row.Bytes = uint64_t(Opts.MaxLines) * LineSize;
  return Row;
}

/// The bytes a row of run-time length spans, `BTC * Step + Size` with the
/// inner loop's backedge-taken count, when that count is the same in every
/// iteration of L and can be computed before L (rows of one width, such
/// as an embedding table's with the width an argument); else nullptr (CSR
/// rows, whose lengths differ, keep the access's own size).
const SCEV *LoopPrefetcher::rowSpan(const SCEVAddRecExpr *AR, Loop &Inner,
                                    uint64_t Size) const {
  const SCEV *BTC = SE.getBackedgeTakenCount(&Inner);
  if (isa<SCEVCouldNotCompute>(BTC) || !SE.isLoopInvariant(BTC, &L))
    return nullptr;
  BasicBlock *Pre = L.getLoopPreheader();
  if (!Pre || !accel::createSCEVExpander(SE, DL, "accel.prefetch")
                   ->isSafeToExpandAt(BTC, Pre->getTerminator()))
    return nullptr;
  Type *IntTy = SE.getEffectiveSCEVType(AR->getType());
  const SCEV *Count = SE.getTruncateOrZeroExtend(BTC, IntTy);
  return SE.getAddExpr(
      SE.getMulExpr(
          Count, SE.getTruncateOrZeroExtend(AR->getStepRecurrence(SE), IntTy)),
      SE.getConstant(IntTy, Size));
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
/// stored (or scattered) into one alloca, or copied there by memcpy (the
/// fused attention packs value rows so), and each iteration reads at least
/// two adjacent lines. Such a source is read once, in row segments that the
/// hardware prefetcher follows; software prefetches only add work to a loop
/// that is bound by its stores.
AllocaInst *LoopPrefetcher::packingBuffer(const AccessGroup &G) const {
  if (linePoints(G).size() < 2)
    return nullptr;
  AllocaInst *Buffer = nullptr;
  // Whether \p Dest points into one local buffer, the same for every member.
  auto IntoBuffer = [&](Value *Dest) {
    // A scatter's pointers: a GEP of the buffer with vector offsets.
    if (auto *GEP = dyn_cast<GetElementPtrInst>(Dest))
      Dest = GEP->getPointerOperand();
    if (!Dest->getType()->isPointerTy())
      return false;
    auto *A = dyn_cast<AllocaInst>(getUnderlyingObject(Dest));
    if (!A || (Buffer && A != Buffer))
      return false;
    Buffer = A;
    return true;
  };
  for (Instruction *M : G.Members) {
    // A copy of a row segment into the buffer (codegen packs panels with
    // memcpy, or loop idiom recognition turns the element copies into one).
    if (auto *Copy = dyn_cast<MemTransferInst>(M)) {
      if (G.IsWrite || !IntoBuffer(Copy->getRawDest()))
        return nullptr;
      continue;
    }
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
      if (!Dest || !IntoBuffer(Dest))
        return nullptr;
    }
  }
  return Buffer;
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
      int64_t Offset = Diff->getAPInt().getSExtValue();
      G.Ranges.push_back({Offset, A.Bytes});
      G.Members.push_back(A.I);
      G.IsWrite |= A.IsWrite;
      extendEnd(G, A, Offset);
      return;
    }
  }
  AccessGroup G;
  G.Leader = A.I;
  G.Base = A.Addr;
  G.Ranges.push_back({0, A.Bytes});
  G.Members.push_back(A.I);
  G.IsWrite = A.IsWrite;
  extendEnd(G, A, 0);
  Groups.push_back(std::move(G));
}

/// Widens \p G's run-time end by its member \p A at \p Offset: the end of
/// the group is the largest end of its members (a member of constant size
/// ends Offset + Bytes) once one of them is a row of run-time length.
void LoopPrefetcher::extendEnd(AccessGroup &G, const Access &A,
                               int64_t Offset) {
  Type *IntTy = SE.getEffectiveSCEVType(G.Base->getType());
  auto EndOf = [&](int64_t Off, const SCEV *Span, uint64_t Bytes) {
    const SCEV *Extent = Span ? SE.getTruncateOrSignExtend(Span, IntTy)
                              : SE.getConstant(IntTy, Bytes);
    return SE.getAddExpr(SE.getConstant(IntTy, Off), Extent);
  };
  if (!A.Span && !G.End)
    return;
  if (!G.End) {
    // The members so far (all but A) are of constant size.
    for (auto [Off, Bytes] : ArrayRef(G.Ranges).drop_back()) {
      const SCEV *E = EndOf(Off, nullptr, Bytes);
      G.End = G.End ? SE.getSMaxExpr(G.End, E) : E;
    }
  }
  const SCEV *E = EndOf(Offset, A.Span, A.Bytes);
  G.End = G.End ? SE.getSMaxExpr(G.End, E) : E;
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

/// Values followed from an access to the branches they decide, at most.
constexpr unsigned MaxBranchSearch = 64;

/// Whether a value \p G loads decides a conditional branch or switch of the
/// loop (`if (T[h].key == k)`), through computations within one iteration
/// (header phis, the values carried to the next one, are not followed).
/// Such a branch is as unpredictable as the data: each misprediction
/// discards the out-of-order window, and with it the misses of later
/// iterations it would have overlapped.
bool LoopPrefetcher::decidesBranch(const AccessGroup &G) const {
  SmallVector<const Instruction *, 16> Worklist;
  SmallPtrSet<const Instruction *, 32> Seen;
  for (Instruction *M : G.Members)
    if (isa<LoadInst>(M))
      Worklist.push_back(M);
  while (!Worklist.empty() && Seen.size() < MaxBranchSearch) {
    const Instruction *I = Worklist.pop_back_val();
    if (!Seen.insert(I).second)
      continue;
    for (const User *U : I->users()) {
      auto *UI = dyn_cast<Instruction>(U);
      if (!UI || !L.contains(UI) || isa<StoreInst>(UI) ||
          (isa<PHINode>(UI) && UI->getParent() == L.getHeader()))
        continue;
      if (auto *Br = dyn_cast<BranchInst>(UI)) {
        if (Br->isConditional())
          return true;
        continue;
      }
      if (isa<SwitchInst>(UI))
        return true;
      Worklist.push_back(UI);
    }
  }
  return false;
}

/// The `min-work` of a CPU LLVM has no scheduling model for, or of a
/// generic CPU (`generic`, `x86-64`, `x86-64-v3`, ...): its model stands for
/// no machine in particular (x86-64 takes Sandy Bridge's 168-entry buffer),
/// so it says nothing of the core the code will run on.
constexpr unsigned DefaultMinWork = 16;

static bool isGenericCPU(StringRef CPU) {
  return CPU.empty() || CPU.starts_with("generic") || CPU.starts_with("x86-64");
}

/// The reorder buffer, in micro-ops, of the CPU \p F is compiled for (its
/// `target-cpu`), from LLVM's scheduling model: 0 for an in-order core,
/// std::nullopt for a generic CPU or one without a model.
static std::optional<unsigned> reorderBufferSize(const Function &F,
                                                 StringRef CPU) {
  if (isGenericCPU(CPU))
    return std::nullopt;
  Triple TT(accel::tripleString(*F.getParent()));
  std::string Err;
  const Target *T = accel::lookupTarget(TT, Err);
  if (!T)
    return std::nullopt;
  std::unique_ptr<MCSubtargetInfo> STI = accel::createSubtargetInfo(
      *T, TT, CPU, F.getFnAttribute("target-features").getValueAsString());
  if (!STI || !STI->isCPUStringValid(CPU))
    return std::nullopt;
  const MCSchedModel &SM = STI->getSchedModel();
  if (!SM.hasInstrSchedModel())
    return std::nullopt;
  return SM.isOutOfOrder() ? SM.MicroOpBufferSize : 0;
}

/// Accesses in flight where no figure was measured for the CPU (generic
/// CPUs among them): long enough for the cores with the most misses in
/// flight. A look-ahead too short for a core is worse than none: on Zen 5 a
/// CSR SpMV and a histogram prefetched 16 accesses ahead ran at 0.86x and
/// 0.76x of -O3, while 64 ahead never fell below -O3 on any host measured
/// (bench/results/prefetch.md), at the cost of some of the gain on hash
/// probes of Zen 3.
constexpr unsigned DefaultInFlight = 64;

/// The accesses in flight the work gate weighs the reorder buffer against:
/// the fewest a current core keeps, so that a CPU's larger figure lengthens
/// the look-ahead without making the pass prefetch tighter loops (a 64 KiB
/// histogram lost 9% so on Zen 5).
constexpr unsigned GateInFlight = 16;

/// Accesses in flight measured for a CPU (LLVM's name for it) where the best
/// look-ahead of the prefetch bench differs from DefaultInFlight: a figure of
/// the core's memory system that LLVM's scheduling models do not carry, as
/// AArch64's subtargets carry their prefetch distances. Zen 3: 32 cost the
/// hash probe 2.70x -> 2.15x and bags of run-time width 1.87x -> 1.51x.
/// Emerald Rapids: 32 was level with 16 or ahead on every kernel (hash probe
/// 2.36x against 2.30x), and its hand sweeps lose a little from 32 to 64.
static unsigned measuredInFlight(StringRef CPU) {
  return StringSwitch<unsigned>(CPU)
      .Case("znver3", 16)
      .Case("emeraldrapids", 32)
      .Default(DefaultInFlight);
}

WorkGate llvm::accel::prefetch::workGate(const Function &F,
                                         const AccelPrefetchOptions &Opts) {
  StringRef CPU = F.getFnAttribute("target-cpu").getValueAsString();
  unsigned InFlight = Opts.InFlight.value_or(measuredInFlight(CPU));
  LLVM_DEBUG(dbgs() << "accel-prefetch: " << CPU << ": " << InFlight
                    << " accesses in flight\n");
  if (Opts.MinWork)
    return {*Opts.MinWork, "", InFlight};
  std::optional<unsigned> ROB = reorderBufferSize(F, CPU);
  if (!ROB)
    return {DefaultMinWork,
            isGenericCPU(CPU) ? "the default for a generic CPU"
                              : "the default for a CPU without a "
                                "scheduling model",
            InFlight};
  unsigned Against = Opts.InFlight.value_or(GateInFlight);
  unsigned MinWork = divideCeil(*ROB, Against);
  LLVM_DEBUG(dbgs() << "accel-prefetch: " << CPU << ": reorder buffer " << *ROB
                    << ", min-work " << MinWork << "\n");
  if (!*ROB)
    return {0, (CPU + " executes in order").str(), InFlight};
  return {MinWork,
          ("the " + Twine(*ROB) + "-micro-op reorder buffer of " + CPU +
           " over " + Twine(Against) + " accesses in flight")
              .str(),
          InFlight};
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
  D = std::min<uint64_t>(D, Gate.get().InFlight / std::max(Groups, 1u));
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

/// Whether a store of the loop may write an array whose loaded values feed
/// another look-ahead load: that load, issued early, could then read a stale
/// index and leave the data the loop accesses.
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
    DependenceFinder Finder(L, LI, DT, SE);
    Finder.AllowVectors = true;
    std::optional<unsigned> Level = Finder.levelOfValue(GA.Ptrs);
    if (!Level) {
      declineGather(GA, "Gather",
                    "cannot compute the addresses ahead: " + Finder.Failure);
      continue;
    }
    if (*Level == 0)
      continue; // Lanes at affine addresses: a strided access.
    if (ClampWhy) {
      declineGather(GA, "UnknownTripCount", ClampWhy);
      continue;
    }
    GA.G.Level = *Level;
    GA.G.Loads.assign(Finder.Loads.begin(), Finder.Loads.end());
    if (chainsMayBeOverwritten(GA.G, L)) {
      declineGather(GA, "IndexMayChange",
                    "the loop may store to the index arrays of the chain");
      continue;
    }
    if (std::optional<uint64_t> Size =
            GA.G.Base ? knownObjectSize(GA.G.Base) : std::nullopt;
        Size && *Size <= Opts.ResidentBytes) {
      declineGather(GA, "CacheResident",
                    "the indexed object is only " + Twine(*Size) +
                        " bytes: it stays in cache");
      continue;
    }
    Chosen.push_back(std::move(GA));
  }
}
