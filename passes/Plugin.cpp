//===- Plugin.cpp - The LLVMAccel pass plugin -----------------------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Registers every llvmaccel pass (see Passes.def) with the new pass manager:
/// under its pipeline name, with parameters in angle brackets, and at its
/// extension point in the default pipelines (chosen by -llvmaccel-auto).
///
/// A few C entry points let the llvmaccel Python extension, which loads this
/// plugin with PassPlugin::Load, read the pass catalog and the last parameter
/// error without scraping stderr.
///
//===----------------------------------------------------------------------===//

#include "AccelAsyncFusion.h"
#include "AccelLoopProfile.h"
#include "AccelMaskedLoad.h"
#include "AccelPhiDecompose.h"
#include "AccelPrefetch.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>

using namespace llvm;

static cl::opt<std::string> AutoPasses(
    "llvmaccel-auto", cl::init("all"),
    cl::desc("llvmaccel passes added to the default pipelines: 'all', 'none' "
             "or a comma-separated list of pass names (environment: "
             "LLVMACCEL_AUTO, used when this option is not given)"));

namespace {

/// Per-thread record of the last parameter error, for the Python extension.
thread_local std::string LastPipelineError;
/// When set, parameter errors are only recorded, not printed.
bool QuietErrors = false;
/// A per-thread -llvmaccel-auto value set by the Python extension, so that
/// pipelines built on different threads may choose differently.
thread_local std::optional<std::string> AutoOverride;

void reportPipelineError(Error E) {
  LastPipelineError = toString(std::move(E));
  if (!QuietErrors)
    WithColor::error(errs(), "LLVMAccel") << LastPipelineError << "\n";
}

/// The -llvmaccel-auto selection, falling back to $LLVMACCEL_AUTO.
std::string autoSelection() {
  if (AutoOverride)
    return *AutoOverride;
  if (AutoPasses.getNumOccurrences() == 0)
    if (std::optional<std::string> Env = sys::Process::GetEnv("LLVMACCEL_AUTO"))
      return *Env;
  return AutoPasses;
}

/// The pass names of an -llvmaccel-auto selection other than "all" and
/// "none".
SmallVector<std::string, 4> autoNames(StringRef Selection) {
  SmallVector<StringRef, 4> Parts;
  Selection.split(Parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  SmallVector<std::string, 4> Names;
  for (StringRef Part : Parts)
    Names.push_back(Part.trim().str());
  return Names;
}

/// Whether the default pipelines should include \p PassName.
bool isAutoEnabled(StringRef PassName) {
  std::string Selection = autoSelection();
  StringRef Sel = StringRef(Selection).trim();
  if (Sel == "all")
    return true;
  if (Sel == "none" || Sel.empty())
    return false;
  return is_contained(autoNames(Sel), PassName);
}

struct PassEntry {
  StringRef Name, Kind, ExtensionPoint, Summary;
};
struct ParamEntry {
  StringRef Pass, Name, Default, Help;
};

ArrayRef<PassEntry> allPasses() {
  static const PassEntry Passes[] = {
#define ACCEL_MODULE_PASS(NAME, CREATE_PASS, PARSER, EP, SUMMARY)              \
  {NAME, "module", EP, SUMMARY},
#define ACCEL_FUNCTION_PASS(NAME, CREATE_PASS, PARSER, EP, SUMMARY)            \
  {NAME, "function", EP, SUMMARY},
#include "Passes.def"
  };
  return Passes;
}

ArrayRef<ParamEntry> allParams() {
  static const ParamEntry Params[] = {
#define ACCEL_PASS_PARAM(PASS_NAME, PARAM, DEFAULT, HELP)                      \
  {PASS_NAME, PARAM, DEFAULT, HELP},
#include "Passes.def"
  };
  return Params;
}

/// Stops with an error, as a bad command-line option does, when the
/// -llvmaccel-auto list (or $LLVMACCEL_AUTO) names something that is not an
/// llvmaccel pass. (The Python package validates its own selections before
/// they get here, so this never ends an interpreter.)
void checkAutoSelection() {
  if (AutoOverride)
    return;
  std::string Selection = autoSelection();
  StringRef Sel = StringRef(Selection).trim();
  if (Sel == "all" || Sel == "none" || Sel.empty())
    return;
  for (const std::string &Name : autoNames(Sel)) {
    if (any_of(allPasses(), [&](const PassEntry &P) { return P.Name == Name; }))
      continue;
    std::string Known;
    for (const PassEntry &P : allPasses())
      Known += (Known.empty() ? "" : ", ") + P.Name.str();
    WithColor::error(errs(), "LLVMAccel")
        << "-llvmaccel-auto names unknown pass '" << Name
        << "' (known: all, none, " << Known << ")\n";
    exit(1);
  }
}

/// Parses `NAME` or `NAME<params>` for one pass of Passes.def into \p PM.
#define ACCEL_PARSE_PASS(NAME, CREATE_PASS, PARSER, PM)                        \
  if (PassBuilder::checkParametrizedPassName(Name, NAME)) {                    \
    if (Name.ends_with("<>")) {                                                \
      reportPipelineError(accel::emptyParamListError(NAME));                   \
      return false;                                                            \
    }                                                                          \
    auto Params = PassBuilder::parsePassParameters(PARSER, Name, NAME);        \
    if (!Params) {                                                             \
      reportPipelineError(Params.takeError());                                 \
      return false;                                                            \
    }                                                                          \
    auto &Opts = *Params;                                                      \
    PM.addPass(CREATE_PASS);                                                   \
    return true;                                                               \
  }

bool parseFunctionPass(StringRef Name, FunctionPassManager &FPM) {
#define ACCEL_FUNCTION_PASS(NAME, CREATE_PASS, PARSER, EP, SUMMARY)            \
  ACCEL_PARSE_PASS(NAME, CREATE_PASS, PARSER, FPM)
#include "Passes.def"
  return false;
}

bool parseModulePass(StringRef Name, ModulePassManager &MPM) {
#define ACCEL_MODULE_PASS(NAME, CREATE_PASS, PARSER, EP, SUMMARY)              \
  ACCEL_PARSE_PASS(NAME, CREATE_PASS, PARSER, MPM)
#include "Passes.def"
  return false;
}

/// Whether the default pipeline at \p Level gets llvmaccel passes: O2 and O3
/// only, since the passes trade code size for speed.
bool wantsPasses(OptimizationLevel Level) {
  return accel::speedLevelAtLeast(Level, 2);
}

/// Adds the function passes of Passes.def that join at \p EP, with their
/// default parameters.
void addFunctionPasses(FunctionPassManager &FPM, StringRef EP) {
  checkAutoSelection();
#define ACCEL_FUNCTION_PASS(NAME, CREATE_PASS, PARSER, PASS_EP, SUMMARY)       \
  if (StringRef(PASS_EP) == EP && isAutoEnabled(NAME)) {                       \
    decltype(PARSER(""))::value_type Opts;                                     \
    FPM.addPass(CREATE_PASS);                                                  \
  }
#include "Passes.def"
}

/// Adds the module passes of Passes.def that join at \p EP, then the
/// function passes that do, with their default parameters.
void addModulePasses(ModulePassManager &MPM, StringRef EP) {
  checkAutoSelection();
#define ACCEL_MODULE_PASS(NAME, CREATE_PASS, PARSER, PASS_EP, SUMMARY)         \
  if (StringRef(PASS_EP) == EP && isAutoEnabled(NAME)) {                       \
    decltype(PARSER(""))::value_type Opts;                                     \
    MPM.addPass(CREATE_PASS);                                                  \
  }
#include "Passes.def"
  FunctionPassManager FPM;
  addFunctionPasses(FPM, EP);
  if (!FPM.isEmpty())
    MPM.addPass(createModuleToFunctionPassAdaptor(std::move(FPM)));
}

void registerCallbacks(PassBuilder &PB) {
  PB.registerPipelineParsingCallback(
      [](StringRef Name, FunctionPassManager &FPM,
         ArrayRef<PassBuilder::PipelineElement>) {
        return parseFunctionPass(Name, FPM);
      });
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM,
         ArrayRef<PassBuilder::PipelineElement>) {
        return parseModulePass(Name, MPM);
      });

