// The device plugin interface (reference §5.1): what a plugin tells the agent about the
// devices it manages, and how a task gets access to the instances it was given.
//
// Plugins are synchronous and blocking: the device manager (device_manager.h) calls
// them on two threads of its own, never on the control loop, with a deadline. Calls on
// one plugin may come from both threads at once (a Reserve during a Stats call), so an
// implementation synchronizes its own state. A call that misses its deadline is
// abandoned (the manager stops waiting; its thread stays busy until the call returns;
// no new call is made meanwhile) and the manager then calls Reset() — from the control
// loop, so Reset must return at once even while a call is stuck: kill a child process
// or mark the session for re-initialization, never wait for the stuck call.
//
// Built-in plugins: example (devices described by files, example_plugin.h), nvidia
// (NVML through dlopen, nvidia/), and external executables speaking a line-delimited
// JSON protocol (external/). docs/devices.md describes them for users.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "model/device.h"

namespace drover::devices {

// A host path made visible to the task.
struct Mount {
  std::string task_path;
  std::string host_path;
  bool read_only = false;
  friend bool operator==(const Mount&, const Mount&) = default;
};

// A device node (character or block device) made available to the task.
struct DeviceSpec {
  std::string task_path;    // "/dev/nvidia0"
  std::string host_path;    // "/dev/nvidia0"
  std::string permissions;  // cgroup permissions: some of "rwm"
  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// How to expose reserved instances to a task.
struct ContainerReservation {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::vector<DeviceSpec> devices;
  friend bool operator==(const ContainerReservation&, const ContainerReservation&) = default;
};

class DevicePlugin {
 public:
  virtual ~DevicePlugin() = default;
  DevicePlugin() = default;
  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  // The name it is configured under ("example", "nvidia", an external plugin's label).
  virtual std::string Name() const = 0;

  // The current inventory: device groups with their instances and health. The manager
  // polls it (every fingerprint period) and publishes changes. Every group must have a
  // vendor, type and name, and every instance a non-empty ID unique within the plugin;
  // the manager rejects a result that breaks this as malformed.
  virtual absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() = 0;

  // How to give a task the instances `ids` (all from one group, as the scheduler
  // chose them). Must be idempotent: it is called again on every start of the task.
  // An unknown or empty ID list is an error.
  virtual absl::StatusOr<ContainerReservation> Reserve(const std::vector<std::string>& ids) = 0;

  // One sample of every instance's statistics, grouped by vendor/type/name (groups of
  // one name that differ in attributes share one stats group: IDs are unique anyway).
  // Called once per collection interval, whatever the number of tasks.
  virtual absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() = 0;

  // Called after a call failed or missed its deadline, before the manager retries with
  // backoff: a plugin with a child process kills it here so the next call starts a
  // fresh one; a library-backed plugin re-initializes at its next call. Must not block.
  virtual void Reset() {}
};

using DevicePluginPtr = std::shared_ptr<DevicePlugin>;

}  // namespace drover::devices
