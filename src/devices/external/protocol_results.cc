// The result decoders of protocol_json.h: fingerprint, reserve and stats.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "common/status_macros.h"
#include "devices/external/protocol_json.h"
#include "devices/external/protocol_json_internal.h"

namespace drover::devices::external {

namespace {

using internal::AsInt64;
using internal::ExpectObject;
using internal::Field;
using internal::Index;
using internal::json;
using internal::Key;
using internal::Member;
using internal::NumberAttribute;
using internal::OptionalBool;
using internal::OptionalString;
using internal::PathError;
using internal::RequiredString;
using internal::TypeError;

// Deeper StatObject nesting is refused rather than recursed into. Within
// kMaxJsonNesting: a response's stats object is 7 levels down, and each level takes 2.
constexpr int kMaxStatNesting = 24;
static_assert(7 + 2 * (kMaxStatNesting + 1) <= kMaxJsonNesting, "deeper stats unreachable");

absl::Status CheckGroupCount(size_t groups, absl::string_view path) {
  if (groups <= kMaxDeviceGroups)
    return absl::OkStatus();
  return PathError(path,
                   absl::StrCat(groups, " groups, more than the limit of ", kMaxDeviceGroups));
}
// `instances`: the count so far, of all groups up to the one at `path`.
absl::Status CheckInstanceCount(size_t instances, absl::string_view path) {
  if (instances <= kMaxDeviceInstances)
    return absl::OkStatus();
  return PathError(path, absl::StrCat("more than the limit of ", kMaxDeviceInstances,
                                      " instances in all groups"));
}

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
  DROVER_RETURN_IF_ERROR(CheckGroupCount(devices->size(), "devices"));
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
    DROVER_RETURN_IF_ERROR(CheckInstanceCount(seen_ids.size() + instances->size(), ip));
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
  DROVER_RETURN_IF_ERROR(CheckGroupCount(groups->size(), "groups"));
  std::vector<model::DeviceGroupStats> out;
  size_t samples = 0;
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
    samples += instances->size();
    DROVER_RETURN_IF_ERROR(CheckInstanceCount(samples, ip));
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
