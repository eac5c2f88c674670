//===- Core.cpp - LLVM-facing core of the llvmaccel extension -------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "Core.h"
#include "Parallel.h"

#include "Compat.h"

#include "llvm/ADT/Statistic.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITLink/JITLink.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

using namespace llvm;

namespace llvmaccel {

/// An LLVM module with its own context. Operations on one handle are
/// serialized by its mutex; different handles are independent.
class ModuleHandle {
public:
  ModuleHandle(std::unique_ptr<LLVMContext> Ctx, std::unique_ptr<Module> M)
      : Ctx(std::move(Ctx)), M(std::move(M)) {}
  ~ModuleHandle() {
    M.reset(); // The module must die before its context.
  }

  std::mutex Lock;
  std::unique_ptr<LLVMContext> Ctx;
  std::unique_ptr<Module> M;
};

/// Error diagnostics of a context, kept instead of LLVM's default handling
/// (which prints them and exits the process).
struct DiagnosticErrors {
  std::mutex Lock;
  std::string Text;

  void add(const DiagnosticInfo &DI) {
    std::string Msg;
    raw_string_ostream OS(Msg);
    DiagnosticPrinterRawOStream DP(OS);
    DI.print(DP);
    OS.flush();
    std::lock_guard<std::mutex> G(Lock);
    if (!Text.empty())
      Text += "\n";
    Text += Msg;
  }
  std::string take() {
    std::lock_guard<std::mutex> G(Lock);
    return std::exchange(Text, std::string());
  }
};

class JITHandle {
public:
  std::unique_ptr<orc::LLJIT> JIT;
  std::vector<FunctionInfo> Functions;
  /// Errors that code generation reported (bad inline assembly, ...).
  std::shared_ptr<DiagnosticErrors> Errors;
};

namespace {

std::once_flag InitFlag;
std::mutex PluginLock;
std::string PluginPathValue;
std::optional<PassPlugin> Plugin;

/// The plugin's C entry points for this extension, resolved once at load.
struct PluginEntryPoints {
  void (*SetQuietErrors)(int) = nullptr;
  void (*SetAutoOverride)(const char *) = nullptr;
  size_t (*TakePipelineError)(char *, size_t) = nullptr;
  const char *(*PassCatalog)() = nullptr;
} Entry;
/// Statistics are process-wide counters: runs that read them take turns.
std::mutex StatsLock;

void initializeLLVM() {
  std::call_once(InitFlag, [] {
    InitializeAllTargetInfos();
    InitializeAllTargets();
    InitializeAllTargetMCs();
    InitializeAllAsmPrinters();
    InitializeAllAsmParsers();
    // Register llvmaccel's counters (and any tracking statistic) without
    // printing them at exit.
    EnableStatistics(/*DoPrintOnExit=*/false);
  });
}

/// Loads the plugin once. Returns null and sets \p S on failure.
PassPlugin *getPlugin(Status &S) {
  std::lock_guard<std::mutex> G(PluginLock);
  if (Plugin)
    return &*Plugin;
  if (PluginPathValue.empty()) {
    S = Status::error(Status::PipelineError,
                      "the LLVMAccel plugin path is not set");
    return nullptr;
  }
  Expected<PassPlugin> P = PassPlugin::Load(PluginPathValue);
  if (!P) {
    S = Status::error(Status::PipelineError, toString(P.takeError()));
    return nullptr;
  }
  Plugin.emplace(std::move(*P));
  auto Lib = sys::DynamicLibrary::getPermanentLibrary(PluginPathValue.c_str());
  auto Resolve = [&](auto &Fn, const char *Name) {
    Fn = reinterpret_cast<std::remove_reference_t<decltype(Fn)>>(
        Lib.getAddressOfSymbol(Name));
  };
  Resolve(Entry.SetQuietErrors, "llvmaccel_set_quiet_errors");
  Resolve(Entry.SetAutoOverride, "llvmaccel_set_auto_override");
  Resolve(Entry.TakePipelineError, "llvmaccel_take_pipeline_error");
  Resolve(Entry.PassCatalog, "llvmaccel_pass_catalog");
  // Parameter errors come back through llvmaccel_take_pipeline_error, not
  // on stderr.
  if (Entry.SetQuietErrors)
    Entry.SetQuietErrors(1);
  return &*Plugin;
}

/// Sets (or with null, clears) this thread's -llvmaccel-auto override.
void setPluginAutoOverride(const char *Selection) {
  if (Entry.SetAutoOverride)
    Entry.SetAutoOverride(Selection);
}

/// Takes the plugin's message for the last parameter error on this thread.
std::string readPluginError() {
  if (!Entry.TakePipelineError)
    return "";
  std::string Buf(4096, '\0');
  size_t Len = Entry.TakePipelineError(Buf.data(), Buf.size());
  Buf.resize(std::min(Len, Buf.size() - 1));
  return Buf;
}

std::string typeToString(Type *T) {
  std::string S;
  raw_string_ostream OS(S);
  T->print(OS);
  return S;
}

FunctionInfo describeFunction(const Function &F) {
  FunctionInfo Info;
  Info.Name = F.getName().str();
  Info.IsDeclaration = F.isDeclaration();
  Info.ReturnType = typeToString(F.getReturnType());
  for (Type *T : F.getFunctionType()->params())
    Info.ParamTypes.push_back(typeToString(T));
  for (const Argument &A : F.args())
    Info.ParamReadOnly.push_back(A.onlyReadsMemory() || F.onlyReadsMemory());
  return Info;
}

/// Collects optimization remarks from passes matching a filter.
class RemarkCollector : public DiagnosticHandler {
public:
  RemarkCollector(Report &R, const std::string &Filter,
                  DiagnosticErrors &Errors)
      : R(R), Filter(Filter), Errors(Errors) {}

