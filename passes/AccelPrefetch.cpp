//===- AccelPrefetch.cpp - Prefetch for indirect and strided loads --------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "AccelPrefetch.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Function.h"

using namespace llvm;

#define DEBUG_TYPE "accel-prefetch"

static Error paramError(StringRef Param, StringRef Why) {
  std::string Msg = ("invalid accel-prefetch pass parameter '" + Param + "'").str();
  if (!Why.empty())
    Msg += (": " + Why).str();
  return make_error<StringError>(Msg, inconvertibleErrorCode());
}

Expected<AccelPrefetchOptions> llvm::parseAccelPrefetchOptions(StringRef Params) {
  AccelPrefetchOptions Opts;
  while (!Params.empty()) {
    StringRef Param;
    std::tie(Param, Params) = Params.split(';');
    if (Param.empty())
      continue;
    auto [Key, Value] = Param.split('=');
    bool HasValue = Param.contains('=');

    auto ParseUnsigned = [&](unsigned Min) -> Expected<unsigned> {
      unsigned N;
      if (!HasValue || Value.getAsInteger(10, N))
        return paramError(Param, "expected " + Key.str() + "=<non-negative integer>");
      if (N < Min)
        return paramError(Param, Key.str() + " must be at least " + utostr(Min));
      return N;
    };

    if (Key == "distance" || Key == "latency" || Key == "min-stride" ||
        Key == "max-lines" || Key == "cache-line") {
      Expected<unsigned> N = ParseUnsigned(Key == "min-stride" ? 0 : 1);
      if (!N)
        return N.takeError();
      if (Key == "distance")
        Opts.Distance = *N;
      else if (Key == "latency")
        Opts.Latency = *N;
      else if (Key == "min-stride")
        Opts.MinStride = *N;
      else if (Key == "max-lines")
        Opts.MaxLines = *N;
      else if (!isPowerOf2_32(*N))
        return paramError(Param, "cache-line must be a power of two");
      else
        Opts.CacheLine = *N;
      continue;
    }

    if (HasValue)
      return paramError(Param, "");
    bool Enable = !Key.consume_front("no-");
    if (Key == "indirect")
      Opts.Indirect = Enable;
    else if (Key == "strided")
      Opts.Strided = Enable;
    else if (Key == "writes")
      Opts.Writes = Enable;
    else
      return paramError(Param, "");
  }
  return Opts;
}

void AccelPrefetchPass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-prefetch<";
  if (Opts.Distance)
    OS << "distance=" << *Opts.Distance << ';';
  if (Opts.Latency)
    OS << "latency=" << *Opts.Latency << ';';
  if (Opts.CacheLine)
    OS << "cache-line=" << *Opts.CacheLine << ';';
  if (Opts.MinStride)
    OS << "min-stride=" << *Opts.MinStride << ';';
  OS << "max-lines=" << Opts.MaxLines << ';';
  OS << (Opts.Indirect ? "" : "no-") << "indirect;";
  OS << (Opts.Strided ? "" : "no-") << "strided;";
  OS << (Opts.Writes ? "" : "no-") << "writes>";
}

PreservedAnalyses AccelPrefetchPass::run(Function &F,
                                         FunctionAnalysisManager &AM) {
  // The transformation is being written; see the accel-prefetch issue.
  return PreservedAnalyses::all();
}
