// Jobs, job list stubs and job summaries.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "codec/json_test_util.h"
#include "model/evaluation.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using testutil::kSomeTimeNs;
using testutil::MustParse;

model::Job RichJob() {
  model::Job job;
  job.region = "global";
  job.namespace_ = "default";
  job.id = "web";
  job.name = "web";
  job.type = "service";
  job.priority = 70;
  job.all_at_once = true;
  job.datacenters = {"dc1", "dc2"};
  job.node_pool = "default";
  job.constraints = {{"${attr.kernel.name}", "linux", "="}};
  job.meta = {{"owner", "ops"}};
  job.parent_id = "parent";
  job.dispatched = true;
  job.payload = std::string("\x00\x01hello\xff", 8);
  job.status = "running";
  job.status_description = "ok";
  job.stable = true;
  job.version = 3;
  job.submit_time = kSomeTimeNs;
  job.create_index = 10;
  job.modify_index = 20;
  job.job_modify_index = 15;

  model::TaskGroup g;
  g.name = "frontend";
  g.count = 2;
  g.constraints = {{"${node.class}", "", "distinct_hosts"}};
  g.restart_policy = model::RestartPolicy{2, minutes(30), seconds(15), "fail", true};
  g.reschedule_policy =
      model::ReschedulePolicy{0, seconds(0), seconds(30), "exponential", hours(1), true};
  g.ephemeral_disk = model::EphemeralDisk{true, true, 500};
  model::NetworkResource gnet;
  gnet.mode = "bridge";
  gnet.mbits = 10;
  gnet.reserved_ports = {{"http", 8080, 80, "default"}};
  gnet.dynamic_ports = {{"admin", 0, 9000, ""}};
  g.networks = {gnet};
  g.meta = {{"tier", "front"}};
  g.shutdown_delay = seconds(7);
  g.max_client_disconnect = seconds(600);

  model::Task t;
  t.name = "server";
  t.driver = "raw_exec";
  t.user = "nobody";
  t.lifecycle = model::Lifecycle{"prestart", true};
  t.config = model::Value::Object{{"command", "/bin/sleep"},
                                  {"args", model::Value::Array{"10", 3, 2.5, true, nullptr}},
                                  {"nested", model::Value::Object{{"k", int64_t{1} << 40}}}};
  t.constraints = {{"${attr.os.name}", "ubuntu", "!="}};
  t.env = {{"PORT", "8080"}};
  t.resources.cpu = 250;
  t.resources.cores = 0;
  t.resources.memory_mb = 128;
  t.resources.memory_max_mb = 256;
  t.resources.disk_mb = 0;
  model::NetworkResource tnet;
  tnet.ip = "10.0.0.1";
  tnet.cidr = "10.0.0.0/8";
  tnet.device = "eth0";
  t.resources.networks = {tnet};
  t.resources.devices = {{"nvidia/gpu", 2, {{"${device.attr.memory}", "4 GiB", ">="}}}};
  t.restart_policy = model::RestartPolicy{1, minutes(5), seconds(1), "delay", false};
  t.meta = {{"m", "v"}};
  t.kill_timeout = seconds(9);
  t.log_config = model::LogConfig{3, 4, true};
  t.dispatch_payload = model::DispatchPayloadConfig{"input.txt"};
  t.leader = true;
  t.shutdown_delay = seconds(2);
  t.kill_signal = "SIGTERM";
  g.tasks = {t};

  model::Task sidecar;
  sidecar.name = "log-shipper";
  sidecar.driver = "docker";
  g.tasks.push_back(sidecar);
  job.task_groups = {g};
  return job;
}

// --- Jobs ---

TEST(JobJsonTest, RoundTripsEveryField) {
  const model::Job job = RichJob();
  absl::StatusOr<model::Job> back = JobFromJson(ToJson(job));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, job);
  // And through text.
  absl::StatusOr<model::Job> from_text = JobFromJson(MustParse(Dump(ToJson(job), true)));
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  EXPECT_EQ(*from_text, job);
}