  bool handleDiagnostics(const DiagnosticInfo &DI) override {
    if (DI.getSeverity() == DS_Error) {
      Errors.add(DI);
      return true;
    }
    const auto *OR = dyn_cast<DiagnosticInfoOptimizationBase>(&DI);
    if (!OR)
      return false;
    if (!Filter.match(OR->getPassName()))
      return true;
    Remark Rem;
    Rem.Pass = OR->getPassName().str();
    if (isa<OptimizationRemark>(DI))
      Rem.Kind = "passed";
    else if (isa<OptimizationRemarkMissed>(DI))
      Rem.Kind = "missed";
    else
      Rem.Kind = "analysis";
    Rem.Function = OR->getFunction().getName().str();
    Rem.Message = OR->getMsg();
    if (OR->isLocationAvailable()) {
      DiagnosticLocation Loc = OR->getLocation();
      Rem.File = Loc.getRelativePath().str();
      Rem.Line = Loc.getLine();
      Rem.Column = Loc.getColumn();
    }
    for (const DiagnosticInfoOptimizationBase::Argument &A : OR->getArgs())
      Rem.Args.emplace_back(A.Key, A.Val);
    R.Remarks.push_back(std::move(Rem));
    return true;
  }

  bool isAnalysisRemarkEnabled(StringRef PassName) const override {
    return Filter.match(PassName);
  }
  bool isMissedOptRemarkEnabled(StringRef PassName) const override {
    return Filter.match(PassName);
  }
  bool isPassedOptRemarkEnabled(StringRef PassName) const override {
    return Filter.match(PassName);
  }
  bool isAnyRemarkEnabled() const override { return true; }

private:
  Report &R;
  Regex Filter;
  DiagnosticErrors &Errors;
};

/// Keeps the error diagnostics of a JIT context for jitLookup to report.
class ErrorCollector : public DiagnosticHandler {
public:
  explicit ErrorCollector(std::shared_ptr<DiagnosticErrors> Errors)
      : Errors(std::move(Errors)) {}
  bool handleDiagnostics(const DiagnosticInfo &DI) override {
    if (DI.getSeverity() != DS_Error)
      return false;
    Errors->add(DI);
    return true;
  }

private:
  std::shared_ptr<DiagnosticErrors> Errors;
};

/// Every registered statistic as "debug-type.Name" -> value. (GetStatistics
/// gives bare names; the JSON printer qualifies them with the pass.)
std::map<std::string, uint64_t> snapshotStatistics() {
  std::string JSON;
  raw_string_ostream OS(JSON);
  PrintStatisticsJSON(OS);
  OS.flush();
  std::map<std::string, uint64_t> Out;
  Expected<json::Value> Parsed = json::parse(JSON);
  if (!Parsed) {
    consumeError(Parsed.takeError());
    return Out;
  }
  if (const json::Object *Obj = Parsed->getAsObject())
    for (const auto &[Key, Value] : *Obj)
      if (std::optional<int64_t> N = Value.getAsInteger())
        if (!StringRef(Key).starts_with("time."))
          Out[Key.str()] = uint64_t(*N);
  return Out;
}

/// A target machine for \p Opts.Target, or null when the module has no
/// triple and none was asked for.
Status makeTargetMachine(Module &M, const RunOptions &Opts,
                         std::unique_ptr<TargetMachine> &TM) {
  if (Opts.Target == "host") {
    auto JTMB = orc::JITTargetMachineBuilder::detectHost();
    if (!JTMB)
      return Status::error(Status::JITError, toString(JTMB.takeError()));
    JTMB->setCodeGenOptLevel(CodeGenOptLevel::Aggressive);
    auto HostTM = JTMB->createTargetMachine();
    if (!HostTM)
      return Status::error(Status::JITError, toString(HostTM.takeError()));
    TM = std::move(*HostTM);
    accel::setTriple(M, TM->getTargetTriple());
    M.setDataLayout(TM->createDataLayout());
    // Name the host CPU in every function, as clang does: passes that read
    // the CPU's scheduling model (accel-prefetch's work gate) then see the
    // machine TTI describes.
    for (Function &F : M) {
      if (F.isDeclaration())
        continue;
      if (!F.hasFnAttribute("target-cpu"))
        F.addFnAttr("target-cpu", TM->getTargetCPU());
      if (!F.hasFnAttribute("target-features"))
        F.addFnAttr("target-features", TM->getTargetFeatureString());
    }
    return Status();
  }
  if (!Opts.Target.empty())
    return Status::error(Status::PipelineError,
                         "unknown target '" + Opts.Target +
                             "' (expected 'host' or nothing)");
  std::string TripleStr = accel::tripleString(M);
  if (TripleStr.empty())
    return Status();
  std::string Err;
  const Target *T = accel::lookupTarget(Triple(TripleStr), Err);
  if (!T)
    return Status(); // Like opt: target-independent passes still run.
  TM.reset(accel::createTargetMachine(*T, Triple(TripleStr), "", ""));
  return Status();
}

/// Verifies \p M; on failure returns a VerifyError with \p What in front.
Status verifyWithMessage(Module &M, const std::string &What) {
  std::string Msg;
  raw_string_ostream OS(Msg);
  if (verifyModule(M, &OS)) {
    OS.flush();
    while (!Msg.empty() && Msg.back() == '\n')
      Msg.pop_back();
    return Status::error(Status::VerifyError, What + Msg);
  }
  return Status();
}

/// Pipelines nested deeper than this are refused before LLVM parses them:
/// its recursive parser runs out of stack at a few thousand levels, and real
/// pipelines nest fewer than ten (`cgscc(devirt<4>(function(loop(...))))`).
constexpr unsigned MaxPipelineDepth = 100;

/// The deepest nesting of parentheses in \p Pipeline.
unsigned pipelineDepth(StringRef Pipeline) {
  unsigned Depth = 0, Max = 0;
  for (char C : Pipeline) {
    if (C == '(')
      Max = std::max(Max, ++Depth);
    else if (C == ')' && Depth)
      --Depth;
  }
  return Max;
}

/// The function attribute of llvmaccel's code generator saying that the
/// function's pointer parameters with a `dereferenceable` size are distinct
/// buffers, where they cannot be `noalias`: the SPMD body of a parallel
/// kernel, whose threads write through the same pointers between barriers.
static constexpr const char *DistinctBuffersAttr = "llvmaccel-distinct-buffers";

/// The parameters (by index into \p Params) that the pointer operands of \p I
/// are based on, or false if one is based on anything else (or \p I is an
/// access this does not describe).
static bool accessedBuffers(Instruction &I,
                            const DenseMap<const Value *, unsigned> &Params,
                            SmallVectorImpl<unsigned> &Out) {
  SmallVector<Value *, 2> Ptrs;
  if (auto *L = dyn_cast<LoadInst>(&I))
    Ptrs.push_back(L->getPointerOperand());
  else if (auto *St = dyn_cast<StoreInst>(&I))
    Ptrs.push_back(St->getPointerOperand());
  else if (auto *MT = dyn_cast<MemTransferInst>(&I))
    Ptrs.append({MT->getRawDest(), MT->getRawSource()});
  else if (auto *MS = dyn_cast<MemSetInst>(&I))
    Ptrs.push_back(MS->getRawDest());
  else
    return false;
  for (Value *Ptr : Ptrs) {
    SmallVector<const Value *, 4> Objects;
    getUnderlyingObjects(Ptr, Objects, /*LI=*/nullptr, /*MaxLookup=*/0);
    for (const Value *O : Objects) {
      auto It = Params.find(O);
      if (It == Params.end())
        return false;
      if (!is_contained(Out, It->second))
        Out.push_back(It->second);
    }
  }
  return !Out.empty();
}

/// Alias scopes for the accesses of a function with DistinctBuffersAttr, as
/// the inliner gives those of `noalias` arguments: one scope per buffer
/// parameter; an access based on some of them is in their scopes and does not
/// alias the others'. Unlike `noalias` this says nothing about calls (the
/// barriers), only that two accesses to different buffers are independent.
static void addBufferScopes(Function &F) {
  DenseMap<const Value *, unsigned> Params;
  SmallVector<Argument *, 16> Buffers;
  for (Argument &A : F.args())
    if (A.getType()->isPointerTy() && A.getDereferenceableBytes()) {
      Params[&A] = Buffers.size();
      Buffers.push_back(&A);
    }
  if (Buffers.size() < 2)
    return;
  MDBuilder MDB(F.getContext());
  MDNode *Domain = MDB.createAnonymousAliasScopeDomain(F.getName());
  SmallVector<MDNode *, 16> Scopes;
  for (Argument *A : Buffers)
    Scopes.push_back(MDB.createAnonymousAliasScope(Domain, A->getName()));
  for (Instruction &I : instructions(F)) {
    SmallVector<unsigned, 2> Mine;
    if (!accessedBuffers(I, Params, Mine))
      continue;
    SmallVector<Metadata *, 16> In;
    SmallVector<Metadata *, 16> Out;
    for (auto [K, Scope] : enumerate(Scopes))
      (is_contained(Mine, K) ? In : Out).push_back(Scope);
    I.setMetadata(
        LLVMContext::MD_alias_scope,
        MDNode::concatenate(I.getMetadata(LLVMContext::MD_alias_scope),
                            MDNode::get(F.getContext(), In)));
    if (!Out.empty())
      I.setMetadata(LLVMContext::MD_noalias,
                    MDNode::concatenate(I.getMetadata(LLVMContext::MD_noalias),
                                        MDNode::get(F.getContext(), Out)));
  }
}

Status runPipeline(Module &M, LLVMContext &Ctx, const RunOptions &Opts,
                   Report &R) {
  initializeLLVM();
  if (unsigned Depth = pipelineDepth(Opts.Pipeline); Depth > MaxPipelineDepth)
    return Status::error(Status::PipelineError,
                         "pipeline nests " + std::to_string(Depth) +
                             " levels deep; at most " +
                             std::to_string(MaxPipelineDepth) + " are allowed");
  Status S;
  PassPlugin *P = getPlugin(S);
  if (!P)
    return S;

  S = verifyWithMessage(M, "input module is invalid: ");
  if (!S.ok())
    return S;
  for (Function &F : M)
    if (F.hasFnAttribute(DistinctBuffersAttr)) {
      addBufferScopes(F);
      F.removeFnAttr(DistinctBuffersAttr);
    }

  std::unique_ptr<TargetMachine> TM;
  S = makeTargetMachine(M, Opts, TM);
  if (!S.ok())
    return S;

  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PassInstrumentationCallbacks PIC;

  // verify_each: check the module after every pass; after the first failure,
  // skip the remaining optional passes and report which pass broke it.
  std::string BrokenBy;
  std::string BrokenMsg;
  if (Opts.VerifyEach) {
    PIC.registerAfterPassCallback(
        [&](StringRef PassID, Any IR, const PreservedAnalyses &) {
          if (!BrokenBy.empty())
            return;
          std::string Msg;
          raw_string_ostream OS(Msg);
          if (verifyModule(M, &OS)) {
            BrokenBy = PassID.str();
            BrokenMsg = Msg;
          }
        });
    PIC.registerShouldRunOptionalPassCallback(
        [&](StringRef, Any) { return BrokenBy.empty(); });
  }

  PipelineTuningOptions PTO;
  PassBuilder PB(TM.get(), PTO, std::nullopt, &PIC);
  P->registerPassBuilderCallbacks(PB);
  if (TM)
    FAM.registerPass([&] { return TM->getTargetIRAnalysis(); });
  // The first registration of an analysis wins: this one before the
  // PassBuilder's default library info.
  std::unique_ptr<TargetLibraryInfoImpl> TLII;
  if (!Opts.VectorLibrary.empty()) {
    if (Opts.VectorLibrary != "libmvec")
      return Status::error(Status::PipelineError,
                           "unknown vector library '" + Opts.VectorLibrary +
                               "' (expected 'libmvec' or nothing)");
    TLII = accel::createLibmvecTLII(Triple(accel::tripleString(M)));
    FAM.registerPass([&] { return TargetLibraryAnalysis(*TLII); });
  }
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);

