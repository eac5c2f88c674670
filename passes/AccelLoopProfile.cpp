//===- AccelLoopProfile.cpp - Time loops with a counter ------------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See AccelLoopProfile.h. The pass picks the loops (loop discovery), checks
/// each can be timed (legality), then adds the tables and the counter reads
/// (expansion), with a remark for every loop timed or declined.
///
//===----------------------------------------------------------------------===//

#include "AccelLoopProfile.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugLoc.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Debug.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

using namespace llvm;

#define DEBUG_TYPE "accel-loop-profile"

STATISTIC(NumLoopsTimed, "Loops timed");
STATISTIC(NumLoopsDeclined,
          "Loops not timed (no preheader or dedicated exits could be formed)");
STATISTIC(NumLoopsSimplified,
          "Loops given back a preheader or dedicated exits to be timed");

static constexpr unsigned MaxDepthParam = 16;
static const char CountersName[] = "__llvmaccel_loop_counters";
static const char NamesName[] = "__llvmaccel_loop_names";
static const char CountName[] = "__llvmaccel_loop_count";

Expected<AccelLoopProfileOptions>
llvm::parseAccelLoopProfileOptions(StringRef Params) {
  AccelLoopProfileOptions Opts;
  accel::PassParamParser P("accel-loop-profile");
  P.integer("depth", Opts.Depth, 1, MaxDepthParam);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelLoopProfilePass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-loop-profile<depth=" << Opts.Depth << '>';
}

namespace {

/// A loop to time and the function it is in.
struct TimedLoop {
  Loop *L;
  Function *F;
};

//===----------------------------------------------------------------------===//
// Remarks
//===----------------------------------------------------------------------===//

void remarkTimed(OptimizationRemarkEmitter &ORE, const Loop &L, unsigned Slot) {
  ORE.emit([&] {
    return OptimizationRemark(DEBUG_TYPE, "Timed", L.getStartLoc(),
                              L.getHeader())
           << "timing loop " << ore::NV("Header", L.getHeader()->getName())
           << " in slot " << ore::NV("Slot", Slot);
  });
}

void remarkDeclined(OptimizationRemarkEmitter &ORE, const Loop &L,
                    StringRef Why) {
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, "NotTimed", L.getStartLoc(),
                                    L.getHeader())
           << "not timing loop " << ore::NV("Header", L.getHeader()->getName())
           << ": " << Why;
  });
}

//===----------------------------------------------------------------------===//
// Loop discovery and legality
//===----------------------------------------------------------------------===//

/// Why \p L cannot be timed, or "" when it can.
StringRef whyNotTimed(const Loop &L) {
  if (!L.getLoopPreheader())
    return "it has no preheader";
  if (!L.hasDedicatedExits())
    return "its exit blocks are not dedicated";
  SmallVector<BasicBlock *, 4> Exits;
  L.getUniqueExitBlocks(Exits);
  if (Exits.empty())
    return "it never exits";
  for (BasicBlock *Exit : Exits)
    if (Exit->isEHPad())
      return "it exits to an exception handler";
  return "";
}

/// Gives the loops of \p LI up to \p Depth deep the preheader and dedicated
/// exits the counter reads go to, where SimplifyCFG folded them into their
/// neighbours; whether the CFG changed. Where they cannot be formed (an
/// indirect branch into the loop, an exit to an exception handler),
/// whyNotTimed says so.
bool formTimingBlocks(LoopInfo &LI, DominatorTree &DT, unsigned Depth) {
  bool Changed = false;
  for (Loop *L : LI.getLoopsInPreorder()) {
    if (L->getLoopDepth() > Depth)
      continue;
    bool Formed = false;
    if (!L->getLoopPreheader())
      Formed |= InsertPreheaderForLoop(L, &DT, &LI, /*MSSAU=*/nullptr,
                                       /*PreserveLCSSA=*/false) != nullptr;
    if (!L->hasDedicatedExits())
      Formed |= formDedicatedExitBlocks(L, &DT, &LI, /*MSSAU=*/nullptr,
                                        /*PreserveLCSSA=*/false);
    NumLoopsSimplified += Formed;
    Changed |= Formed;
  }
  return Changed;
}

/// The loops of \p F up to \p Depth deep that can be timed, in preorder.
void collectLoops(Function &F, LoopInfo &LI, unsigned Depth,
                  OptimizationRemarkEmitter &ORE,
                  SmallVectorImpl<TimedLoop> &Out) {
  for (Loop *L : LI.getLoopsInPreorder()) {
    if (L->getLoopDepth() > Depth)
      continue;
    StringRef Why = whyNotTimed(*L);
    if (!Why.empty()) {
      LLVM_DEBUG(dbgs() << "accel-loop-profile: " << F.getName() << ": "
                        << L->getHeader()->getName() << ": " << Why << '\n');
      remarkDeclined(ORE, *L, Why);
      ++NumLoopsDeclined;
      continue;
    }
    Out.push_back({L, &F});
  }
}

/// The counter intrinsic of \p T, or not_intrinsic where none is readable
/// from user space.
Intrinsic::ID counterFor(const Triple &T) {
  if (T.isX86())
    return Intrinsic::readcyclecounter;
  if (T.isAArch64())
    return Intrinsic::readsteadycounter;
  return Intrinsic::not_intrinsic;
}

