#include "client/client.h"

#include <mutex>

#include <gtest/gtest.h>

#include "client/client_test_util.h"
#include "client/fingerprint/fingerprint.h"
#include "common/event.h"
#include "common/mounts.h"
#include "drivers/mock/mock_driver.h"
#include "state/kv_backend.h"
#include "testing/test_util.h"

namespace drover::client {
namespace {

using namespace std::chrono_literals;                     // NOLINT
using namespace asio::experimental::awaitable_operators;  // NOLINT

// A scripted server: tests set the node's allocations; updates are recorded.
class FakeRpc final : public ServerRpc {
 public:
  explicit FakeRpc(asio::any_io_executor ex) : changed_(ex) {}

  asio::awaitable<absl::StatusOr<common::Duration>> RegisterNode(model::Node node) override {
    if (fail_registrations > 0) {
      --fail_registrations;
      ++failed_registrations;
      co_return absl::UnavailableError("no leader");
    }
    registered.push_back(node);
    co_return ttl;
  }
  asio::awaitable<absl::StatusOr<common::Duration>> Heartbeat(std::string) override {
    ++heartbeats;
    co_return ttl;
  }
  asio::awaitable<absl::StatusOr<NodeAllocations>> GetNodeAllocations(std::string, uint64_t min,
                                                                      common::Duration) override {
    while (index_ <= min)
      co_await changed_.Wait();
    co_return NodeAllocations{allocs_, index_};
  }
  asio::awaitable<absl::Status> UpdateAllocations(
      std::vector<model::AllocClientUpdate> updates) override {
    if (fail_updates) {
      ++failed_updates;
      co_return absl::UnavailableError("no leader");
    }
    for (auto& u : updates) {
      latest[u.id] = u;
      ++updates_of[u.id];
    }
    co_return absl::OkStatus();
  }

  asio::awaitable<absl::Status> EmitNodeEvents(std::string,
                                               std::vector<model::NodeEvent> got) override {
    if (fail_events > 0) {
      --fail_events;
      co_return absl::UnavailableError("no leader");
    }
    if (refuse_events > 0) {
      --refuse_events;
      ++refused_events;
      co_return absl::InvalidArgumentError("node event message longer than 1024 bytes");
    }
    events.insert(events.end(), got.begin(), got.end());
    co_return absl::OkStatus();
  }

  asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> GetPreviousAlloc(
      std::string, std::string alloc_id, uint64_t, common::Duration) override {
    auto it = previous.find(alloc_id);
    if (it == previous.end())
      co_return absl::PermissionDeniedError("allocation " + alloc_id + " is not on the node");
    co_return it->second;
  }

  void SetAllocs(std::vector<std::shared_ptr<const model::Allocation>> allocs) {
    allocs_ = std::move(allocs);
    ++index_;
    changed_.Notify();
  }

  common::Duration ttl = std::chrono::seconds(10);
  std::vector<model::Node> registered;
  int fail_registrations = 0;  // the next this many fail
  int failed_registrations = 0;
  int heartbeats = 0;
  std::vector<model::NodeEvent> events;
  int fail_events = 0;    // the next this many calls fail
  int refuse_events = 0;  // the next this many calls are refused as bad input
  int refused_events = 0;
  bool fail_updates = false;  // UpdateAllocations fails while set
  int failed_updates = 0;
  std::map<std::string, model::AllocClientUpdate> latest;
  std::map<std::string, int> updates_of;  // updates received per alloc
  std::map<std::string, absl::StatusOr<model::PrevAllocInfo>> previous;  // by new alloc

 private:
  common::Notifier changed_;
  std::vector<std::shared_ptr<const model::Allocation>> allocs_;
  uint64_t index_ = 1;
};

// One GPU whose health the test sets.
class OneGpu final : public devices::DevicePlugin {
 public:
  std::string Name() const override { return "gpu"; }
  absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() override {
    std::lock_guard lock(mu_);
    model::NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = "T4"};
    g.instances.push_back({.id = "GPU-0", .healthy = healthy_});
    return std::vector{g};
  }
  absl::StatusOr<devices::ContainerReservation> Reserve(const std::vector<std::string>&) override {
    return devices::ContainerReservation{};
  }
  absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() override {
    return std::vector<model::DeviceGroupStats>{};
  }
  void SetHealthy(bool healthy) {
    std::lock_guard lock(mu_);
    healthy_ = healthy;
  }