  ModulePassManager MPM;
  readPluginError(); // Drop anything stale on this thread.
  // Extension-point callbacks run while the pipeline text is parsed.
  setPluginAutoOverride(Opts.Auto.empty() ? nullptr : Opts.Auto.c_str());
  Error ParseErr = PB.parsePassPipeline(MPM, Opts.Pipeline);
  setPluginAutoOverride(nullptr);
  if (Error E = std::move(ParseErr)) {
    std::string LLVMMsg = toString(std::move(E));
    std::string PluginMsg = readPluginError();
    return Status::error(Status::PipelineError,
                         PluginMsg.empty() ? LLVMMsg : PluginMsg);
  }

  std::string RegexError;
  if (!Regex(Opts.RemarkFilter).isValid(RegexError))
    return Status::error(Status::PipelineError, "invalid remark filter '" +
                                                    Opts.RemarkFilter +
                                                    "': " + RegexError);
  DiagnosticErrors Errors;
  Ctx.setDiagnosticHandler(
      std::make_unique<RemarkCollector>(R, Opts.RemarkFilter, Errors));

  {
    std::lock_guard<std::mutex> G(StatsLock);
    auto Before = snapshotStatistics();
    MPM.run(M, MAM);
    for (const auto &[Name, Value] : snapshotStatistics()) {
      uint64_t Old = Before.count(Name) ? Before[Name] : 0;
      if (Value > Old)
        R.Statistics[Name] = Value - Old;
    }
  }
  Ctx.setDiagnosticHandler(std::make_unique<DiagnosticHandler>());
  if (std::string Text = Errors.take(); !Text.empty())
    return Status::error(Status::VerifyError, Text);

