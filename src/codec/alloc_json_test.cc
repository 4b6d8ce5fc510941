// Allocations, allocation stubs, task states and task events.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "codec/json_test_util.h"
#include "model/allocation.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using testutil::kSomeTimeNs;
using testutil::MustParse;

model::Job SmallJob() {
  model::Job job;
  job.region = "global";
  job.namespace_ = "default";
  job.id = "web";
  job.name = "web";
  job.type = "service";
  job.priority = 50;
  job.datacenters = {"dc1"};
  job.node_pool = "default";
  job.version = 3;
  model::TaskGroup g;
  g.name = "frontend";
  g.count = 1;
  g.restart_policy = model::RestartPolicy{2, minutes(30), seconds(15), "fail", false};
  model::Task t;
  t.name = "server";
  t.driver = "raw_exec";
  t.config = model::Value::Object{{"command", "/bin/sleep"}, {"args", model::Value::Array{"5"}}};
  t.resources.cpu = 250;
  t.resources.memory_mb = 128;
  t.kill_timeout = seconds(5);
  g.tasks = {t};
  job.task_groups = {g};
  return job;
}

// --- Allocations ---

model::TaskState SomeTaskState() {
  model::TaskState s;
  s.state = model::kTaskStateDead;
  s.failed = true;
  s.restarts = 2;
  s.last_restart = common::FromUnixNanos(kSomeTimeNs - 1000);
  s.started_at = common::FromUnixNanos(kSomeTimeNs - 5'000'000'000);
  s.finished_at = common::FromUnixNanos(kSomeTimeNs);
  model::TaskEvent received(model::kEventReceived, common::FromUnixNanos(kSomeTimeNs - 10));
  received.PopulateDisplayMessage();
  s.events.push_back(received);
  model::TaskEvent term(model::kEventTerminated, common::FromUnixNanos(kSomeTimeNs));
  term.SetExitCode(137).SetSignal(9).SetExitMessage("OOM").SetFailsTask();
  term.SetKillTimeout(seconds(5)).SetKillReason("r").SetKillError("e").SetRestartReason("rr");
  term.SetStartDelay(milliseconds(1500)).SetDriverError("d").SetSetupError("s");
  term.SetValidationError("v").SetFailedSibling("sib").SetTaskSignal("SIGHUP");
  term.SetTaskSignalReason("why");
  term.download_error = "dl";
  term.driver_message = "dm";
  term.generic_source = "gs";
  term.PopulateDisplayMessage();
  s.events.push_back(term);
  return s;
}

model::Allocation SomeAllocation() {
  model::Allocation a;
  a.id = "a1";
  a.namespace_ = "default";
  a.eval_id = "e1";
  a.name = "web.frontend[0]";
  a.node_id = "n1";
  a.node_name = "node-1";
  a.job_id = "web";
  a.job = std::make_shared<const model::Job>(SmallJob());
  a.task_group = "frontend";
  model::AllocatedTaskResources tr;
  tr.cpu_shares = 250;
  tr.memory_mb = 128;
  tr.memory_max_mb = 256;
  tr.devices = {{"nvidia", "gpu", "1080ti", {"GPU-1", "GPU-2"}}};
  a.allocated_resources.tasks["server"] = tr;
  a.allocated_resources.shared.disk_mb = 500;
  model::NetworkResource net;
  net.mode = "host";
  net.ip = "127.0.0.1";
  net.reserved_ports = {{"http", 8080, 80, "default"}};
  a.allocated_resources.shared.networks = {net};
  a.allocated_resources.shared.ports = {{"http", 8080, 80, "127.0.0.1"}};
  a.metrics.nodes_evaluated = 3;
  a.metrics.nodes_filtered = 1;
  a.metrics.nodes_available = 3;
  a.metrics.class_filtered = {{"gpu", 1}};
  a.metrics.constraint_filtered = {{"${attr.kernel.name} = linux", 1}};
  a.metrics.nodes_exhausted = 1;
  a.metrics.dimension_exhausted = {{"memory", 1}};
  a.metrics.coalesced_failures = 4;
  a.desired_status = model::kDesiredRun;
  a.desired_description = "placed";
  a.desired_transition.migrate = true;
  a.desired_transition.no_shutdown_delay = false;
  a.client_status = model::kClientFailed;
  a.client_description = "tasks failed";
  a.task_states["server"] = SomeTaskState();
  a.deployment_status =
      model::AllocDeploymentStatus{true, common::FromUnixNanos(kSomeTimeNs), true, 42};
  a.previous_allocation = "a0";
  a.next_allocation = "a2";
  a.followup_eval_id = "e2";
  a.create_index = 100;
  a.modify_index = 101;
  a.alloc_modify_index = 100;
  a.create_time = kSomeTimeNs - 100;
  a.modify_time = kSomeTimeNs;
  return a;
}

TEST(AllocJsonTest, FullObjectHasNomadShape) {
  const model::Allocation a = SomeAllocation();
  const Json j = ToJson(a);
  EXPECT_EQ(j["ID"], "a1");
  EXPECT_EQ(j["Namespace"], "default");
  EXPECT_EQ(j["EvalID"], "e1");
  EXPECT_EQ(j["Name"], "web.frontend[0]");
  EXPECT_EQ(j["NodeID"], "n1");
  EXPECT_EQ(j["NodeName"], "node-1");
  EXPECT_EQ(j["JobID"], "web");
  EXPECT_EQ(j["Job"], ToJson(*a.job));
  EXPECT_EQ(j["TaskGroup"], "frontend");
  const Json& task_res = j["AllocatedResources"]["Tasks"]["server"];
  EXPECT_EQ(task_res["Cpu"]["CpuShares"], 250);
  EXPECT_EQ(task_res["Memory"], Json({{"MemoryMB", 128}, {"MemoryMaxMB", 256}}));
  EXPECT_TRUE(task_res["Networks"].is_null());
  EXPECT_EQ(task_res["Devices"][0], Json({{"Vendor", "nvidia"},
                                          {"Type", "gpu"},
                                          {"Name", "1080ti"},
                                          {"DeviceIDs", {"GPU-1", "GPU-2"}}}));
  const Json& shared = j["AllocatedResources"]["Shared"];
  EXPECT_EQ(shared["DiskMB"], 500);
  EXPECT_EQ(shared["Networks"][0]["IP"], "127.0.0.1");
  EXPECT_EQ(shared["Ports"][0],
            Json({{"Label", "http"}, {"Value", 8080}, {"To", 80}, {"HostIP", "127.0.0.1"}}));
  const Json& m = j["Metrics"];
  EXPECT_EQ(m["NodesEvaluated"], 3);
  EXPECT_EQ(m["NodesFiltered"], 1);
  EXPECT_EQ(m["NodesAvailable"], Json::object());
  EXPECT_EQ(m["NodesInPool"], 3);
  EXPECT_EQ(m["ClassFiltered"], Json({{"gpu", 1}}));
  EXPECT_EQ(m["ConstraintFiltered"], Json({{"${attr.kernel.name} = linux", 1}}));
  EXPECT_EQ(m["NodesExhausted"], 1);
  EXPECT_EQ(m["DimensionExhausted"], Json({{"memory", 1}}));
  EXPECT_EQ(m["CoalescedFailures"], 4);
  EXPECT_EQ(j["DesiredStatus"], "run");
  EXPECT_EQ(j["DesiredDescription"], "placed");
  EXPECT_EQ(j["DesiredTransition"], Json({{"Migrate", true},
                                          {"Reschedule", nullptr},
                                          {"ForceReschedule", nullptr},
                                          {"NoShutdownDelay", false}}));
  EXPECT_EQ(j["ClientStatus"], "failed");
  EXPECT_EQ(j["ClientDescription"], "tasks failed");
  EXPECT_EQ(j["TaskStates"]["server"], ToJson(a.task_states.at("server")));
  EXPECT_EQ(j["DeploymentStatus"], Json({{"Healthy", true},
                                         {"Timestamp", "2026-08-21T12:00:05.123456789Z"},
                                         {"Canary", true},
                                         {"ModifyIndex", 42}}));
  EXPECT_EQ(j["PreviousAllocation"], "a0");
  EXPECT_EQ(j["NextAllocation"], "a2");
  EXPECT_EQ(j["FollowupEvalID"], "e2");
  EXPECT_EQ(j["DeploymentID"], "");
  EXPECT_EQ(j["PreemptedByAllocation"], "");
  for (const char* key : {"RescheduleTracker", "NetworkStatus", "PreemptedAllocations"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["CreateIndex"], 100);
  EXPECT_EQ(j["ModifyIndex"], 101);
  EXPECT_EQ(j["AllocModifyIndex"], 100);
  EXPECT_EQ(j["CreateTime"], kSomeTimeNs - 100);
  EXPECT_EQ(j["ModifyTime"], kSomeTimeNs);
}

TEST(AllocJsonTest, EmptyPartsAreNull) {
  model::Allocation a;
  a.id = "a";
  const Json j = ToJson(a);
  EXPECT_TRUE(j["Job"].is_null());
  EXPECT_TRUE(j["TaskStates"].is_null());
  EXPECT_TRUE(j["DeploymentStatus"].is_null());
  EXPECT_TRUE(j["Metrics"]["ClassFiltered"].is_null());
  EXPECT_EQ(j["AllocatedResources"]["Tasks"], Json::object());
  EXPECT_TRUE(j["AllocatedResources"]["Shared"]["Ports"].is_null());
  EXPECT_TRUE(j["DesiredTransition"]["Migrate"].is_null());

  model::Allocation healthless;
  healthless.deployment_status = model::AllocDeploymentStatus{};
  const Json d = ToJson(healthless)["DeploymentStatus"];
  EXPECT_TRUE(d["Healthy"].is_null());
  EXPECT_EQ(d["Timestamp"], "0001-01-01T00:00:00Z");
}

TEST(AllocJsonTest, RoundTripsThroughTheDecoder) {
  const model::Allocation a = SomeAllocation();
  absl::StatusOr<model::Allocation> back = AllocationFromJson(MustParse(Dump(ToJson(a))));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->job);
  EXPECT_EQ(*back->job, *a.job);
  EXPECT_EQ(back->allocated_resources, a.allocated_resources);
  EXPECT_EQ(back->metrics, a.metrics);
  EXPECT_EQ(back->desired_transition, a.desired_transition);
  EXPECT_EQ(back->task_states, a.task_states);
  EXPECT_EQ(back->deployment_status, a.deployment_status);
  EXPECT_EQ(ToJson(*back), ToJson(a));

  model::Allocation bare;
  back = AllocationFromJson(ToJson(bare));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->job);
  EXPECT_FALSE(back->deployment_status);
  EXPECT_EQ(ToJson(*back), ToJson(bare));
}

