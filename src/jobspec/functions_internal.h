// Shared by the function files (functions_*.cc): argument checks in HCL's words and
// the table each file adds its functions to.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "jobspec/eval.h"

namespace drover::jobspec::internal {

using Args = std::vector<Json>;
using Fn = std::function<absl::StatusOr<Json>(Evaluator&, const Args&)>;
using FunctionTable = std::unordered_map<std::string, Fn>;

// An argument error without position (the caller adds it).
absl::Status Bad(absl::string_view message);
// Checks the number of arguments.
absl::Status Arity(const Args& args, size_t min, size_t max);
// Argument `index` (0-based) converted as HCL does, or an error naming it.
absl::StatusOr<std::string> Str(const Json& v, size_t index);
absl::StatusOr<Json> Num(const Json& v, size_t index);
absl::StatusOr<int64_t> Int(const Json& v, size_t index);
absl::StatusOr<const Json*> List(const Json& v, size_t index);
absl::StatusOr<const Json*> Map(const Json& v, size_t index);
// The characters (code point sequences) of a UTF-8 string.
std::vector<std::string> Chars(const std::string& s);
// Refuses a string result of `bytes` before it is built (kMaxStringBytes).
absl::Status CheckResultSize(uint64_t bytes);
// A one-string-argument function from a string transformation.
Fn StringFn(std::function<std::string(const std::string&)> f);

void AddStringFunctions(FunctionTable& table);
void AddCollectionFunctions(FunctionTable& table);
void AddNumberFunctions(FunctionTable& table);  // numbers, encodings, ids, time
void AddFileFunctions(FunctionTable& table);
void AddRegexFunctions(FunctionTable& table);
// replace() with a /pattern/: RE2 syntax, Go's $1 / ${name} expansion in `to`.
absl::StatusOr<std::string> RegexReplace(const std::string& s, const std::string& pattern,
                                         const std::string& to);

}  // namespace drover::jobspec::internal

// `lhs = value of expr` or return its error (lhs is a declaration, like `auto x`).
#define JOBSPEC_ASSIGN_OR_RETURN(lhs, expr) \
  auto lhs##_or = (expr);                   \
  if (!lhs##_or.ok()) {                     \
    return lhs##_or.status();               \
  }                                         \
  auto lhs = std::move(*lhs##_or)
