#include "client/client.h"

#include <unistd.h>

#include "client/fingerprint/fingerprint.h"
#include "client/taskrunner/local_state_json.h"
#include "client/taskrunner/task_env.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::client {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

Client::Client(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
               ServerRpc& rpc, std::map<std::string, drivers::Driver*> drivers, ClientConfig config)
    : executor_(executor),
      pool_(pool),
      clock_(clock),
      rpc_(rpc),
      heartbeat_ttl_(config.heartbeat_interval),
      drivers_(std::move(drivers)),
      config_(std::move(config)),
      host_env_(std::make_shared<const std::map<std::string, std::string>>(
          taskrunner::HostEnvironment())),
      stats_sampler_(taskrunner::StatsSampler::Create(executor, clock, config_.stats_interval)),
      urgent_update_(executor),
      stop_(common::CancellationScope::Create(executor)),
      loop_exited_(executor),
      noop_db_(config_.state_db == nullptr ? state::NewNoopStateDb() : nullptr),
      db_(config_.state_db != nullptr ? config_.state_db : noop_db_.get()),
      servers_contacted_(executor) {}

asio::awaitable<absl::Status> Client::Start() {
  fingerprint::FingerprintConfig fc;
  fc.data_dir = config_.data_dir;
  fc.node_name = config_.node_name;
  fc.datacenter = config_.datacenter;
  fc.http_addr = config_.http_addr;
  fc.dev_mode = config_.dev_mode;
  fc.node_class = config_.node_class;
  fc.meta = config_.meta;
  // The host on the pool; the drivers here, where they live.
  auto work = [fc] { return fingerprint::FingerprintNode(fc, {}); };
  auto node = co_await common::Offload(pool_, std::move(work));  // named: see Offload()
  if (!node.ok()) {
    co_return common::Annotate(node.status(), "failed to fingerprint node");
  }
  node_ = *node;
  node_.reserved_resources = config_.reserved;
  if (!config_.node_pool.empty()) {
    node_.node_pool = config_.node_pool;
  }
  fingerprint::ApplyDriverFingerprints(node_, drivers_);
  if (config_.device_manager != nullptr) {
    // Devices are part of what the node offers: wait (briefly) for the plugins' first
    // inventory so the node does not register without its GPUs.
    co_await config_.device_manager->WaitForFirstFingerprint(config_.device_fingerprint_wait);
    node_.node_resources.devices = config_.device_manager->Devices();
  }
  ++node_version_;
  if (absl::Status s = co_await RegisterCurrentNode(); !s.ok()) {
    // No server answers: the node restores and keeps running its allocations, and
    // registers once one does (the heartbeat loop retries). A server that refuses the
    // node is a configuration error.
    if (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s))
      co_return common::Annotate(s, "failed to register node");
    DROVER_LOG_WARN("client: no server answered ({}); running without one until one does",
                    s.ToString());
  } else {
    DROVER_LOG_INFO("client: node {} ({}) registered", node_.id, node_.name);
  }
  co_await RestoreAllocs();
  auto spawn = [this](asio::awaitable<void> loop, const char* what) {
    ++loops_running_;
    common::SpawnDetached(
        executor_,
        [](Client* self, asio::awaitable<void> l) -> asio::awaitable<void> {
          co_await std::move(l);
          --self->loops_running_;
          self->loop_exited_.Notify();
        }(this, std::move(loop)),
        what);
  };
  spawn(HeartbeatLoop(), "client heartbeat");
  spawn(WatchAllocations(), "client alloc watcher");
  spawn(SyncLoop(), "client alloc sync");
  spawn(GcLoop(), "client gc");
  if (config_.device_manager != nullptr)
    spawn(DeviceWatch(), "client device watch");
  co_return absl::OkStatus();
}