  if (!BrokenBy.empty()) {
    while (!BrokenMsg.empty() && BrokenMsg.back() == '\n')
      BrokenMsg.pop_back();
    return Status::error(Status::VerifyError, "module is invalid after " +
                                                  BrokenBy + ": " + BrokenMsg);
  }
  // A broken module must not reach code generation (or the user) unnoticed.
  return verifyWithMessage(M, "module is invalid after the pipeline: ");
}

Status parseInto(MemoryBufferRef Buf, std::shared_ptr<ModuleHandle> &Out) {
  auto Ctx = std::make_unique<LLVMContext>();
  SMDiagnostic Diag;
  std::unique_ptr<Module> M = parseIR(Buf, Diag, *Ctx);
  if (!M) {
    Status S = Status::error(Status::ParseError, Diag.getMessage().str());
    // LLVM says -1 where it has no position (bitcode); we say 0.
    S.Line = std::max(Diag.getLineNo(), 0);
    S.Column = S.Line ? std::max(Diag.getColumnNo(), 0) + 1 : 0;
    return S;
  }
  Out = std::make_shared<ModuleHandle>(std::move(Ctx), std::move(M));
  return Status();
}

} // namespace

void setPluginPath(const std::string &Path) {
  std::lock_guard<std::mutex> G(PluginLock);
  PluginPathValue = Path;
}

