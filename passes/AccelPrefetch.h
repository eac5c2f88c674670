//===- AccelPrefetch.h - Indirect and strided prefetching -------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-prefetch inserts software prefetches for loads in innermost loops
/// whose addresses the hardware prefetcher cannot predict: indirect accesses
/// such as T[f(B[i])] (embedding lookups, sparse gathers, hash probes) and
/// affine accesses with large strides. Look-ahead index loads are clamped to
/// an iteration the loop really executes, so no new load can fault.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELPREFETCH_H
#define LLVMACCEL_ACCELPREFETCH_H

#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace llvm {

/// Parameters of accel-prefetch. An unset optional means "ask the target
/// (TargetTransformInfo), or use the pass's own default".
struct AccelPrefetchOptions {
  std::optional<unsigned> Distance;
  std::optional<unsigned> Latency;
  std::optional<unsigned> CacheLine;
  std::optional<unsigned> MinStride;
  unsigned MaxLines = 8;
  bool Indirect = true;
  bool Strided = true;
  bool Writes = false;
};

class AccelPrefetchPass : public PassInfoMixin<AccelPrefetchPass> {
public:
  explicit AccelPrefetchPass(AccelPrefetchOptions Opts = {})
      : Opts(std::move(Opts)) {}

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM);
  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)> MapClassName2PassName);

private:
  AccelPrefetchOptions Opts;
};

/// Parses the text between the angle brackets of `accel-prefetch<...>`.
Expected<AccelPrefetchOptions> parseAccelPrefetchOptions(StringRef Params);

} // namespace llvm

#endif // LLVMACCEL_ACCELPREFETCH_H