asio::awaitable<void> Client::HeartbeatLoop() {
  // Due within the TTL the servers gave; sooner after a failure, so that a server that
  // comes back hears from the node before the node's deadline passes.
  common::Duration next = heartbeat_ttl_;
  while (!stop_->cancelled()) {
    auto r = co_await (clock_.Sleep(next) || stop_->Wait());
    if (r.index() == 1)
      break;
    // A driver's health can change (its supervisor went away and came back): the
    // servers hear of it with the next heartbeat, and operators from a node event.
    const std::map<std::string, model::DriverInfo> drivers_before = node_.drivers;
    if (fingerprint::ApplyDriverFingerprints(node_, drivers_)) {
      ++node_version_;
      QueueNodeEvents(fingerprint::DriverHealthEvents(drivers_before, node_.drivers, clock_.Now()));
    }
    absl::Status s;
    if (registered_version_ < node_version_) {
      s = co_await RegisterCurrentNode();
    } else {
      absl::StatusOr<common::Duration> ttl = co_await rpc_.Heartbeat(node_.id);
      if (ttl.ok())
        heartbeat_ttl_ = *ttl;
      s = ttl.status();
      if (absl::IsNotFound(s))
        s = co_await RegisterCurrentNode();
    }
    next = heartbeat_ttl_;
    if (s.ok() && !pending_events_.empty())
      s = co_await SendNodeEvents();
    if (!s.ok()) {
      DROVER_LOG_WARN("client: heartbeat failed: {}", s.ToString());
      next = std::min(next, config_.retry_interval);
    }
  }
}

void Client::QueueNodeEvents(std::vector<model::NodeEvent> events) {
  for (model::NodeEvent& e : events)
    pending_events_.push_back(std::move(e));
  // The servers keep no more than this many either.
  while (pending_events_.size() > model::kMaxNodeEvents)
    pending_events_.pop_front();
}

asio::awaitable<absl::Status> Client::SendNodeEvents() {
  std::vector<model::NodeEvent> events(pending_events_.begin(), pending_events_.end());
  const size_t sent = events.size();
  absl::Status s = co_await rpc_.EmitNodeEvents(node_.id, std::move(events));
  if (absl::IsInvalidArgument(s)) {
    // Refused as they are: sending them again would be refused again.
    DROVER_LOG_WARN("client: the servers refused {} node events: {}", sent, s.ToString());
    s = absl::OkStatus();
  }
  if (s.ok()) {
    // Events queued meanwhile stay for the next heartbeat.
    pending_events_.erase(pending_events_.begin(),
                          pending_events_.begin() + static_cast<std::ptrdiff_t>(sent));
  }
  co_return s;
}

asio::awaitable<absl::Status> Client::RegisterCurrentNode() {
  const uint64_t version = node_version_;
  // A copy of the node as it is now.
  absl::StatusOr<common::Duration> ttl = co_await rpc_.RegisterNode(node_);
  if (!ttl.ok())
    co_return ttl.status();
  heartbeat_ttl_ = *ttl;
  registered_version_ = std::max(registered_version_, version);
  co_return absl::OkStatus();
}

asio::awaitable<void> Client::DeviceWatch() {
  devices::DeviceManager* dm = config_.device_manager;
  while (!stop_->cancelled()) {
    auto changed = dm->changed().Wait();
    auto stopped = stop_->Wait();
    auto r = co_await (std::move(changed) || std::move(stopped));
    if (r.index() == 1)
      break;
    std::vector<model::NodeDeviceResource> devices = dm->Devices();
    if (devices == node_.node_resources.devices)
      continue;
    node_.node_resources.devices = std::move(devices);
    ++node_version_;
    // The servers learn of new, vanished or (un)healthy instances at once: placement
    // depends on them.
    if (absl::Status s = co_await RegisterCurrentNode(); !s.ok()) {
      DROVER_LOG_WARN(
          "client: updating the node's devices failed (retried with the next "
          "heartbeat): {}",
          s.ToString());
    }
  }
}

