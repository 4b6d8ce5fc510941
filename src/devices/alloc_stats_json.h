// The DeviceStats arrays of GET /v1/client/allocation/:id/stats, written from the
// samples' pre-encoded JSON (stats_snapshot.h): for each task exactly its instances,
// and for the allocation one group per device model holding every task's instances
// (Nomad repeats a group once per task instead).
//
// Holds pointers into the manager's current samples, which the next stats update
// replaces: use it within one synchronous stretch of the control loop (no co_await
// between Task and Alloc).
#pragma once

#include <string>
#include <vector>

#include "devices/device_manager.h"
#include "model/allocation.h"

namespace drover::devices {

class AllocDeviceStatsJson {
 public:
  explicit AllocDeviceStatsJson(const DeviceManager& manager) : manager_(manager) {}

  // The DeviceStats of a task holding `devices`: one group per entry that has any
  // sample, its instances in ID order. One index lookup per allocated instance.
  std::string Task(const std::vector<model::AllocatedDeviceResource>& devices);
  // The allocation's: every instance found by Task so far, grouped by device model in
  // order of first appearance.
  std::string Alloc() const;

 private:
  const DeviceManager& manager_;
  std::vector<const StatsSnapshot::Sample*> found_;
};

}  // namespace drover::devices