TEST(AllocJsonTest, TheRescheduleTrackerHasNomadShapeAndRoundTrips) {
  model::Allocation a;
  a.id = "new";
  a.previous_allocation = "old";
  a.reschedule_tracker =
      model::RescheduleTracker{.events = {{.reschedule_time = 1'700'000'000'000'000'000,
                                           .prev_alloc_id = "old",
                                           .prev_node_id = "n1",
                                           .delay = std::chrono::seconds(30)}}};
  const Json j = ToJson(a);
  const Json& e = j["RescheduleTracker"]["Events"][0];
  EXPECT_EQ(e["RescheduleTime"], 1'700'000'000'000'000'000);
  EXPECT_EQ(e["PrevAllocID"], "old");
  EXPECT_EQ(e["PrevNodeID"], "n1");
  EXPECT_EQ(e["Delay"], 30'000'000'000);
  absl::StatusOr<model::Allocation> back = AllocationFromJson(MustParse(Dump(j)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->reschedule_tracker, a.reschedule_tracker);
  EXPECT_TRUE(AllocStubJson(a)["RescheduleTracker"].is_object());
  EXPECT_TRUE(ToJson(model::Allocation{})["RescheduleTracker"].is_null());
}

TEST(AllocJsonTest, DecodesNomadMetricsWithPerDatacenterAvailability) {
  absl::StatusOr<model::Allocation> a = AllocationFromJson(MustParse(R"({
    "ID": "x", "Metrics": {"NodesEvaluated": 4, "NodesAvailable": {"dc1": 2, "dc2": 1}}
  })"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->metrics.nodes_evaluated, 4);
  EXPECT_EQ(a->metrics.nodes_available, 3);
  a = AllocationFromJson(MustParse(R"({"Metrics": {"NodesAvailable": 5}})"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->metrics.nodes_available, 5);
}

TEST(AllocJsonTest, DecodeErrorsNameThePath) {
  absl::StatusOr<model::Allocation> a =
      AllocationFromJson(MustParse(R"({"TaskStates": {"web": {"Events": [{"Time": "now"}]}}})"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "Allocation.TaskStates[\"web\"].Events[0].Time: expected number, got string");
  a = AllocationFromJson(MustParse(R"({"Job": {"TaskGroups": [{"Count": []}]}})"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "Allocation.Job.TaskGroups[0].Count: expected number, got array");
  a = AllocationFromJson(MustParse(R"({"DeploymentStatus": {"Timestamp": "soon"}})"));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(),
              HasSubstr("Allocation.DeploymentStatus.Timestamp: parsing time \"soon\""));
  a = AllocationFromJson(MustParse(R"({"AllocatedResources": {"Tasks": {"t": {"Cpu": 1}}}})"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "Allocation.AllocatedResources.Tasks[\"t\"].Cpu: expected object, got number");
  a = AllocationFromJson(MustParse("\"a\""));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "Allocation: expected object, got string");
}

TEST(AllocJsonTest, StubCarriesJobTypeAndVersion) {
  const model::Allocation a = SomeAllocation();
  Json stub = AllocStubJson(a);
  for (const char* key : {"ID",
                          "EvalID",
                          "Name",
                          "Namespace",
                          "NodeID",
                          "NodeName",
                          "JobID",
                          "JobType",
                          "JobVersion",
                          "TaskGroup",
                          "DesiredStatus",
                          "DesiredDescription",
                          "ClientStatus",
                          "ClientDescription",
                          "TaskStates",
                          "DeploymentStatus",
                          "FollowupEvalID",
                          "NextAllocation",
                          "RescheduleTracker",
                          "PreemptedAllocations",
                          "PreemptedByAllocation",
                          "CreateIndex",
                          "ModifyIndex",
                          "CreateTime",
                          "ModifyTime"}) {
    EXPECT_TRUE(stub.contains(key)) << key;
  }
  EXPECT_EQ(stub["JobType"], "service");
  EXPECT_EQ(stub["JobVersion"], 3);
  EXPECT_EQ(stub["TaskStates"]["server"], ToJson(a.task_states.at("server")));
  EXPECT_EQ(stub["DeploymentStatus"]["ModifyIndex"], 42);
  EXPECT_FALSE(stub.contains("Job"));
  EXPECT_TRUE(AllocStubJson(a, /*include_task_states=*/false)["TaskStates"].is_null());

  model::Allocation jobless;
  Json bare = AllocStubJson(jobless);
  EXPECT_EQ(bare["JobType"], "");
  EXPECT_EQ(bare["JobVersion"], 0);
  EXPECT_TRUE(bare["TaskStates"].is_null());
}

TEST(TaskStateJsonTest, EncodesTimesAndEveryEventField) {
  const model::TaskState s = SomeTaskState();
  const Json j = ToJson(s);
  EXPECT_EQ(j["State"], "dead");
  EXPECT_EQ(j["Failed"], true);
  EXPECT_EQ(j["Restarts"], 2);
  EXPECT_EQ(j["LastRestart"], "2026-08-21T12:00:05.123455789Z");
  EXPECT_EQ(j["StartedAt"], "2026-08-21T12:00:00.123456789Z");
  EXPECT_EQ(j["FinishedAt"], "2026-08-21T12:00:05.123456789Z");
  EXPECT_EQ(j["Paused"], "");
  EXPECT_TRUE(j["TaskHandle"].is_null());
  ASSERT_EQ(j["Events"].size(), 2u);
  EXPECT_EQ(j["Events"][0]["DisplayMessage"], "Task received by client");
  const Json& e = j["Events"][1];
  EXPECT_EQ(e["Type"], "Terminated");
  EXPECT_EQ(e["Time"], kSomeTimeNs);
  EXPECT_EQ(e["Message"], "OOM");
  EXPECT_EQ(e["DisplayMessage"], s.events[1].display_message);
  EXPECT_EQ(e["Details"]["exit_code"], "137");
  EXPECT_EQ(e["FailsTask"], true);
  EXPECT_EQ(e["RestartReason"], "rr");
  EXPECT_EQ(e["SetupError"], "s");
  EXPECT_EQ(e["DriverError"], "d");
  EXPECT_EQ(e["ExitCode"], 137);
  EXPECT_EQ(e["Signal"], 9);
  EXPECT_EQ(e["KillTimeout"], 5'000'000'000);
  EXPECT_EQ(e["KillError"], "e");
  EXPECT_EQ(e["KillReason"], "r");
  EXPECT_EQ(e["StartDelay"], 1'500'000'000);
  EXPECT_EQ(e["DownloadError"], "dl");
  EXPECT_EQ(e["ValidationError"], "v");
  EXPECT_EQ(e["DiskLimit"], 0);
  EXPECT_EQ(e["FailedSibling"], "sib");
  EXPECT_EQ(e["VaultError"], "");
  EXPECT_EQ(e["TaskSignalReason"], "why");
  EXPECT_EQ(e["TaskSignal"], "SIGHUP");
  EXPECT_EQ(e["DriverMessage"], "dm");
  EXPECT_EQ(e["GenericSource"], "gs");

  absl::StatusOr<model::TaskState> back = TaskStateFromJson(MustParse(Dump(j)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(TaskStateJsonTest, FreshStateHasEmptyEventsAndZeroTimes) {
  const Json j = ToJson(model::TaskState{});
  EXPECT_EQ(j["State"], "pending");
  EXPECT_EQ(j["Events"], Json::array());
  EXPECT_EQ(j["StartedAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(ToJson(model::TaskEvent{})["Details"], Json::object());
  absl::StatusOr<model::TaskState> back = TaskStateFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, model::TaskState{});
  absl::StatusOr<model::TaskState> bad = TaskStateFromJson(MustParse(R"({"Restarts": -1})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "TaskState.Restarts: value -1 out of range");
}

TEST(TaskStateJsonTest, KeepsOnlyTheLastTenEventsAPeerSends) {
  Json events = Json::array();
  for (int i = 0; i < 25; ++i)
    events.push_back(Json{{"Type", "Restarting"}, {"Time", i}});
  absl::StatusOr<model::TaskState> s = TaskStateFromJson(Json{{"Events", events}});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->events.size(), model::TaskState::kMaxEvents);
  EXPECT_EQ(s->events.front().time, 15);
  EXPECT_EQ(s->events.back().time, 24);
}

}  // namespace
}  // namespace drover::codec
