#include "state/state_db.h"

#include <future>
#include <memory>

#include "state/lmdb_backend.h"

namespace drover::state {

namespace {

constexpr char kAllocPrefix[] = "allocations/";

std::string AllocKey(const std::string& alloc_id) {
  return std::string(kAllocPrefix) + alloc_id + "/";
}

std::string TaskKey(const std::string& alloc_id, const std::string& task) {
  return AllocKey(alloc_id) + "task-" + task + "/";
}

const char* RecordName(AllocRecord r) {
  switch (r) {
    case AllocRecord::kAcknowledgedState:
      return "acknowledged_state";
    case AllocRecord::kDeployStatus:
      return "deploy_status";
    case AllocRecord::kNetworkStatus:
      return "network_status";
  }
  return "unknown";
}

const char* RecordField(AllocRecord r) {
  switch (r) {
    case AllocRecord::kAcknowledgedState:
      return "State";
    case AllocRecord::kDeployStatus:
      return "DeploymentStatus";
    case AllocRecord::kNetworkStatus:
      return "NetworkStatus";
  }
  return "Value";
}

// Ids and task names become key components: refuse what would reach another bucket.
absl::Status CheckComponent(const std::string& what, const std::string& s) {
  if (s.empty() || s.find('/') != std::string::npos)
    return absl::InvalidArgumentError("invalid " + what + " '" + s + "' for the state DB");
  return absl::OkStatus();
}

const char* NodeRecordField(const std::string& key) {
  if (key == kNodeMeta)
    return "Meta";
  if (key == kNodeRegistration)
    return "Registration";
  return "PluginState";
}

class KvStateDb final : public StateDb {
 public:
  explicit KvStateDb(std::unique_ptr<Store> store) : store_(std::move(store)) {}

  std::string Name() const override { return store_->backend().Name(); }
  StoreStats Stats() const override { return store_->stats(); }

  absl::StatusOr<AllocationsRead> GetAllAllocations() override {
    auto pairs = store_->Scan(kAllocPrefix);
    if (!pairs.ok())
      return pairs.status();
    AllocationsRead out;
    for (const auto& [key, bytes] : *pairs) {
      // allocations/<id>/alloc only; the rest of the bucket is read on demand.
      const std::string_view rest = std::string_view(key).substr(sizeof(kAllocPrefix) - 1);
      const size_t slash = rest.find('/');
      if (slash == std::string_view::npos || rest.substr(slash + 1) != "alloc")
        continue;
      const std::string id(rest.substr(0, slash));
      auto j = Decode("Alloc", bytes);
      absl::StatusOr<model::Allocation> alloc =
          j.ok() ? codec::AllocationFromJson(*j) : absl::StatusOr<model::Allocation>(j.status());
      if (!alloc.ok()) {
        out.errors[id] = alloc.status();
        continue;
      }
      out.allocs.push_back(std::move(*alloc));
    }
    return out;
  }

  asio::awaitable<absl::Status> PutAllocation(
      std::shared_ptr<const model::Allocation> alloc) override {
    if (absl::Status s = CheckComponent("allocation id", alloc->id); !s.ok())
      co_return s;
    std::string key = AllocKey(alloc->id) + "alloc";  // named: see GCC 12 in development.md
    Store::Encoder encode = [alloc] { return EncodeAllocation("Alloc", *alloc); };
    co_return co_await store_->PutEncodedAsync(std::move(key), std::move(encode));
  }

  asio::awaitable<absl::Status> DeleteAllocationBucket(const std::string& alloc_id) override {
    if (absl::Status s = CheckComponent("allocation id", alloc_id); !s.ok())
      co_return s;
    std::string prefix = AllocKey(alloc_id);
    co_return co_await store_->DeletePrefixAsync(std::move(prefix));
  }

  absl::StatusOr<std::optional<codec::Json>> GetAllocRecord(const std::string& alloc_id,
                                                            AllocRecord record) override {
    if (absl::Status s = CheckComponent("allocation id", alloc_id); !s.ok())
      return s;
    return Read(AllocKey(alloc_id) + RecordName(record), RecordField(record));
  }

