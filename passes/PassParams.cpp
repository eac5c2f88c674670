//===- PassParams.cpp - Parameters in angle brackets ----------------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "PassParams.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace llvm::accel;

void PassParamParser::flag(StringRef Name, bool &Value) {
  Decl D;
  D.Name = Name.str();
  D.Flag = &Value;
  Decls.push_back(D);
}

PassParamParser::Decl &PassParamParser::addInteger(StringRef Name, unsigned Min,
                                                   unsigned Max,
                                                   bool PowerOf2) {
  Decl &D = Decls.emplace_back();
  D.Name = Name.str();
  D.Min = Min;
  D.Max = Max;
  D.PowerOf2 = PowerOf2;
  return D;
}

void PassParamParser::integer(StringRef Name, unsigned &Value, unsigned Min,
                              unsigned Max, bool PowerOf2) {
  addInteger(Name, Min, Max, PowerOf2).Int = &Value;
}

void PassParamParser::integer(StringRef Name, std::optional<unsigned> &Value,
                              unsigned Min, unsigned Max, bool PowerOf2) {
  addInteger(Name, Min, Max, PowerOf2).OptInt = &Value;
}

Error PassParamParser::error(StringRef Param, const Twine &Why) const {
  std::string Msg =
      ("invalid " + PassName + " pass parameter '" + Param + "'").str();
  std::string Reason = Why.str();
  if (!Reason.empty())
    Msg += ": " + Reason;
  return make_error<StringError>(Msg, inconvertibleErrorCode());
}

PassParamParser::Decl *PassParamParser::find(StringRef Name) {
  for (Decl &D : Decls)
    if (D.Name == Name)
      return &D;
  return nullptr;
}

Error PassParamParser::parseOne(StringRef Param) {
  if (Param.empty())
    return error(Param, "empty parameter");
  auto [Key, Value] = Param.split('=');
  bool HasValue = Param.contains('=');

  // A flag, possibly negated.
  StringRef FlagName = Key;
  bool Enable = !FlagName.consume_front("no-");
  Decl *D = find(FlagName);
  if (!D || !D->Flag) {
    // Not a flag: an integer parameter takes the whole key.
    D = find(Key);
    if (!D || D->Flag)
      return error(Param);
  }
  if (D->Seen)
    return error(Param, D->Name + " is given twice");
  D->Seen = true;

  if (D->Flag) {
    if (HasValue)
      return error(Param, D->Name + " takes no value");
    *D->Flag = Enable;
    return Error::success();
  }

  // An integer in [Min, Max]; anything else (missing, negative, not a
  // number, too large) gets the same message.
  uint64_t N = 0;
  bool Bad = !HasValue || Value.getAsInteger(10, N) || N < D->Min ||
             N > D->Max || (D->PowerOf2 && !isPowerOf2_64(N));
  if (Bad)
    return error(Param, D->Name + " must be " +
                            (D->PowerOf2 ? "a power of two" : "an integer") +
                            " from " + utostr(D->Min) + " to " +
                            utostr(D->Max));
  if (D->Int)
    *D->Int = unsigned(N);
  else
    *D->OptInt = unsigned(N);
  return Error::success();
}

Error PassParamParser::parse(StringRef Params) {
  // An absent list is fine (`accel-prefetch`); `<>` is caught by the plugin.
  if (Params.empty())
    return Error::success();
  SmallVector<StringRef, 8> Parts;
  Params.split(Parts, ';', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  for (StringRef Param : Parts)
    if (Error E = parseOne(Param))
      return E;
  return Error::success();
}

Error llvm::accel::emptyParamListError(StringRef PassName) {
  return PassParamParser(PassName).error("", "empty parameter");
}
