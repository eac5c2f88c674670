//===- XlaFfi.cpp - XLA FFI handler for llvmaccel kernels -----------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The handler behind jax.ffi.ffi_call("llvmaccel_kernel", ...). It is built
/// without XLA's headers (jax is optional at build time): the structs below
/// declare the part of the XLA FFI C ABI the handler uses, written after
/// xla/ffi/api/c_api.h as shipped with jaxlib 0.10.2 (XLA_FFI_API_MAJOR 0,
/// XLA_FFI_API_MINOR 3). That ABI is versioned and only grows at the end of
/// its structs, so every struct the runtime hands over is checked to be at
/// least as large as the prefix declared here.
///
/// A call goes through these steps:
///  * a call frame carrying the metadata extension (XLA asks for the API
///    version and traits when the handler is registered) gets the metadata;
///  * the instantiate, prepare and initialize stages have nothing to do;
///  * the execute stage finds the kernel named by the `kernel_id` and
///    `kernel_key` attributes, checks the call's buffers against it, allocates
///    its temporaries, calls it and turns a non-zero return code into an XLA
///    FFI error (XLA_FFI_Error_Create) with the kernel's message.
///
//===----------------------------------------------------------------------===//

#include "XlaFfi.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace llvmaccel {
namespace xlaffi {
namespace {

//===----------------------------------------------------------------------===//
// The XLA FFI C ABI (c_api.h, API version 0.3), as far as the handler uses it.
// C enums are int-sized on the platforms XLA:CPU supports; they are declared
// as int32_t here.
//===----------------------------------------------------------------------===//

constexpr int ApiMajor = 0;
constexpr int ApiMinor = 3;

constexpr int32_t ExtensionMetadata = 1; // XLA_FFI_Extension_Metadata

// XLA_FFI_Error_Code_*
constexpr int32_t ErrcInvalidArgument = 3;
constexpr int32_t ErrcNotFound = 5;
constexpr int32_t ErrcResourceExhausted = 8;
constexpr int32_t ErrcInternal = 13;

constexpr int32_t StageExecute = 3; // XLA_FFI_ExecutionStage_EXECUTE

constexpr int32_t ArgBuffer = 1;   // XLA_FFI_ArgType_BUFFER
constexpr int32_t RetBuffer = 1;   // XLA_FFI_RetType_BUFFER
constexpr int32_t AttrScalar = 3;  // XLA_FFI_AttrType_SCALAR
constexpr int32_t AttrString = 4;  // XLA_FFI_AttrType_STRING
constexpr int32_t DataTypeS64 = 5; // XLA_FFI_DataType_S64

struct FfiError; // XLA_FFI_Error, opaque

struct ExtensionBase { // XLA_FFI_Extension_Base
  size_t StructSize;
  int32_t Type;
  ExtensionBase *Next;
};

struct ApiVersion { // XLA_FFI_Api_Version
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  int Major;
  int Minor;
};

struct ErrorCreateArgs { // XLA_FFI_Error_Create_Args
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  const char *Message;
  int32_t Errc;
};

using ErrorCreateFn = FfiError *(ErrorCreateArgs *);

struct Api { // XLA_FFI_Api, up to XLA_FFI_Error_Create
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  ApiVersion Version;
  const void *InternalApi;
  ErrorCreateFn *ErrorCreate;
};

struct ByteSpan { // XLA_FFI_ByteSpan
  const char *Ptr;
  size_t Len;
};

struct Scalar { // XLA_FFI_Scalar
  int32_t DType;
  void *Value;
};

struct Buffer { // XLA_FFI_Buffer
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  int32_t DType;
  void *Data;
  int64_t Rank;
  int64_t *Dims;
};

struct Args { // XLA_FFI_Args (XLA_FFI_Rets has the same layout)
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  int64_t Size;
  int32_t *Types;
  void **Values;
};

struct Attrs { // XLA_FFI_Attrs
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  int64_t Size;
  int32_t *Types;
  ByteSpan **Names;
  void **Values;
};

struct CallFrame { // XLA_FFI_CallFrame
  size_t StructSize;
  ExtensionBase *ExtensionStart;
  const Api *FfiApi;
  void *Ctx;
  int32_t Stage;
  Args Arguments;
  Args Results;
  Attrs Attributes;
};

struct Metadata { // XLA_FFI_Metadata
  size_t StructSize;
  ApiVersion Version;
  uint32_t Traits;
};

struct MetadataExtension { // XLA_FFI_Metadata_Extension
  ExtensionBase Base;
  Metadata *Data;
};

/// XLA_FFI_STRUCT_SIZE: the size of a struct up to and including a field.
#define LLVMACCEL_STRUCT_SIZE(Type, Field)                                     \
  (offsetof(Type, Field) + sizeof(static_cast<Type *>(nullptr)->Field))

// The layout of c_api.h 0.3 on LP64 targets.
static_assert(sizeof(void *) == 8, "the XLA FFI ABI is declared for LP64");
static_assert(offsetof(Api, ErrorCreate) == 48, "XLA_FFI_Api layout");
static_assert(LLVMACCEL_STRUCT_SIZE(ErrorCreateArgs, Errc) == 28,
              "XLA_FFI_Error_Create_Args layout");
static_assert(LLVMACCEL_STRUCT_SIZE(Buffer, Dims) == 48,
              "XLA_FFI_Buffer layout");
static_assert(LLVMACCEL_STRUCT_SIZE(Args, Values) == 40, "XLA_FFI_Args layout");
static_assert(LLVMACCEL_STRUCT_SIZE(Attrs, Values) == 48,
              "XLA_FFI_Attrs layout");
static_assert(offsetof(CallFrame, Arguments) == 40 &&
                  offsetof(CallFrame, Results) == 80 &&
                  LLVMACCEL_STRUCT_SIZE(CallFrame, Attributes) == 168,
              "XLA_FFI_CallFrame layout");
static_assert(LLVMACCEL_STRUCT_SIZE(Metadata, Traits) == 36,
              "XLA_FFI_Metadata layout");
static_assert(LLVMACCEL_STRUCT_SIZE(MetadataExtension, Data) == 32,
              "XLA_FFI_Metadata_Extension layout");

//===----------------------------------------------------------------------===//
// Kernel registry
//===----------------------------------------------------------------------===//

struct Registry {
  std::mutex Lock;
  std::unordered_map<int64_t, std::shared_ptr<const KernelSpec>> Kernels;
  int64_t NextId = 1;
};

Registry &registry() {
  static Registry *R = new Registry(); // never destroyed: XLA may outlive us
  return *R;
}

std::shared_ptr<const KernelSpec> findKernel(int64_t Id) {
  Registry &R = registry();
  std::lock_guard<std::mutex> Guard(R.Lock);
  auto It = R.Kernels.find(Id);
  return It == R.Kernels.end() ? nullptr : It->second;
}

//===----------------------------------------------------------------------===//
// The handler
//===----------------------------------------------------------------------===//

FfiError *makeError(const Api *A, int32_t Errc, const std::string &Message) {
  ErrorCreateArgs Args;
  Args.StructSize = LLVMACCEL_STRUCT_SIZE(ErrorCreateArgs, Errc);
  Args.ExtensionStart = nullptr;
  Args.Message = Message.c_str();
  Args.Errc = Errc;
  return A->ErrorCreate(&Args);
}

FfiError *populateMetadata(MetadataExtension *Ext) {
  // XLA asks before it hands out its API table (the call frame's api may be
  // null), so a malformed request can only be left unanswered; XLA then sees
  // API version 0.0 and refuses the handler.
  if (Ext->Base.StructSize < LLVMACCEL_STRUCT_SIZE(MetadataExtension, Data) ||
      !Ext->Data ||
      Ext->Data->StructSize < LLVMACCEL_STRUCT_SIZE(Metadata, Traits))
    return nullptr;
  Ext->Data->Version.StructSize = LLVMACCEL_STRUCT_SIZE(ApiVersion, Minor);
  Ext->Data->Version.ExtensionStart = nullptr;
  Ext->Data->Version.Major = ApiMajor;
  Ext->Data->Version.Minor = ApiMinor;
  Ext->Data->Traits = 0; // not command-buffer compatible (a GPU notion)
  return nullptr;
}

std::string_view spanView(const ByteSpan *S) {
  return S && S->Ptr ? std::string_view(S->Ptr, S->Len) : std::string_view();
}

std::string dimsText(int64_t Rank, const int64_t *Dims) {
  std::ostringstream OS;
  OS << '(';
  for (int64_t I = 0; I < Rank; ++I)
    OS << (I ? ", " : "") << Dims[I];
  OS << (Rank == 1 ? ",)" : ")");
  return OS.str();
}

const char *dtypeName(int32_t DType) {
  switch (DType) { // XLA_FFI_DataType
  case 1:
    return "bool";
  case 2:
    return "int8";
  case 3:
    return "int16";
  case 4:
    return "int32";
  case 5:
    return "int64";
  case 6:
    return "uint8";
  case 7:
    return "uint16";
  case 8:
    return "uint32";
  case 9:
    return "uint64";
  case 10:
    return "float16";
  case 11:
    return "float32";
  case 12:
    return "float64";
  case 16:
    return "bfloat16";
  default:
    return nullptr;
  }
}

std::string dtypeText(int32_t DType) {
  const char *Name = dtypeName(DType);
  return Name ? Name : "XLA_FFI_DataType " + std::to_string(DType);
}

/// Checks that \p Buf is a buffer of \p Spec's type and shape.
bool checkBuffer(const Buffer *Buf, const BufferSpec &Spec, const char *What,
                 size_t Index, std::string &Message) {
  std::ostringstream OS;
  OS << What << ' ' << Index << ": ";
  if (!Buf || Buf->StructSize < LLVMACCEL_STRUCT_SIZE(Buffer, Dims)) {
    OS << "not a buffer the handler understands";
  } else if (Buf->DType != Spec.DType) {
    OS << "element type " << dtypeText(Buf->DType) << ", expected "
       << dtypeText(Spec.DType);
  } else if (Buf->Rank != static_cast<int64_t>(Spec.Dims.size()) ||
             (Buf->Rank > 0 &&
              (!Buf->Dims || std::memcmp(Buf->Dims, Spec.Dims.data(),
                                         Spec.Dims.size() * 8) != 0))) {
    OS << "shape "
       << (Buf->Rank >= 0 && (Buf->Dims || Buf->Rank == 0)
               ? dimsText(Buf->Rank, Buf->Dims)
               : std::string("?"))
       << ", expected "
       << dimsText(static_cast<int64_t>(Spec.Dims.size()), Spec.Dims.data());
  } else {
    return true;
  }
  Message = OS.str();
  return false;
}

FfiError *execute(CallFrame *Frame) {
  const Api *A = Frame->FfiApi;
  const Attrs &At = Frame->Attributes;
  bool HaveId = false;
  int64_t Id = 0;
  std::string_view Key;
  bool HaveKey = false;
  if (At.StructSize < LLVMACCEL_STRUCT_SIZE(Attrs, Values) ||
      (At.Size > 0 && (!At.Types || !At.Names || !At.Values)))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel_kernel: malformed attributes");
  for (int64_t I = 0; I < At.Size; ++I) {
    std::string_view Name = spanView(At.Names[I]);
    if (Name == "kernel_id" && At.Types[I] == AttrScalar) {
      auto *S = static_cast<const Scalar *>(At.Values[I]);
      if (S && S->Value && S->DType == DataTypeS64) {
        std::memcpy(&Id, S->Value, sizeof(Id));
        HaveId = true;
      }
    } else if (Name == "kernel_key" && At.Types[I] == AttrString) {
      Key = spanView(static_cast<const ByteSpan *>(At.Values[I]));
      HaveKey = true;
    }
  }
  if (!HaveId || !HaveKey)
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel_kernel: the call needs the attributes "
                     "kernel_id (an int64 scalar) and kernel_key (a string); "
                     "use llvmaccel.jax.ffi to call llvmaccel kernels");
  std::shared_ptr<const KernelSpec> K = findKernel(Id);
  if (!K || K->Key != Key)
    return makeError(A, ErrcNotFound,
                     "llvmaccel_kernel: no kernel " + std::to_string(Id) +
                         " with this key is registered in this process (was "
                         "the program compiled in another process?)");