  asio::awaitable<absl::Status> PutAllocRecord(const std::string& alloc_id, AllocRecord record,
                                               JsonMaker make) override {
    if (absl::Status s = CheckComponent("allocation id", alloc_id); !s.ok())
      co_return s;
    std::string key = AllocKey(alloc_id) + RecordName(record);
    Store::Encoder encode = [field = RecordField(record), make = std::move(make)] {
      return Encode(field, make());
    };
    co_return co_await store_->PutEncodedAsync(std::move(key), std::move(encode));
  }

  absl::StatusOr<TaskRunnerState> GetTaskRunnerState(const std::string& alloc_id,
                                                     const std::string& task) override {
    if (absl::Status s = CheckKeys(alloc_id, task); !s.ok())
      return s;
    TaskRunnerState out;
    auto local = Read(TaskKey(alloc_id, task) + "local_state", "LocalState");
    if (!local.ok())
      return local.status();
    out.local_state = std::move(*local);
    auto state = Read(TaskKey(alloc_id, task) + "task_state", "TaskState");
    if (!state.ok())
      return state.status();
    if (state->has_value()) {
      auto ts = codec::TaskStateFromJson(**state);
      if (!ts.ok())
        return ts.status();
      out.task_state = std::move(*ts);
    }
    return out;
  }

  asio::awaitable<absl::Status> PutTaskRunnerLocalState(const std::string& alloc_id,
                                                        const std::string& task,
                                                        const codec::Json& local) override {
    if (absl::Status s = CheckKeys(alloc_id, task); !s.ok())
      co_return s;
    std::string key = TaskKey(alloc_id, task) + "local_state";
    Store::Encoder encode = [local] { return Encode("LocalState", local); };
    co_return co_await store_->PutEncodedAsync(std::move(key), std::move(encode));
  }

  asio::awaitable<absl::Status> PutTaskState(const std::string& alloc_id, const std::string& task,
                                             const model::TaskState& state) override {
    if (absl::Status s = CheckKeys(alloc_id, task); !s.ok())
      co_return s;
    std::string key = TaskKey(alloc_id, task) + "task_state";
    Store::Encoder encode = [state] { return Encode("TaskState", codec::ToJson(state)); };
    co_return co_await store_->PutEncodedAsync(std::move(key), std::move(encode));
  }

  asio::awaitable<absl::Status> DeleteTaskBucket(const std::string& alloc_id,
                                                 const std::string& task) override {
    if (absl::Status s = CheckKeys(alloc_id, task); !s.ok())
      co_return s;
    std::string prefix = TaskKey(alloc_id, task);
    co_return co_await store_->DeletePrefixAsync(std::move(prefix));
  }

  absl::StatusOr<std::optional<codec::Json>> GetNodeRecord(const std::string& key) override {
    return Read(key, NodeRecordField(key));
  }

  asio::awaitable<absl::Status> PutNodeRecord(const std::string& key,
                                              const codec::Json& value) override {
    std::string k = key;
    std::string bytes = Encode(NodeRecordField(key), value);
    co_return co_await store_->PutAsync(std::move(k), std::move(bytes));
  }

 private:
  static absl::Status CheckKeys(const std::string& alloc_id, const std::string& task) {
    if (absl::Status s = CheckComponent("allocation id", alloc_id); !s.ok())
      return s;
    return CheckComponent("task name", task);
  }

  absl::StatusOr<std::optional<codec::Json>> Read(const std::string& key, const char* field) {
    auto bytes = store_->Get(key);
    if (!bytes.ok())
      return bytes.status();
    if (!bytes->has_value())
      return std::optional<codec::Json>();
    auto j = Decode(field, **bytes);
    if (!j.ok())
      return absl::DataLossError("state DB record '" + key +
                                 "': " + std::string(j.status().message()));
    return std::optional<codec::Json>(std::move(*j));
  }

