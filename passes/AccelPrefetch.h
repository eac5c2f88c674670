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
  /// Units of TTI cost an iteration must carry per indirect access (a group
  /// of lines reached through one index) when the look-ahead stays within
  /// the loop. Below it the reorder buffer already spans as many independent
  /// misses as the core keeps in flight (a 352-entry window over a
  /// 10-instruction gather loop holds 35), and prefetching gains only on
  /// tables far larger than the caches: measured on `s += T[idx[i]]` (about
  /// 9 units per access) with min-work=0, 1.18x over a 1 GiB table but
  /// 0.96-0.98x over a 64 KiB one. An access whose object the IR shows to
  /// exceed `resident-bytes` is exempt (see SizeCheck). Embedding bags (a
  /// 4-line row per index, 37 units at -O2) gain. CSR nests and nests of blocks
  /// looking ahead across rows are exempt. Unset, it is the reorder buffer of
  /// the function's CPU (its scheduling model's MicroOpBufferSize) over
  /// `in-flight` when given, else over 16, rounded up: the work per access at
  /// which the window spans no more misses than a core keeps in flight (0 for
  /// an in-order core); 16 for a generic CPU or one without a model.
  std::optional<unsigned> MinWork;
  /// Independent accesses a core keeps in flight. The lines of one access
  /// (an embedding row) are adjacent and count once. A longer look-ahead
  /// only queues prefetches behind full buffers, a shorter one than the core
  /// needs can be worse than none. LLVM's scheduling models carry no
  /// miss-buffer count, so unset it is the figure measured for the
  /// function's CPU where it differs from the default (`znver3`: 16,
  /// `emeraldrapids`: 32), else
  /// 64: on Zen 5 a CSR SpMV and a histogram prefetched 16 ahead ran below
  /// -O3, while 64 never fell below -O3 on any host measured.
  std::optional<unsigned> InFlight;
  /// Objects at most this large are assumed to stay in cache (the L2 of one
  /// core): prefetching a gather from them, or a strided walk over them,
  /// only adds work.
  unsigned ResidentBytes = 1u << 20;
  bool Indirect = true;
  bool Strided = true;
  bool Writes = false;
  /// Where the work gate would decline an access whose object's size is
  /// known only at run time (`memset(count, 0, n * 4)` before the loop, an
  /// index `h & mask`), copy the loop: the prefetching loop runs when the
  /// object exceeds `resident-bytes`, the copy without prefetches
  /// otherwise.
  bool SizeCheck = true;
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