  const Args &In = Frame->Arguments;
  const Args &Out = Frame->Results;
  if (In.StructSize < LLVMACCEL_STRUCT_SIZE(Args, Values) ||
      Out.StructSize < LLVMACCEL_STRUCT_SIZE(Args, Values) ||
      (In.Size > 0 && (!In.Types || !In.Values)) ||
      (Out.Size > 0 && (!Out.Types || !Out.Values)))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel_kernel: malformed arguments or results");
  if (In.Size != static_cast<int64_t>(K->Inputs.size()) ||
      Out.Size != static_cast<int64_t>(K->Outputs.size()))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel kernel '" + K->Name + "': called with " +
                         std::to_string(In.Size) + " arguments and " +
                         std::to_string(Out.Size) + " results, expected " +
                         std::to_string(K->Inputs.size()) + " and " +
                         std::to_string(K->Outputs.size()));

  std::vector<void *> Pointers;
  Pointers.reserve(K->Inputs.size() + K->Constants.size() + K->Outputs.size() +
                   K->TempBytes.size());
  std::string Message;
  // Appends the data of the call's buffers after checking them against the
  // kernel's specs; false (with Message) on a mismatch.
  auto AddBuffers = [&](const auto &Frame, int32_t BufferType,
                        const std::vector<BufferSpec> &Specs,
                        const char *What) {
    for (size_t I = 0; I < Specs.size(); ++I) {
      auto *Buf = Frame.Types[I] == BufferType
                      ? static_cast<const Buffer *>(Frame.Values[I])
                      : nullptr;
      if (!checkBuffer(Buf, Specs[I], What, I, Message))
        return false;
      Pointers.push_back(Buf->Data);
    }
    return true;
  };
  if (!AddBuffers(In, ArgBuffer, K->Inputs, "argument"))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel kernel '" + K->Name + "': " + Message);
  for (uint64_t C : K->Constants)
    Pointers.push_back(reinterpret_cast<void *>(static_cast<uintptr_t>(C)));
  if (!AddBuffers(Out, RetBuffer, K->Outputs, "result"))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel kernel '" + K->Name + "': " + Message);

