#include "devices/alloc_stats_json.h"

#include <algorithm>

namespace drover::devices {

namespace {

using Samples = std::vector<const StatsSnapshot::Sample*>;

void SortUnique(Samples& s) {
  std::sort(s.begin(), s.end(), [](const auto* a, const auto* b) { return *a->id < *b->id; });
  s.erase(std::unique(s.begin(), s.end(),
                      [](const auto* a, const auto* b) { return *a->id == *b->id; }),
          s.end());
}

void AppendGroup(const Samples& group, bool& first, std::string& out) {
  if (group.empty())
    return;
  if (!first)
    out.push_back(',');
  first = false;
  AppendGroupJson(group, out);
}

}  // namespace

std::string AllocDeviceStatsJson::Task(const std::vector<model::AllocatedDeviceResource>& devices) {
  std::string out = "[";
  bool first = true;
  Samples group;
  const model::AllocatedDeviceResource* current = nullptr;
  auto flush = [&] {
    SortUnique(group);
    AppendGroup(group, first, out);
    group.clear();
  };
  manager_.FindSamples(
      devices, [&](const model::AllocatedDeviceResource& d, const StatsSnapshot::Sample& s) {
        if (current != &d) {
          flush();
          current = &d;
        }
        group.push_back(&s);
        found_.push_back(&s);
      });
  flush();
  out.push_back(']');
  return out;
}

std::string AllocDeviceStatsJson::Alloc() const {
  // Groups are told apart by their closing text, which names vendor, type and name.
  std::vector<Samples> groups;
  for (const StatsSnapshot::Sample* s : found_) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Samples& g) {
      return *g.front()->group_close == *s->group_close;
    });
    if (it == groups.end())
      groups.push_back({s});
    else
      it->push_back(s);
  }
  std::string out = "[";
  bool first = true;
  for (Samples& g : groups) {
    SortUnique(g);
    AppendGroup(g, first, out);
  }
  out.push_back(']');
  return out;
}

}  // namespace drover::devices