std::string pluginPath() {
  std::lock_guard<std::mutex> G(PluginLock);
  return PluginPathValue;
}

Status passCatalog(std::string &Out) {
  initializeLLVM();
  Status S;
  if (!getPlugin(S))
    return S;
  if (!Entry.PassCatalog)
    return Status::error(Status::PipelineError,
                         "the plugin has no llvmaccel_pass_catalog");
  Out = Entry.PassCatalog();
  return Status();
}

std::string llvmVersion() { return LLVM_VERSION_STRING; }
std::string hostCPU() { return sys::getHostCPUName().str(); }

namespace {
/// Fills \p Out's register widths and caches from TTI on an empty function
/// of \p TM (TTI answers per function, with its attributes in force).
void describeRegisters(TargetMachine &TM, HostInfo &Out) {
  LLVMContext Ctx;
  Module M("target-info", Ctx);
  M.setDataLayout(TM.createDataLayout());
  Function *F = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                                 GlobalValue::ExternalLinkage, "f", M);
  F->addFnAttr("target-cpu", Out.CPU);
  F->addFnAttr("target-features", TM.getTargetFeatureString());
  TargetTransformInfo TTI = TM.getTargetTransformInfo(*F);
  Out.VectorBits = unsigned(
      TTI.getRegisterBitWidth(TargetTransformInfo::RGK_FixedWidthVector)
          .getFixedValue());
  Out.VectorRegisters =
      TTI.getNumberOfRegisters(TTI.getRegisterClassForType(/*Vector=*/true));
  // The same function asking for 512-bit vectors ("prefer-vector-width", as
  // clang's -mprefer-vector-width=512 sets it): the width a kernel gets when
  // it carries that attribute.
  Function *Wide = Function::Create(F->getFunctionType(),
                                    GlobalValue::ExternalLinkage, "wide", M);
  Wide->copyAttributesFrom(F);
  Wide->addFnAttr("prefer-vector-width", "512");
  TargetTransformInfo WideTTI = TM.getTargetTransformInfo(*Wide);
  Out.WidestVectorBits = std::max(
      Out.VectorBits,
      unsigned(
          WideTTI.getRegisterBitWidth(TargetTransformInfo::RGK_FixedWidthVector)
              .getFixedValue()));
  if (auto L1 = TTI.getCacheSize(TargetTransformInfo::CacheLevel::L1D))
    Out.L1DBytes = *L1;
  if (auto L2 = TTI.getCacheSize(TargetTransformInfo::CacheLevel::L2D))
    Out.L2DBytes = *L2;
}
} // namespace

