// The function table and the argument helpers; the functions themselves are in
// functions_strings.cc, functions_collections.cc, functions_numbers.cc and
// functions_files.cc.
#include "jobspec/functions.h"

#include <cmath>

#include "absl/strings/str_cat.h"

#include "jobspec/functions_internal.h"

namespace drover::jobspec {

namespace internal {

absl::Status Bad(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

absl::Status Arity(const Args& args, size_t min, size_t max) {
  if (args.size() < min || args.size() > max) {
    if (min == max) {
      return Bad(
          absl::StrCat(min, " argument", min == 1 ? "" : "s", " required, got ", args.size()));
    }
    return Bad(
        absl::StrCat("between ", min, " and ", max, " arguments required, got ", args.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Str(const Json& v, size_t index) {
  std::string s;
  if (!ToHclString(v, s)) {
    return Bad(absl::StrCat("argument ", index + 1, ": string required, got ", TypeName(v)));
  }
  return s;
}

absl::StatusOr<Json> Num(const Json& v, size_t index) {
  Json n;
  if (!ToHclNumber(v, n)) {
    return Bad(absl::StrCat("argument ", index + 1, ": number required, got ", TypeName(v)));
  }
  return n;
}

absl::StatusOr<int64_t> Int(const Json& v, size_t index) {
  absl::StatusOr<Json> n = Num(v, index);
  if (!n.ok()) {
    return n.status();
  }
  if (n->is_number_integer()) {
    return n->get<int64_t>();
  }
  const double d = n->get<double>();
  if (d != std::floor(d) || std::fabs(d) > 9e15) {
    return Bad(absl::StrCat("argument ", index + 1, ": a whole number is required"));
  }
  return static_cast<int64_t>(d);
}

absl::StatusOr<const Json*> List(const Json& v, size_t index) {
  if (!v.is_array()) {
    return Bad(absl::StrCat("argument ", index + 1, ": list required, got ", TypeName(v)));
  }
  return &v;
}

absl::StatusOr<const Json*> Map(const Json& v, size_t index) {
  if (!v.is_object()) {
    return Bad(absl::StrCat("argument ", index + 1, ": map required, got ", TypeName(v)));
  }
  return &v;
}

// Characters of a UTF-8 string (code point sequences).
std::vector<std::string> Chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0xF0) {
      n = 4;
    } else if (b >= 0xE0) {
      n = 3;
    } else if (b >= 0xC0) {
      n = 2;
    }
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

Fn StringFn(std::function<std::string(const std::string&)> f) {
  return [f](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
    if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
      return s;
    }
    JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
    return Json(f(s));
  };
}

absl::Status CheckResultSize(uint64_t bytes) {
  if (bytes > kMaxStringBytes) {
    return Bad(
        absl::StrCat("the result would be ", bytes, " bytes; the limit is ", kMaxStringBytes));
  }
  return absl::OkStatus();
}

}  // namespace internal

absl::StatusOr<Json> CallFunction(Evaluator& evaluator, const std::string& name,
                                  const std::vector<Json>& args) {
  static const internal::FunctionTable* table = [] {
    auto* t = new internal::FunctionTable();
    internal::AddStringFunctions(*t);
    internal::AddCollectionFunctions(*t);
    internal::AddNumberFunctions(*t);
    internal::AddFileFunctions(*t);
    internal::AddRegexFunctions(*t);
    return t;
  }();
  auto it = table->find(name);
  if (it == table->end()) {
    return absl::NotFoundError(name);
  }
  return it->second(evaluator, args);
}

}  // namespace drover::jobspec
