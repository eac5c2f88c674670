//===- AccelMaskedLoad.h - Bounds-checked accesses made fast ----*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-masked-load rewrites loops whose loads and stores are guarded by a
/// range check on their index (zero padding in convolutions and pooling,
/// fill-mode gathers, ragged lengths), so that the loop vectorizer sees
/// loops it can vectorize: checks implied by the loop's bounds are removed,
/// loops with affine indices are split into pre / main / post loops whose
/// main loop has no check, and guarded gathers become unconditional clamped
/// loads (or are left to the vectorizer's masked gathers where the target
/// has them).
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELMASKEDLOAD_H
#define LLVMACCEL_ACCELMASKEDLOAD_H

#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"

namespace llvm {

/// Parameters of accel-masked-load (see Passes.def for their ranges).
struct AccelMaskedLoadOptions {
  /// Split loops on affine checks (index-set splitting).
  bool Split = true;
  /// Leave non-affine guarded accesses to the vectorizer's masked
  /// loads/gathers/stores where TTI says the target has them.
  bool Masked = true;
  /// Rewrite non-affine guarded loads to unconditional clamped loads.
  bool Clamp = true;
  /// Most instructions one split may add (the two copies of the loop).
  unsigned MaxGrowth = 4096;
};

class AccelMaskedLoadPass : public PassInfoMixin<AccelMaskedLoadPass> {
public:
  explicit AccelMaskedLoadPass(AccelMaskedLoadOptions Opts = {}) : Opts(Opts) {}

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM);
  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)> MapClassName2PassName);

private:
  AccelMaskedLoadOptions Opts;
};

/// Parses the text between the angle brackets of `accel-masked-load<...>`.
Expected<AccelMaskedLoadOptions> parseAccelMaskedLoadOptions(StringRef Params);

} // namespace llvm

#endif // LLVMACCEL_ACCELMASKEDLOAD_H
