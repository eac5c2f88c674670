//===- XlaFfi.h - XLA FFI handler for llvmaccel kernels --------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// One generic XLA FFI handler (the typed FFI, custom call API version 4)
/// that runs llvmaccel-compiled kernels inside XLA:CPU programs, for
/// jax.ffi.ffi_call("llvmaccel_kernel", ...). Kernels are registered here
/// with their argument layout; a call names its kernel by the attributes
/// `kernel_id` (i64 scalar) and `kernel_key` (string), so nothing an XLA
/// program passes can make the handler call an unregistered address.
///
/// This file includes neither LLVM nor XLA headers: the few XLA FFI C ABI
/// structs the handler reads are declared in XlaFfi.cpp.
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_BINDINGS_XLAFFI_H
#define LLVMACCEL_BINDINGS_XLAFFI_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace llvmaccel {
namespace xlaffi {

/// Element type (an XLA_FFI_DataType value) and dimensions of a buffer.
struct BufferSpec {
  int32_t DType = 0;
  std::vector<int64_t> Dims;
};

/// A compiled kernel bound to concrete shapes.
///
/// Entry has the signature `int32_t(void **Pointers, const int64_t *Symbols)`
/// (a trampoline generated next to the kernel), where Pointers holds the
/// inputs, constants, outputs and temporaries in that order. The caller
/// keeps the machine code and the constants alive for the process's lifetime.
struct KernelSpec {
  std::string Name;
  /// Must equal the call's `kernel_key` attribute.
  std::string Key;
  uint64_t Entry = 0;
  std::vector<BufferSpec> Inputs;
  std::vector<BufferSpec> Outputs;
  std::vector<uint64_t> Constants;
  std::vector<uint64_t> TempBytes;
  std::vector<int64_t> Symbols;
  /// Kernel return code -> (XLA_FFI_Error_Code, message).
  std::map<int32_t, std::pair<int32_t, std::string>> Errors;
};

/// Registers \p Spec and returns its id (>= 1). Ids are never reused.
int64_t registerKernel(KernelSpec Spec);

/// Number of kernels registered so far.
int64_t numKernels();

/// Address of the handler, an `XLA_FFI_Error *(XLA_FFI_CallFrame *)`.
uint64_t handlerAddress();

/// The XLA FFI API version the handler implements, as (major, minor).
std::pair<int, int> apiVersion();

} // namespace xlaffi
} // namespace llvmaccel

#endif // LLVMACCEL_BINDINGS_XLAFFI_H
