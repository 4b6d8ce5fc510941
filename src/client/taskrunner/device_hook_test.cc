// The device hook: a task's allocated instances are reserved through their plugin and
// the reservation reaches the driver, on every start, also after an agent restart.
#include "client/taskrunner/device_hook.h"

#include <gtest/gtest.h>

#include "client/taskrunner/task_runner_fixture.h"

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::MakeAlloc;
using client::test::MockTask;

std::shared_ptr<model::Allocation> GpuAlloc(std::map<std::string, model::Value> config) {
  auto alloc = MakeAlloc({MockTask("train", std::move(config))}, "service",
                         {.attempts = 3, .interval = 1h, .delay = 1s, .mode = "fail"});
  alloc->allocated_resources.tasks["train"].devices = {
      {.vendor = "nvidia", .type = "gpu", .name = "T4", .device_ids = {"GPU-1"}},
      {.vendor = "acme", .type = "fpga", .name = "F1", .device_ids = {"F-0", "F-1"}}};
  return alloc;
}

class DeviceHookTest : public TaskRunnerTest {
 protected:
  DeviceHookTest() {
    reserve_devices_ = [this](model::AllocatedDeviceResource d)
        -> asio::awaitable<absl::StatusOr<devices::ContainerReservation>> {
      reserved_.push_back(d);
      if (!fail_.ok())
        co_return fail_;
      devices::ContainerReservation r;
      r.envs[d.vendor == "nvidia" ? "NVIDIA_VISIBLE_DEVICES" : "FPGA_IDS"] = d.device_ids[0];
      r.mounts.push_back({.task_path = "/dev-files/" + d.device_ids[0],
                          .host_path = "/devs/" + d.device_ids[0],
                          .read_only = true});
      if (d.vendor == "nvidia")
        r.devices.push_back({"/dev/nvidia1", "/dev/nvidia1", "rwm"});
      co_return r;
    };
  }
  void ExpectDevicesGiven(const drivers::TaskConfig& c) {
    EXPECT_EQ(c.env.at("NVIDIA_VISIBLE_DEVICES"), "GPU-1");
    EXPECT_EQ(c.env.at("FPGA_IDS"), "F-0");
    EXPECT_EQ(c.device_env, (std::map<std::string, std::string>{
                                {"FPGA_IDS", "F-0"}, {"NVIDIA_VISIBLE_DEVICES", "GPU-1"}}));
    // Both reservations' mounts, merged rather than the last one replacing the first.
    EXPECT_EQ(c.mounts,
              (std::vector<drivers::MountConfig>{{"/dev-files/GPU-1", "/devs/GPU-1", true},
                                                 {"/dev-files/F-0", "/devs/F-0", true}}));
    EXPECT_EQ(c.devices,
              (std::vector<drivers::DeviceConfig>{{"/dev/nvidia1", "/dev/nvidia1", "rwm"}}));
  }
  std::vector<model::AllocatedDeviceResource> reserved_;
  absl::Status fail_;
};