asio::awaitable<void> Client::WatchAllocations() {
  uint64_t index = 0;
  while (!stop_->cancelled()) {
    auto r = co_await (rpc_.GetNodeAllocations(node_.id, index, std::chrono::minutes(5)) ||
                       stop_->Wait());
    if (r.index() == 1)
      break;
    auto& got = std::get<0>(r);
    if (!got.ok()) {
      DROVER_LOG_WARN("client: failed to fetch allocations: {}", got.status().ToString());
      co_await (clock_.Sleep(config_.retry_interval) || stop_->Wait());
      continue;
    }
    servers_contacted_.Set();
    RunAllocs(*got);
    index = got->index;
  }
}

void Client::RunAllocs(const NodeAllocations& update) {
  if (shutting_down_) {
    return;
  }
  std::map<std::string, std::shared_ptr<const model::Allocation>> server;
  for (const auto& a : update.allocs)
    server[a->id] = a;
  // Removed: known locally but no longer on the server (e.g. garbage collected).
  std::vector<std::string> removed;
  for (const auto& [id, runner] : runners_) {
    if (!server.contains(id))
      removed.push_back(id);
  }
  for (const std::string& id : removed) {
    auto runner = std::move(runners_[id]);
    runners_.erase(id);
    pending_updates_.erase(id);
    gc_queue_.Remove(id);
    collected_.erase(id);
    common::SpawnDetached(
        executor_,
        [](Client* self, std::unique_ptr<allocrunner::AllocRunner> r) -> asio::awaitable<void> {
          co_await r->Destroy();
          co_await self->Forget(r->id());
        }(this, std::move(runner)),
        "destroy alloc " + id);
  }
  for (const auto& [id, alloc] : server) {
    auto it = runners_.find(id);
    if (it == runners_.end()) {
      if (alloc->ClientTerminal())
        continue;  // finished before we knew it
      AddAlloc(alloc);
    } else {
      if (alloc->alloc_modify_index > it->second->alloc()->alloc_modify_index) {
        Persist(id, [this, alloc]() { return db_->PutAllocation(alloc); });
        it->second->Update(alloc);
      }
      if (alloc->client_status == model::kClientUnknown) {
        // The servers marked it unknown while this node was away: they must hear how it
        // is again, whatever they acknowledged before.
        acknowledged_.erase(id);
        AllocStateUpdated(
            std::make_shared<const model::AllocClientUpdate>(it->second->ClientUpdate()));
      }
    }
  }
}

void Client::AddAlloc(std::shared_ptr<const model::Allocation> alloc) {
  if (alloc->Group() == nullptr) {
    DROVER_LOG_ERROR("client: alloc {} has no task group '{}'; failing it", alloc->id,
                     alloc->task_group);
    model::AllocClientUpdate failed;
    failed.id = alloc->id;
    failed.node_id = node_.id;
    failed.client_status = model::kClientFailed;
    failed.client_description = "Unable to add allocation due to error: task group not found";
    AllocStateUpdated(std::make_shared<const model::AllocClientUpdate>(std::move(failed)));
    return;
  }
  MakeRoomFor(1);
  // Forgotten at restore (nothing of it had run) and sent again: its writes count now.
  forgotten_.erase(alloc->id);
  // Recorded before anything runs: a restart then knows the allocation was here (and
  // adopts its tasks rather than start them again).
  auto recorded = std::make_shared<common::Event>(executor_);
  common::SpawnDetached(
      executor_,
      [](Client* self, std::shared_ptr<const model::Allocation> a,
         std::shared_ptr<common::Event> done) -> asio::awaitable<void> {
        absl::Status s = co_await self->db_->PutAllocation(a);
        if (!s.ok())
          DROVER_LOG_WARN("client: failed to persist alloc {}: {}", a->id, s.ToString());
        done->Set();
      }(this, alloc, recorded),
      "persist alloc " + alloc->id);
  auto runner = MakeRunner(alloc, PrevAllocWatcherFor(*alloc), recorded);
  allocrunner::AllocRunner* raw = runner.get();
  runners_[alloc->id] = std::move(runner);
  common::SpawnDetached(executor_, raw->Run(), "alloc " + alloc->id);
}

