#include "devices/external/protocol_json.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "common/status_macros.h"
#include "devices/external/protocol_json_internal.h"

namespace drover::devices::external {

void JsonDeleter::operator()(const Json* json) const {
  delete json;  // NOLINT(cppcoreguidelines-owning-memory): the deleter of JsonPtr.
}

namespace internal {

absl::Status PathError(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::Status TypeError(absl::string_view path, absl::string_view expected, const json& got) {
  return PathError(path, absl::StrCat("expected ", expected, ", got ", got.type_name()));
}

std::string Field(absl::string_view path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}
std::string Index(absl::string_view path, size_t i) {
  return absl::StrCat(path, "[", i, "]");
}
std::string Key(absl::string_view path, absl::string_view key) {
  return absl::StrCat(path, "[\"", key, "\"]");
}

const json* Member(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null())
    return nullptr;
  return &*it;
}

absl::Status ExpectObject(const json& value, absl::string_view path) {
  return value.is_object() ? absl::OkStatus() : TypeError(path, "an object", value);
}

absl::StatusOr<std::string> RequiredString(const json& obj, absl::string_view path,
                                           const char* name) {
  const std::string p = Field(path, name);
  const json* v = Member(obj, name);
  if (v == nullptr)
    return PathError(p, "missing");
  if (!v->is_string())
    return TypeError(p, "a string", *v);
  const auto& s = v->get_ref<const std::string&>();
  if (s.empty())
    return PathError(p, "must not be empty");
  return s;
}

absl::StatusOr<std::string> OptionalString(const json& obj, absl::string_view path,
                                           const char* name) {
  const json* v = Member(obj, name);
  if (v == nullptr)
    return std::string();
  if (!v->is_string())
    return TypeError(Field(path, name), "a string", *v);
  return v->get<std::string>();
}

absl::StatusOr<bool> OptionalBool(const json& obj, absl::string_view path, const char* name,
                                  bool def) {
  const json* v = Member(obj, name);
  if (v == nullptr)
    return def;
  if (!v->is_boolean())
    return TypeError(Field(path, name), "a bool", *v);
  return v->get<bool>();
}

std::optional<int64_t> AsInt64(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer())
    return v.get<int64_t>();
  return std::nullopt;
}

absl::StatusOr<model::Attribute> NumberAttribute(const json& v, std::string unit,
                                                 const std::string& path) {
  if (v.is_number_integer()) {
    auto i = AsInt64(v);
    if (!i)
      return PathError(path, "integer out of range");
    return model::Attribute::Int(*i, std::move(unit));
  }
  const double d = v.get<double>();
  if (!std::isfinite(d))
    return PathError(path, "not a finite number");
  return model::Attribute::Float(d, std::move(unit));
}

}  // namespace internal

namespace {

using internal::AsInt64;
using internal::ExpectObject;
using internal::json;
using internal::Member;
using internal::OptionalString;
using internal::PathError;
using internal::TypeError;

JsonPtr Wrap(json value) {
  return JsonPtr(new Json{std::move(value)});  // NOLINT(cppcoreguidelines-owning-memory)
}

// Plugins may send any bytes; dumping must not throw on invalid UTF-8 in what we echo.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// InvalidArgument when arrays and objects in `text` nest deeper than kMaxJsonNesting:
// counts brackets outside strings, so it bounds what parsing `text` could build.
absl::Status CheckNesting(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, which may be a quote
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting)
        return absl::InvalidArgumentError(absl::StrCat("nesting deeper than ", kMaxJsonNesting));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return absl::OkStatus();
}

