// The client state DB (reference §4.1, DESIGN.md §5): what the client persists about
// its allocations, their tasks, and the node, so that an agent restart picks up where
// it left off.
//
// Layout (keys of the Store; nested buckets are prefixes, as in Nomad's bolt file):
//
//   meta/version                               "1" (raw bytes, not MessagePack)
//   allocations/<alloc>/alloc                  {Alloc}
//   allocations/<alloc>/acknowledged_state     {State}
//   allocations/<alloc>/deploy_status          {DeploymentStatus}
//   allocations/<alloc>/network_status         {NetworkStatus}
//   allocations/<alloc>/task-<task>/local_state {LocalState}
//   allocations/<alloc>/task-<task>/task_state  {TaskState}
//   devicemanager/plugin_state                 {PluginState}
//   drivermanager/plugin_state                 {PluginState}
//   nodemeta/meta                              {Meta}
//   node/node_registration                     {Registration}
//
// Values are MessagePack of a canonical JSON form (object keys sorted, so equal values
// are equal bytes and the Store's deduplication works), each wrapped in a one-field
// object so fields can be added later. Types the state library does not know (the task
// runner's LocalState, plugin state) are passed as JSON.
//
// Writes are awaited on the caller's executor (the control loop) and complete once
// durable; reads are synchronous and see committed data.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/asio.h"
#include "model/allocation.h"
#include "state/record_encoding.h"
#include "state/schema.h"
#include "state/store.h"

namespace drover::state {

inline constexpr int kSchemaVersion = 1;

struct AllocationsRead {
  std::vector<model::Allocation> allocs;
  // Allocations whose record could not be decoded (they are skipped), by id.
  std::map<std::string, absl::Status> errors;
};

struct TaskRunnerState {
  std::optional<codec::Json> local_state;  // the task runner's LocalState
  std::optional<model::TaskState> task_state;
};

// Per-allocation records besides the allocation itself.
enum class AllocRecord { kAcknowledgedState, kDeployStatus, kNetworkStatus };

class StateDb {
 public:
  virtual ~StateDb() = default;
  virtual std::string Name() const = 0;

  virtual absl::StatusOr<AllocationsRead> GetAllAllocations() = 0;
  // Writes encode their records on the store's writer thread (Store::PutEncoded), so
  // what they hold must stay unchanged: the allocation is shared and immutable, the
  // other values are copied.
  virtual asio::awaitable<absl::Status> PutAllocation(
      std::shared_ptr<const model::Allocation> alloc) = 0;
  // Removes the allocation and everything under it (its tasks too). OK if absent.
  virtual asio::awaitable<absl::Status> DeleteAllocationBucket(const std::string& alloc_id) = 0;
  virtual absl::StatusOr<std::optional<codec::Json>> GetAllocRecord(const std::string& alloc_id,
                                                                    AllocRecord record) = 0;
  // `make` builds the record's value on the writer thread: it may read only what it
  // owns.
  using JsonMaker = std::function<codec::Json()>;
  virtual asio::awaitable<absl::Status> PutAllocRecord(const std::string& alloc_id,
                                                       AllocRecord record, JsonMaker make) = 0;
  asio::awaitable<absl::Status> PutAllocRecord(const std::string& alloc_id, AllocRecord record,
                                               codec::Json value);

  virtual absl::StatusOr<TaskRunnerState> GetTaskRunnerState(const std::string& alloc_id,
                                                             const std::string& task) = 0;
  virtual asio::awaitable<absl::Status> PutTaskRunnerLocalState(const std::string& alloc_id,
                                                                const std::string& task,
                                                                const codec::Json& local) = 0;
  virtual asio::awaitable<absl::Status> PutTaskState(const std::string& alloc_id,
                                                     const std::string& task,
                                                     const model::TaskState& state) = 0;
  virtual asio::awaitable<absl::Status> DeleteTaskBucket(const std::string& alloc_id,
                                                         const std::string& task) = 0;

  // "devicemanager" or "drivermanager" plugin state, node metadata, node registration.
  virtual absl::StatusOr<std::optional<codec::Json>> GetNodeRecord(const std::string& key) = 0;
  virtual asio::awaitable<absl::Status> PutNodeRecord(const std::string& key,
                                                      const codec::Json& value) = 0;

  // The write path's counters (all zero for a DB without one).
  virtual StoreStats Stats() const { return {}; }
};

// Node record keys.
inline constexpr char kDevicePluginState[] = "devicemanager/plugin_state";
inline constexpr char kDriverPluginState[] = "drivermanager/plugin_state";
inline constexpr char kNodeMeta[] = "nodemeta/meta";
inline constexpr char kNodeRegistration[] = "node/node_registration";

// Where an agent keeps its client state: `<data_dir>/client/state.db` (Nomad's place).
std::filesystem::path StateDbFile(const std::filesystem::path& data_dir);

// The client DB's schema: this build's version and the upgrades from older ones.
Schema ClientSchema();

// The LMDB-backed DB at StateDbFile(data_dir) (created 0600, its dir 0700), brought to
// `schema`'s version (schema.h: an older DB is upgraded after a backup copy; a newer
// one is refused with a clear error naming the file). Tests pass their own schema.
absl::StatusOr<std::unique_ptr<StateDb>> OpenStateDb(const std::filesystem::path& data_dir,
                                                     const Schema& schema = ClientSchema());

// Every record of the DB file as one JSON object nested by key path, values decoded
// (`drover operator client-state`). Read-only use; safe while an agent runs.
absl::StatusOr<codec::Json> DumpStateDb(const std::filesystem::path& db_file);
// The same over any backend (in-memory and always-failing ones for tests).
absl::StatusOr<std::unique_ptr<StateDb>> NewStateDb(std::unique_ptr<KvBackend> backend,
                                                    StoreOptions options = {});
// Accepts every write and remembers nothing (Nomad's NoopDB).
std::unique_ptr<StateDb> NewNoopStateDb();
// Every write fails with `error`; reads find nothing (fault tests).
absl::StatusOr<std::unique_ptr<StateDb>> NewFailingStateDb(absl::Status error);

}  // namespace drover::state
