#include "devices/external/protocol_json.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "common/status_macros.h"

namespace drover::devices::external {

struct Json {
  nlohmann::json value;
};

void JsonDeleter::operator()(const Json* json) const {
  delete json;  // NOLINT(cppcoreguidelines-owning-memory): the deleter of JsonPtr.
}

namespace {

using nlohmann::json;

// Deeper StatObject nesting is refused rather than recursed into.
constexpr int kMaxStatNesting = 32;

JsonPtr Wrap(json value) {
  return JsonPtr(new Json{std::move(value)});  // NOLINT(cppcoreguidelines-owning-memory)
}

// Plugins may send any bytes; dumping must not throw on invalid UTF-8 in what we echo.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

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

// The member `name` of object `obj`, or nullptr when absent or null.
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

// An integer that fits int64_t (unsigned JSON numbers above INT64_MAX do not).
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

// A JSON number as an attribute with `unit`: integers stay Int, others become Float.
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
  // nlohmann reports the position and cause only through its exception; catch it here,
  // at the third-party boundary (cpp-style §5).
  try {
    return Wrap(json::parse(text.begin(), text.end()));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

absl::StatusOr<std::string> EncodeConfigureRequest(int64_t id, std::string_view config_json) {
  DROVER_ASSIGN_OR_RETURN(JsonPtr config, ParseJson(config_json));
  if (!config->value.is_object())
    return TypeError("config", "an object", config->value);
  return Dump({{"id", id},
               {"method", "configure"},
               {"params", {{"config", config->value}, {"protocol_version", kProtocolVersion}}}});
}

std::string EncodeReserveRequest(int64_t id, const std::vector<std::string>& ids) {
  return Dump({{"id", id}, {"method", "reserve"}, {"params", {{"ids", ids}}}});
}

std::string EncodeRequest(int64_t id, std::string_view method) {
  return Dump({{"id", id}, {"method", method}, {"params", json::object()}});
}

absl::StatusOr<Response> ParseResponse(std::string_view line) {
  DROVER_ASSIGN_OR_RETURN(JsonPtr parsed, ParseJson(line));
  const json& v = parsed->value;
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
    out.result = Wrap(*result_it);
  }
  return out;
}

absl::Status DecodeConfigureResult(const Json& result) {
  DROVER_RETURN_IF_ERROR(ExpectObject(result.value, "result"));
  if (const json* version = Member(result.value, "protocol_version")) {
    if (AsInt64(*version) != kProtocolVersion) {
      return PathError("protocol_version",
                       absl::StrCat("unsupported version ", Dump(*version), " (this agent speaks ",
                                    kProtocolVersion, ")"));
    }
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<model::Attribute> DecodeAttributeJson(const json& v, const std::string& path) {
  if (v.is_string())
    return model::ParseAttribute(v.get_ref<const std::string&>());
  if (v.is_boolean())
    return model::Attribute::Bool(v.get<bool>());
  if (v.is_number())
    return NumberAttribute(v, "", path);
  if (!v.is_object())
    return TypeError(path, "a string, number, bool or {\"value\", \"unit\"} object", v);
  const json* inner = Member(v, "value");
  if (inner == nullptr)
    return PathError(Field(path, "value"), "missing");
  DROVER_ASSIGN_OR_RETURN(std::string unit, OptionalString(v, path, "unit"));
  if (inner->is_number()) {
    if (!unit.empty() && !model::IsKnownUnit(unit))
      return PathError(Field(path, "unit"), absl::StrCat("unknown unit '", unit, "'"));
    return NumberAttribute(*inner, std::move(unit), Field(path, "value"));
  }
  if (!unit.empty())
    return PathError(Field(path, "unit"), "a unit needs a numeric value");
  // The explicit form means what it says: a string is kept verbatim, not parsed.
  if (inner->is_string())
    return model::Attribute::String(inner->get<std::string>());
  if (inner->is_boolean())
    return model::Attribute::Bool(inner->get<bool>());
  return TypeError(Field(path, "value"), "a string, number or bool", *inner);
}

absl::StatusOr<model::StatValue> DecodeStatValueJson(const json& v, const std::string& path) {
  DROVER_RETURN_IF_ERROR(ExpectObject(v, path));
  model::StatValue out;
  DROVER_ASSIGN_OR_RETURN(out.unit, OptionalString(v, path, "unit"));
  DROVER_ASSIGN_OR_RETURN(out.desc, OptionalString(v, path, "desc"));
  const json* val = Member(v, "value");
  if (val == nullptr)
    return PathError(Field(path, "value"), "missing");
  const json* den = Member(v, "denominator");
  if (den != nullptr && !den->is_number())
    return TypeError(Field(path, "denominator"), "a number", *den);
  if (val->is_string() || val->is_boolean()) {
    if (den != nullptr)
      return PathError(Field(path, "denominator"), "only numbers have a denominator");
    if (val->is_string())
      out.string_val = val->get<std::string>();
    else
      out.bool_val = val->get<bool>();
    return out;
  }
  if (!val->is_number())
    return TypeError(Field(path, "value"), "a number, string or bool", *val);
  // Integers stay integers only when both parts are: 3/4.5 is a float fraction.
  std::optional<int64_t> num = AsInt64(*val);
  std::optional<int64_t> den_int = den != nullptr ? AsInt64(*den) : std::nullopt;
  if (num && (den == nullptr || den_int)) {
    out.int_numerator = num;
    out.int_denominator = den_int;
    return out;
  }
  out.float_numerator = val->get<double>();
  if (den != nullptr)
    out.float_denominator = den->get<double>();
  if (!std::isfinite(*out.float_numerator) ||
      (out.float_denominator && !std::isfinite(*out.float_denominator))) {
    return PathError(path, "not a finite number");
  }
  return out;
}

// {"attributes": {name: stat}, "nested": {name: object}}, both optional.
absl::StatusOr<model::StatObject> DecodeStatObject(const json& v, const std::string& path,
                                                   int depth) {
  if (depth > kMaxStatNesting)
    return PathError(path, absl::StrCat("nested deeper than ", kMaxStatNesting, " levels"));
  DROVER_RETURN_IF_ERROR(ExpectObject(v, path));
  model::StatObject out;
  if (const json* attrs = Member(v, "attributes")) {
    const std::string p = Field(path, "attributes");
    DROVER_RETURN_IF_ERROR(ExpectObject(*attrs, p));
    for (const auto& [name, stat] : attrs->items()) {
      DROVER_ASSIGN_OR_RETURN(out.attributes[name], DecodeStatValueJson(stat, Key(p, name)));
    }
  }
  if (const json* nested = Member(v, "nested")) {
    const std::string p = Field(path, "nested");
    DROVER_RETURN_IF_ERROR(ExpectObject(*nested, p));
    for (const auto& [name, obj] : nested->items()) {
      DROVER_ASSIGN_OR_RETURN(out.nested[name], DecodeStatObject(obj, Key(p, name), depth + 1));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<model::Attribute> DecodeAttribute(const Json& value, const std::string& path) {
  return DecodeAttributeJson(value.value, path);
}

absl::StatusOr<model::StatValue> DecodeStatValue(const Json& value, const std::string& path) {
  return DecodeStatValueJson(value.value, path);
}

absl::StatusOr<std::vector<model::NodeDeviceResource>> DecodeFingerprintResult(const Json& result) {
  const json& v = result.value;
  DROVER_RETURN_IF_ERROR(ExpectObject(v, "result"));
  const json* devices = Member(v, "devices");
  if (devices == nullptr)
    return PathError("devices", "missing");
  if (!devices->is_array())
    return TypeError("devices", "an array", *devices);
  std::vector<model::NodeDeviceResource> out;
  std::set<std::string> seen_ids;
  for (size_t g = 0; g < devices->size(); ++g) {
    const json& group = (*devices)[g];
    const std::string gp = Index("devices", g);
    DROVER_RETURN_IF_ERROR(ExpectObject(group, gp));
    model::NodeDeviceResource res;
    DROVER_ASSIGN_OR_RETURN(res.vendor, RequiredString(group, gp, "vendor"));
    DROVER_ASSIGN_OR_RETURN(res.type, RequiredString(group, gp, "type"));
    DROVER_ASSIGN_OR_RETURN(res.name, RequiredString(group, gp, "name"));
    if (const json* attrs = Member(group, "attributes")) {
      const std::string ap = Field(gp, "attributes");
      DROVER_RETURN_IF_ERROR(ExpectObject(*attrs, ap));
      for (const auto& [name, attr] : attrs->items()) {
        DROVER_ASSIGN_OR_RETURN(res.attributes[name], DecodeAttributeJson(attr, Key(ap, name)));
      }
    }
    const std::string ip = Field(gp, "instances");
    const json* instances = Member(group, "instances");
    if (instances == nullptr)
      return PathError(ip, "missing");
    if (!instances->is_array())
      return TypeError(ip, "an array", *instances);
    for (size_t i = 0; i < instances->size(); ++i) {
      const json& inst = (*instances)[i];
      const std::string p = Index(ip, i);
      DROVER_RETURN_IF_ERROR(ExpectObject(inst, p));
      model::DeviceInstance d;
      DROVER_ASSIGN_OR_RETURN(d.id, RequiredString(inst, p, "id"));
      if (!seen_ids.insert(d.id).second)
        return PathError(Field(p, "id"), absl::StrCat("duplicate instance id '", d.id, "'"));
      const json* healthy = Member(inst, "healthy");
      if (healthy == nullptr)
        return PathError(Field(p, "healthy"), "missing");
      if (!healthy->is_boolean())
        return TypeError(Field(p, "healthy"), "a bool", *healthy);
      d.healthy = healthy->get<bool>();
      DROVER_ASSIGN_OR_RETURN(d.health_description, OptionalString(inst, p, "health_description"));
      DROVER_ASSIGN_OR_RETURN(std::string pci, OptionalString(inst, p, "pci_bus_id"));
      if (!pci.empty())
        d.locality = model::DeviceLocality{std::move(pci)};
      res.instances.push_back(std::move(d));
    }
    out.push_back(std::move(res));
  }
  return out;
}

absl::StatusOr<ContainerReservation> DecodeReserveResult(const Json& result) {
  const json& v = result.value;
  DROVER_RETURN_IF_ERROR(ExpectObject(v, "result"));
  ContainerReservation out;
  if (const json* envs = Member(v, "envs")) {
    DROVER_RETURN_IF_ERROR(ExpectObject(*envs, "envs"));
    for (const auto& [name, val] : envs->items()) {
      if (!val.is_string())
        return TypeError(Key("envs", name), "a string", val);
      out.envs[name] = val.get<std::string>();
    }
  }
  if (const json* mounts = Member(v, "mounts")) {
    if (!mounts->is_array())
      return TypeError("mounts", "an array", *mounts);
    for (size_t i = 0; i < mounts->size(); ++i) {
      const json& m = (*mounts)[i];
      const std::string p = Index("mounts", i);
      DROVER_RETURN_IF_ERROR(ExpectObject(m, p));
      Mount mount;
      DROVER_ASSIGN_OR_RETURN(mount.task_path, RequiredString(m, p, "task_path"));
      DROVER_ASSIGN_OR_RETURN(mount.host_path, RequiredString(m, p, "host_path"));
      DROVER_ASSIGN_OR_RETURN(mount.read_only, OptionalBool(m, p, "read_only", false));
      out.mounts.push_back(std::move(mount));
    }
  }
  if (const json* devices = Member(v, "devices")) {
    if (!devices->is_array())
      return TypeError("devices", "an array", *devices);
    for (size_t i = 0; i < devices->size(); ++i) {
      const json& d = (*devices)[i];
      const std::string p = Index("devices", i);
      DROVER_RETURN_IF_ERROR(ExpectObject(d, p));
      DeviceSpec spec;
      DROVER_ASSIGN_OR_RETURN(spec.task_path, RequiredString(d, p, "task_path"));
      DROVER_ASSIGN_OR_RETURN(spec.host_path, RequiredString(d, p, "host_path"));
      DROVER_ASSIGN_OR_RETURN(spec.permissions, OptionalString(d, p, "permissions"));
      if (spec.permissions.empty())
        spec.permissions = "rwm";
      if (spec.permissions.find_first_not_of("rwm") != std::string::npos) {
        return PathError(Field(p, "permissions"),
                         absl::StrCat("'", spec.permissions, "' is not made of r, w and m"));
      }
      out.devices.push_back(std::move(spec));
    }
  }
  return out;
}

absl::StatusOr<std::vector<model::DeviceGroupStats>> DecodeStatsResult(const Json& result,
                                                                       int64_t now_unix_nanos) {
  const json& v = result.value;
  DROVER_RETURN_IF_ERROR(ExpectObject(v, "result"));
  const json* groups = Member(v, "groups");
  if (groups == nullptr)
    return PathError("groups", "missing");
  if (!groups->is_array())
    return TypeError("groups", "an array", *groups);
  std::vector<model::DeviceGroupStats> out;
  for (size_t g = 0; g < groups->size(); ++g) {
    const json& group = (*groups)[g];
    const std::string gp = Index("groups", g);
    DROVER_RETURN_IF_ERROR(ExpectObject(group, gp));
    model::DeviceGroupStats stats;
    DROVER_ASSIGN_OR_RETURN(stats.vendor, RequiredString(group, gp, "vendor"));
    DROVER_ASSIGN_OR_RETURN(stats.type, RequiredString(group, gp, "type"));
    DROVER_ASSIGN_OR_RETURN(stats.name, RequiredString(group, gp, "name"));
    const std::string ip = Field(gp, "instances");
    const json* instances = Member(group, "instances");
    if (instances == nullptr)
      return PathError(ip, "missing");
    DROVER_RETURN_IF_ERROR(ExpectObject(*instances, ip));
    for (const auto& [id, sample] : instances->items()) {
      const std::string p = Key(ip, id);
      if (id.empty())
        return PathError(p, "empty instance id");
      DROVER_RETURN_IF_ERROR(ExpectObject(sample, p));
      model::DeviceStats ds;
      const json* summary = Member(sample, "summary");
      if (summary == nullptr)
        return PathError(Field(p, "summary"), "missing");
      DROVER_ASSIGN_OR_RETURN(ds.summary, DecodeStatValueJson(*summary, Field(p, "summary")));
      if (const json* detail = Member(sample, "stats")) {
        DROVER_ASSIGN_OR_RETURN(ds.stats, DecodeStatObject(*detail, Field(p, "stats"), 0));
      }
      ds.timestamp = now_unix_nanos;
      if (const json* ts = Member(sample, "timestamp")) {
        auto ns = AsInt64(*ts);
        if (!ns || *ns <= 0)
          return PathError(Field(p, "timestamp"), "expected positive integer Unix nanoseconds");
        ds.timestamp = *ns;
      }
      stats.instance_stats[id] = std::move(ds);
    }
    out.push_back(std::move(stats));
  }
  return out;
}

}  // namespace drover::devices::external
