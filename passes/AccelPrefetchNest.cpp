//===- AccelPrefetchNest.cpp - Look-ahead across loop nests ---------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Look-ahead across the iterations of an outer loop for accel-prefetch (see
/// AccelPrefetch.cpp for the whole algorithm, AccelPrefetchAnalysis.cpp for
/// the legality within one loop): CSR nests, nests of blocks and
/// runtime-unrolled CSR nests, and the legality of their look-ahead loads.
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
/// T * (BTC_O + 1) - 1, computed in the trip count's type and saturated to
/// it (blockNestLastIteration); when every outer iteration reads the same
/// indices again (HPCC's streams advanced in place), it wraps around to
/// iteration j + d - T of the next outer iteration. Both lift the work gate,
/// like CSR nests.
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
/// Unrolled by 2, the remainder is at most one iteration and -O3 writes it
/// as one block B instead of a loop (X = phi [S, H], [S + 1, B], B entered
/// from H when (E - S) mod 2 != 0); the same argument holds with B for P,
/// M's start compared for equality with S + 1 to skip M.
///
//===----------------------------------------------------------------------===//

#include "AccelPrefetchAnalysis.h"
#include "Compat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/ConstantRange.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;
using namespace llvm::accel::prefetch;

#define DEBUG_TYPE "accel-prefetch"

//===----------------------------------------------------------------------===//
// Look-ahead across loop nests
//===----------------------------------------------------------------------===//

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
  // Unrolled by 2: a one-iteration remainder block B, X = phi [S, H],
  // [S + 1, B], with B between H and X's block only. R is what H compares
  // with zero.
  BasicBlock *PBlock = nullptr;
  if (!P && XPhi->getNumIncomingValues() == 2 && U == 2) {
    for (unsigned I = 0; I != 2 && !PBlock; ++I) {
      BasicBlock *B = XPhi->getIncomingBlock(I);
      BasicBlock *H = XPhi->getIncomingBlock(1 - I);
      const SCEV *Other = SE.getSCEV(XPhi->getIncomingValue(1 - I));
      auto *Br = dyn_cast<BranchInst>(H->getTerminator());
      auto *Cmp = Br && Br->isConditional()
                      ? dyn_cast<ICmpInst>(Br->getCondition())
                      : nullptr;
      if (LI.getLoopFor(B) != O || B->getSingleSuccessor() != Bx ||
          B->getUniquePredecessor() != H || !Cmp ||
          SE.getSCEV(XPhi->getIncomingValue(I)) !=
              SE.getAddExpr(Other, SE.getOne(Ty)))
        continue;
      PBlock = B;
      PExit = B;
      S = Other;
      R = SE.getSCEV(Cmp->getOperand(0));
    }
  }
  if ((!P && !PBlock) || !IsTiled(S))
    return NoMatch;

  // R = (E - S) mod 2^k, with U dividing 2^k.
  const SCEV *D = SE.getMinusSCEV(E, S);
  auto *ZExt = dyn_cast<SCEVZeroExtendExpr>(R);
  unsigned K = ZExt ? ZExt->getOperand()->getType()->getScalarSizeInBits() : 0;
  if (!ZExt || K >= 63 || !isPowerOf2_64(U) || (uint64_t(1) << K) % U ||
      (PBlock && K != 1) ||
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
    BasicBlock *PEntry = PBlock ? PBlock : P->getLoopPreheader();
    if (Br->getSuccessor(ToBx) != Bx || Br->getSuccessor(1 - ToBx) != PEntry ||
        PEntry->getUniquePredecessor() != H ||
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
      if (!Cmp || (Br->getSuccessor(0) == Pre) == (Br->getSuccessor(1) == Pre))
        return NoMatch;
      CmpInst::Predicate Skip = Br->getSuccessor(0) == Pre
                                    ? Cmp->getInversePredicate()
                                    : Cmp->getPredicate();
      // The compared value is k0 + D or k0 - D: the skip region of D. An
      // equality with a value that is not a constant (E == S + 1) is one
      // of their difference with zero.
      const SCEV *A = SE.getSCEV(Cmp->getOperand(0));
      APInt CV;
      if (auto *C = dyn_cast<ConstantInt>(Cmp->getOperand(1))) {
        CV = C->getValue();
      } else if (Cmp->isEquality() &&
                 A->getType() == SE.getSCEV(Cmp->getOperand(1))->getType()) {
        A = SE.getMinusSCEV(A, SE.getSCEV(Cmp->getOperand(1)));
        CV = APInt::getZero(A->getType()->getIntegerBitWidth());
      } else {
        return NoMatch;
      }
      if (A->getType() != D->getType())
        return NoMatch;
      ConstantRange Region = ConstantRange::makeExactICmpRegion(Skip, CV);
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
  NestPrologueBlock = PBlock;
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
                                         const Loop *Other,
                                         BasicBlock *OtherBlock,
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
  // The frames of a one-iteration remainder block, which loads element
  // OtherStart of each: its address minus Size * OtherStart.
  auto FramesOfBlock = [&](BasicBlock &BB, const SCEV *Start) {
    FrameList Out;
    for (Instruction &I : BB) {
      auto *Load = dyn_cast<LoadInst>(&I);
      if (!Load || !Load->isSimple())
        continue;
      const SCEV *Ptr = SE.getSCEV(Load->getPointerOperand());
      Type *IntTy = SE.getEffectiveSCEVType(Ptr->getType());
      uint64_t Size = DL.getTypeStoreSize(Load->getType()).getFixedValue();
      const SCEV *Base =
          SE.getAddExpr(Ptr, SE.getNegativeSCEV(SE.getMulExpr(
                                 SE.getConstant(IntTy, Size),
                                 SE.getTruncateOrSignExtend(Start, IntTy))));
      if (SE.isLoopInvariant(Base, Nest))
        Out.push_back({Load->getType(), Base});
    }
    return Out;
  };
  FrameList Mine = FramesOf(L, NestStart, U);
  FrameList Others = OtherBlock ? FramesOfBlock(*OtherBlock, OtherStart)
                                : FramesOf(*Other, OtherStart, OtherStep);
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
    NestPrologueBlock = nullptr;
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
  if (!NestPrologue && !NestPrologueBlock &&
      !enteredWhenNotEmpty(Pre, *O, NestStart, NestEnd))
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
  if (NestPrologue || NestPrologueBlock)
    if (const char *LoadWhy =
            NestMain == &L ? loadsMissing(Chosen, NestPrologue,
                                          NestPrologueBlock, NestTileStart, 1)
                           : loadsMissing(Chosen, NestMain, nullptr,
                                          NestMainStart, NestMainStep))
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
