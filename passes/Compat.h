//===- Compat.h - LLVM release differences for llvmaccel -------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one place where llvmaccel absorbs API differences between the LLVM
/// releases it supports (19 through 23). Pass sources include this header
/// instead of testing LLVM_VERSION_MAJOR themselves.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_COMPAT_H
#define LLVMACCEL_COMPAT_H

#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/InstructionCost.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

#if LLVM_VERSION_MAJOR >= 23
#include "llvm/Analysis/SimplifyQuery.h"
#endif
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

// Debian's LLVM is a release build, where STATISTIC declares a no-op counter.
// llvmaccel's counters are always kept, so `opt -stats` and the Python
// package's reports show them with any LLVM build.
#undef STATISTIC
#define STATISTIC(VARNAME, DESC)                                               \
  static llvm::TrackingStatistic VARNAME = {DEBUG_TYPE, #VARNAME, DESC}

namespace llvm {
namespace accel {

/// A callback for module-level extension points, without the LTO phase
/// argument that LLVM 20 added to some of them.
using ModuleEPCallback =
    std::function<void(ModulePassManager &, OptimizationLevel)>;

/// Whether \p Level asks for speed at -O\p MinSpeedup or above and not for
/// size. LLVM 23 made OptimizationLevel an enumeration of O0..O3 (-Os and -Oz
/// are function attributes there, which the passes' cost models read).
inline bool speedLevelAtLeast(OptimizationLevel Level, unsigned MinSpeedup) {
#if LLVM_VERSION_MAJOR >= 23
  return static_cast<unsigned>(Level) >= MinSpeedup;
#else
  return Level.getSpeedupLevel() >= MinSpeedup && Level.getSizeLevel() == 0;
#endif
}

/// Registers \p C at the OptimizerLast extension point (the very end of the
/// default module optimization pipeline, after vectorization).
inline void registerOptimizerLast(PassBuilder &PB, ModuleEPCallback C) {
#if LLVM_VERSION_MAJOR >= 20
  PB.registerOptimizerLastEPCallback(
      [C](ModulePassManager &MPM, OptimizationLevel Level, ThinOrFullLTOPhase) {
        C(MPM, Level);
      });
#else
  PB.registerOptimizerLastEPCallback(C);
#endif
}

/// Registers \p C at the PipelineEarlySimplification extension point (the
/// start of the module simplification pipeline, before the inliner's CGSCC
/// walk and the function simplification passes).
inline void registerPipelineEarlySimplification(PassBuilder &PB,
                                                ModuleEPCallback C) {
#if LLVM_VERSION_MAJOR >= 20
  PB.registerPipelineEarlySimplificationEPCallback(
      [C](ModulePassManager &MPM, OptimizationLevel Level, ThinOrFullLTOPhase) {
        C(MPM, Level);
      });
#else
  PB.registerPipelineEarlySimplificationEPCallback(C);
#endif
}

/// Library information for \p T that maps math functions and intrinsics to
/// glibc's vector variants (libmvec), as clang's -fveclib=libmvec does. The
/// enumerator moved: TargetLibraryInfoImpl::LIBMVEC_X86 up to LLVM 20,
/// ::LIBMVEC in 21 (with AArch64 support), llvm::VectorLibrary::LIBMVEC in 22
/// (20 and 21 are not installed here; 19 and 22 are built and tested).
inline std::unique_ptr<TargetLibraryInfoImpl>
createLibmvecTLII(const Triple &T) {
#if LLVM_VERSION_MAJOR >= 22
  return std::make_unique<TargetLibraryInfoImpl>(T, VectorLibrary::LIBMVEC);
#else
  auto TLII = std::make_unique<TargetLibraryInfoImpl>(T);
#if LLVM_VERSION_MAJOR >= 21
  TLII->addVectorizableFunctionsFromVecLib(TargetLibraryInfoImpl::LIBMVEC, T);
#else
  TLII->addVectorizableFunctionsFromVecLib(TargetLibraryInfoImpl::LIBMVEC_X86,
                                           T);
#endif
  return TLII;
#endif
}

/// The name of the source variable a debug record (or, before LLVM 21, a
/// dbg.value intrinsic) says \p V holds, or "" without debug information.
/// (21's signature of findDbgValues is assumed from upstream; 20 and 21 are
/// not built here.)
inline std::string sourceVariableName(Value *V) {
  SmallVector<DbgVariableRecord *, 2> Records;
#if LLVM_VERSION_MAJOR >= 21
  findDbgValues(V, Records);
#else
  SmallVector<DbgValueInst *, 2> Intrinsics;
  findDbgValues(Intrinsics, V, &Records);
  for (DbgValueInst *DVI : Intrinsics)
    if (DILocalVariable *Var = DVI->getVariable())
      return Var->getName().str();
#endif
  for (DbgVariableRecord *R : Records)
    if (DILocalVariable *Var = R->getVariable())
      return Var->getName().str();
  return "";
}

/// The first point in \p BB where a non-PHI instruction may be inserted.
inline BasicBlock::iterator firstNonPHIIt(BasicBlock &BB) {
#if LLVM_VERSION_MAJOR >= 20
  return BB.getFirstNonPHIIt();
#else
  return BB.getFirstNonPHI()->getIterator();
#endif
}

/// Moves \p I right before \p Pos (an iterator position since LLVM 20).
inline void moveBefore(Instruction *I, Instruction *Pos) {
#if LLVM_VERSION_MAJOR >= 20
  I->moveBefore(Pos->getIterator());
#else
  I->moveBefore(Pos);
#endif
}

/// The module's target triple as text (a Triple object since LLVM 21).
inline std::string tripleString(const Module &M) {
#if LLVM_VERSION_MAJOR >= 21
  return M.getTargetTriple().str();
#else
  return M.getTargetTriple();
#endif
}

/// Sets the module's target triple.
inline void setTriple(Module &M, const Triple &T) {
#if LLVM_VERSION_MAJOR >= 21
  M.setTargetTriple(T);
#else
  M.setTargetTriple(T.str());
#endif
}

/// The registered target for \p TT, or null with \p Err set (a Triple since
/// LLVM 22; the text form is deprecated there).
inline const Target *lookupTarget(const Triple &TT, std::string &Err) {
#if LLVM_VERSION_MAJOR >= 22
  return TargetRegistry::lookupTarget(TT, Err);
#else
  return TargetRegistry::lookupTarget(TT.str(), Err);
#endif
}

/// The subtarget of \p CPU with \p Features on \p TT (its scheduling model
/// among other facts), or null (a Triple since LLVM 22).
inline std::unique_ptr<MCSubtargetInfo>
createSubtargetInfo(const Target &T, const Triple &TT, StringRef CPU,
                    StringRef Features) {
#if LLVM_VERSION_MAJOR >= 22
  return std::unique_ptr<MCSubtargetInfo>(
      T.createMCSubtargetInfo(TT, CPU, Features));
#else
  return std::unique_ptr<MCSubtargetInfo>(
      T.createMCSubtargetInfo(TT.str(), CPU, Features));
#endif
}

/// Creates a target machine for \p TT (which takes a Triple since LLVM 21).
inline TargetMachine *createTargetMachine(const Target &T, const Triple &TT,
                                          StringRef CPU, StringRef Features) {
#if LLVM_VERSION_MAJOR >= 21
  return T.createTargetMachine(TT, CPU, Features, TargetOptions(),
                               std::nullopt);
#else
  return T.createTargetMachine(TT.str(), CPU, Features, TargetOptions(),
                               std::nullopt);
#endif
}

/// A SCEVExpander named \p Name. LLVM 22 takes the DataLayout from
/// ScalarEvolution instead of a constructor argument.
inline std::unique_ptr<SCEVExpander> createSCEVExpander(ScalarEvolution &SE,
                                                        const DataLayout &DL,
                                                        const char *Name) {
#if LLVM_VERSION_MAJOR >= 22
  (void)DL;
  return std::make_unique<SCEVExpander>(SE, Name);
#else
  return std::make_unique<SCEVExpander>(SE, DL, Name);
#endif
}

/// Known bits of \p V at \p CxtI (LLVM 21 moved the depth argument last).
inline KnownBits knownBitsAt(const Value *V, const DataLayout &DL,
                             AssumptionCache *AC, const Instruction *CxtI,
                             const DominatorTree *DT) {
#if LLVM_VERSION_MAJOR >= 21
  return computeKnownBits(V, DL, AC, CxtI, DT);
#else
  return computeKnownBits(V, DL, /*Depth=*/0, AC, CxtI, DT);
#endif
}

/// The range of \p V at \p CxtI (LLVM 23 takes a SimplifyQuery instead of
/// the separate analyses).
inline ConstantRange constantRangeAt(const Value *V, bool ForSigned,
                                     const DataLayout &DL, AssumptionCache *AC,
                                     const Instruction *CxtI,
                                     const DominatorTree *DT) {
#if LLVM_VERSION_MAJOR >= 23
  return computeConstantRange(V, ForSigned, SimplifyQuery(DL, DT, AC, CxtI));
#else
  (void)DL;
  return computeConstantRange(V, ForSigned, /*UseInstrInfo=*/true, AC, CxtI,
                              DT);
#endif
}

/// The number of bytes known dereferenceable at \p V, with whether it may be
/// null or freed (LLVM 23 takes \p CanBeFreed by pointer).
inline uint64_t dereferenceableBytes(const Value *V, const DataLayout &DL,
                                     bool &CanBeNull, bool &CanBeFreed) {
#if LLVM_VERSION_MAJOR >= 23
  return V->getPointerDereferenceableBytes(DL, CanBeNull, &CanBeFreed);
#else
  return V->getPointerDereferenceableBytes(DL, CanBeNull, CanBeFreed);
#endif
}

/// Whether \p V is dereferenceable for \p Size bytes with alignment \p A at
/// \p CtxI (LLVM 23 takes a SimplifyQuery instead of the separate analyses).
inline bool isDereferenceableAt(const Value *V, Align A, const APInt &Size,
                                const DataLayout &DL, const Instruction *CtxI,
                                AssumptionCache *AC, const DominatorTree *DT) {
#if LLVM_VERSION_MAJOR >= 23
  return isDereferenceableAndAlignedPointer(V, A, Size,
                                            SimplifyQuery(DL, DT, AC, CtxI));
#else
  return isDereferenceableAndAlignedPointer(V, A, Size, DL, CtxI, AC, DT);
#endif
}

/// The value of a valid InstructionCost: getValue() returned an optional in
/// LLVM 19 and returns the value itself in LLVM 22 (overloads cover both
/// without naming the release that changed it).
inline int64_t costValueOf(int64_t V) { return V; }
inline int64_t costValueOf(std::optional<int64_t> V) { return *V; }
inline int64_t costValue(const InstructionCost &C) {
  return costValueOf(C.getValue());
}

/// The text of a name that is a StringRef in some releases and an interned
/// orc::SymbolStringPtr in others (jitlink::Symbol::getName() since LLVM 20).
template <typename NameT> StringRef nameText(const NameT &Name) {
  if constexpr (std::is_convertible_v<const NameT &, StringRef>)
    return Name;
  else
    return *Name;
}

} // namespace accel
} // namespace llvm

#endif // LLVMACCEL_COMPAT_H