// Parses `text` after CheckNesting. Errors: see ParseJson.
absl::StatusOr<json> Parse(std::string_view text) {
  DROVER_RETURN_IF_ERROR(CheckNesting(text));
  // nlohmann reports the position and cause only through its exception; catch it here,
  // at the third-party boundary (cpp-style §5).
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

// `value` for an error message: scalars as JSON (long strings cut), else the type.
std::string Brief(const json& value) {
  if (value.is_structured())
    return std::string(value.type_name());
  std::string text = Dump(value);
  constexpr size_t kMax = 40;
  if (text.size() > kMax)
    text = absl::StrCat(text.substr(0, kMax), "...");
  return text;
}

absl::StatusCode CodeFromName(std::string_view name) {
  static const std::pair<std::string_view, absl::StatusCode> kCodes[] = {
      {"CANCELLED", absl::StatusCode::kCancelled},
      {"INVALID_ARGUMENT", absl::StatusCode::kInvalidArgument},
      {"DEADLINE_EXCEEDED", absl::StatusCode::kDeadlineExceeded},
      {"NOT_FOUND", absl::StatusCode::kNotFound},
      {"ALREADY_EXISTS", absl::StatusCode::kAlreadyExists},
      {"PERMISSION_DENIED", absl::StatusCode::kPermissionDenied},
      {"RESOURCE_EXHAUSTED", absl::StatusCode::kResourceExhausted},
      {"FAILED_PRECONDITION", absl::StatusCode::kFailedPrecondition},
      {"ABORTED", absl::StatusCode::kAborted},
      {"OUT_OF_RANGE", absl::StatusCode::kOutOfRange},
      {"UNIMPLEMENTED", absl::StatusCode::kUnimplemented},
      {"INTERNAL", absl::StatusCode::kInternal},
      {"UNAVAILABLE", absl::StatusCode::kUnavailable},
      {"DATA_LOSS", absl::StatusCode::kDataLoss},
  };
  for (const auto& [n, code] : kCodes) {
    if (n == name)
      return code;
  }
  return absl::StatusCode::kUnknown;
}

}  // namespace

absl::StatusOr<JsonPtr> ParseJson(std::string_view text) {
  DROVER_ASSIGN_OR_RETURN(json value, Parse(text));
  return Wrap(std::move(value));
}

absl::StatusOr<std::string> EncodeConfigureRequest(int64_t id, std::string_view config_json) {
  DROVER_ASSIGN_OR_RETURN(json config, Parse(config_json));
  if (!config.is_object())
    return TypeError("config", "an object", config);
  return Dump(
      {{"id", id},
       {"method", "configure"},
       {"params", {{"config", std::move(config)}, {"protocol_version", kProtocolVersion}}}});
}

std::string EncodeReserveRequest(int64_t id, const std::vector<std::string>& ids) {
  return Dump({{"id", id}, {"method", "reserve"}, {"params", {{"ids", ids}}}});
}

std::string EncodeRequest(int64_t id, std::string_view method) {
  return Dump({{"id", id}, {"method", method}, {"params", json::object()}});
}

absl::StatusOr<Response> ParseResponse(std::string_view line) {
  DROVER_ASSIGN_OR_RETURN(json v, Parse(line));
  if (!v.is_object())
    return TypeError("response", "an object", v);
  auto id_it = v.find("id");
  if (id_it == v.end())
    return PathError("id", "missing");
  auto id = AsInt64(*id_it);
  if (!id)
    return TypeError("id", "an integer", *id_it);
  auto result_it = v.find("result");
  auto error_it = v.find("error");
  const bool has_result = result_it != v.end();
  const bool has_error = error_it != v.end() && !error_it->is_null();
  if (has_result == has_error)
    return absl::InvalidArgumentError("a response needs exactly one of \"result\" and \"error\"");
  Response out;
  out.id = *id;
  if (has_error) {
    if (!error_it->is_string())
      return TypeError("error", "a string", *error_it);
    DROVER_ASSIGN_OR_RETURN(std::string code, OptionalString(v, "", "code"));
    out.error = absl::Status(CodeFromName(code), error_it->get<std::string>());
  } else {
    out.result = Wrap(std::move(*result_it));  // a move: copies recurse per level
  }
  return out;
}

absl::Status DecodeConfigureResult(const Json& result) {
  DROVER_RETURN_IF_ERROR(ExpectObject(result.value, "result"));
  if (const json* version = Member(result.value, "protocol_version")) {
    if (AsInt64(*version) != kProtocolVersion) {
      return PathError("protocol_version",
                       absl::StrCat("unsupported version ", Brief(*version), " (this agent speaks ",
                                    kProtocolVersion, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace drover::devices::external