  // Extension points: each pass joins the default O2/O3 pipelines at the
  // point named in Passes.def, unless -llvmaccel-auto leaves it out.
  auto AtModuleEP = [](const char *EP) {
    return [EP](ModulePassManager &MPM, OptimizationLevel Level) {
      if (wantsPasses(Level))
        addModulePasses(MPM, EP);
    };
  };
  auto AtFunctionEP = [](const char *EP) {
    return [EP](FunctionPassManager &FPM, OptimizationLevel Level) {
      if (wantsPasses(Level))
        addFunctionPasses(FPM, EP);
    };
  };
  PB.registerPipelineStartEPCallback(AtModuleEP("PipelineStart"));
  accel::registerPipelineEarlySimplification(
      PB, AtModuleEP("PipelineEarlySimplification"));
  PB.registerPeepholeEPCallback(AtFunctionEP("Peephole"));
  PB.registerScalarOptimizerLateEPCallback(AtFunctionEP("ScalarOptimizerLate"));
  PB.registerVectorizerStartEPCallback(AtFunctionEP("VectorizerStart"));
  accel::registerOptimizerLast(PB, AtModuleEP("OptimizerLast"));
}

/// Appends \p S to \p Out as a JSON string literal.
void appendJSONString(std::string &Out, StringRef S) {
  Out += '"';
  for (char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    Out += C;
  }
  Out += '"';
}