TEST(JobJsonTest, UsesNomadFieldNamesAndEncodings) {
  const Json j = ToJson(RichJob());
  for (const char* key :
       {"Region",    "Namespace",   "ID",         "Name",        "Type",        "Priority",
        "AllAtOnce", "Datacenters", "NodePool",   "Constraints", "TaskGroups",  "Meta",
        "Stop",      "ParentID",    "Dispatched", "Payload",     "Status",      "StatusDescription",
        "Stable",    "Version",     "SubmitTime", "CreateIndex", "ModifyIndex", "JobModifyIndex"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key :
       {"Affinities", "Spreads", "Update", "Periodic", "ParameterizedJob", "Reschedule", "Migrate",
        "Multiregion", "UI", "ConsulNamespace", "VaultNamespace", "NomadTokenID",
        "DispatchIdempotencyToken", "VersionTag"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["Payload"], "AAFoZWxsb/8=");
  EXPECT_EQ(j["SubmitTime"], kSomeTimeNs);
  EXPECT_EQ(j["Constraints"][0],
            Json({{"LTarget", "${attr.kernel.name}"}, {"RTarget", "linux"}, {"Operand", "="}}));

  const Json& g = j["TaskGroups"][0];
  EXPECT_EQ(g["Count"], 2);
  EXPECT_EQ(g["ShutdownDelay"], 7'000'000'000);
  EXPECT_EQ(g["RestartPolicy"], Json({{"Attempts", 2},
                                      {"Interval", 1'800'000'000'000},
                                      {"Delay", 15'000'000'000},
                                      {"Mode", "fail"},
                                      {"RenderTemplates", true}}));
  EXPECT_EQ(g["ReschedulePolicy"], Json({{"Attempts", 0},
                                         {"Interval", 0},
                                         {"Delay", 30'000'000'000},
                                         {"DelayFunction", "exponential"},
                                         {"MaxDelay", 3'600'000'000'000},
                                         {"Unlimited", true}}));
  EXPECT_EQ(g["EphemeralDisk"], Json({{"Sticky", true}, {"Migrate", true}, {"SizeMB", 500}}));
  EXPECT_EQ(g["Networks"][0]["ReservedPorts"][0],
            Json({{"Label", "http"}, {"Value", 8080}, {"To", 80}, {"HostNetwork", "default"}}));
  EXPECT_EQ(g["Networks"][0]["Mode"], "bridge");
  EXPECT_EQ(g["Networks"][0]["MBits"], 10);
  for (const char* key :
       {"Affinities", "Spreads", "Volumes", "Update", "Migrate", "Services", "Scaling"}) {
    ASSERT_TRUE(g.contains(key)) << key;
    EXPECT_TRUE(g[key].is_null()) << key;
  }

  const Json& t = g["Tasks"][0];
  EXPECT_EQ(t["Lifecycle"], Json({{"Hook", "prestart"}, {"Sidecar", true}}));
  EXPECT_EQ(t["Config"]["args"], Json::parse(R"(["10", 3, 2.5, true, null])"));
  EXPECT_EQ(t["Env"], Json({{"PORT", "8080"}}));
  EXPECT_EQ(t["KillTimeout"], 9'000'000'000);
  EXPECT_EQ(t["ShutdownDelay"], 2'000'000'000);
  EXPECT_EQ(t["KillSignal"], "SIGTERM");
  EXPECT_EQ(t["Leader"], true);
  EXPECT_EQ(t["LogConfig"], Json({{"MaxFiles", 3}, {"MaxFileSizeMB", 4}, {"Disabled", true}}));
  EXPECT_EQ(t["DispatchPayload"], Json({{"File", "input.txt"}}));
  EXPECT_EQ(t["Resources"]["CPU"], 250);
  EXPECT_EQ(t["Resources"]["Cores"], 0);
  EXPECT_EQ(t["Resources"]["MemoryMB"], 128);
  EXPECT_EQ(t["Resources"]["MemoryMaxMB"], 256);
  EXPECT_EQ(t["Resources"]["DiskMB"], 0);
  EXPECT_EQ(t["Resources"]["Networks"][0]["IP"], "10.0.0.1");
  EXPECT_EQ(t["Resources"]["Networks"][0]["CIDR"], "10.0.0.0/8");
  EXPECT_EQ(t["Resources"]["Networks"][0]["Device"], "eth0");
  EXPECT_EQ(t["Resources"]["Devices"][0]["Name"], "nvidia/gpu");
  EXPECT_EQ(t["Resources"]["Devices"][0]["Count"], 2);
  EXPECT_TRUE(t["Resources"]["Devices"][0]["Affinities"].is_null());
  EXPECT_EQ(t["Resources"]["Devices"][0]["Constraints"][0]["Operand"], ">=");
  for (const char* key :
       {"Services", "Artifacts", "Templates", "Vault", "VolumeMounts", "Affinities"}) {
    ASSERT_TRUE(t.contains(key)) << key;
    EXPECT_TRUE(t[key].is_null()) << key;
  }
}

TEST(JobJsonTest, EmptyCollectionsFollowNomadNilConventions) {
  model::Job job;
  job.id = "empty";
  Json j = ToJson(job);
  EXPECT_EQ(j["Datacenters"], Json::array());
  EXPECT_EQ(j["TaskGroups"], Json::array());
  EXPECT_TRUE(j["Constraints"].is_null());
  EXPECT_TRUE(j["Meta"].is_null());
  EXPECT_TRUE(j["Payload"].is_null());

  model::TaskGroup g;
  g.name = "g";
  g.count = model::TaskGroup::kUnsetCount;
  g.tasks.push_back(model::Task{});
  g.tasks[0].name = "t";
  job.task_groups = {g};
  j = ToJson(job);
  const Json& gj = j["TaskGroups"][0];
  EXPECT_TRUE(gj["Count"].is_null());
  EXPECT_TRUE(gj["Constraints"].is_null());
  EXPECT_TRUE(gj["Networks"].is_null());
  EXPECT_TRUE(gj["Meta"].is_null());
  EXPECT_TRUE(gj["RestartPolicy"].is_null());
  EXPECT_TRUE(gj["ReschedulePolicy"].is_null());
  EXPECT_TRUE(gj["EphemeralDisk"].is_null());
  EXPECT_TRUE(gj["ShutdownDelay"].is_null());
  const Json& tj = gj["Tasks"][0];
  EXPECT_TRUE(tj["Lifecycle"].is_null());
  EXPECT_EQ(tj["Config"], Json::object());
  EXPECT_TRUE(tj["Env"].is_null());
  EXPECT_TRUE(tj["Meta"].is_null());
  EXPECT_TRUE(tj["Constraints"].is_null());
  EXPECT_TRUE(tj["RestartPolicy"].is_null());
  EXPECT_TRUE(tj["DispatchPayload"].is_null());
  EXPECT_TRUE(tj["Resources"]["Networks"].is_null());
  EXPECT_TRUE(tj["Resources"]["Devices"].is_null());

  absl::StatusOr<model::Job> back = JobFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, job);
}

TEST(JobJsonTest, DecodesMinimalJobKeepingUnsetMarkers) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(R"({
    "ID": "example",
    "TaskGroups": [{"Name": "cache", "Tasks": [{"Name": "redis", "Driver": "docker",
      "Config": {"image": "redis:7", "ports": ["db"]},
      "Resources": {"Devices": [{"Name": "gpu"}]}}]}]
  })"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id, "example");
  EXPECT_EQ(job->region, "");
  EXPECT_EQ(job->priority, 0);
  EXPECT_EQ(job->type, "");
  ASSERT_EQ(job->task_groups.size(), 1u);
  const model::TaskGroup& g = job->task_groups[0];
  EXPECT_EQ(g.count, model::TaskGroup::kUnsetCount);
  EXPECT_FALSE(g.restart_policy);
  EXPECT_FALSE(g.reschedule_policy);
  EXPECT_FALSE(g.ephemeral_disk);
  EXPECT_FALSE(g.shutdown_delay);
  EXPECT_FALSE(g.max_client_disconnect);
  const model::Task& t = g.tasks[0];
  EXPECT_EQ(t.kill_timeout, model::Duration::zero());
  EXPECT_EQ(*t.config.Find("image")->as_string(), "redis:7");
  EXPECT_EQ(t.resources.devices[0].count, 1u);
}

// The decoder marks an absent count with INT_MIN; a request that sends INT_MIN gets a
// negative count (refused by validation), never the default of 1.
TEST(JobJsonTest, ACountOfIntMinIsNotTakenForAnAbsentOne) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(R"({
    "ID": "example",
    "TaskGroups": [{"Name": "web", "Count": -2147483648, "Tasks": [{"Name": "t"}]}]
  })"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_LT(job->task_groups[0].count, 0);
  EXPECT_NE(job->task_groups[0].count, model::TaskGroup::kUnsetCount);
}

TEST(JobJsonTest, PeriodicAndParameterizedBlocksRoundTrip) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(R"({
    "ID": "x", "Type": "batch",
    "Periodic": {"Specs": ["@daily", "0 12 * * 1"], "ProhibitOverlap": true,
                 "TimeZone": "Europe/Paris"},
    "ParameterizedJob": {"Payload": "required", "MetaRequired": ["in"]},
    "DispatchIdempotencyToken": "tok"
  })"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->periodic);
  EXPECT_TRUE(job->periodic->enabled);  // unless sent false
  EXPECT_EQ(job->periodic->specs, (std::vector<std::string>{"@daily", "0 12 * * 1"}));
  EXPECT_TRUE(job->periodic->prohibit_overlap);
  EXPECT_EQ(job->periodic->time_zone, "Europe/Paris");
  ASSERT_TRUE(job->parameterized);
  EXPECT_EQ(job->parameterized->meta_required, std::vector<std::string>{"in"});
  EXPECT_EQ(job->dispatch_idempotency_token, "tok");
  Json j = ToJson(*job);
  EXPECT_EQ(j["Periodic"], MustParse(R"({"Enabled": true, "Spec": "", "SpecType": "",
      "Specs": ["@daily", "0 12 * * 1"], "ProhibitOverlap": true, "TimeZone": "Europe/Paris"})"));
  EXPECT_EQ(j["ParameterizedJob"],
            MustParse(R"({"Payload": "required", "MetaRequired": ["in"], "MetaOptional": null})"));
  EXPECT_EQ(j["DispatchIdempotencyToken"], "tok");
  absl::StatusOr<model::Job> back = JobFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *job);
  Json stub = JobStubJson(*job, nullptr);
  EXPECT_EQ(stub["Periodic"], true);
  EXPECT_EQ(stub["ParameterizedJob"], true);
}

