//===- PassParams.h - Parameters in angle brackets --------------*- C++ -*-===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one parser for the text between the angle brackets of every llvmaccel
/// pass (`accel-prefetch<distance=32;no-strided>`), so that all passes accept
/// the same syntax and say the same thing about the same mistake:
///
///   invalid PASS pass parameter 'P'                      (unknown name)
///   invalid PASS pass parameter 'P': NAME must be an integer from A to B
///   invalid PASS pass parameter 'P': NAME must be a power of two from A to B
///   invalid PASS pass parameter 'P': NAME takes no value
///   invalid PASS pass parameter 'P': NAME is given twice
///   invalid PASS pass parameter '': empty parameter
///
/// A pass declares its parameters, then parses:
/// \code
///   PassParamParser P("accel-prefetch");
///   P.integer("distance", Opts.Distance, 1, 65536);
///   P.flag("strided", Opts.Strided);          // strided / no-strided
///   if (Error E = P.parse(Params)) return std::move(E);
/// \endcode
///
//===----------------------------------------------------------------------===//

#ifndef LLVMACCEL_PASSPARAMS_H
#define LLVMACCEL_PASSPARAMS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
namespace accel {

class PassParamParser {
public:
  explicit PassParamParser(StringRef PassName) : PassName(PassName) {}

  /// `NAME` sets \p Value, `no-NAME` clears it.
  void flag(StringRef Name, bool &Value);
  /// `NAME=N` with Min <= N <= Max (and N a power of two if \p PowerOf2).
  void integer(StringRef Name, unsigned &Value, unsigned Min, unsigned Max,
               bool PowerOf2 = false);
  void integer(StringRef Name, std::optional<unsigned> &Value, unsigned Min,
               unsigned Max, bool PowerOf2 = false);

  /// Parses \p Params (the text between the brackets, `;`-separated) into
  /// the declared parameters. The first mistake is the error.
  Error parse(StringRef Params);

  /// The error for parameter text \p Param, with an optional reason.
  Error error(StringRef Param, const Twine &Why = "") const;

private:
  struct Decl {
    std::string Name;
    bool *Flag = nullptr;
    unsigned *Int = nullptr;
    std::optional<unsigned> *OptInt = nullptr;
    unsigned Min = 0, Max = 0;
    bool PowerOf2 = false;
    bool Seen = false;
  };
  Decl *find(StringRef Name);
  Decl &addInteger(StringRef Name, unsigned Min, unsigned Max, bool PowerOf2);
  Error parseOne(StringRef Param);

  std::string PassName;
  SmallVector<Decl, 8> Decls;
};

/// The error for a pass's parameter list that is present but empty
/// (`accel-prefetch<>`); PassBuilder hands the parser the same empty text for
/// `accel-prefetch` and `accel-prefetch<>`, so the plugin checks the name.
Error emptyParamListError(StringRef PassName);

} // namespace accel
} // namespace llvm

#endif // LLVMACCEL_PASSPARAMS_H
