// What the HTTP API asks of the node's client: facts about the node, the usage of its
// allocations and of the host, restarts, signals, garbage collection, and handles on
// allocation directories for the file-system and logs APIs. The API sees this and not
// the client's runners; the agent adapts client::Client to it
// (agent/client_adapter.h), and tests answer it with fakes.
//
// Every method is called on the control loop unless it says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"
#include "common/asio.h"
#include "model/usage.h"

namespace drover::api {

// GET /v1/client/allocation/:id/stats: the tasks' usage and their sum (CPU TotalTicks
// filled in from the node's clock), and the devices' samples as DeviceStats JSON text
// (devices/alloc_stats_json.h), per task and for the allocation.
struct AllocStats {
  model::AllocUsage usage;
  std::map<std::string, std::string> task_devices;  // a task missing here has "[]"
  std::string devices = "[]";
};

// What an allocation's snapshot archive (allocdir/snapshot.h) carries.
struct SnapshotSource {
  allocdir::AllocDirLocation dir;
  std::vector<std::string> tasks;
  uint64_t max_data_bytes = 0;  // the group's ephemeral disk
};

// The error for an allocation this node does not have.
inline absl::Status UnknownAllocation(const std::string& alloc_id) {
  return absl::NotFoundError("Unknown allocation \"" + alloc_id + "\"");
}

// What /v1/client/allocation/:id/restart restarts.
enum class RestartScope { kRunning, kAll, kTask };

class ClientApi {
 public:
  virtual ~ClientApi() = default;

  virtual const std::string& node_id() const = 0;
  virtual size_t num_allocs() const = 0;
  // Whether the allocation has a runner here (running, or stopped and not collected).
  virtual bool HasAlloc(const std::string& alloc_id) const = 0;

  // The calls below about one allocation answer UnknownAllocation for one that is not
  // here or was destroyed.
  virtual absl::StatusOr<AllocStats> AllocStatsOf(const std::string& alloc_id) const = 0;
  // The node's usage now, from a function that blocks (it reads /proc and statvfs):
  // call it on the pool. It is thread-safe and lives as long as the client.
  virtual std::function<model::HostStats()> HostStatsCollector() = 0;
  // Every device's latest samples as DeviceStats JSON text ("[]" without devices).
  virtual std::string DeviceStatsJson() const = 0;

  // `task` only for RestartScope::kTask. Errors name the task or the allocation's state.
  virtual absl::Status Restart(const std::string& alloc_id, RestartScope scope,
                               const std::string& task) = 0;
  // `task` empty: every running task.
  virtual absl::Status Signal(const std::string& alloc_id, const std::string& task,
                              const std::string& signal) = 0;
  // Destroys a terminal allocation's directory (FailedPrecondition while it runs).
  virtual asio::awaitable<absl::Status> CollectAllocation(std::string alloc_id) = 0;
  virtual asio::awaitable<void> CollectAll() = 0;

  // Where the allocation's directory is, for allocdir's confined reads (fs_view.h,
  // follow_reader.h) on the pool; they fail once the allocation is collected.
  virtual absl::StatusOr<allocdir::AllocDirLocation> AllocDirOf(
      const std::string& alloc_id) const = 0;
  // For follows: whether more can still be written, i.e. the allocation is here and
  // (with `task`) that task is not dead.
  virtual bool MayGrow(const std::string& alloc_id, const std::string& task) const = 0;
  // What a snapshot of the allocation carries, given the migrate token the servers
  // derived from this node's secret (common/derived_token.h); PermissionDenied without it.
  virtual absl::StatusOr<SnapshotSource> SnapshotOf(const std::string& alloc_id,
                                                    const std::string& token) const = 0;
};

}  // namespace drover::api