TEST(JobJsonTest, NullMeansAbsentAndUnknownFieldsAreIgnored) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(R"({
    "ID": "x", "Region": null, "Priority": null, "Meta": null, "Datacenters": null,
    "Periodic": {"Enabled": true}, "SomethingNew": [1, 2, 3],
    "TaskGroups": [{"Name": "g", "Count": null, "RestartPolicy": null, "Tasks": null,
                    "Update": {"MaxParallel": 1}}]
  })"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->region, "");
  EXPECT_EQ(job->priority, 0);
  EXPECT_TRUE(job->meta.empty());
  EXPECT_EQ(job->task_groups[0].count, model::TaskGroup::kUnsetCount);
  EXPECT_FALSE(job->task_groups[0].restart_policy);
  EXPECT_TRUE(job->task_groups[0].tasks.empty());

  // Null elements and map values are zero values, as in Go.
  job = JobFromJson(MustParse(R"({"Datacenters": ["dc1", null], "Meta": {"k": null}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->datacenters, (std::vector<std::string>{"dc1", ""}));
  EXPECT_EQ(job->meta, (std::map<std::string, std::string>{{"k", ""}}));
}

TEST(JobJsonTest, MatchesMemberNamesCaseInsensitivelyLikeGo) {
  absl::StatusOr<model::Job> job =
      JobFromJson(MustParse(R"({"id": "lower", "TASKGROUPS": [{"name": "g", "count": 3}]})"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id, "lower");
  EXPECT_EQ(job->task_groups[0].name, "g");
  EXPECT_EQ(job->task_groups[0].count, 3);
  // An exact match wins over a case-insensitive one.
  job = JobFromJson(MustParse(R"({"id": "lower", "ID": "exact"})"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->id, "exact");
}

TEST(JobJsonTest, AcceptsIntegralFloatsForNumbers) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(R"({
    "ID": "x", "Priority": 50.0, "SubmitTime": 1.5e18,
    "TaskGroups": [{"Name": "g", "Count": 2e0, "ShutdownDelay": 5e9,
      "Tasks": [{"Name": "t", "KillTimeout": 3e9}]}]
  })"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->priority, 50);
  EXPECT_EQ(job->submit_time, 1'500'000'000'000'000'000);
  EXPECT_EQ(job->task_groups[0].count, 2);
  EXPECT_EQ(*job->task_groups[0].shutdown_delay, seconds(5));
  EXPECT_EQ(job->task_groups[0].tasks[0].kill_timeout, seconds(3));
}

struct DecodeErrorCase {
  const char* json;
  const char* message;
};

class JobDecodeErrorTest : public ::testing::TestWithParam<DecodeErrorCase> {};

TEST_P(JobDecodeErrorTest, ReportsPathAndProblem) {
  absl::StatusOr<model::Job> job = JobFromJson(MustParse(GetParam().json));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    WrongTypes, JobDecodeErrorTest,
    ::testing::Values(
        DecodeErrorCase{R"([1])", "Job: expected object, got array"},
        DecodeErrorCase{R"(null)", "Job: expected object, got null"},
        DecodeErrorCase{R"({"ID": 5})", "Job.ID: expected string, got number"},
        DecodeErrorCase{R"({"TaskGroups": [{"Count": "3"}]})",
                        "Job.TaskGroups[0].Count: expected number, got string"},
        DecodeErrorCase{R"({"Priority": 1.5})", "Job.Priority: expected integer, got 1.5"},
        DecodeErrorCase{R"({"Priority": 3000000000})",
                        "Job.Priority: value 3000000000 out of range"},
        DecodeErrorCase{R"({"Version": -1})", "Job.Version: value -1 out of range"},
        DecodeErrorCase{R"({"Stop": "true"})", "Job.Stop: expected boolean, got string"},
        DecodeErrorCase{R"({"Datacenters": "dc1"})", "Job.Datacenters: expected array, got string"},
        DecodeErrorCase{R"({"Datacenters": ["dc1", 2]})",
                        "Job.Datacenters[1]: expected string, got number"},
        DecodeErrorCase{R"({"Meta": {"k": 1}})", "Job.Meta[\"k\"]: expected string, got number"},
        DecodeErrorCase{R"({"Meta": []})", "Job.Meta: expected object, got array"},
        DecodeErrorCase{R"({"Constraints": [{"Operand": false}]})",
                        "Job.Constraints[0].Operand: expected string, got boolean"},
        DecodeErrorCase{R"({"Payload": "not base64!"})", "Job.Payload: invalid base64"},
        DecodeErrorCase{R"({"TaskGroups": {}})", "Job.TaskGroups: expected array, got object"},
        DecodeErrorCase{R"({"TaskGroups": [{"RestartPolicy": {"Interval": "30m"}}]})",
                        "Job.TaskGroups[0].RestartPolicy.Interval: expected number, got string"},
        DecodeErrorCase{R"({"TaskGroups": [{"ReschedulePolicy": {"Unlimited": 1}}]})",
                        "Job.TaskGroups[0].ReschedulePolicy.Unlimited: expected boolean, got "
                        "number"},
        DecodeErrorCase{R"({"TaskGroups": [{"EphemeralDisk": {"SizeMB": "big"}}]})",
                        "Job.TaskGroups[0].EphemeralDisk.SizeMB: expected number, got string"},
        DecodeErrorCase{R"({"TaskGroups": [{"Networks": [{"ReservedPorts": [{"Value": "80"}]}]}]})",
                        "Job.TaskGroups[0].Networks[0].ReservedPorts[0].Value: expected number, "
                        "got string"},
        DecodeErrorCase{R"({"TaskGroups": [{"ShutdownDelay": true}]})",
                        "Job.TaskGroups[0].ShutdownDelay: expected number, got boolean"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{}, {"Resources": {"CPU": "1"}}]}]})",
                        "Job.TaskGroups[0].Tasks[1].Resources.CPU: expected number, got string"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{"Config": [1]}]}]})",
                        "Job.TaskGroups[0].Tasks[0].Config: expected object, got array"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{"Lifecycle": {"Sidecar": "yes"}}]}]})",
                        "Job.TaskGroups[0].Tasks[0].Lifecycle.Sidecar: expected boolean, got "
                        "string"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{"LogConfig": {"MaxFiles": 1.1}}]}]})",
                        "Job.TaskGroups[0].Tasks[0].LogConfig.MaxFiles: expected integer, got "
                        "1.1"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{"DispatchPayload": {"File": 1}}]}]})",
                        "Job.TaskGroups[0].Tasks[0].DispatchPayload.File: expected string, got "
                        "number"},
        DecodeErrorCase{R"({"TaskGroups": [{"Tasks": [{"Env": {"A": null, "B": 2}}]}]})",
                        "Job.TaskGroups[0].Tasks[0].Env[\"B\"]: expected string, got number"},
        DecodeErrorCase{
            R"({"TaskGroups": [{"Tasks": [{"Resources": {"Devices": [{"Count": -1}]}}]}]})",
            "Job.TaskGroups[0].Tasks[0].Resources.Devices[0].Count: value -1 out of "
            "range"}));