std::unique_ptr<allocrunner::AllocRunner> Client::MakeRunner(
    std::shared_ptr<const model::Allocation> alloc,
    std::unique_ptr<allocwatcher::PrevAllocWatcher> prev, std::shared_ptr<common::Event> recorded) {
  allocrunner::AllocRunnerConfig c;
  c.alloc = alloc;
  if (recorded)
    c.wait_recorded = [recorded] { return recorded->Wait(); };
  c.prev_alloc = std::move(prev);
  c.alloc_root = config_.data_dir / "alloc";
  c.alloc_dir_options.mount_tmpfs = config_.secrets_tmpfs && geteuid() == 0;
  c.node = &node_;
  c.region = config_.region;
  c.stats_sampler = stats_sampler_;
  c.drivers = drivers_;
  c.clock = &clock_;
  c.pool = &pool_;
  c.host_env = host_env_;
  c.on_update = [this](const allocrunner::ReportPtr& u) { AllocStateUpdated(u); };
  c.on_local_state = [this, id = alloc->id](const std::string& task,
                                            const taskrunner::LocalState& ls) {
    Persist(id, [this, id, task, json = taskrunner::ToJson(ls)]() {
      return db_->PutTaskRunnerLocalState(id, task, json);
    });
  };
  // (The coroutine takes everything by value: no lambda captures live in its frame.)
  c.persist_task = [this, id = alloc->id](const std::string& task, const model::TaskState& st,
                                          const taskrunner::LocalState& ls) {
    return [](Client* self, std::string alloc_id, std::string task_name, model::TaskState state,
              codec::Json local) -> asio::awaitable<void> {
      if (self->forgotten_.contains(alloc_id))
        co_return;
      absl::Status s = co_await self->db_->PutTaskState(alloc_id, task_name, state);
      if (s.ok())
        s = co_await self->db_->PutTaskRunnerLocalState(alloc_id, task_name, local);
      if (!s.ok()) {
        DROVER_LOG_WARN("client: failed to persist alloc {} task {}: {}", alloc_id, task_name,
                        s.ToString());
      }
    }(this, id, task, st, taskrunner::ToJson(ls));
  };
  c.wait_servers_contacted = [this] { return servers_contacted_.Wait(); };
  if (config_.device_manager != nullptr) {
    devices::DeviceManager* dm = config_.device_manager;
    c.reserve_devices = [dm](model::AllocatedDeviceResource d) {
      return dm->Reserve(std::move(d));
    };
  }
  return std::make_unique<allocrunner::AllocRunner>(executor_, std::move(c));
}