Status hostInfo(HostInfo &Out) {
  initializeLLVM();
  auto JTMB = orc::JITTargetMachineBuilder::detectHost();
  if (!JTMB)
    return Status::error(Status::JITError, toString(JTMB.takeError()));
  auto TM = JTMB->createTargetMachine();
  if (!TM)
    return Status::error(Status::JITError, toString(TM.takeError()));
  Out.Triple = (*TM)->getTargetTriple().str();
  Out.CPU = (*TM)->getTargetCPU().str();
  for (const auto &Feature : sys::getHostCPUFeatures())
    if (Feature.second)
      Out.Features.push_back(Feature.first().str());
  std::sort(Out.Features.begin(), Out.Features.end());
  describeRegisters(**TM, Out);
  return Status();
}

Status targetInfo(const std::string &TripleStr, const std::string &CPU,
                  const std::string &Features, HostInfo &Out) {
  initializeLLVM();
  Triple TT(Triple::normalize(TripleStr));
  std::string Err;
  const Target *T = accel::lookupTarget(TT, Err);
  if (!T)
    return Status::error(Status::PipelineError,
                         "unknown target triple '" + TripleStr + "': " + Err);
  // Asked of the target's generic subtarget first: LLVM prints a warning
  // of its own for a CPU it does not know.
  std::unique_ptr<MCSubtargetInfo> Generic =
      accel::createSubtargetInfo(*T, TT, "", "");
  if (!Generic || (!CPU.empty() && !Generic->isCPUStringValid(CPU)))
    return Status::error(Status::PipelineError, "'" + CPU +
                                                    "' is not a CPU of " +
                                                    TT.getArchName().str());
  std::unique_ptr<MCSubtargetInfo> STI =
      accel::createSubtargetInfo(*T, TT, CPU, Features);
  std::unique_ptr<TargetMachine> TM(
      accel::createTargetMachine(*T, TT, CPU, Features));
  if (!TM)
    return Status::error(Status::PipelineError,
                         "no target machine for '" + TripleStr + "'");
  Out.Triple = TT.str();
  Out.CPU = CPU;
  for (const SubtargetFeatureKV &KV : STI->getAllProcessorFeatures())
    if (STI->getFeatureBits().test(KV.Value))
      Out.Features.push_back(KV.Key);
  std::sort(Out.Features.begin(), Out.Features.end());
  describeRegisters(*TM, Out);
  return Status();
}

bool vectorLibraryHas(const std::string &VectorLibrary, const std::string &Name,
                      unsigned Lanes) {
  if (VectorLibrary != "libmvec")
    return false;
  initializeLLVM();
  static const std::unique_ptr<TargetLibraryInfoImpl> TLII =
      accel::createLibmvecTLII(Triple(sys::getProcessTriple()));
  if (Lanes)
    return TLII->isFunctionVectorizable(Name, ElementCount::getFixed(Lanes));
  return TLII->isFunctionVectorizable(Name);
}

Status parseIR(const std::string &Buffer, const std::string &Name,
               std::shared_ptr<ModuleHandle> &Out) {
  initializeLLVM();
  return parseInto(MemoryBufferRef(Buffer, Name), Out);
}

std::string printModule(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  std::string S;
  raw_string_ostream OS(S);
  H.M->print(OS, nullptr);
  return S;
}

std::string moduleBitcode(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  std::string S;
  raw_string_ostream OS(S);
  WriteBitcodeToFile(*H.M, OS);
  OS.flush();
  return S;
}

std::string moduleName(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  return H.M->getModuleIdentifier();
}

std::string moduleTriple(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  return accel::tripleString(*H.M);
}

Status verifyModule(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  return verifyWithMessage(*H.M, "");
}

std::vector<FunctionInfo> moduleFunctions(ModuleHandle &H) {
  std::lock_guard<std::mutex> G(H.Lock);
  std::vector<FunctionInfo> Out;
  for (const Function &F : *H.M)
    Out.push_back(describeFunction(F));
  return Out;
}

std::shared_ptr<ModuleHandle> cloneModule(ModuleHandle &H) {
  std::string BC = moduleBitcode(H);
  std::shared_ptr<ModuleHandle> Out;
  parseInto(MemoryBufferRef(BC, moduleName(H)), Out);
  return Out;
}