 private:
  std::mutex mu_;
  bool healthy_ = true;
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() { client_ = NewClient(); }
  std::unique_ptr<Client> NewClient() {
    ClientConfig c;
    c.data_dir = dir_.path();
    c.node_name = "test-node";
    c.dev_mode = true;
    c.state_db = db_.get();
    c.device_manager = devices_.get();
    c.gc.max_allocs = max_allocs_;
    return std::make_unique<Client>(
        io_.get_executor(), pool_, clock_, rpc_,
        std::map<std::string, drivers::Driver*>{{"mock_driver", &driver_}}, c);
  }
  // The agent goes away leaving its tasks running (Client::Shutdown); the client is
  // kept until the end of the test, as its coroutines may still be unwinding.
  void ShutDownClient() {
    ASSERT_TRUE(RunToCompletion(client_->Shutdown()));
    retired_.push_back(std::move(client_));
  }
  ~ClientTest() override {
    EXPECT_TRUE(RunToCompletion(client_->ShutdownAndDestroy()));
    if (devices_ != nullptr) {
      EXPECT_TRUE(RunToCompletion(devices_->Stop()));
    }
    pool_.join();
  }
  // Runs `work` on the loop until it completes.
  bool RunToCompletion(asio::awaitable<void> work) {
    bool done = false;
    asio::co_spawn(
        io_,
        [](asio::awaitable<void> w, bool* d) -> asio::awaitable<void> {
          co_await std::move(w);
          *d = true;
        }(std::move(work), &done),
        asio::detached);
    return RunUntil([&] { return done; });
  }
  // Replaces the (unstarted) client with one whose node has `plugin`'s devices.
  void UseDevices(devices::DevicePluginPtr plugin) {
    devices_ = std::make_unique<devices::DeviceManager>(
        io_.get_executor(), clock_, std::vector<devices::ConfiguredPlugin>{{.plugin = plugin}},
        devices::DeviceManagerConfig{.fingerprint_period = 5s, .call_timeout = 1h});
    devices_->Start();
    retired_.push_back(std::move(client_));
    client_ = NewClient();
  }
  bool RunUntil(const std::function<bool()>& pred) {
    return testing::RunWithFakeClock(io_, clock_, pred);
  }
  void StartClient() {
    std::optional<absl::Status> started;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { started = co_await client_->Start(); },
        asio::detached);
    ASSERT_TRUE(RunUntil([&] { return started.has_value(); }));
    ASSERT_TRUE(started->ok()) << *started;
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  drivers::MockDriver driver_{io_.get_executor(), clock_};
  testing::TempDir dir_;
  FakeRpc rpc_{io_.get_executor()};
  std::unique_ptr<state::StateDb> db_ = *state::NewStateDb(state::NewMemoryBackend());
  std::unique_ptr<devices::DeviceManager> devices_;  // outlives the clients
  int max_allocs_ = 50;                              // for clients made after a test sets it
  std::unique_ptr<Client> client_;
  std::vector<std::unique_ptr<Client>> retired_;  // shut down; destroyed last
};

TEST_F(ClientTest, RegistersFingerprintedNodeWithDrivers) {
  StartClient();
  ASSERT_EQ(rpc_.registered.size(), 1u);
  const model::Node& n = rpc_.registered[0];
  EXPECT_EQ(n.name, "test-node");
  EXPECT_TRUE(n.drivers.at("mock_driver").detected);
  EXPECT_EQ(n.attributes.at("driver.mock_driver"), "1");
}

TEST_F(ClientTest, RunsAddedAllocsAndReportsStatus) {
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "10s"}})}, "batch");
  alloc->node_id = client_->node().id;
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] {
    auto it = rpc_.latest.find(alloc->id);
    return it != rpc_.latest.end() && it->second.client_status == "complete";
  }));
  EXPECT_EQ(rpc_.latest[alloc->id].task_states.at("t").state, "dead");
  EXPECT_EQ(driver_.starts(), 1);
}

TEST_F(ClientTest, StopUpdateAndRemovalDestroyTheAlloc) {
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "running"; }));
  auto stopped = std::make_shared<model::Allocation>(*alloc);
  stopped->desired_status = "stop";
  stopped->alloc_modify_index = alloc->alloc_modify_index + 1;
  rpc_.SetAllocs({stopped});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "complete"; }));
  auto* runner = client_->GetAllocRunner(alloc->id);
  ASSERT_NE(runner, nullptr);
  const auto dir = runner->alloc_dir().dir();
  EXPECT_TRUE(std::filesystem::exists(dir));
  rpc_.SetAllocs({});
  ASSERT_TRUE(RunUntil([&] { return client_->GetAllocRunner(alloc->id) == nullptr; }));
  ASSERT_TRUE(RunUntil([&] { return !std::filesystem::exists(dir); }));
}