  // Temporaries: one block per call, each 64-byte aligned.
  constexpr uint64_t Align = 64;
  std::vector<uint64_t> Offsets;
  uint64_t Total = 0;
  for (uint64_t Bytes : K->TempBytes) {
    Offsets.push_back(Total);
    uint64_t Rounded = (Bytes + Align - 1) / Align * Align;
    if (Rounded < Bytes || Total + Rounded < Total)
      return makeError(A, ErrcResourceExhausted,
                       "llvmaccel kernel '" + K->Name +
                           "': temporaries too large");
    Total += Rounded;
  }
  std::unique_ptr<void, decltype(&std::free)> Temps(nullptr, &std::free);
  if (!K->TempBytes.empty()) {
    Temps.reset(std::aligned_alloc(Align, Total ? Total : Align));
    if (!Temps)
      return makeError(A, ErrcResourceExhausted,
                       "llvmaccel kernel '" + K->Name + "': cannot allocate " +
                           std::to_string(Total) + " bytes of temporaries");
    for (uint64_t Offset : Offsets)
      Pointers.push_back(static_cast<char *>(Temps.get()) + Offset);
  }

  using EntryFn = int32_t(void **, const int64_t *);
  auto *Entry = reinterpret_cast<EntryFn *>(static_cast<uintptr_t>(K->Entry));
  int32_t RC = Entry(Pointers.data(), K->Symbols.data());
  if (RC == 0)
    return nullptr;
  auto It = K->Errors.find(RC);
  if (It == K->Errors.end())
    return makeError(A, ErrcInternal,
                     "llvmaccel kernel '" + K->Name + "' failed with code " +
                         std::to_string(RC));
  return makeError(A, It->second.first, It->second.second);
}