Status linkModule(ModuleHandle &Dest, ModuleHandle &Src,
                  const std::vector<std::string> &Inline) {
  std::string BC = moduleBitcode(Src); // Src lives in another context.
  std::lock_guard<std::mutex> G(Dest.Lock);
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile(MemoryBufferRef(BC, "link"), *Dest.Ctx);
  if (!M)
    return Status::error(Status::IOError, toString(M.takeError()));
  if (Linker::linkModules(*Dest.M, std::move(*M)))
    return Status::error(Status::VerifyError,
                         "cannot link module into " +
                             Dest.M->getModuleIdentifier());
  for (const std::string &Name : Inline) {
    Function *F = Dest.M->getFunction(Name);
    if (!F || F->isDeclaration())
      return Status::error(Status::VerifyError,
                           "no function @" + Name + " defined after linking");
    F->setLinkage(GlobalValue::InternalLinkage);
    F->removeFnAttr(Attribute::NoInline);
    F->removeFnAttr(Attribute::OptimizeNone);
    F->addFnAttr(Attribute::AlwaysInline);
  }
  return verifyWithMessage(*Dest.M, "after linking: ");
}

Status runPasses(ModuleHandle &H, const RunOptions &Opts, Report &R) {
  std::lock_guard<std::mutex> G(H.Lock);
  return runPipeline(*H.M, *H.Ctx, Opts, R);
}

namespace {

#if defined(__FLT16_MAX__)
/// compiler-rt's float -> bfloat conversion, for processes without it. The
/// backend calls it where a target has no bf16 conversion instruction (X86
/// without AVX512-BF16) and an operation LLVM narrowed to bfloat (a max
/// reduction: `llvm.maximum.v8bf16`) is computed in float and rounded back;
/// libgcc before GCC 13 lacks it, so such kernels failed to link. Rounds to
/// nearest, ties to even; a NaN stays a NaN of the same sign, made quiet.
/// The result is returned as _Float16, which the x86-64 and AArch64 ABIs
/// pass in the same register as __bf16 (the low 16 bits of xmm0 / h0).
_Float16 truncSFToBF(float F) {
  uint32_t U;
  std::memcpy(&U, &F, sizeof(U));
  uint16_t B =
      (U & 0x7fffffffu) > 0x7f800000u
          ? static_cast<uint16_t>((U >> 16) | 0x40u)
          : static_cast<uint16_t>((U + 0x7fffu + ((U >> 16) & 1u)) >> 16);
  _Float16 R;
  std::memcpy(&R, &B, sizeof(R));
  return R;
}
#endif

/// Appends every function JITLink places to /tmp/perf-<pid>.map, the file in
/// which Linux perf looks up the names of JIT'd code ("START SIZE name", hex).
class PerfMapPlugin : public orc::ObjectLinkingLayer::Plugin {
public:
  explicit PerfMapPlugin(std::string Label) : Label(std::move(Label)) {}

  void modifyPassConfig(orc::MaterializationResponsibility &,
                        jitlink::LinkGraph &,
                        jitlink::PassConfiguration &Config) override {
    Config.PostFixupPasses.push_back([this](jitlink::LinkGraph &G) {
      record(G);
      return Error::success();
    });
  }
  Error notifyFailed(orc::MaterializationResponsibility &) override {
    return Error::success();
  }
  Error notifyRemovingResources(orc::JITDylib &, orc::ResourceKey) override {
    return Error::success();
  }
  void notifyTransferringResources(orc::JITDylib &, orc::ResourceKey,
                                   orc::ResourceKey) override {}

private:
  void record(jitlink::LinkGraph &G) {
    std::string Lines;
    raw_string_ostream OS(Lines);
    for (jitlink::Symbol *Sym : G.defined_symbols()) {
      if (!Sym->hasName() || !Sym->isCallable() || Sym->getSize() == 0)
        continue;
      OS << format_hex_no_prefix(Sym->getAddress().getValue(), 1) << ' '
         << format_hex_no_prefix(Sym->getSize(), 1)
         << " llvmaccel:" << accel::nameText(Sym->getName());
      if (!Label.empty())
        OS << ' ' << Label;
      OS << '\n';
    }
    if (Lines.empty())
      return;
    static std::mutex FileLock;
    std::lock_guard<std::mutex> G2(FileLock);
    std::error_code EC;
    std::string Path =
        "/tmp/perf-" + std::to_string(sys::Process::getProcessId()) + ".map";
    raw_fd_ostream File(Path, EC, sys::fs::OF_Append | sys::fs::OF_Text);
    if (!EC)
      File << Lines;
  }

  std::string Label;
};

} // namespace

