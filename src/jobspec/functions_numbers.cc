// Numeric, encoding, id and time functions: min, max, pow, jsonencode, base64*, uuidv4, timestamp,
// ...
#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

#include "common/go_duration.h"
#include "common/ids.h"
#include "jobspec/functions_internal.h"
#include "jobspec/parser.h"

namespace drover::jobspec::internal {

namespace {

// An integral double as an integer when it fits, else as it is (ceil(1e300)).
Json WholeNumber(double d) {
  if (std::isfinite(d) && std::fabs(d) < 9e15) {
    return Json(static_cast<int64_t>(d));
  }
  return Json(d);
}

// ceil and floor: the rounded number, as an integer when it fits.
Fn Rounding(double (*round)(double)) {
  return [round](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
    if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
      return s;
    }
    JOBSPEC_ASSIGN_OR_RETURN(n, Num(a[0], 0));
    return WholeNumber(round(n.get<double>()));
  };
}

}  // namespace

void AddNumberFunctions(FunctionTable& table) {
  table.insert({
      {"urlencode", StringFn([](const std::string& s) {
         std::string out;
         for (unsigned char c : s) {
           if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
             out += static_cast<char>(c);
           } else if (c == ' ') {
             out += '+';  // Go's url.QueryEscape, which HCL's urlencode uses
           } else {
             absl::StrAppend(&out, "%",
                             absl::AsciiStrToUpper(absl::BytesToHexString(
                                 absl::string_view(reinterpret_cast<char*>(&c), 1))));
           }
         }
         return out;
       })},
      {"base64encode", StringFn([](const std::string& s) { return absl::Base64Escape(s); })},
      {"base64decode",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         std::string out;
         if (!absl::Base64Unescape(s, &out)) {
           return Bad("the argument is not valid base64");
         }
         if (!IsValidUtf8(out)) {
           return Bad("the decoded bytes are not valid UTF-8");
         }
         return Json(out);
       }},
      {"min",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (a.empty()) {
           return Bad("at least 1 argument required");
         }
         Json best;
         for (size_t i = 0; i < a.size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(n, Num(a[i], i));
           if (i == 0 || n.get<double>() < best.get<double>()) {
             best = n;
           }
         }
         return best;
       }},
      {"max",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (a.empty()) {
           return Bad("at least 1 argument required");
         }
         Json best;
         for (size_t i = 0; i < a.size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(n, Num(a[i], i));
           if (i == 0 || n.get<double>() > best.get<double>()) {
             best = n;
           }
         }
         return best;
       }},
      {"abs",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(n, Num(a[0], 0));
         if (n.is_number_integer() && n.get<int64_t>() != INT64_MIN) {
           return Json(std::llabs(n.get<int64_t>()));
         }
         return Json(std::fabs(n.get<double>()));
       }},
      {"ceil", Rounding([](double d) { return std::ceil(d); })},
      {"floor", Rounding([](double d) { return std::floor(d); })},
      {"signum",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(n, Num(a[0], 0));
         const double d = n.get<double>();
         return Json(d > 0 ? 1 : d < 0 ? -1 : 0);
       }},
      {"pow",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(x, Num(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(y, Num(a[1], 1));
         const double r = std::pow(x.get<double>(), y.get<double>());
         if (!std::isfinite(r)) {
           return Bad("the result is not a finite number");
         }
         if (r == std::floor(r) && std::fabs(r) < 9e15) {
           return Json(static_cast<int64_t>(r));
         }
         return Json(r);
       }},
      {"parseint",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(base, Int(a[1], 1));
         if (base < 2 || base > 36) {
           return Bad("the base must be between 2 and 36");
         }
         int64_t v = 0;
         const char* begin = s.data() + ((!s.empty() && s[0] == '+') ? 1 : 0);
         auto [p, ec] = std::from_chars(begin, s.data() + s.size(), v, static_cast<int>(base));
         if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
           return Bad(absl::StrCat("cannot parse \"", s, "\" as a base ", base, " integer"));
         }
         return Json(v);
       }},
      {"jsonencode",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         return Json(a[0].dump());
       }},
      {"jsondecode",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         // Values are encoded and destroyed recursively: refuse deep nesting up front.
         if (JsonTextDeeperThan(s, 100)) {
           return Bad("the JSON nests more than 100 levels deep");
         }
         Json out = Json::parse(s, nullptr, /*allow_exceptions=*/false);
         if (out.is_discarded()) {
           return Bad("the argument is not valid JSON");
         }
         return out;
       }},
      {"uuidv4",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 0, 0); !s.ok()) {
           return s;
         }
         return Json(common::NewUuid());
       }},
      {"timestamp",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 0, 0); !s.ok()) {
           return s;
         }
         return Json(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
       }},
      {"timeadd",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(ts, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(d, Str(a[1], 1));
         absl::Time t;
         std::string err;
         if (!absl::ParseTime(absl::RFC3339_full, ts, &t, &err)) {
           return Bad(absl::StrCat("\"", ts, "\" is not an RFC 3339 timestamp"));
         }
         absl::StatusOr<common::Duration> delta = common::ParseGoDuration(d);
         if (!delta.ok()) {
           return Bad(delta.status().message());
         }
         t += absl::FromChrono(*delta);
         return Json(absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone()));
       }},
  });
}

}  // namespace drover::jobspec::internal