//===----------------------------------------------------------------------===//
// Expansion
//===----------------------------------------------------------------------===//

/// "function \t header \t file:line \n" for every loop.
std::string namesTable(ArrayRef<TimedLoop> Loops) {
  std::string Text;
  raw_string_ostream OS(Text);
  for (const TimedLoop &T : Loops) {
    OS << T.F->getName() << '\t' << T.L->getHeader()->getName() << '\t';
    if (DebugLoc DL = T.L->getStartLoc())
      OS << DL->getFilename() << ':' << DL.getLine();
    OS << '\n';
  }
  return Text;
}

/// Reads the counter in \p L's preheader and adds the time to slot \p Slot
/// of \p Counters at each exit.
void timeLoop(const Loop &L, unsigned Slot, GlobalVariable *Counters,
              Intrinsic::ID Counter) {
  LLVMContext &Ctx = L.getHeader()->getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  IRBuilder<> B(L.getLoopPreheader()->getTerminator());
  Value *Start = B.CreateIntrinsic(I64, Counter, {}, nullptr, "loopprof.start");
  SmallVector<BasicBlock *, 4> Exits;
  L.getUniqueExitBlocks(Exits);
  for (BasicBlock *Exit : Exits) {
    B.SetInsertPoint(Exit, Exit->getFirstInsertionPt());
    Value *End = B.CreateIntrinsic(I64, Counter, {}, nullptr, "loopprof.end");
    Value *Cycles = B.CreateSub(End, Start, "loopprof.cycles");
    Value *Zero = ConstantInt::get(I64, 0);
    Value *SlotV = ConstantInt::get(I64, Slot);
    Value *CyclesPtr = B.CreateInBoundsGEP(Counters->getValueType(), Counters,
                                           {Zero, SlotV, Zero});
    Value *EntriesPtr =
        B.CreateInBoundsGEP(Counters->getValueType(), Counters,
                            {Zero, SlotV, ConstantInt::get(I64, 1)});
    B.CreateAtomicRMW(AtomicRMWInst::Add, CyclesPtr, Cycles, Align(8),
                      AtomicOrdering::Monotonic);
    B.CreateAtomicRMW(AtomicRMWInst::Add, EntriesPtr, ConstantInt::get(I64, 1),
                      Align(8), AtomicOrdering::Monotonic);
  }
}

/// The three tables, for \p Loops.
GlobalVariable *addTables(Module &M, ArrayRef<TimedLoop> Loops) {
  LLVMContext &Ctx = M.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  auto *SlotTy = ArrayType::get(I64, 2);
  auto *CountersTy = ArrayType::get(SlotTy, Loops.size());
  auto *Counters = new GlobalVariable(
      M, CountersTy, /*isConstant=*/false, GlobalValue::ExternalLinkage,
      Constant::getNullValue(CountersTy), CountersName);
  Counters->setAlignment(Align(64));
  Constant *Names = ConstantDataArray::getString(Ctx, namesTable(Loops));
  new GlobalVariable(M, Names->getType(), /*isConstant=*/true,
                     GlobalValue::ExternalLinkage, Names, NamesName);
  new GlobalVariable(M, I64, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                     ConstantInt::get(I64, Loops.size()), CountName);
  return Counters;
}

} // namespace

PreservedAnalyses AccelLoopProfilePass::run(Module &M,
                                            ModuleAnalysisManager &AM) {
  if (M.getNamedGlobal(CountersName)) {
    LLVM_DEBUG(dbgs() << "accel-loop-profile: already instrumented\n");
    return PreservedAnalyses::all();
  }
  auto &FAM = AM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  Intrinsic::ID CounterID = counterFor(Triple(accel::tripleString(M)));
  SmallVector<TimedLoop, 16> Loops;
  bool CFGChanged = false;
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    auto &ORE = FAM.getResult<OptimizationRemarkEmitterAnalysis>(F);
    auto &LI = FAM.getResult<LoopAnalysis>(F);
    if (CounterID == Intrinsic::not_intrinsic) {
      for (Loop *L : LI.getLoopsInPreorder())
        if (L->getLoopDepth() <= Opts.Depth) {
          remarkDeclined(ORE, *L, "the target has no counter user code reads");
          ++NumLoopsDeclined;
        }
      continue;
    }
    CFGChanged |= formTimingBlocks(LI, FAM.getResult<DominatorTreeAnalysis>(F),
                                   Opts.Depth);
    collectLoops(F, LI, Opts.Depth, ORE, Loops);
  }
  if (Loops.empty())
    return CFGChanged ? PreservedAnalyses::none() : PreservedAnalyses::all();

  GlobalVariable *Counters = addTables(M, Loops);
  for (auto [Slot, T] : enumerate(Loops)) {
    timeLoop(*T.L, Slot, Counters, CounterID);
    remarkTimed(FAM.getResult<OptimizationRemarkEmitterAnalysis>(*T.F), *T.L,
                Slot);
    ++NumLoopsTimed;
  }
  if (CFGChanged)
    return PreservedAnalyses::none();
  // New instructions outside the loops' bodies: the CFG and the loops stand.
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  PA.preserve<LoopAnalysis>();
  return PA;
}