/// The pass catalog of Passes.def as JSON: one object per pass with its
/// extension point, summary and parameters.
std::string buildCatalog() {
  std::string Out = "[";
  for (const PassEntry &P : allPasses()) {
    if (Out.size() > 1)
      Out += ",";
    Out += "{\"name\":";
    appendJSONString(Out, P.Name);
    Out += ",\"kind\":";
    appendJSONString(Out, P.Kind);
    Out += ",\"extension_point\":";
    appendJSONString(Out, P.ExtensionPoint);
    Out += ",\"summary\":";
    appendJSONString(Out, P.Summary);
    Out += ",\"parameters\":[";
    bool First = true;
    for (const ParamEntry &Param : allParams()) {
      if (Param.Pass != P.Name)
        continue;
      Out += First ? "{" : ",{";
      First = false;
      Out += "\"name\":";
      appendJSONString(Out, Param.Name);
      Out += ",\"default\":";
      appendJSONString(Out, Param.Default);
      Out += ",\"help\":";
      appendJSONString(Out, Param.Help);
      Out += "}";
    }
    Out += "]}";
  }
  Out += "]";
  return Out;
}

/// Lists the llvmaccel passes of one \p Kind, as -print-passes does.
void printAccelPassesOfKind(raw_ostream &OS, StringRef Kind) {
  if (none_of(allPasses(), [&](const PassEntry &P) { return P.Kind == Kind; }))
    return;
  OS << "LLVMAccel " << Kind << " passes with params:\n";
  for (const PassEntry &P : allPasses()) {
    if (P.Kind != Kind)
      continue;
    OS << "  " << P.Name << "<";
    ListSeparator LS(";");
    for (const ParamEntry &Param : allParams())
      if (Param.Pass == P.Name)
        OS << LS << Param.Name;
    OS << ">\n";
  }
}

/// Lists the llvmaccel passes the way `opt -print-passes` lists LLVM's own.
void printAccelPasses(raw_ostream &OS) {
  for (StringRef Kind : {"module", "function"})
    printAccelPassesOfKind(OS, Kind);
}

/// Makes dlclose leave this plugin mapped (RTLD_NODELETE).
bool pinPluginInMemory() {
#if defined(__unix__) || defined(__APPLE__)
  Dl_info Info;
  if (!dladdr(reinterpret_cast<void *>(&printAccelPasses), &Info) ||
      !Info.dli_fname)
    return false;
  return dlopen(Info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#else
  return false;
#endif
}

/// opt builds the list for -print-passes from LLVM's own registry alone, with
/// no hook for plugins. When this plugin is loaded into opt (which parses
/// -load-pass-plugin before the options after it), print our passes as
/// -print-passes is seen, just before opt prints its own.
void hookPrintPasses() {
  auto &Options = cl::getRegisteredOptions();
  auto It = Options.find("print-passes");
  if (It == Options.end())
    return;
  // The callback lives in opt's option until opt's static destructors run,
  // after LLVM has closed the plugin's handle: keep our code mapped.
  if (!pinPluginInMemory())
    return;
  // In opt this is `static cl::opt<bool> PrintPasses("print-passes", ...)`.
  auto *PrintPasses = static_cast<cl::opt<bool> *>(It->second);
  PrintPasses->setCallback([](const bool &On) {
    if (On)
      printAccelPasses(outs());
  });
}

} // namespace

/// The pass catalog as JSON (see Passes.def); valid for the process lifetime.
extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT const char *
llvmaccel_pass_catalog() {
  static const std::string Catalog = buildCatalog();
  return Catalog.c_str();
}

/// Moves the calling thread's last parameter error into \p Buf (at most
/// \p Size bytes, NUL-terminated) and clears it. Returns the full length.
extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT size_t
llvmaccel_take_pipeline_error(char *Buf, size_t Size) {
  size_t Len = LastPipelineError.size();
  if (Buf && Size) {
    size_t N = std::min(Len, Size - 1);
    LastPipelineError.copy(Buf, N);
    Buf[N] = '\0';
  }
  LastPipelineError.clear();
  return Len;
}

/// Sets this thread's -llvmaccel-auto value for the pipelines it builds next
/// (null: back to the option and the environment).
extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT void
llvmaccel_set_auto_override(const char *Selection) {
  if (Selection)
    AutoOverride = Selection;
  else
    AutoOverride.reset();
}

/// With \p Quiet set, parameter errors are recorded but not printed.
extern "C" LLVM_ATTRIBUTE_VISIBILITY_DEFAULT void
llvmaccel_set_quiet_errors(int Quiet) {
  QuietErrors = Quiet != 0;
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  static bool Hooked = (hookPrintPasses(), true);
  (void)Hooked;
  return {LLVM_PLUGIN_API_VERSION, "LLVMAccel", LLVMACCEL_VERSION,
          registerCallbacks};
}
