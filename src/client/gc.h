// Client-side garbage collection of terminal allocations (reference §1.1, Nomad's
// client/gc.go): a terminal allocation's runner keeps its directory (logs, data for a
// replacement to migrate) until the node needs the room. GcQueue orders terminal
// allocations oldest-first; the Client destroys from its head when
//   - the disk holding the alloc dirs is fuller than `disk_usage_threshold` percent or
//     its inodes than `inode_usage_threshold` percent (checked every `interval`),
//   - adding an allocation would exceed `max_allocs` runners on the node,
//   - a user asks (`/v1/client/gc`, `/v1/client/allocation/:id/gc`).
// Pure bookkeeping; the Client owns the runners and does the destroying.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"

#include "common/clock.h"

namespace drover::client {

struct GcConfig {
  common::Duration interval = std::chrono::minutes(1);
  double disk_usage_threshold = 80;   // percent
  double inode_usage_threshold = 70;  // percent
  int max_allocs = 50;
};

struct DiskUsage {
  double used_percent = 0;
  double inodes_used_percent = 0;
};

// statvfs of the file system holding `path`.
absl::StatusOr<DiskUsage> StatDisk(const std::filesystem::path& path);

class GcQueue {
 public:
  // Records that `id` became terminal at `when`; a later call for the same id keeps
  // the first time.
  void MarkTerminal(const std::string& id, common::Time when);
  void Remove(const std::string& id);
  bool Contains(const std::string& id) const { return since_.contains(id); }
  // Removes and returns the allocation that has been terminal the longest among those
  // `eligible` accepts (all when none is given).
  std::optional<std::string> PopOldest(
      const std::function<bool(const std::string&)>& eligible = nullptr);
  size_t size() const { return since_.size(); }

 private:
  std::map<std::string, common::Time> since_;
  std::set<std::pair<common::Time, std::string>> order_;
};

}  // namespace drover::client