TEST(JobJsonTest, StubHasListFieldsAndSummary) {
  model::Job job = RichJob();
  model::JobSummary summary;
  summary.job_id = "web";
  summary.namespace_ = "default";
  summary.summary["frontend"] = model::TaskGroupSummary{1, 2, 3, 4, 5, 6, 7};
  summary.create_index = 10;
  summary.modify_index = 11;

  Json stub = JobStubJson(job, &summary);
  EXPECT_EQ(stub["ID"], "web");
  EXPECT_EQ(stub["ParentID"], "parent");
  EXPECT_EQ(stub["Name"], "web");
  EXPECT_EQ(stub["Namespace"], "default");
  EXPECT_EQ(stub["Datacenters"], Json({"dc1", "dc2"}));
  EXPECT_EQ(stub["NodePool"], "default");
  EXPECT_EQ(stub["Type"], "service");
  EXPECT_EQ(stub["Priority"], 70);
  EXPECT_EQ(stub["Periodic"], false);
  EXPECT_EQ(stub["ParameterizedJob"], false);
  EXPECT_EQ(stub["Stop"], false);
  EXPECT_EQ(stub["Status"], "running");
  EXPECT_EQ(stub["StatusDescription"], "ok");
  EXPECT_EQ(stub["CreateIndex"], 10);
  EXPECT_EQ(stub["ModifyIndex"], 20);
  EXPECT_EQ(stub["JobModifyIndex"], 15);
  EXPECT_EQ(stub["SubmitTime"], kSomeTimeNs);
  EXPECT_EQ(stub["JobSummary"], ToJson(summary));
  EXPECT_FALSE(stub.contains("TaskGroups"));

  EXPECT_TRUE(JobStubJson(job, nullptr)["JobSummary"].is_null());
  model::Job empty;
  EXPECT_EQ(JobStubJson(empty, nullptr)["Datacenters"], Json::array());
}