asio::awaitable<void> Client::RestoreAllocs() {
  auto read = db_->GetAllAllocations();
  if (!read.ok()) {
    DROVER_LOG_ERROR("client: failed to read the state DB: {}", read.status().ToString());
    co_return;
  }
  for (const auto& [id, error] : read->errors)
    DROVER_LOG_ERROR("client: alloc {} in the state DB is unreadable: {}", id, error.ToString());
  for (model::Allocation& stored : read->allocs) {
    auto alloc = std::make_shared<const model::Allocation>(std::move(stored));
    const model::TaskGroup* group = alloc->Group();
    std::map<std::string, model::TaskState> states;
    std::map<std::string, taskrunner::LocalState> locals;
    for (size_t i = 0; group != nullptr && i < group->tasks.size(); ++i) {
      const std::string& task = group->tasks[i].name;
      auto st = db_->GetTaskRunnerState(alloc->id, task);
      if (!st.ok()) {
        DROVER_LOG_ERROR("client: alloc {} task {}: {}", alloc->id, task, st.status().ToString());
        continue;
      }
      if (st->task_state)
        states[task] = *st->task_state;
      if (st->local_state) {
        auto ls = taskrunner::LocalStateFromJson(*st->local_state);
        if (ls.ok())
          locals[task] = std::move(*ls);
      }
    }
    // Nothing ran yet (the agent died between recording the alloc and starting its
    // tasks), or not ours to run: the servers send it again if it is still wanted. But
    // a task may have started before anything of it was recorded: then it is restored,
    // and its runner adopts that task rather than start it again.
    bool started = false;
    for (const auto& [name, driver] : drivers_)
      started = started || (driver != nullptr && driver->FindUnrecorded(alloc->id + "/"));
    if (group == nullptr || (states.empty() && locals.empty() && !started)) {
      co_await Forget(alloc->id);
      continue;
    }
    if (auto ack = db_->GetAllocRecord(alloc->id, state::AllocRecord::kAcknowledgedState);
        ack.ok() && ack->has_value()) {
      if (auto u = codec::AllocClientUpdateFromJson(**ack); u.ok())
        acknowledged_[alloc->id] = std::make_shared<const model::AllocClientUpdate>(std::move(*u));
    }
    // The health the servers acknowledged is known: not watched (and sent) again.
    if (auto ack = acknowledged_.find(alloc->id);
        ack != acknowledged_.end() && ack->second->deployment_status && !alloc->deployment_status &&
        ack->second->deployment_id == alloc->deployment_id) {
      auto copy = std::make_shared<model::Allocation>(*alloc);
      copy->deployment_status = ack->second->deployment_status;
      alloc = std::move(copy);
    }
    auto runner = MakeRunner(alloc, nullptr);
    allocrunner::AllocRunner* raw = runner.get();
    runners_[alloc->id] = std::move(runner);
    if (absl::Status s = raw->Restore(states, locals); !s.ok()) {
      if (auto ack = acknowledged_.find(alloc->id);
          ack != acknowledged_.end() && model::IsClientTerminalStatus(ack->second->client_status)) {
        // The GC was collecting it (its final status acknowledged, its directory gone)
        // when the agent stopped, before its record was deleted: finish that. Reporting
        // it failed would overwrite how it really ended, and reschedule it.
        DROVER_LOG_INFO("client: alloc {} was being collected; forgetting it", alloc->id);
        collected_.insert(alloc->id);
        co_await DestroyRunner(alloc->id);
        continue;
      }
      // Nomad's rule: the allocation fails and is destroyed. The runner stays known,
      // like a collected one, so the servers' next list does not start it again.
      DROVER_LOG_ERROR("client: failed to restore alloc {}: {}", alloc->id, s.ToString());
      model::AllocClientUpdate failed;
      failed.id = alloc->id;
      failed.node_id = node_.id;
      failed.client_status = model::kClientFailed;
      failed.client_description = "Failed to restore allocation: " + std::string(s.message());
      AllocStateUpdated(std::make_shared<const model::AllocClientUpdate>(std::move(failed)));
      collected_.insert(alloc->id);
      co_await DestroyRunner(alloc->id);
      continue;
    }
    DROVER_LOG_INFO("client: restored alloc {}", alloc->id);
    common::SpawnDetached(executor_, raw->Run(), "alloc " + alloc->id);
  }
}

void Client::Persist(const std::string& alloc_id,
                     std::function<asio::awaitable<absl::Status>()> write) {
  if (forgotten_.contains(alloc_id))
    return;
  common::SpawnDetached(
      executor_,
      [](std::string id,
         std::function<asio::awaitable<absl::Status>()> w) -> asio::awaitable<void> {
        absl::Status s = co_await w();
        if (!s.ok())
          DROVER_LOG_WARN("client: failed to persist alloc {}: {}", id, s.ToString());
      }(alloc_id, std::move(write)),
      "persist alloc " + alloc_id);
}