// The ids of removed allocations (kept so that a late write cannot revive their state)
// are let go once nothing can write them: a node does not remember every allocation it
// ever ran.
TEST_F(ClientTest, RemovedAllocationsAreNotRememberedForever) {
  StartClient();
  for (int i = 0; i < 3; ++i) {
    auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1s"}})}, "batch");
    alloc->id = "a1b2c3d4-0000-4000-8000-00000000010" + std::to_string(i);
    rpc_.SetAllocs({alloc});
    ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "complete"; }));
    rpc_.SetAllocs({});
    ASSERT_TRUE(RunUntil([&] { return client_->GetAllocRunner(alloc->id) == nullptr; }));
  }
  // The next updates (another allocation's) let the forgotten ones go; without them a
  // few may wait (the last batches may have been taken before they were forgotten).
  auto next = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  rpc_.SetAllocs({next});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[next->id].client_status == "running"; }));
  ASSERT_TRUE(RunUntil([&] { return client_->num_forgotten() == 0; }));
}

// A terminal allocation is not collected (to make room for new ones) before the
// servers have taken its final status: destroyed, it would never send it.
TEST_F(ClientTest, TheGcKeepsAnAllocationUntilTheServersHaveItsFinalStatus) {
  max_allocs_ = 1;
  retired_.push_back(std::move(client_));
  client_ = NewClient();
  StartClient();
  auto first = test::MakeAlloc({test::MockTask("t", {{"run_for", "1s"}})}, "batch");
  rpc_.fail_updates = true;
  rpc_.SetAllocs({first});
  ASSERT_TRUE(RunUntil([&] {
    auto* r = client_->GetAllocRunner(first->id);
    return r != nullptr && r->ClientUpdate().client_status == "complete" && rpc_.failed_updates > 0;
  }));
  // A second allocation arrives while the first's status cannot be delivered.
  auto second = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  second->id = "a1b2c3d4-0000-4000-8000-000000000002";
  rpc_.SetAllocs({first, second});
  ASSERT_TRUE(RunUntil([&] { return driver_.starts() == 2; }));
  auto* kept = client_->GetAllocRunner(first->id);
  ASSERT_NE(kept, nullptr);
  EXPECT_FALSE(kept->destroyed());
  // Once the servers have it, the next allocation makes the GC take it.
  rpc_.fail_updates = false;
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[first->id].client_status == "complete"; }));
  auto third = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  third->id = "a1b2c3d4-0000-4000-8000-000000000003";
  rpc_.SetAllocs({first, second, third});
  ASSERT_TRUE(RunUntil([&] {
    auto* r = client_->GetAllocRunner(first->id);
    return r == nullptr || r->destroyed();
  }));
  EXPECT_EQ(rpc_.latest[first->id].client_status, "complete");
}

