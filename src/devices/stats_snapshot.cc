#include "devices/stats_snapshot.h"

#include "codec/json.h"

namespace drover::devices {

StatsSnapshot::StatsSnapshot(std::vector<model::DeviceGroupStats> groups)
    : groups_(std::move(groups)) {
  closes_.reserve(groups_.size());  // samples point at these: no reallocation
  size_t count = 0;
  for (const model::DeviceGroupStats& g : groups_) {
    closes_.push_back(codec::DeviceGroupCloseJson(g.vendor, g.type, g.name));
    count += g.instance_stats.size();
  }
  samples_.reserve(count);
  for (size_t i = 0; i < groups_.size(); ++i) {
    for (const auto& [id, s] : groups_[i].instance_stats) {
      samples_.push_back({.id = &id,
                          .stats = &s,
                          .member_json = codec::DeviceStatsMemberJson(id, s),
                          .group_close = &closes_[i]});
    }
  }
}

void StatsSnapshot::AppendGroups(std::string& out) const {
  size_t next = 0;
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    out.append(codec::kDeviceGroupOpenJson);
    for (size_t k = 0; k < groups_[i].instance_stats.size(); ++k, ++next) {
      if (k > 0)
        out.push_back(',');
      out.append(samples_[next].member_json);
    }
    out.append(closes_[i]);
  }
}

void AppendGroupJson(std::span<const StatsSnapshot::Sample* const> samples, std::string& out) {
  out.append(codec::kDeviceGroupOpenJson);
  for (size_t k = 0; k < samples.size(); ++k) {
    if (k > 0)
      out.push_back(',');
    out.append(samples[k]->member_json);
  }
  out.append(*samples.front()->group_close);
}

}  // namespace drover::devices