asio::awaitable<void> Client::Forget(std::string alloc_id) {
  forgotten_[alloc_id] = batches_taken_;
  acknowledged_.erase(alloc_id);
  absl::Status s = co_await db_->DeleteAllocationBucket(alloc_id);
  if (!s.ok())
    DROVER_LOG_WARN("client: failed to delete alloc {} from the state DB: {}", alloc_id,
                    s.ToString());
}

std::unique_ptr<allocwatcher::PrevAllocWatcher> Client::PrevAllocWatcherFor(
    const model::Allocation& alloc) {
  if (alloc.previous_allocation.empty())
    return nullptr;
  allocrunner::AllocRunner* prev = GetAllocRunner(alloc.previous_allocation);
  const model::TaskGroup* g = alloc.Group();
  if (prev == nullptr) {
    // Run on another node (or here, and forgotten): the servers say when it is done,
    // and its node serves its data.
    DROVER_LOG_INFO("client: alloc {}: previous alloc {} is not on this node; asking the servers",
                    alloc.id, alloc.previous_allocation);
    const uint64_t disk_mb =
        g->ephemeral_disk && g->ephemeral_disk->size_mb > 0 ? g->ephemeral_disk->size_mb : 300;
    allocwatcher::RemotePrevAlloc remote{
        .alloc_id = alloc.previous_allocation,
        .query =
            [rpc = &rpc_, node = node_.id, id = alloc.id](uint64_t index, common::Duration wait) {
              return rpc->GetPreviousAlloc(node, id, index, wait);
            },
        .fetcher = config_.snapshot_fetcher,
        .migrate = g->ephemeral_disk && g->ephemeral_disk->migrate,
        .max_data = disk_mb << 20};
    return allocwatcher::RemoteWatcher(std::move(remote), clock_, pool_);
  }
  const bool move_data =
      g->ephemeral_disk && (g->ephemeral_disk->sticky || g->ephemeral_disk->migrate);
  // A previous runner already garbage-collected has no data left to move.
  allocwatcher::LocalPrevAlloc local{.alloc_id = prev->id(),
                                     .listener = prev->broadcaster().Listen(),
                                     .alloc_dir = prev->alloc_dir().dir()};
  const bool gone = prev->destroyed() || collected_.contains(prev->id());
  return allocwatcher::LocalWatcher(std::move(local), move_data && !gone, pool_);
}

void Client::AllocStateUpdated(const allocrunner::ReportPtr& report) {
  const model::AllocClientUpdate& update = *report;
  // Every task's state; unchanged ones cost nothing (the state DB drops identical
  // writes before any transaction).
  for (const auto& [task, ts] : update.task_states) {
    Persist(update.id, [this, report, task = task]() {
      return db_->PutTaskState(report->id, task, report->task_states.at(task));
    });
  }
  if (model::IsClientTerminalStatus(update.client_status)) {
    if (GetAllocRunner(update.id) != nullptr && !collected_.contains(update.id))
      gc_queue_.MarkTerminal(update.id, clock_.Now());
  }
  if (auto ack = acknowledged_.find(update.id);
      ack != acknowledged_.end() && (ack->second == report || *ack->second == update)) {
    pending_updates_.erase(update.id);  // the servers have exactly this already
    return;
  }
  auto it = pending_updates_.find(update.id);
  const bool urgent =
      it == pending_updates_.end() || it->second->client_status != update.client_status;
  pending_updates_[update.id] = report;
  if (urgent)
    urgent_update_.Notify();
}