TEST_F(ClientTest, ARestartedClientRestoresItsAllocationsWithoutRestartingTasks) {
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  alloc->node_id = client_->node().id;
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "running"; }));
  // What a restarted agent needs is persisted: the alloc, the task's state and handle.
  ASSERT_TRUE(RunUntil([&] {
    auto st = db_->GetTaskRunnerState(alloc->id, "t");
    return st.ok() && st->task_state && st->task_state->state == "running" && st->local_state &&
           st->local_state->contains("TaskHandle") && !(*st->local_state)["TaskHandle"].is_null();
  }));
  ASSERT_EQ(db_->GetAllAllocations()->allocs.size(), 1u);
  // One restart before the agent goes away: the restored runner carries it on.
  ASSERT_TRUE(client_->GetAllocRunner(alloc->id)->RestartTask("t", "test restart").ok());
  ASSERT_TRUE(RunUntil([&] {
    const auto& u = rpc_.latest[alloc->id];
    return u.task_states.contains("t") && u.task_states.at("t").restarts == 1 &&
           u.task_states.at("t").state == "running";
  }));
  ASSERT_TRUE(RunUntil([&] {
    auto st = db_->GetTaskRunnerState(alloc->id, "t");
    return st.ok() && st->task_state && st->task_state->restarts == 1 &&
           st->task_state->state == "running";
  }));
  // Its health is decided before the restart too, and the acknowledgement of the last
  // update sent is on disk (written after the servers answered, like every record).
  ASSERT_TRUE(RunUntil([&] {
    auto ack = db_->GetAllocRecord(alloc->id, state::AllocRecord::kAcknowledgedState);
    return ack.ok() && ack->has_value() && (**ack).contains("DeploymentStatus") &&
           (**ack)["DeploymentStatus"].is_object() &&
           **ack == codec::ToJson(rpc_.latest[alloc->id]);
  }));
  const std::vector<std::string> events_before =
      test::EventTypes(rpc_.latest[alloc->id].task_states.at("t"));

  // The agent goes away, leaving the task running; another one starts on the same DB.
  ShutDownClient();
  const int updates = rpc_.updates_of[alloc->id];
  client_ = NewClient();
  StartClient();
  allocrunner::AllocRunner* restored = client_->GetAllocRunner(alloc->id);
  ASSERT_NE(restored, nullptr);
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "running"; }));
  EXPECT_EQ(driver_.starts(), 2);  // the first start and the test's restart: re-attached
  const model::TaskState& ts = restored->task_runner("t")->state();
  EXPECT_EQ(ts.restarts, 1);
  EXPECT_EQ(test::EventTypes(ts), events_before);
  EXPECT_EQ(ts.events.back().type, model::kEventStarted);
  // The servers acknowledged exactly this state before the restart: it is not sent
  // again (a node restoring many unchanged allocations sends nothing).
  EXPECT_TRUE(db_->GetAllocRecord(alloc->id, state::AllocRecord::kAcknowledgedState)->has_value());
  const common::Time later = clock_.Now() + std::chrono::seconds(30);
  ASSERT_TRUE(RunUntil([&] { return clock_.Now() >= later; }));
  EXPECT_EQ(rpc_.updates_of[alloc->id], updates);

  // Once the servers no longer want it, its records go with it.
  rpc_.SetAllocs({});
  ASSERT_TRUE(RunUntil([&] { return db_->GetAllAllocations()->allocs.empty(); }));
  EXPECT_FALSE(db_->GetTaskRunnerState(alloc->id, "t")->task_state);
}

TEST_F(ClientTest, AFailingStateDbDoesNotStopTheClient) {
  // A full disk: every write fails; the allocation runs on in-memory state and its
  // status still reaches the servers.
  db_ = *state::NewFailingStateDb(absl::ResourceExhaustedError("no space left on device"));
  client_ = NewClient();
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  alloc->node_id = client_->node().id;
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "running"; }));
  EXPECT_EQ(driver_.starts(), 1);
  EXPECT_TRUE(db_->GetAllAllocations()->allocs.empty());
}

TEST_F(ClientTest, AnAllocationThatCannotBeRestoredFailsAndIsNotRunAgain) {
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  alloc->node_id = client_->node().id;
  rpc_.SetAllocs({alloc});
  std::string task_id;
  ASSERT_TRUE(RunUntil([&] {
    auto st = db_->GetTaskRunnerState(alloc->id, "t");
    if (!st.ok() || !st->local_state || !st->local_state->contains("TaskHandle") ||
        (*st->local_state)["TaskHandle"].is_null())
      return false;
    task_id = (*st->local_state)["TaskHandle"]["TaskID"];
    return st->task_state && st->task_state->state == "running";
  }));
  ShutDownClient();
  // Its directory is gone (ephemeral storage lost): nothing can be re-attached to it.
  ASSERT_TRUE(common::UnmountUnder(dir_.path() / "alloc" / alloc->id).ok());
  std::filesystem::remove_all(dir_.path() / "alloc" / alloc->id);
  client_ = NewClient();
  StartClient();
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "failed"; }));
  EXPECT_NE(rpc_.latest[alloc->id].client_description.find("Failed to restore allocation"),
            std::string::npos);
  ASSERT_TRUE(RunUntil([&] { return db_->GetAllAllocations()->allocs.empty(); }));
  EXPECT_EQ(driver_.starts(), 1);  // the servers' list does not start it again
  // Like Nomad, the agent leaves the task it could not re-attach to alone; the test
  // ends it (its simulated run would otherwise outlive the fake clock).
  ASSERT_TRUE(driver_.DestroyTask(task_id, true).ok());
  ASSERT_TRUE(RunUntil([&] { return absl::IsNotFound(driver_.InspectTask(task_id).status()); }));
}

