//===- AccelLoopProfile.h - Time loops with a counter ----------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// accel-loop-profile instruments loops for a profile: the target's cycle
/// counter is read in each loop's preheader and again in each of its exit
/// blocks, and the difference and an entry count are added (atomically, for
/// kernels run from several threads) to that loop's slot of
///
///   @__llvmaccel_loop_counters = global [N x [2 x i64]]  ; cycles, entries
///   @__llvmaccel_loop_names    = constant [..]          ; one line per loop
///   @__llvmaccel_loop_count    = constant i64 N
///
/// Each line of the names table is `function <TAB> header block <TAB>
/// file:line` (the location from debug information, or empty), so a runtime
/// that looks the three symbols up (llvmaccel.profiling does, through the
/// JIT) can name every loop. Loops up to `depth` deep are instrumented (1:
/// the outermost loops only), in function order then loop preorder.
///
/// This is an instrumentation pass, not an optimization: it joins no default
/// pipeline (ask for it, as `default<O3>,accel-loop-profile` does, to time the
/// optimized loops), and code compiled without it pays nothing. The counter
/// is `llvm.readcyclecounter` on x86 (the time-stamp counter) and
/// `llvm.readsteadycounter` on AArch64 (the virtual counter; user space may
/// not read the cycle counter there). A loop whose preheader or dedicated
/// exits were folded away (as SimplifyCFG does late in the pipeline) gets
/// them back; on other targets, and for loops where they cannot be formed
/// (entered through an indirect branch, exiting to an exception handler),
/// the pass declines with a remark.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_ACCELLOOPPROFILE_H
#define LLVMACCEL_ACCELLOOPPROFILE_H

#include "llvm/IR/PassManager.h"
#include "llvm/Support/Error.h"

namespace llvm {

/// Parameters of accel-loop-profile.
struct AccelLoopProfileOptions {
  /// Deepest loop depth instrumented (1..16; 1: outermost loops).
  unsigned Depth = 1;
};

class AccelLoopProfilePass : public PassInfoMixin<AccelLoopProfilePass> {
public:
  explicit AccelLoopProfilePass(AccelLoopProfileOptions Opts = {})
      : Opts(Opts) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &AM);
  void printPipeline(raw_ostream &OS,
                     function_ref<StringRef(StringRef)> MapClassName2PassName);

private:
  AccelLoopProfileOptions Opts;
};

/// Parses the text between the angle brackets of `accel-loop-profile<...>`.
Expected<AccelLoopProfileOptions>
parseAccelLoopProfileOptions(StringRef Params);

} // namespace llvm

#endif // LLVMACCEL_ACCELLOOPPROFILE_H
