//===- Core.h - LLVM-facing core of the llvmaccel extension ----*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The part of the Python extension that talks to LLVM. It is compiled like
/// LLVM itself (no RTTI, no exceptions) and exposes only standard C++ types,
/// so the pybind11 layer (Module.cpp, with RTTI and exceptions) never sees an
/// LLVM class. Failures are reported through Status, never by aborting.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_BINDINGS_CORE_H
#define LLVMACCEL_BINDINGS_CORE_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llvmaccel {

/// Outcome of a core operation. Kind names the Python exception to raise.
struct Status {
  enum Kind { Ok, ParseError, PipelineError, VerifyError, JITError, IOError };
  Kind K = Ok;
  std::string Message;
  int Line = 0;   ///< 1-based, for ParseError.
  int Column = 0; ///< 1-based, for ParseError.

  bool ok() const { return K == Ok; }
  static Status error(Kind K, std::string Msg) {
    Status S;
    S.K = K;
    S.Message = std::move(Msg);
    return S;
  }
};

struct FunctionInfo {
  std::string Name;
  bool IsDeclaration = false;
  std::string ReturnType;
  std::vector<std::string> ParamTypes;
  /// Per parameter: the function only reads through it (`readonly` or
  /// `readnone` on the parameter, or a function that only reads memory).
  std::vector<bool> ParamReadOnly;
};

struct Remark {
  std::string Pass;
  std::string Kind; ///< "passed", "missed" or "analysis".
  std::string Function;
  std::string Message;
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  std::vector<std::pair<std::string, std::string>> Args;
};

struct Report {
  std::vector<Remark> Remarks;
  /// "pass.Counter" -> increase during the run.
  std::map<std::string, uint64_t> Statistics;
};

/// Options for running a pipeline.
struct RunOptions {
  std::string Pipeline;
  bool VerifyEach = false;
  /// Regular expression selecting the passes whose remarks are collected.
  std::string RemarkFilter = "accel-.*";
  /// Which llvmaccel passes join the default pipelines: "all", "none" or a
  /// comma-separated list; "" leaves it to -llvmaccel-auto / LLVMACCEL_AUTO.
  std::string Auto;
  /// "": use the module's triple (no target if it has none); "host": compile
  /// for this machine (triple, CPU and features), updating the module.
  std::string Target;
  /// "libmvec": the vectorizer may call glibc's vector math variants for the
  /// functions LLVM's library tables know (the library must be loaded in the
  /// process for the JIT to resolve them); "": no vector library.
  std::string VectorLibrary;
};

/// What LLVM knows of this machine, for code generators sizing their loops.
struct HostInfo {
  std::string Triple, CPU;
  std::vector<std::string> Features; ///< Enabled features, LLVM's names.
  /// Fixed-width vector register bits the target's tuning uses (TTI: 256 on
  /// x86 CPUs that prefer 256-bit vectors even with AVX-512), and the number
  /// of vector registers.
  unsigned VectorBits = 0, VectorRegisters = 0;
  /// The widest fixed-width vector registers a function can ask for: TTI's
  /// width on a function that prefers 512-bit vectors (x86's widest; other
  /// targets ignore the attribute). 512 with AVX-512, whatever the tuning.
  unsigned WidestVectorBits = 0;
  /// Data cache sizes in bytes, as TTI::getCacheSize reports them (0 where
  /// the target says nothing).
  unsigned L1DBytes = 0, L2DBytes = 0;
};
Status hostInfo(HostInfo &Out);
/// The same facts for another machine: \p Triple with \p CPU (LLVM's names,
/// "neoverse-v1") and extra \p Features ("+sve,-bf16"), as TTI describes a
/// function compiled for it (the target must be built into this LLVM).
Status targetInfo(const std::string &Triple, const std::string &CPU,
                  const std::string &Features, HostInfo &Out);
/// Whether \p VectorLibrary ("libmvec") has a vector variant of the scalar
/// function or intrinsic \p Name for the host: of \p Lanes lanes, or of any
/// width when \p Lanes is 0.
bool vectorLibraryHas(const std::string &VectorLibrary, const std::string &Name,
                      unsigned Lanes = 0);

class ModuleHandle;
class JITHandle;

/// Records where the plugin lives; it is loaded on first use.
void setPluginPath(const std::string &Path);
std::string pluginPath();
/// The plugin's pass catalog (JSON), loading the plugin if needed.
Status passCatalog(std::string &Out);

std::string llvmVersion();
std::string hostCPU();

Status parseIR(const std::string &Buffer, const std::string &Name,
               std::shared_ptr<ModuleHandle> &Out);

std::string printModule(ModuleHandle &M);
std::string moduleBitcode(ModuleHandle &M);
std::string moduleName(ModuleHandle &M);
std::string moduleTriple(ModuleHandle &M);
Status verifyModule(ModuleHandle &M);
std::vector<FunctionInfo> moduleFunctions(ModuleHandle &M);
std::shared_ptr<ModuleHandle> cloneModule(ModuleHandle &M);

/// Links a copy of \p Src into \p Dest; each function of \p Inline (defined
/// after linking) becomes internal and always-inline.
Status linkModule(ModuleHandle &Dest, ModuleHandle &Src,
                  const std::vector<std::string> &Inline);

/// Runs a textual new-PM pipeline over \p M in place.
Status runPasses(ModuleHandle &M, const RunOptions &Opts, Report &R);

/// Compiles a copy of \p M for the host, after running \p Opts.Pipeline.
/// With \p PerfMap, every function linked is appended to
/// /tmp/perf-<pid>.map (Linux perf's map of JIT'd code) as
/// "llvmaccel:<name> <PerfLabel>".
Status jitCompile(ModuleHandle &M, const RunOptions &Opts, Report &R,
                  std::shared_ptr<JITHandle> &Out, bool PerfMap = false,
                  const std::string &PerfLabel = "");
Status jitLookup(JITHandle &J, const std::string &Name, uint64_t &Address);
/// Signature of a function in the JIT-compiled module.
Status jitFunctionInfo(JITHandle &J, const std::string &Name,
                       FunctionInfo &Out);

} // namespace llvmaccel

#endif // LLVMACCEL_BINDINGS_CORE_H