// The agent stopped while the GC collected a finished allocation: its directory is gone
// but its record is not. The next agent finishes the collection; the servers keep the
// status they acknowledged (not "failed to restore", which would reschedule it).
TEST_F(ClientTest, AnAllocationCollectedWhenTheAgentStoppedIsForgottenNotFailed) {
  StartClient();
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1s"}})}, "batch");
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] {
    auto ack = db_->GetAllocRecord(alloc->id, state::AllocRecord::kAcknowledgedState);
    return rpc_.latest[alloc->id].client_status == "complete" && ack.ok() && ack->has_value() &&
           (**ack)["ClientStatus"] == "complete";
  }));
  const int updates = rpc_.updates_of[alloc->id];
  ShutDownClient();
  ASSERT_TRUE(common::UnmountUnder(dir_.path() / "alloc" / alloc->id).ok());
  std::filesystem::remove_all(dir_.path() / "alloc" / alloc->id);
  client_ = NewClient();
  StartClient();
  ASSERT_TRUE(RunUntil([&] { return db_->GetAllAllocations()->allocs.empty(); }));
  EXPECT_EQ(rpc_.latest[alloc->id].client_status, "complete");
  EXPECT_EQ(rpc_.updates_of[alloc->id], updates);  // nothing sent about it
  EXPECT_EQ(driver_.starts(), 1);
}

TEST_F(ClientTest, AnAllocationWhoseTasksNeverRanIsNotRestoredButRunsWhenSentAgain) {
  auto alloc = test::MakeAlloc({test::MockTask("t", {{"run_for", "1h"}})});
  bool put = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        (void)co_await db_->PutAllocation(alloc);
        put = true;
      },
      asio::detached);
  ASSERT_TRUE(RunUntil([&] { return put; }));
  StartClient();
  EXPECT_EQ(client_->GetAllocRunner(alloc->id), nullptr);
  EXPECT_TRUE(db_->GetAllAllocations()->allocs.empty());
  // The servers still want it: it runs, and what it does is recorded as for any other
  // (forgetting it at restore must not keep its later writes out of the DB).
  rpc_.SetAllocs({alloc});
  ASSERT_TRUE(RunUntil([&] { return rpc_.latest[alloc->id].client_status == "running"; }));
  ASSERT_TRUE(RunUntil([&] {
    auto st = db_->GetTaskRunnerState(alloc->id, "t");
    return st.ok() && st->task_state && st->task_state->state == "running";
  }));
  ASSERT_TRUE(RunUntil([&] {
    auto ack = db_->GetAllocRecord(alloc->id, state::AllocRecord::kAcknowledgedState);
    return ack.ok() && ack->has_value();
  }));
}

TEST_F(ClientTest, HeartbeatsPeriodically) {
  StartClient();
  ASSERT_TRUE(RunUntil([&] { return rpc_.heartbeats >= 3; }));
  EXPECT_EQ(rpc_.registered.size(), 1u);  // nothing changed: no re-registration
}

TEST_F(ClientTest, ADriverHealthChangeReachesTheServersWithTheNextHeartbeat) {
  StartClient();
  driver_.SetHealth(false, "supervisor unavailable: gone");
  ASSERT_TRUE(RunUntil([&] { return rpc_.registered.size() == 2; }));
  const model::DriverInfo& info = rpc_.registered[1].drivers.at("mock_driver");
  EXPECT_FALSE(info.healthy);
  EXPECT_EQ(info.health_description, "supervisor unavailable: gone");
  EXPECT_GE(info.update_time, rpc_.registered[0].drivers.at("mock_driver").update_time);
  EXPECT_EQ(client_->node().drivers.at("mock_driver").healthy, false);
  // Operators see it as a node event.
  ASSERT_TRUE(RunUntil([&] { return rpc_.events.size() == 1; }));
  EXPECT_EQ(rpc_.events[0].message, "supervisor unavailable: gone");
  EXPECT_EQ(rpc_.events[0].subsystem, "Driver");
  EXPECT_EQ(rpc_.events[0].details.at("driver"), "mock_driver");
}

// Events the servers did not take are sent again, and the driver coming back is one
// more.
TEST_F(ClientTest, NodeEventsTheServersDidNotTakeAreSentAgain) {
  StartClient();
  rpc_.fail_events = 1;
  driver_.SetHealth(false, "supervisor unavailable: gone");
  ASSERT_TRUE(RunUntil([&] { return rpc_.events.size() == 1; }));
  EXPECT_EQ(rpc_.fail_events, 0);
  driver_.SetHealth(true, "");
  ASSERT_TRUE(RunUntil([&] { return rpc_.events.size() == 2; }));
  EXPECT_EQ(rpc_.events[1].message, "Driver mock_driver is healthy");
}