FfiError *handler(CallFrame *Frame) {
  if (!Frame)
    return nullptr;
  if (Frame->ExtensionStart && Frame->ExtensionStart->Type == ExtensionMetadata)
    return populateMetadata(
        reinterpret_cast<MetadataExtension *>(Frame->ExtensionStart));
  const Api *A = Frame->FfiApi;
  // Without the error constructor there is no way to report anything.
  if (!A || A->StructSize < LLVMACCEL_STRUCT_SIZE(Api, ErrorCreate) ||
      !A->ErrorCreate)
    return nullptr;
  if (Frame->StructSize < LLVMACCEL_STRUCT_SIZE(CallFrame, Attributes))
    return makeError(A, ErrcInvalidArgument,
                     "llvmaccel_kernel: unexpected XLA_FFI_CallFrame size " +
                         std::to_string(Frame->StructSize));
  // Instantiate, prepare, initialize: no state, no resources to request.
  if (Frame->Stage != StageExecute)
    return nullptr;
  try {
    return execute(Frame);
  } catch (const std::bad_alloc &) {
    return makeError(A, ErrcResourceExhausted,
                     "llvmaccel_kernel: out of memory");
  } catch (...) {
    return makeError(A, ErrcInternal, "llvmaccel_kernel: internal error");
  }
}

} // namespace

int64_t registerKernel(KernelSpec Spec) {
  Registry &R = registry();
  auto Shared = std::make_shared<const KernelSpec>(std::move(Spec));
  std::lock_guard<std::mutex> Guard(R.Lock);
  int64_t Id = R.NextId++;
  R.Kernels.emplace(Id, std::move(Shared));
  return Id;
}

int64_t numKernels() {
  Registry &R = registry();
  std::lock_guard<std::mutex> Guard(R.Lock);
  return static_cast<int64_t>(R.Kernels.size());
}

uint64_t handlerAddress() {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&handler));
}

std::pair<int, int> apiVersion() { return {ApiMajor, ApiMinor}; }

} // namespace xlaffi
} // namespace llvmaccel
