// One plugin's stats answer with every instance's sample encoded to JSON once, when the
// answer arrives (on the device manager's thread, off the control loop). Responses that
// show a sample splice its text instead of encoding it again: a stats request costs a
// lookup and a copy of text per allocated instance, whatever the host's device count.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/device.h"

namespace drover::devices {

class StatsSnapshot {
 public:
  struct Sample {
    const std::string* id;
    const model::DeviceStats* stats;
    std::string member_json;         // `"<id>":{...}` (codec::DeviceStatsMemberJson)
    const std::string* group_close;  // its group's codec::DeviceGroupCloseJson
  };

  explicit StatsSnapshot(std::vector<model::DeviceGroupStats> groups);
  // Samples point into the snapshot itself.
  StatsSnapshot(const StatsSnapshot&) = delete;
  StatsSnapshot& operator=(const StatsSnapshot&) = delete;

  const std::vector<model::DeviceGroupStats>& groups() const { return groups_; }
  // Group by group, each group's in ascending ID order.
  const std::vector<Sample>& samples() const { return samples_; }
  bool empty() const { return samples_.empty(); }
  // Appends every group as codec::ToJson would encode it, comma-separated (elements of
  // a JSON array, without the brackets).
  void AppendGroups(std::string& out) const;

 private:
  std::vector<model::DeviceGroupStats> groups_;
  std::vector<std::string> closes_;  // per group
  std::vector<Sample> samples_;
};

// Appends one group holding exactly `samples`: at least one, all of one group, sorted
// by ID and unique.
void AppendGroupJson(std::span<const StatsSnapshot::Sample* const> samples, std::string& out);

}  // namespace drover::devices