// Events the servers refuse as bad input are dropped, not sent forever; a message is
// plain ASCII within the servers' bound.
TEST_F(ClientTest, NodeEventsTheServersRefuseAreDropped) {
  StartClient();
  rpc_.refuse_events = 1;
  driver_.SetHealth(false, "caf\xc3\xa9 " + std::string(2000, 'x'));
  ASSERT_TRUE(RunUntil([&] { return rpc_.refused_events == 1; }));
  driver_.SetHealth(true, "");
  ASSERT_TRUE(RunUntil([&] { return rpc_.events.size() == 1; }));
  EXPECT_EQ(rpc_.events[0].message, "Driver mock_driver is healthy");
  const auto events = fingerprint::DriverHealthEvents(
      {{"d", model::DriverInfo{.detected = true, .healthy = true}}},
      {{"d", model::DriverInfo{.detected = true,
                               .healthy = false,
                               .health_description = "caf\xc3\xa9 " + std::string(2000, 'x')}}},
      common::Time{});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message.size(), model::kMaxNodeEventMessageBytes);
  EXPECT_EQ(events[0].message.substr(0, 6), "caf?? ");
}

// The same for a device change, which the client sends at once (DeviceWatch).
TEST_F(ClientTest, ADeviceChangeTheServersDidNotTakeIsSentWithTheNextHeartbeat) {
  auto gpu = std::make_shared<OneGpu>();
  UseDevices(gpu);
  StartClient();
  ASSERT_EQ(rpc_.registered.size(), 1u);
  ASSERT_EQ(rpc_.registered[0].node_resources.devices.size(), 1u);
  EXPECT_TRUE(rpc_.registered[0].node_resources.devices[0].instances[0].healthy);
  rpc_.fail_registrations = 1;
  gpu->SetHealthy(false);
  ASSERT_TRUE(RunUntil([&] { return rpc_.failed_registrations == 1; }));
  const int heartbeats = rpc_.heartbeats;
  ASSERT_TRUE(RunUntil([&] { return rpc_.registered.size() == 2; }));
  EXPECT_EQ(rpc_.heartbeats, heartbeats);  // the heartbeat registered instead
  EXPECT_FALSE(rpc_.registered[1].node_resources.devices[0].instances[0].healthy);
}

// A change the servers did not accept is not forgotten: the next heartbeat carries it.
TEST_F(ClientTest, ANodeUpdateThatFailedIsRetriedWithTheNextHeartbeat) {
  StartClient();
  rpc_.fail_registrations = 1;
  driver_.SetHealth(false, "supervisor unavailable: gone");
  ASSERT_TRUE(RunUntil([&] { return rpc_.failed_registrations == 1; }));
  ASSERT_TRUE(RunUntil([&] { return rpc_.registered.size() == 2; }));
  EXPECT_FALSE(rpc_.registered[1].drivers.at("mock_driver").healthy);
  // Accepted: back to plain heartbeats.
  const int heartbeats = rpc_.heartbeats;
  ASSERT_TRUE(RunUntil([&] { return rpc_.heartbeats >= heartbeats + 2; }));
  EXPECT_EQ(rpc_.registered.size(), 2u);
}

}  // namespace
// The TTL the servers answer with sets the pace: here 3 s, instead of the 10 s the
// client starts with.
TEST_F(ClientTest, HeartbeatsFollowTheTtlTheServersGive) {
  rpc_.ttl = 3s;
  StartClient();
  const common::Time start = clock_.Now();
  ASSERT_TRUE(RunUntil([&] { return rpc_.heartbeats >= 3; }));
  EXPECT_EQ(clock_.Now() - start, 9s);
}

// A node whose servers are all unreachable when its agent starts still starts, and
// registers as soon as one answers.
TEST_F(ClientTest, StartsWithoutAServerAndRegistersWhenOneAnswers) {
  rpc_.fail_registrations = 2;
  StartClient();
  EXPECT_TRUE(rpc_.registered.empty());
  ASSERT_TRUE(RunUntil([&] { return rpc_.registered.size() == 1; }));
  EXPECT_EQ(rpc_.failed_registrations, 2);
}

}  // namespace drover::client
