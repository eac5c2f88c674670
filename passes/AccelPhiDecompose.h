//===- AccelPhiDecompose.h - Split aggregate and vector phis ---*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-phi-decompose splits phis (and selects) of first-class aggregates --
/// `phi { float, float }` from MLIR's complex<f32>, `phi [2 x i64]` shape
/// tuples, memref descriptors `{ ptr, ptr, i64, [1 x i64], [1 x i64] }` -- and
/// loop-carried vector phis narrower than the target's vector registers into
/// one phi per scalar element, so that the loop vectorizer (which refuses
/// loops whose values have aggregate or vector types), SCEV and LICM see
/// plain scalars. Incoming values are taken straight from the insertvalue /
/// insertelement chains that built them, or extracted once right after their
/// definition; extractvalue users get the scalar phi, any other user gets the
/// aggregate rebuilt once, after the phis. In a split vector phi's loop, the
/// lane-wise vector instructions that only feed split values are computed
/// lane by lane as well, so the loop vectorizer can widen the loop itself.
///
/// Static shape anchors: a phi whose incoming values are provably equal (the
/// same value, equal constants, or equal by a dominating llvm.assume) is
/// folded; where every incoming value of a size-like integer phi is known to
/// be a multiple of a power of two or to lie in a range that the phi itself
/// is not known to, that fact is stated once, as an llvm.assume right after
/// the phi, where the paths converge, so that SCEV, the loop vectorizer and
/// InstCombine see it (no remainder loop when the trip count is known to be a
/// multiple of the vector step).
///
/// Extension point: Peephole. Its first call in default<O2>/default<O3> is
/// after the inliner and the first SROA/EarlyCSE/InstCombine of each
/// function (so aggregate phis created by inlining a function that returns a
/// struct are seen, and InstCombine has already folded the easy phi-of-
/// insertvalue cases), and before LICM, loop rotation, IndVarSimplify, the
/// second SROA, GVN, the later InstCombines and the whole vectorization
/// pipeline, which all then work on the scalar phis. It is called again after
/// the late InstCombine, which catches aggregate phis that SimplifyCFG or
/// InstCombine formed in between; on functions without such phis the pass
/// costs one walk over the phis and selects.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELPHIDECOMPOSE_H
#define LLVMACCEL_ACCELPHIDECOMPOSE_H

#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"

namespace llvm {

/// Parameters of accel-phi-decompose.
struct AccelPhiDecomposeOptions {
  /// Split loop-carried vector phis narrower than the target's registers.
  bool Vectors = true;
  /// Fold equal-valued phis and state divisibility and range facts at phis.
  bool Anchors = true;
  /// Most scalar elements a phi is split into (1..256).
  unsigned MaxElements = 16;
};

class AccelPhiDecomposePass : public PassInfoMixin<AccelPhiDecomposePass> {
public:
  explicit AccelPhiDecomposePass(AccelPhiDecomposeOptions Opts = {})
      : Opts(Opts) {}

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM);
  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)> MapClassName2PassName);

private:
  AccelPhiDecomposeOptions Opts;
};

/// Parses the text between the angle brackets of `accel-phi-decompose<...>`.
Expected<AccelPhiDecomposeOptions>
parseAccelPhiDecomposeOptions(StringRef Params);

class AssumptionCache;
class DominatorTree;
class LoopInfo;
class OptimizationRemarkEmitter;
class PHINode;
class Value;

namespace accel {

/// The shape anchors of accel-phi-decompose (AccelPhiDecomposeAnchors.cpp):
/// folds phis whose incoming values are equal by llvm.assume and states the
/// divisibility and range its paths share at each size-like phi or select.
/// Returns whether \p F changed.
bool anchorShapes(Function &F, DominatorTree &DT, LoopInfo &LI,
                  AssumptionCache &AC, OptimizationRemarkEmitter &ORE);

/// Whether replacing \p PN by \p V keeps the IR valid and in LCSSA form: \p V
/// dominates the phi's block and is not defined in a loop the block is not
/// in.
bool replacementKeepsLCSSA(PHINode &PN, Value *V, DominatorTree &DT,
                           LoopInfo &LI);

} // namespace accel

} // namespace llvm

#endif // LLVMACCEL_ACCELPHIDECOMPOSE_H
