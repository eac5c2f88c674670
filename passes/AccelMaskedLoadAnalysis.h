//===- AccelMaskedLoadAnalysis.h - accel-masked-load internals --*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the three source files of accel-masked-load share: the discovery of
/// guarded accesses and their range checks (AccelMaskedLoadAnalysis.cpp) and
/// index-set splitting (AccelMaskedLoadSplit.cpp), used by the pass itself
/// (AccelMaskedLoad.cpp). Not an interface of the plugin.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELMASKEDLOADANALYSIS_H
#define LLVMACCEL_ACCELMASKEDLOADANALYSIS_H

#include "AccelMaskedLoad.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/InstrTypes.h"

#include <string>

namespace llvm {

class AAResults;
class AssumptionCache;
class BranchInst;
class DominatorTree;
class ICmpInst;
class Instruction;
class Loop;
class LoopInfo;
class OptimizationRemarkEmitter;
class ScalarEvolution;
class SelectInst;
class Value;

namespace accel {
namespace maskedload {

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

/// A short description of a check for remarks: "j slt n".
std::string describe(const RangeCheck &RC);

/// Merges phis of identical speculatable instructions (what jump threading
/// leaves of an unrolled bounds-checked body) into one instruction in the
/// phi block's immediate dominator. Returns whether anything changed.
bool mergeDuplicatedIncomings(Loop &L, DominatorTree &DT);

/// Splits \p L into pre / main / post loops on the affine range checks of its
/// guarded accesses (with remarks). Returns whether it changed the function;
/// the caller recomputes every analysis then.
bool splitLoop(Loop &L, LoopInfo &LI, DominatorTree &DT, ScalarEvolution &SE,
               AssumptionCache &AC, AAResults &AA,
               OptimizationRemarkEmitter &ORE,
               const AccelMaskedLoadOptions &Opts);

} // namespace maskedload
} // namespace accel
} // namespace llvm

#endif // LLVMACCEL_ACCELMASKEDLOADANALYSIS_H