TEST(JobSummaryJsonTest, EncodesAndRoundTrips) {
  model::JobSummary summary;
  summary.job_id = "web";
  summary.namespace_ = "prod";
  summary.summary["a"] = model::TaskGroupSummary{1, 2, 3, 4, 5, 6, 7};
  summary.summary["b"] = model::TaskGroupSummary{};
  summary.create_index = 3;
  summary.modify_index = 9;
  Json j = ToJson(summary);
  EXPECT_EQ(j["JobID"], "web");
  EXPECT_EQ(j["Namespace"], "prod");
  EXPECT_EQ(j["Summary"]["a"], Json({{"Queued", 1},
                                     {"Complete", 2},
                                     {"Failed", 3},
                                     {"Running", 4},
                                     {"Starting", 5},
                                     {"Lost", 6},
                                     {"Unknown", 7}}));
  EXPECT_EQ(j["Children"], Json({{"Pending", 0}, {"Running", 0}, {"Dead", 0}}));
  EXPECT_EQ(j["CreateIndex"], 3);
  EXPECT_EQ(j["ModifyIndex"], 9);

  absl::StatusOr<model::JobSummary> back = JobSummaryFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, summary);
  EXPECT_EQ(ToJson(model::JobSummary{})["Summary"], Json::object());

  absl::StatusOr<model::JobSummary> bad =
      JobSummaryFromJson(MustParse(R"({"Summary": {"a": {"Running": "1"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "JobSummary.Summary[\"a\"].Running: expected number, got string");
}

}  // namespace
}  // namespace drover::codec