Status jitCompile(ModuleHandle &H, const RunOptions &Opts, Report &R,
                  std::shared_ptr<JITHandle> &Out, bool PerfMap,
                  const std::string &PerfLabel) {
  initializeLLVM();
  // The JIT owns its module and context: compile a private copy.
  std::string BC = moduleBitcode(H);
  auto Ctx = std::make_unique<LLVMContext>();
  auto Errors = std::make_shared<DiagnosticErrors>();
  Expected<std::unique_ptr<Module>> M =
      parseBitcodeFile(MemoryBufferRef(BC, "jit"), *Ctx);
  if (!M)
    return Status::error(Status::JITError, toString(M.takeError()));

  RunOptions HostOpts = Opts;
  HostOpts.Target = "host";
  Status S = runPipeline(**M, *Ctx, HostOpts, R);
  if (!S.ok())
    return S;

  auto J = std::make_shared<JITHandle>();
  J->Errors = Errors;
  // Code generation happens at lookup time; keep its errors for jitLookup.
  Ctx->setDiagnosticHandler(std::make_unique<ErrorCollector>(Errors));
  for (const Function &F : **M)
    if (!F.isDeclaration())
      J->Functions.push_back(describeFunction(F));

  auto JTMB = orc::JITTargetMachineBuilder::detectHost();
  if (!JTMB)
    return Status::error(Status::JITError, toString(JTMB.takeError()));
  JTMB->setCodeGenOptLevel(CodeGenOptLevel::Aggressive);
  auto JIT = orc::LLJITBuilder().setJITTargetMachineBuilder(*JTMB).create();
  if (!JIT)
    return Status::error(Status::JITError, toString(JIT.takeError()));
  // Resolve libc/libm (expf, memcpy, ...) from the Python process.
  auto Gen = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*JIT)->getDataLayout().getGlobalPrefix());
  if (!Gen)
    return Status::error(Status::JITError, toString(Gen.takeError()));
  (*JIT)->getMainJITDylib().addGenerator(std::move(*Gen));
  // The thread pool of parallel kernels (Parallel.h) lives in this
  // extension, whose symbols the process does not export.
  {
    orc::MangleAndInterner Mangle((*JIT)->getExecutionSession(),
                                  (*JIT)->getDataLayout());
    orc::SymbolMap Runtime;
    auto Add = [&](StringRef Name, auto *Fn) {
      Runtime[Mangle(Name)] = {orc::ExecutorAddr::fromPtr(Fn),
                               JITSymbolFlags::Exported |
                                   JITSymbolFlags::Callable};
    };
    Add("llvmaccel_parallel_threads", &llvmaccel_parallel_threads);
    Add("llvmaccel_parallel_run", &llvmaccel_parallel_run);
    Add("llvmaccel_parallel_run_pool", &llvmaccel_parallel_run_pool);
    Add("llvmaccel_parallel_run_segmented", &llvmaccel_parallel_run_segmented);
    Add("llvmaccel_parallel_yield", &llvmaccel_parallel_yield);
    Add("llvmaccel_parallel_decide", &llvmaccel_parallel_decide);
    Add("llvmaccel_parallel_decided", &llvmaccel_parallel_decided);
    Add("llvmaccel_parallel_claim", &llvmaccel_parallel_claim);
    Add("llvmaccel_parallel_done", &llvmaccel_parallel_done);
    Add("llvmaccel_parallel_wait", &llvmaccel_parallel_wait);
#if defined(__FLT16_MAX__)
    if (!sys::DynamicLibrary::SearchForAddressOfSymbol("__truncsfbf2"))
      Add("__truncsfbf2", &truncSFToBF);
#endif
    if (Error E = (*JIT)->getMainJITDylib().define(
            orc::absoluteSymbols(std::move(Runtime))))
      return Status::error(Status::JITError, toString(std::move(E)));
  }
  if (PerfMap) {
    // Labels are one line: the map is line-oriented.
    std::string Label = PerfLabel;
    std::replace(Label.begin(), Label.end(), '\n', ' ');
    if (auto *OLL =
            dyn_cast<orc::ObjectLinkingLayer>(&(*JIT)->getObjLinkingLayer()))
      OLL->addPlugin(std::make_shared<PerfMapPlugin>(std::move(Label)));
  }

  orc::ThreadSafeModule TSM(std::move(*M),
                            orc::ThreadSafeContext(std::move(Ctx)));
  if (Error E = (*JIT)->addIRModule(std::move(TSM)))
    return Status::error(Status::JITError, toString(std::move(E)));
  J->JIT = std::move(*JIT);
  Out = std::move(J);
  return Status();
}

Status jitLookup(JITHandle &J, const std::string &Name, uint64_t &Address) {
  auto Sym = J.JIT->lookup(Name);
  if (std::string Text = J.Errors->take(); !Text.empty()) {
    if (!Sym)
      consumeError(Sym.takeError());
    return Status::error(Status::JITError, Text);
  }
  if (!Sym)
    return Status::error(Status::JITError, toString(Sym.takeError()));
  Address = Sym->getValue();
  return Status();
}

Status jitFunctionInfo(JITHandle &J, const std::string &Name,
                       FunctionInfo &Out) {
  for (const FunctionInfo &F : J.Functions)
    if (F.Name == Name) {
      Out = F;
      return Status();
    }
  return Status::error(Status::JITError,
                       "no function named '" + Name + "' in the module");
}

} // namespace llvmaccel