asio::awaitable<void> Client::SyncLoop() {
  while (!stop_->cancelled()) {
    // Batch: wait for a status change, then a short window for more to collect.
    auto r = co_await (urgent_update_.Wait() || stop_->Wait());
    if (r.index() == 1)
      break;
    co_await (clock_.Sleep(config_.sync_interval) || stop_->Wait());
    if (pending_updates_.empty())
      continue;
    std::vector<model::AllocClientUpdate> batch;
    for (auto& [id, u] : pending_updates_)
      batch.push_back(*u);
    auto sent = pending_updates_;
    pending_updates_.clear();
    ++batches_taken_;
    absl::Status s = co_await rpc_.UpdateAllocations(batch);
    if (!s.ok()) {
      DROVER_LOG_WARN("client: failed to update allocations: {}", s.ToString());
      // Re-queue what was not superseded meanwhile, and retry later.
      for (auto& [id, u] : sent)
        pending_updates_.try_emplace(id, std::move(u));
      ++batches_done_;
      PruneForgotten();
      co_await (clock_.Sleep(config_.retry_interval) || stop_->Wait());
      urgent_update_.Notify();
      continue;
    }
    for (auto& [id, u] : sent) {
      if (forgotten_.contains(id))
        continue;
      // Encoded on the state DB's writer: the report is immutable and shared.
      Persist(id, [this, id = id, u = u]() {
        state::StateDb::JsonMaker ack = [u] { return codec::ToJson(*u); };
        return db_->PutAllocRecord(id, state::AllocRecord::kAcknowledgedState, std::move(ack));
      });
      acknowledged_[id] = std::move(u);
    }
    ++batches_done_;
    PruneForgotten();
  }
}

void Client::PruneForgotten() {
  // An id is needed while its bucket may still be written: by its runner, or by the
  // acknowledgement of an update that is queued or in a batch taken before it was
  // forgotten. After that, keeping it would grow the set with every allocation the node
  // ever ran.
  for (auto it = forgotten_.begin(); it != forgotten_.end();) {
    const bool may_write = it->second > batches_done_ || pending_updates_.contains(it->first) ||
                           runners_.contains(it->first);
    it = may_write ? std::next(it) : forgotten_.erase(it);
  }
}

asio::awaitable<void> Client::GcLoop() {
  const std::filesystem::path root = config_.data_dir / "alloc";
  while (!stop_->cancelled()) {
    auto r = co_await (clock_.Sleep(config_.gc.interval) || stop_->Wait());
    if (r.index() == 1)
      break;
    // Destroy the oldest terminal allocations while the disk is too full.
    while (gc_queue_.size() > 0 && !stop_->cancelled()) {
      auto work = [root] { return StatDisk(root); };  // named: see Offload()
      auto usage = co_await common::Offload(pool_, std::move(work));
      if (!usage.ok()) {
        DROVER_LOG_WARN("client: gc: {}", usage.status().ToString());
        break;
      }
      if (usage->used_percent <= config_.gc.disk_usage_threshold &&
          usage->inodes_used_percent <= config_.gc.inode_usage_threshold) {
        break;
      }
      std::optional<std::string> victim =
          gc_queue_.PopOldest([this](const std::string& id) { return Collectable(id); });
      if (!victim)
        break;
      DROVER_LOG_INFO("client: gc: disk {:.1f}% / inodes {:.1f}% used; destroying alloc {}",
                      usage->used_percent, usage->inodes_used_percent, *victim);
      co_await DestroyRunner(*victim);
    }
  }
}

void Client::MakeRoomFor(size_t incoming) {
  size_t live = 0;
  for (const auto& [id, r] : runners_) {
    if (!r->destroyed() && !gc_queue_.Contains(id))
      ++live;
  }
  size_t kept_terminal = gc_queue_.size();
  while (kept_terminal > 0 &&
         live + kept_terminal + incoming > static_cast<size_t>(config_.gc.max_allocs)) {
    std::optional<std::string> victim =
        gc_queue_.PopOldest([this](const std::string& id) { return Collectable(id); });
    if (!victim)
      break;
    --kept_terminal;
    DROVER_LOG_INFO("client: gc: more than {} allocs; destroying alloc {}", config_.gc.max_allocs,
                    *victim);
    common::SpawnDetached(executor_, DestroyRunner(*victim), "gc alloc " + *victim);
  }
}

