// The `example` device plugin: devices described by files in a directory, one file per
// instance (the file name is the instance ID), so tests and demos can simulate GPUs,
// FPGAs or anything else without hardware. Editing, adding or removing a file shows up
// at the next fingerprint and stats call. docs/devices.md gives the file format:
//
//   vendor = nvidia
//   type = gpu
//   name = Fake T4
//   attr.memory = 16 GiB          # typed attribute (model::ParseAttribute)
//   healthy = true                # optional, default true
//   health_description = ...      # optional
//   pci_bus_id = 0000:3b:00.0     # optional
//   stat.utilization = 35 %       # a statistic: number [unit], "n/d unit", or text
//   stat.memory_used = 1200/16384 MiB
//   summary = memory_used         # which stat is the summary (default: the first)
//
// Instances with the same vendor, type, name and attributes form one group. A file
// that cannot be read or parsed fails the whole fingerprint with the file's path and
// line (the manager then marks the plugin's devices unhealthy until it is fixed).
//
// Reserve sets `env_var` (default EXAMPLE_VISIBLE_DEVICES) to the comma-joined IDs and
// mounts each instance's file read-only at /dev-files/<id> in the task.
#pragma once

#include <string>

#include "devices/device_plugin.h"

namespace drover::devices {

struct ExamplePluginConfig {
  std::string dir;
  std::string env_var = "EXAMPLE_VISIBLE_DEVICES";
};

class ExamplePlugin final : public DevicePlugin {
 public:
  explicit ExamplePlugin(ExamplePluginConfig config) : config_(std::move(config)) {}

  std::string Name() const override { return "example"; }
  absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() override;
  absl::StatusOr<ContainerReservation> Reserve(const std::vector<std::string>& ids) override;
  absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() override;

 private:
  const ExamplePluginConfig config_;  // immutable: calls need no locking
};

// Parses a statistic as the example plugin's files write it: "35 %", "1200/16384 MiB",
// "0.5", "true", or any text.
model::StatValue ParseStatValue(std::string_view text);

}  // namespace drover::devices
