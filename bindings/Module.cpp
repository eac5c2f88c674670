//===- Module.cpp - pybind11 layer of the llvmaccel extension -------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Python bindings for Core.h. This file includes no LLVM header: it is built
/// with RTTI and exceptions, which pybind11 needs, while Core.cpp is built
/// like LLVM. Errors become the exception classes of llvmaccel.errors.
///
//===----------------------------------------------------------------------===//

#include "Core.h"
#include "Parallel.h"
#include "XlaFfi.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace llvmaccel;

namespace {

/// Python-visible owners of the core's opaque handles.
struct PyModuleRef {
  std::shared_ptr<ModuleHandle> H;
};
struct PyJITRef {
  std::shared_ptr<JITHandle> J;
};

/// Carries a failed Status to the exception translator.
struct CoreError {
  Status S;
};

void check(const Status &S) {
  if (!S.ok())
    throw CoreError{S};
}

void translate(const CoreError &E) {
  py::module_ Errors = py::module_::import("llvmaccel.errors");
  const Status &S = E.S;
  switch (S.K) {
  case Status::ParseError: {
    py::object Exc = Errors.attr("IRParseError")(S.Message, S.Line, S.Column);
    PyErr_SetObject(Errors.attr("IRParseError").ptr(), Exc.ptr());
    return;
  }
  case Status::PipelineError:
    PyErr_SetString(Errors.attr("PipelineError").ptr(), S.Message.c_str());
    return;
  case Status::VerifyError:
    PyErr_SetString(Errors.attr("VerifyError").ptr(), S.Message.c_str());
    return;
  case Status::JITError:
    PyErr_SetString(Errors.attr("JITError").ptr(), S.Message.c_str());
    return;
  case Status::IOError:
    PyErr_SetString(PyExc_OSError, S.Message.c_str());
    return;
  case Status::Ok:
    break;
  }
  PyErr_SetString(PyExc_RuntimeError, S.Message.c_str());
}

py::tuple functionTuple(const FunctionInfo &F) {
  return py::make_tuple(F.Name, F.IsDeclaration, F.ReturnType, F.ParamTypes,
                        F.ParamReadOnly);
}

py::dict reportDict(const Report &R) {
  py::list Remarks;
  for (const Remark &Rem : R.Remarks) {
    py::dict D;
    D["pass_name"] = Rem.Pass;
    D["kind"] = Rem.Kind;
    D["function"] = Rem.Function;
    D["message"] = Rem.Message;
    D["file"] = Rem.File;
    D["line"] = Rem.Line;
    D["column"] = Rem.Column;
    py::dict Args;
    for (const auto &[K, V] : Rem.Args)
      Args[py::str(K)] = V;
    D["args"] = Args;
    Remarks.append(D);
  }
  py::dict Out;
  Out["remarks"] = Remarks;
  Out["statistics"] = R.Statistics;
  return Out;
}

RunOptions runOptions(const std::string &Pipeline, bool VerifyEach,
                      const std::string &RemarkFilter,
                      const std::string &Target, const std::string &Auto,
                      const std::string &VectorLibrary) {
  RunOptions O;
  O.VectorLibrary = VectorLibrary;
  O.Auto = Auto;
  O.Pipeline = Pipeline;
  O.VerifyEach = VerifyEach;
  O.RemarkFilter = RemarkFilter;
  O.Target = Target;
  return O;
}

} // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "Native core of llvmaccel (LLVM " LLVMACCEL_LLVM_VERSION_STRING ")";
  py::register_exception_translator([](std::exception_ptr P) {
    try {
      if (P)
        std::rethrow_exception(P);
    } catch (const CoreError &E) {
      translate(E);
    }
  });

  m.def("set_plugin_path", &setPluginPath);
  m.def("plugin_path", &pluginPath);
  m.def("pass_catalog", [] {
    std::string Out;
    check(passCatalog(Out));
    return Out;
  });
  m.def("llvm_version", &llvmVersion);
  m.def("host_cpu", &hostCPU);
  m.def("parallel_threads", [] { return llvmaccel_parallel_threads(); });
  m.def("parallel_set_threads",
        [](int64_t N) { llvmaccel_parallel_set_threads(N); });
  m.def("parallel_workers", [] { return llvmaccel_parallel_workers(); });
  m.def("parallel_runtime",
        [] { return std::string(llvmaccel_parallel_runtime()); });
  m.def("parallel_set_runtime",
        [](int32_t Mode) { llvmaccel_parallel_set_runtime(Mode); });

  py::class_<PyModuleRef>(m, "ModuleRef")
      .def("print",
           [](PyModuleRef &R) {
             std::string S;
             {
               py::gil_scoped_release NoGIL;
               S = printModule(*R.H);
             }
             return S;
           })
      .def("bitcode",
           [](PyModuleRef &R) {
             std::string S;
             {
               py::gil_scoped_release NoGIL;
               S = moduleBitcode(*R.H);
             }
             return py::bytes(S);
           })
      .def_property_readonly("name",
                             [](PyModuleRef &R) { return moduleName(*R.H); })
      .def_property_readonly("triple",
                             [](PyModuleRef &R) { return moduleTriple(*R.H); })
      .def("verify", [](PyModuleRef &R) { check(verifyModule(*R.H)); })
      .def("functions",
           [](PyModuleRef &R) {
             py::list Out;
             for (const FunctionInfo &F : moduleFunctions(*R.H))
               Out.append(functionTuple(F));
             return Out;
           })
      .def("clone",
           [](PyModuleRef &R) { return PyModuleRef{cloneModule(*R.H)}; })
      .def(
          "link",
          [](PyModuleRef &R, PyModuleRef &Src,
             const std::vector<std::string> &Inline) {
            if (R.H == Src.H)
              throw py::value_error("cannot link a module into itself");
            Status S;
            {
              py::gil_scoped_release NoGIL;
              S = linkModule(*R.H, *Src.H, Inline);
            }
            check(S);
          },
          py::arg("src"), py::arg("inline") = std::vector<std::string>());

  py::class_<PyJITRef>(m, "JITRef")
      .def("lookup",
           [](PyJITRef &R, const std::string &Name) {
             uint64_t Addr = 0;
             Status S;
             {
               py::gil_scoped_release NoGIL;
               S = jitLookup(*R.J, Name, Addr);
             }
             check(S);
             return Addr;
           })
      .def("function_info", [](PyJITRef &R, const std::string &Name) {
        FunctionInfo F;
        check(jitFunctionInfo(*R.J, Name, F));
        return functionTuple(F);
      });

  m.def(
      "parse_ir",
      [](py::bytes Buffer, const std::string &Name) {
        std::string Buf = Buffer;
        std::shared_ptr<ModuleHandle> Out;
        Status S;
        {
          py::gil_scoped_release NoGIL;
          S = parseIR(Buf, Name, Out);
        }
        check(S);
        return PyModuleRef{Out};
      },
      py::arg("buffer"), py::arg("name"));
  m.def(
      "run_passes",
      [](PyModuleRef &M, const std::string &Pipeline, bool VerifyEach,
         const std::string &RemarkFilter, const std::string &Target,
         const std::string &Auto, const std::string &VectorLibrary) {
        Report R;
        Status S;
        {
          py::gil_scoped_release NoGIL;
          S = runPasses(*M.H,
                        runOptions(Pipeline, VerifyEach, RemarkFilter, Target,
                                   Auto, VectorLibrary),
                        R);
        }
        check(S);
        return reportDict(R);
      },
      py::arg("module"), py::arg("pipeline"), py::arg("verify_each"),
      py::arg("remark_filter"), py::arg("target"), py::arg("auto_passes"),
      py::arg("vector_library") = "");
  m.def(
      "jit_compile",
      [](PyModuleRef &M, const std::string &Pipeline,
         const std::string &RemarkFilter, const std::string &Auto,
         const std::string &VectorLibrary, bool PerfMap,
         const std::string &PerfLabel) {
        Report R;
        std::shared_ptr<JITHandle> J;
        Status S;
        {
          py::gil_scoped_release NoGIL;
          S = jitCompile(*M.H,
                         runOptions(Pipeline, false, RemarkFilter, "host", Auto,
                                    VectorLibrary),
                         R, J, PerfMap, PerfLabel);
        }
        check(S);
        return py::make_tuple(PyJITRef{J}, reportDict(R));
      },
      py::arg("module"), py::arg("pipeline"), py::arg("remark_filter"),
      py::arg("auto_passes"), py::arg("vector_library") = "",
      py::arg("perf_map") = false, py::arg("perf_label") = "");
  auto InfoDict = [](const HostInfo &Info) {
    py::dict D;
    D["triple"] = Info.Triple;
    D["cpu"] = Info.CPU;
    D["features"] = Info.Features;
    D["vector_bits"] = Info.VectorBits;
    D["vector_registers"] = Info.VectorRegisters;
    D["widest_vector_bits"] = Info.WidestVectorBits;
    D["l1d_bytes"] = Info.L1DBytes;
    D["l2_bytes"] = Info.L2DBytes;
    return D;
  };
  m.def("host_info", [InfoDict]() {
    HostInfo Info;
    Status S;
    {
      py::gil_scoped_release NoGIL;
      S = hostInfo(Info);
    }
    check(S);
    return InfoDict(Info);
  });
  m.def(
      "target_info",
      [InfoDict](const std::string &Triple, const std::string &CPU,
                 const std::string &Features) {
        HostInfo Info;
        Status S;
        {
          py::gil_scoped_release NoGIL;
          S = targetInfo(Triple, CPU, Features, Info);
        }
        check(S);
        return InfoDict(Info);
      },
      py::arg("triple"), py::arg("cpu"), py::arg("features") = "");
  m.def("vector_library_has", &vectorLibraryHas, py::arg("vector_library"),
        py::arg("name"), py::arg("lanes") = 0);

  // The XLA FFI handler for jax.ffi (XlaFfi.h) and its kernel registry.
  m.def("xla_ffi_handler_address", &xlaffi::handlerAddress);
  m.def("xla_ffi_api_version", &xlaffi::apiVersion);
  m.def("xla_ffi_num_kernels", &xlaffi::numKernels);
  m.def(
      "xla_ffi_register_kernel",
      [](const std::string &Name, const std::string &Key, uint64_t Entry,
         const std::vector<std::pair<int32_t, std::vector<int64_t>>> &Inputs,
         const std::vector<std::pair<int32_t, std::vector<int64_t>>> &Outputs,
         const std::vector<uint64_t> &Constants,
         const std::vector<uint64_t> &TempBytes,
         const std::vector<int64_t> &Symbols,
         const std::map<int32_t, std::pair<int32_t, std::string>> &Errors) {
        if (!Entry)
          throw py::value_error("xla_ffi_register_kernel: null entry point");
        xlaffi::KernelSpec K;
        K.Name = Name;
        K.Key = Key;
        K.Entry = Entry;
        for (const auto &[DType, Dims] : Inputs)
          K.Inputs.push_back({DType, Dims});
        for (const auto &[DType, Dims] : Outputs)
          K.Outputs.push_back({DType, Dims});
        K.Constants = Constants;
        K.TempBytes = TempBytes;
        K.Symbols = Symbols;
        K.Errors = Errors;
        return xlaffi::registerKernel(std::move(K));
      },
      py::arg("name"), py::arg("key"), py::arg("entry"), py::arg("inputs"),
      py::arg("outputs"), py::arg("constants"), py::arg("temp_bytes"),
      py::arg("symbols"), py::arg("errors"));
}
