// Devices: node device groups with typed attributes (reference §10.5) and device
// statistics (the DeviceStats of the stats endpoints), in Nomad's field names.
#include <string>

#include "codec/internal/json_util.h"
#include "codec/json.h"

namespace drover::codec {

namespace {

using internal::Reader;

template <typename T>
Json OptionalJson(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

absl::StatusOr<model::Attribute> DecodeAttribute(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Attribute a;
  if (!r.ExpectObject())
    return r.status();
  if (const Json* v = r.Get("Float"); v != nullptr) {
    if (!v->is_number())
      return internal::TypeError(r.Path("Float"), "number", *v);
    a.float_val = v->get<double>();
  }
  int64_t i = 0;
  if (r.Get("Int") != nullptr) {
    r.Read("Int", i);
    a.int_val = i;
  }
  std::string s;
  if (r.Get("String") != nullptr) {
    r.Read("String", s);
    a.string_val = s;
  }
  bool b = false;
  if (r.Get("Bool") != nullptr) {
    r.Read("Bool", b);
    a.bool_val = b;
  }
  r.Read("Unit", a.unit);
  if (!r.ok())
    return r.status();
  const int set = a.float_val.has_value() + a.int_val.has_value() + a.string_val.has_value() +
                  a.bool_val.has_value();
  if (set != 1)
    return absl::InvalidArgumentError(path +
                                      ": exactly one of Float, Int, String, Bool must be set");
  return a;
}

absl::StatusOr<model::DeviceInstance> DecodeInstance(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::DeviceInstance d;
  if (!r.ExpectObject())
    return r.status();
  r.Read("ID", d.id);
  r.Read("Healthy", d.healthy);
  r.Read("HealthDescription", d.health_description);
  if (const Json* loc = r.Get("Locality"); loc != nullptr) {
    Reader l(*loc, r.Path("Locality"));
    model::DeviceLocality locality;
    if (l.ExpectObject())
      l.Read("PciBusID", locality.pci_bus_id);
    r.Fail(l.status());
    d.locality = locality;
  }
  if (!r.ok())
    return r.status();
  return d;
}

Json StatValueJson(const model::StatValue& v) {
  return Json{{"FloatNumeratorVal", OptionalJson(v.float_numerator)},
              {"FloatDenominatorVal", OptionalJson(v.float_denominator)},
              {"IntNumeratorVal", OptionalJson(v.int_numerator)},
              {"IntDenominatorVal", OptionalJson(v.int_denominator)},
              {"StringVal", OptionalJson(v.string_val)},
              {"BoolVal", OptionalJson(v.bool_val)},
              {"Unit", v.unit},
              {"Desc", v.desc}};
}

Json StatObjectJson(const model::StatObject& o) {
  Json nested = nullptr;
  if (!o.nested.empty()) {
    nested = Json::object();
    for (const auto& [k, v] : o.nested)
      nested[k] = StatObjectJson(v);
  }
  Json attrs = nullptr;
  if (!o.attributes.empty()) {
    attrs = Json::object();
    for (const auto& [k, v] : o.attributes)
      attrs[k] = StatValueJson(v);
  }
  return Json{{"Nested", nested}, {"Attributes", attrs}};
}

Json DeviceStatsJson(const model::DeviceStats& s) {
  return Json{{"Summary", StatValueJson(s.summary)},
              {"Stats", StatObjectJson(s.stats)},
              {"Timestamp", FormatTime(model::Time(model::Duration(s.timestamp)))}};
}

Json GroupNameJson(const std::string& vendor, const std::string& type, const std::string& name) {
  return Json{{"Vendor", vendor}, {"Type", type}, {"Name", name}};
}

}  // namespace

Json ToJson(const model::Attribute& a) {
  return Json{{"Float", OptionalJson(a.float_val)},
              {"Int", OptionalJson(a.int_val)},
              {"String", OptionalJson(a.string_val)},
              {"Bool", OptionalJson(a.bool_val)},
              {"Unit", a.unit}};
}

Json ToJson(const model::NodeDeviceResource& d) {
  Json instances = Json::array();
  for (const model::DeviceInstance& i : d.instances) {
    instances.push_back(Json{
        {"ID", i.id},
        {"Healthy", i.healthy},
        {"HealthDescription", i.health_description},
        {"Locality", i.locality ? Json{{"PciBusID", i.locality->pci_bus_id}} : Json(nullptr)}});
  }
  Json attrs = Json::object();
  for (const auto& [k, a] : d.attributes)
    attrs[k] = ToJson(a);
  return Json{{"Vendor", d.vendor},
              {"Type", d.type},
              {"Name", d.name},
              {"Instances", instances},
              {"Attributes", attrs}};
}

absl::StatusOr<model::NodeDeviceResource> NodeDeviceFromJson(const Json& j,
                                                             const std::string& path) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::NodeDeviceResource> {
    Reader r(j, path);
    model::NodeDeviceResource d;
    if (!r.ExpectObject())
      return r.status();
    r.Read("Vendor", d.vendor);
    r.Read("Type", d.type);
    r.Read("Name", d.name);
    r.ReadList("Instances", d.instances, DecodeInstance);
    r.ReadMap("Attributes", d.attributes, DecodeAttribute);
    if (!r.ok())
      return r.status();
    return d;
  });
}

Json ToJson(const model::DeviceGroupStats& g) {
  Json instances = Json::object();
  for (const auto& [id, s] : g.instance_stats)
    instances[id] = DeviceStatsJson(s);
  Json j = GroupNameJson(g.vendor, g.type, g.name);
  j["InstanceStats"] = std::move(instances);
  return j;
}

std::string DeviceStatsMemberJson(const std::string& id, const model::DeviceStats& s) {
  std::string text = Dump(Json{{id, DeviceStatsJson(s)}});  // {"<id>":{...}}
  return text.substr(1, text.size() - 2);
}

// Object keys dump in ascending order: InstanceStats comes first, then these.
std::string DeviceGroupCloseJson(const std::string& vendor, const std::string& type,
                                 const std::string& name) {
  std::string text = Dump(GroupNameJson(vendor, type, name));  // {"Name":...}
  text[0] = ',';
  return "}" + text;
}

Json DeviceGroupStatsJson(const std::vector<model::DeviceGroupStats>& groups) {
  Json out = Json::array();
  for (const model::DeviceGroupStats& g : groups)
    out.push_back(ToJson(g));
  return out;
}

}  // namespace drover::codec