namespace drover::codec {
namespace {

TEST(JobJsonRescheduleTest, JobLevelRescheduleAppliesUnderEachGroupsOwnFields) {
  absl::StatusOr<model::Job> job = JobFromJson(Json::parse(R"({"ID": "j",
    "Reschedule": {"Attempts": 5, "Interval": 60000000000, "Unlimited": false},
    "TaskGroups": [{"Name": "a"}, {"Name": "b", "ReschedulePolicy": {"Attempts": 1}}]})"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->task_groups[0].reschedule_policy.has_value());
  EXPECT_EQ(job->task_groups[0].reschedule_policy->attempts, 5);
  EXPECT_EQ(job->task_groups[0].reschedule_policy->interval, std::chrono::minutes(1));
  EXPECT_EQ(job->task_groups[1].reschedule_policy->attempts, 1);
  EXPECT_EQ(job->task_groups[1].reschedule_policy->interval, std::chrono::minutes(1));
}

TEST(JobJsonMigrateTest, JobLevelMigrateAppliesUnderEachGroupsOwnFields) {
  absl::StatusOr<model::Job> job = JobFromJson(Json::parse(R"({"ID": "j", "Type": "service",
    "Migrate": {"MaxParallel": 2, "MinHealthyTime": 1000000000},
    "TaskGroups": [{"Name": "a"}, {"Name": "b", "Migrate": {"MaxParallel": 0,
                                                           "HealthCheck": "task_states"}}]})"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->task_groups[0].migrate.has_value());
  EXPECT_EQ(job->task_groups[0].migrate->max_parallel, 2);
  EXPECT_EQ(job->task_groups[0].migrate->min_healthy_time, std::chrono::seconds(1));
  EXPECT_EQ(job->task_groups[0].migrate->healthy_deadline, model::MigrateStrategy::kUnsetDuration);
  EXPECT_EQ(job->task_groups[1].migrate->max_parallel, 0);
  EXPECT_EQ(job->task_groups[1].migrate->health_check, "task_states");
  EXPECT_EQ(job->task_groups[1].migrate->min_healthy_time, std::chrono::seconds(1));
  // Unset fields stay null on the way out; set ones round-trip.
  const Json g = ToJson(*job)["TaskGroups"][1];
  EXPECT_EQ(g["Migrate"], Json({{"MaxParallel", 0},
                                {"HealthCheck", "task_states"},
                                {"MinHealthyTime", 1'000'000'000},
                                {"HealthyDeadline", nullptr}}));
  EXPECT_EQ(*JobFromJson(ToJson(*job)), *job);
}

}  // namespace
}  // namespace drover::codec