bool Client::Collectable(const std::string& alloc_id) const {
  // The servers must have taken its final status first: a destroyed runner sends
  // nothing, so a terminal status still queued (or in flight) would be lost and the
  // job would never finish. It waits for the next acknowledgement instead.
  if (pending_updates_.contains(alloc_id))
    return false;
  auto ack = acknowledged_.find(alloc_id);
  if (ack == acknowledged_.end() || !model::IsClientTerminalStatus(ack->second->client_status))
    return false;
  for (const auto& [id, r] : runners_) {
    if (!r->destroyed() && !r->prerun_done() && r->alloc()->previous_allocation == alloc_id)
      return false;
  }
  return true;
}

asio::awaitable<void> Client::DestroyRunner(std::string alloc_id) {
  // The kill's last state reports must not queue it for collection again.
  collected_.insert(alloc_id);
  if (allocrunner::AllocRunner* r = GetAllocRunner(alloc_id))
    co_await r->Destroy();
  co_await Forget(alloc_id);
}

asio::awaitable<absl::Status> Client::CollectAllocation(const std::string& alloc_id) {
  allocrunner::AllocRunner* r = GetAllocRunner(alloc_id);
  if (r == nullptr) {
    co_return absl::NotFoundError("Unknown allocation \"" + alloc_id + "\"");
  }
  if (!gc_queue_.Contains(alloc_id) && !collected_.contains(alloc_id)) {
    co_return absl::FailedPreconditionError("allocation " + alloc_id + " is not terminal");
  }
  gc_queue_.Remove(alloc_id);
  co_await DestroyRunner(alloc_id);
  co_return absl::OkStatus();
}

asio::awaitable<void> Client::CollectAll() {
  while (std::optional<std::string> victim =
             gc_queue_.PopOldest([this](const std::string& id) { return Collectable(id); })) {
    co_await DestroyRunner(*victim);
  }
}

HostStatsCollector& Client::host_stats() {
  if (!host_stats_) {
    double mhz = 0;
    if (auto it = node_.attributes.find("cpu.frequency"); it != node_.attributes.end())
      mhz = std::strtod(it->second.c_str(), nullptr);
    host_stats_ = std::make_unique<HostStatsCollector>(config_.data_dir / "alloc", mhz);
  }
  return *host_stats_;
}

allocrunner::AllocRunner* Client::GetAllocRunner(const std::string& alloc_id) {
  auto it = runners_.find(alloc_id);
  return it == runners_.end() ? nullptr : it->second.get();
}

asio::awaitable<void> Client::Shutdown() {
  shutting_down_ = true;
  stop_->Cancel();
  // Runners stop watching and leave their tasks running; their state is in the DB.
  for (auto& [id, r] : runners_)
    co_await r->Shutdown();
  while (loops_running_ > 0) {
    co_await loop_exited_.Wait();
  }
}

asio::awaitable<void> Client::ShutdownAndDestroy() {
  // Take no new work first: the watch loop stops and RunAllocs ignores late results.
  shutting_down_ = true;
  stop_->Cancel();
  // Destroy every runner concurrently (each waits its tasks' kill timeouts), then
  // wait for all of them. Runners stay in the map, so lookups by id stay valid.
  std::vector<std::string> ids;
  for (auto& [id, r] : runners_) {
    ids.push_back(id);
    common::SpawnDetached(executor_, r->Destroy(), "destroy alloc " + id);
  }
  for (const std::string& id : ids) {
    if (allocrunner::AllocRunner* r = GetAllocRunner(id))
      co_await r->Destroy();
    co_await Forget(id);  // nothing of it may be restored later
  }
  // Report the final task states before leaving.
  if (!pending_updates_.empty()) {
    std::vector<model::AllocClientUpdate> batch;
    for (auto& [id, u] : pending_updates_)
      batch.push_back(*u);
    pending_updates_.clear();
    co_await rpc_.UpdateAllocations(std::move(batch));
  }
  while (loops_running_ > 0) {
    co_await loop_exited_.Wait();
  }
}

}  // namespace drover::client
