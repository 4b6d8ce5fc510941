// Devices (reference §5): what a node has (device groups of identical instances with
// typed attributes), and the statistics device plugins report per instance. Shared by
// the device plugins and manager (src/devices), the scheduler, the client and the API.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::model {

// A typed value with an optional unit: exactly one of the four values is set (Nomad's
// psstructs.Attribute). Units are those of ParseAttribute; numbers with units of the
// same kind compare after conversion ("4 GiB" == "4096 MiB").
struct Attribute {
  std::optional<double> float_val;
  std::optional<int64_t> int_val;
  std::optional<std::string> string_val;
  std::optional<bool> bool_val;
  std::string unit;

  static Attribute Int(int64_t v, std::string unit = "");
  static Attribute Float(double v, std::string unit = "");
  static Attribute String(std::string v);
  static Attribute Bool(bool v);
  // "16 GiB", "1.5", "true", "Tesla T4".
  std::string ToString() const;
  friend bool operator==(const Attribute&, const Attribute&) = default;
};

// Parses what a user writes in a constraint or a plugin reports: a bool ("true"), an
// integer or float with an optional known unit ("4 GiB", "4GiB", "1.5 GHz", "250 W"),
// else a string. An unknown unit makes the whole text a string.
Attribute ParseAttribute(std::string_view text);

// Whether `unit` is one ParseAttribute knows.
bool IsKnownUnit(std::string_view unit);

// Orders two attributes: <0, 0, >0; nullopt when they cannot be compared (a number and
// a string, units of different kinds such as MiB and W). Numbers compare by value after
// unit conversion; strings lexically; bools only for equality.
std::optional<int> CompareAttributes(const Attribute& a, const Attribute& b);

struct DeviceLocality {
  std::string pci_bus_id;
  friend bool operator==(const DeviceLocality&, const DeviceLocality&) = default;
};

// One device instance (a GPU). `id` is unique within its group and stable.
struct DeviceInstance {
  std::string id;
  bool healthy = false;
  std::string health_description;
  std::optional<DeviceLocality> locality;
  friend bool operator==(const DeviceInstance&, const DeviceInstance&) = default;
};

// A group of identical instances sharing vendor, type, name and attributes (Nomad's
// NodeDeviceResource; a device plugin's DeviceGroup has the same shape).
struct NodeDeviceResource {
  std::string vendor;
  std::string type;  // "gpu", "fpga", ...
  std::string name;  // the model, e.g. "Tesla T4"
  std::vector<DeviceInstance> instances;
  std::map<std::string, Attribute> attributes;
  // "vendor/type/name".
  std::string IdString() const { return vendor + "/" + type + "/" + name; }
  friend bool operator==(const NodeDeviceResource&, const NodeDeviceResource&) = default;
};

// Whether a job's device name ("gpu", "nvidia/gpu", "nvidia/gpu/Tesla T4") names this
// group: by type, vendor/type, or vendor/type/name.
bool DeviceNameMatches(std::string_view requested, const NodeDeviceResource& group);

// A statistic. A denominator makes it a fraction (used/total); exactly one kind of
// value is set.
struct StatValue {
  std::optional<double> float_numerator;
  std::optional<double> float_denominator;
  std::optional<int64_t> int_numerator;
  std::optional<int64_t> int_denominator;
  std::optional<std::string> string_val;
  std::optional<bool> bool_val;
  std::string unit;
  std::string desc;
  friend bool operator==(const StatValue&, const StatValue&) = default;
};

struct StatObject {
  std::map<std::string, StatObject> nested;
  std::map<std::string, StatValue> attributes;
  friend bool operator==(const StatObject&, const StatObject&) = default;
};

struct DeviceStats {
  StatValue summary;
  StatObject stats;
  int64_t timestamp = 0;  // Unix nanoseconds of the sample
  friend bool operator==(const DeviceStats&, const DeviceStats&) = default;
};

// Latest statistics of some instances of one device group.
struct DeviceGroupStats {
  std::string vendor;
  std::string type;
  std::string name;
  std::map<std::string, DeviceStats> instance_stats;  // instance id -> stats
  friend bool operator==(const DeviceGroupStats&, const DeviceGroupStats&) = default;
};

// Merges groups with the same vendor/type/name into one, with the union of their
// instances (the allocation-level view: two tasks using two GPUs of one model show one
// group with both, not the same group twice as Nomad shows it).
std::vector<DeviceGroupStats> MergeDeviceGroupStats(std::vector<DeviceGroupStats> groups);

}  // namespace drover::model