TEST_F(DeviceHookTest, EnvMountsAndDeviceNodesReachTheDriver) {
  auto tr = Make(GpuAlloc({{"run_for", "1h"}}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
  ASSERT_EQ(driver_.started_configs().size(), 1u);
  ExpectDevicesGiven(driver_.started_configs()[0]);
  ASSERT_EQ(reserved_.size(), 2u);
  EXPECT_EQ(reserved_[1].device_ids, (std::vector<std::string>{"F-0", "F-1"}));
}

TEST_F(DeviceHookTest, ATaskWithoutDevicesNeverReserves) {
  auto tr = Make(MakeAlloc({MockTask("web", {{"run_for", "1s"}})}, "batch"));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_TRUE(reserved_.empty());
  EXPECT_TRUE(driver_.started_configs()[0].device_env.empty());
  EXPECT_TRUE(tr->local_state().hooks.at("devices").prestart_done);
}

TEST_F(DeviceHookTest, AFailedReservationFailsTheTaskWithoutStartingIt) {
  fail_ = absl::NotFoundError("operation on unknown device(s)");
  auto tr = Make(GpuAlloc({{"run_for", "1s"}}));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_TRUE(tr->state().failed);
  bool said = false;
  for (const model::TaskEvent& e : tr->state().events) {
    if (e.display_message.find("failed to reserve device \"nvidia/gpu/T4\": operation on "
                               "unknown device(s)") != std::string::npos)
      said = true;
  }
  EXPECT_TRUE(said);
}

TEST_F(DeviceHookTest, TheReservationSurvivesAnAgentRestartAndLaterRestarts) {
  auto alloc = GpuAlloc({{"run_for", "1h"}});
  LocalState local;
  model::TaskState state;
  {
    auto tr = Make(alloc);
    Start(*tr);
    ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
    tr->Shutdown();
    ASSERT_TRUE(RunUntil([&] { return tr->done(); }));
    local = tr->local_state();
    state = tr->state();
  }
  ASSERT_EQ(reserved_.size(), 2u);
  // The new agent's plugins are not there (yet): the persisted reservation is used.
  fail_ = absl::UnavailableError("plugin not started");
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  ASSERT_TRUE(tr->Restart(model::TaskEvent("Restart Signaled", clock_.Now()), false).ok());
  ASSERT_TRUE(RunUntil([&] { return tr->running() && driver_.starts() == 2; }));
  ASSERT_EQ(driver_.started_configs().size(), 2u);
  ExpectDevicesGiven(driver_.started_configs()[1]);
  // The plugin was asked again at re-attach and at the restart (and could not answer):
  // the kept reservation served both times.
  EXPECT_EQ(reserved_.size(), 4u);
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

TEST_F(DeviceHookTest, ATransientFailureWithoutAKeptReservationIsRetried) {
  fail_ = absl::UnavailableError("device plugin 'gpu' has not reported its devices");
  auto tr = Make(GpuAlloc({{"run_for", "1h"}}));
  Start(*tr);
  // The restart policy retries (delay 1s); the plugin answers by then.
  ASSERT_TRUE(RunUntil([&] { return reserved_.size() >= 1; }));
  fail_ = absl::OkStatus();
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  EXPECT_EQ(tr->state().restarts, 1);
  ExpectDevicesGiven(driver_.started_configs().back());
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

TEST_F(DeviceHookTest, RequestsSharingNodesAndListsAreMerged) {
  reserve_devices_ = [](model::AllocatedDeviceResource d)
      -> asio::awaitable<absl::StatusOr<devices::ContainerReservation>> {
    devices::ContainerReservation r;
    r.envs["NVIDIA_VISIBLE_DEVICES"] = d.device_ids[0];
    r.devices = {{"/dev/nvidiactl", "/dev/nvidiactl", "rwm"},
                 {"/dev/" + d.device_ids[0], "/dev/" + d.device_ids[0], "rwm"}};
    co_return r;
  };
  auto alloc = MakeAlloc({MockTask("train", {{"run_for", "1h"}})});
  alloc->allocated_resources.tasks["train"].devices = {
      {.vendor = "nvidia", .type = "gpu", .name = "T4", .device_ids = {"g0"}},
      {.vendor = "nvidia", .type = "gpu", .name = "A100", .device_ids = {"g1"}}};
  auto tr = Make(alloc);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  const drivers::TaskConfig& c = driver_.started_configs()[0];
  EXPECT_EQ(c.env.at("NVIDIA_VISIBLE_DEVICES"), "g0,g1");
  EXPECT_EQ(c.devices,
            (std::vector<drivers::DeviceConfig>{{"/dev/nvidiactl", "/dev/nvidiactl", "rwm"},
                                                {"/dev/g0", "/dev/g0", "rwm"},
                                                {"/dev/g1", "/dev/g1", "rwm"}}));
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

TEST(DeviceReservationTest, RoundTripsAndRejectsGarbage) {
  devices::ContainerReservation r;
  r.envs = {{"A", "1"}};
  r.mounts = {{"/t", "/h", true}};
  r.devices = {{"/dev/x", "/dev/y", "rw"}};
  auto back = DecodeReservation(EncodeReservation(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_TRUE(absl::IsDataLoss(DecodeReservation("{").status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeReservation("{\"envs\": 3}").status()));
}

}  // namespace
}  // namespace drover::taskrunner