  std::unique_ptr<Store> store_;
};

class NoopStateDb final : public StateDb {
 public:
  std::string Name() const override { return "noop"; }
  absl::StatusOr<AllocationsRead> GetAllAllocations() override { return AllocationsRead{}; }
  asio::awaitable<absl::Status> PutAllocation(std::shared_ptr<const model::Allocation>) override {
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> DeleteAllocationBucket(const std::string&) override {
    co_return absl::OkStatus();
  }
  absl::StatusOr<std::optional<codec::Json>> GetAllocRecord(const std::string&,
                                                            AllocRecord) override {
    return std::optional<codec::Json>();
  }
  asio::awaitable<absl::Status> PutAllocRecord(const std::string&, AllocRecord,
                                               JsonMaker) override {
    co_return absl::OkStatus();
  }
  absl::StatusOr<TaskRunnerState> GetTaskRunnerState(const std::string&,
                                                     const std::string&) override {
    return TaskRunnerState{};
  }
  asio::awaitable<absl::Status> PutTaskRunnerLocalState(const std::string&, const std::string&,
                                                        const codec::Json&) override {
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> PutTaskState(const std::string&, const std::string&,
                                             const model::TaskState&) override {
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> DeleteTaskBucket(const std::string&, const std::string&) override {
    co_return absl::OkStatus();
  }
  absl::StatusOr<std::optional<codec::Json>> GetNodeRecord(const std::string&) override {
    return std::optional<codec::Json>();
  }
  asio::awaitable<absl::Status> PutNodeRecord(const std::string&, const codec::Json&) override {
    co_return absl::OkStatus();
  }
};

}  // namespace

asio::awaitable<absl::Status> StateDb::PutAllocRecord(const std::string& alloc_id,
                                                      AllocRecord record, codec::Json value) {
  JsonMaker make = [value = std::move(value)] { return value; };
  co_return co_await PutAllocRecord(alloc_id, record, std::move(make));
}

Schema ClientSchema() {
  return Schema{.name = "client state DB", .version = kSchemaVersion, .upgrades = {}};
}

absl::StatusOr<std::unique_ptr<StateDb>> NewStateDb(std::unique_ptr<KvBackend> backend,
                                                    StoreOptions options) {
  if (absl::Status s = PrepareSchema(*backend, {}, ClientSchema()); !s.ok())
    return s;
  return std::unique_ptr<StateDb>(
      new KvStateDb(std::make_unique<Store>(std::move(backend), options)));
}

std::filesystem::path StateDbFile(const std::filesystem::path& data_dir) {
  return data_dir / "client" / "state.db";
}

absl::StatusOr<std::unique_ptr<StateDb>> OpenStateDb(const std::filesystem::path& data_dir,
                                                     const Schema& schema) {
  auto backend = OpenVersionedLmdb(StateDbFile(data_dir), schema);
  if (!backend.ok())
    return backend.status();
  return std::unique_ptr<StateDb>(new KvStateDb(std::make_unique<Store>(std::move(*backend))));
}

absl::StatusOr<std::unique_ptr<StateDb>> NewFailingStateDb(absl::Status error) {
  // The version is already there: opening reads it and writes nothing.
  return NewStateDb(
      NewFailingBackend(std::move(error), {{kVersionKey, std::to_string(kSchemaVersion)}}));
}

absl::StatusOr<codec::Json> DumpStateDb(const std::filesystem::path& db_file) {
  if (!std::filesystem::exists(db_file))
    return absl::NotFoundError("no client state DB at '" + db_file.string() + "'");
  auto backend = OpenLmdb(db_file);
  if (!backend.ok())
    return backend.status();
  auto pairs = (*backend)->Scan("");
  if (!pairs.ok())
    return pairs.status();
  codec::Json out = codec::Json::object();
  for (const auto& [key, bytes] : *pairs) {
    // "allocations/<id>/task-web/local_state" -> out["allocations"][<id>]["task-web"][...]
    codec::Json* node = &out;
    size_t start = 0;
    for (size_t slash; (slash = key.find('/', start)) != std::string::npos; start = slash + 1)
      node = &(*node)[key.substr(start, slash - start)];
    codec::Json& leaf = (*node)[key.substr(start)];
    if (key == kVersionKey) {
      leaf = bytes;  // raw, not MessagePack
      continue;
    }
    auto value = DecodeObject(bytes);
    leaf = value.ok() ? std::move(*value)
                      : codec::Json("<undecodable: " + std::to_string(bytes.size()) + " bytes>");
  }
  return out;
}

std::unique_ptr<StateDb> NewNoopStateDb() {
  return std::make_unique<NoopStateDb>();
}

}  // namespace drover::state
