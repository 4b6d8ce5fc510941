// The commands against a scripted agent (FakeHttpClient): requests made and exact output.
#include "cli/commands.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/fake_http_client.h"
#include "cli/format.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/clock.h"
#include "model/allocation.h"
#include "model/evaluation.h"
#include "model/job.h"
#include "model/node.h"
#include "testing/test_util.h"

namespace drover::cli {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1796007212 * kSecond;  // 2026-11-30T02:53:32Z
const std::string kAllocId = "a1b2c3d4-1111-2222-3333-444444444444";
const std::string kNodeId = "12345678-aaaa-bbbb-cccc-dddddddddddd";
const std::string kEvalId = "5e2c6f8d-0000-0000-0000-000000000000";

class CommandsTest : public ::testing::Test {
 protected:
  CommandsTest() : ui_(in_, out_, err_, [] { return common::FromUnixNanos(kT0); }) {
    // FormatTime prints local time; pin the zone so expectations hold anywhere.
    setenv("TZ", "UTC", 1);  // NOLINT(concurrency-mt-unsafe): single-threaded test
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = (dir_.path() / name).string();
    std::ofstream(path) << text;
    return path;
  }

  static model::Job Job() {
    model::Job job;
    job.id = "hello";
    job.name = "hello";
    job.namespace_ = "default";
    job.type = "service";
    job.priority = 50;
    job.datacenters = {"dc1"};
    job.node_pool = "default";
    job.status = "running";
    job.submit_time = kT0 - 60 * kSecond;
    job.version = 1;
    model::TaskGroup group;
    group.name = "web";
    group.count = 1;
    model::Task task;
    task.name = "server";
    task.driver = "raw_exec";
    group.tasks.push_back(task);
    model::Task init;
    init.name = "init";
    init.driver = "raw_exec";
    init.lifecycle = model::Lifecycle{"prestart", false};
    group.tasks.push_back(init);
    job.task_groups.push_back(group);
    return job;
  }

  static model::Allocation Alloc() {
    model::Allocation a;
    a.id = kAllocId;
    a.namespace_ = "default";
    a.eval_id = kEvalId;
    a.name = "hello.web[0]";
    a.node_id = kNodeId;
    a.node_name = "laptop";
    a.job_id = "hello";
    a.job = std::make_shared<model::Job>(Job());
    a.task_group = "web";
    a.desired_status = "run";
    a.client_status = "running";
    a.client_description = "Tasks are running";
    a.create_index = 12;
    a.create_time = kT0 - 70 * kSecond;
    a.modify_time = kT0 - 10 * kSecond;
    model::AllocatedTaskResources res;
    res.cpu_shares = 100;
    res.memory_mb = 300;
    a.allocated_resources.tasks["server"] = res;
    a.allocated_resources.tasks["init"] = res;
    a.allocated_resources.shared.disk_mb = 300;
    model::TaskState server;
    server.state = "running";
    server.started_at = common::FromUnixNanos(kT0 - 65 * kSecond);
    server.AppendEvent(model::TaskEvent("Received", common::FromUnixNanos(kT0 - 69 * kSecond))
                           .SetDisplayMessage("Task received by client"));
    server.AppendEvent(model::TaskEvent("Started", common::FromUnixNanos(kT0 - 65 * kSecond))
                           .SetDisplayMessage("Task started by client"));
    a.task_states["server"] = server;
    model::TaskState init;
    init.state = "dead";
    a.task_states["init"] = init;
    return a;
  }

  testing::TempDir dir_;
  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
  Ui ui_;
  FakeHttpClient client_;
};

TEST_F(CommandsTest, JobRunDetachWrapsABareJob) {
  const std::string file = WriteFile("job.json", R"({"ID": "hello", "Type": "batch"})");
  client_.AddJson("PUT", "/v1/jobs", R"({"EvalID":"ev1","Warnings":"","JobModifyIndex":3})");
  EXPECT_EQ(RunJobRun({.job_file = {.file = file}, .detach = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "Job registration successful\nEvaluation ID: ev1\n");
  ASSERT_EQ(client_.requests().size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(client_.requests()[0].body),
            nlohmann::json::parse(R"({"Job": {"ID": "hello", "Type": "batch"}})"));
}

TEST_F(CommandsTest, JobRunPassesAWrappedJobThroughAndPrintsWarnings) {
  const std::string file = WriteFile("job.json", R"({"Job": {"ID": "hello", "Meta": {"a": "b"}}})");
  client_.AddJson("PUT", "/v1/jobs", R"({"EvalID":"ev1","Warnings":"1 warning: x"})");
  EXPECT_EQ(RunJobRun({.job_file = {.file = file}, .detach = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "Job Warnings:\n1 warning: x\n\nJob registration successful\nEvaluation ID: ev1\n");
  EXPECT_EQ(nlohmann::json::parse(client_.requests()[0].body),
            nlohmann::json::parse(R"({"Job": {"ID": "hello", "Meta": {"a": "b"}}})"));
}

TEST_F(CommandsTest, JobRunParsesHclWithVariables) {
  const std::string file = WriteFile("job.nomad.hcl", R"(variable "n" {
  type    = number
  default = 1
}
job "hello" {
  group "g" {
    count = var.n
    task "t" {
      driver = "raw_exec"
      env {
        ALLOC = "${NOMAD_ALLOC_ID}"
      }
    }
  }
}
)");
  const std::string vars = WriteFile("prod.vars.hcl", "n = 2\n");
  client_.AddJson("PUT", "/v1/jobs", R"({"EvalID":"ev1"})");
  EXPECT_EQ(
      RunJobRun({.job_file = {.file = file, .vars = {"n=3"}, .var_files = {vars}}, .detach = true},
                client_, ui_),
      kExitOk);
  ASSERT_EQ(client_.requests().size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(client_.requests()[0].body), nlohmann::json::parse(R"({"Job": {
    "ID": "hello", "Name": "hello", "TaskGroups": [{"Name": "g", "Count": 3, "Tasks": [
      {"Name": "t", "Driver": "raw_exec", "Env": {"ALLOC": "${NOMAD_ALLOC_ID}"}}]}]}})"));
}

TEST_F(CommandsTest, JobRunOutputPrintsTheApiJsonWithoutCallingTheAgent) {
  const std::string file = WriteFile("job.nomad", "job \"hello\" {\n  priority = 70\n}\n");
  EXPECT_EQ(RunJobRun({.job_file = {.file = file}, .output = true}, client_, ui_), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out_.str()),
            nlohmann::json::parse(R"({"Job": {"ID": "hello", "Name": "hello", "Priority": 70}})"));
  EXPECT_TRUE(client_.requests().empty());
}

TEST_F(CommandsTest, JobRunReportsHclErrorsWithPositions) {
  const std::string file = WriteFile("bad.nomad.hcl", "job \"x\" {\n  prio = 1\n}\n");
  EXPECT_EQ(RunJobRun({.job_file = {.file = file}}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), absl::StrCat("Error getting job struct: Error parsing job file from ", file,
                                     ":\n", file,
                                     ":2,3-7: Unsupported argument; An argument named \"prio\" is "
                                     "not expected here.\n"));
  EXPECT_TRUE(client_.requests().empty());
}

TEST_F(CommandsTest, JobValidateAsksTheAgent) {
  const std::string file = WriteFile("job.nomad.hcl", "job \"x\" {\n}\n");
  client_.AddJson("PUT", "/v1/validate/job",
                  R"({"Error": "", "ValidationErrors": [], "Warnings": ""})");
  EXPECT_EQ(RunJobValidate({.file = file}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "Job validation successful\n");
}

TEST_F(CommandsTest, JobValidatePrintsTheAgentsErrors) {
  const std::string file = WriteFile("job.nomad.hcl", "job \"x\" {\n}\n");
  client_.AddJson("PUT", "/v1/validate/job",
                  R"({"Error": "1 error occurred:\n\t* Missing job task groups\n\n"})");
  EXPECT_EQ(RunJobValidate({.file = file}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Job validation errors:\n1 error occurred:\n\t* Missing job task groups\n\n\n");
}

TEST_F(CommandsTest, JobInspectPrintsTheWrappedJob) {
  client_.AddJson("GET", "/v1/jobs?prefix=hel", R"([{"ID": "hello"}])");
  client_.AddJson("GET", "/v1/job/hello", R"({"ID": "hello", "Priority": 50})");
  EXPECT_EQ(RunJobInspect("hel", client_, ui_), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out_.str()),
            nlohmann::json::parse(R"({"Job": {"ID": "hello", "Priority": 50}})"));
}

TEST_F(CommandsTest, JobInitWritesAnExampleThatParsesAndRefusesToOverwrite) {
  const std::string path = (dir_.path() / "example.nomad.hcl").string();
  EXPECT_EQ(RunJobInit(path, /*short_form=*/false, ui_), kExitOk);
  EXPECT_EQ(out_.str(), absl::StrCat("Example job file written to ", path, "\n"));
  out_.str("");
  EXPECT_EQ(RunJobRun({.job_file = {.file = path}, .output = true}, client_, ui_), kExitOk);
  const nlohmann::json job = nlohmann::json::parse(out_.str())["Job"];
  EXPECT_EQ(job["ID"], "example");
  EXPECT_EQ(job["TaskGroups"][0]["Tasks"][0]["Driver"], "raw_exec");
  EXPECT_EQ(RunJobInit(path, /*short_form=*/true, ui_), kExitError);
  EXPECT_EQ(err_.str(), absl::StrCat("Job '", path, "' already exists\n"));
  const std::string short_path = (dir_.path() / "short.nomad.hcl").string();
  EXPECT_EQ(RunJobInit(short_path, /*short_form=*/true, ui_), kExitOk);
}

TEST_F(CommandsTest, JobRunReportsFileAndServerErrors) {
  EXPECT_EQ(
      RunJobRun({.job_file = {.file = (dir_.path() / "missing.json").string()}}, client_, ui_),
      kExitError);
  EXPECT_NE(err_.str().find("Error getting job struct: "), std::string::npos);
  EXPECT_NE(err_.str().find("no such file or directory"), std::string::npos);

  err_.str("");
  EXPECT_EQ(RunJobRun({.job_file = {.file = WriteFile("bad.json", "{nope")}}, client_, ui_),
            kExitError);
  EXPECT_NE(err_.str().find("Error getting job struct: Failed to parse JSON"), std::string::npos);

  err_.str("");
  client_.Add("PUT", "/v1/jobs", 500, "1 error occurred:\n\t* Missing job datacenters\n\n");
  EXPECT_EQ(RunJobRun({.job_file = {.file = WriteFile("j.json", R"({"ID":"x"})")}}, client_, ui_),
            kExitError);
  EXPECT_EQ(err_.str(),
            "Error submitting job: Unexpected response code: 500 (1 error occurred:\n\t* Missing "
            "job datacenters)\n");
}

TEST_F(CommandsTest, JobRunMonitorsTheEvaluation) {
  const std::string file = WriteFile("job.json", R"({"Job": {"ID": "hello"}})");
  client_.AddJson("PUT", "/v1/jobs", absl::StrCat(R"({"EvalID":")", kEvalId, R"("})"));
  model::Evaluation e;
  e.id = kEvalId;
  e.job_id = "hello";
  e.status = "complete";
  e.create_index = 11;
  client_.AddJson("GET", "/v1/evaluation/" + kEvalId, codec::Dump(codec::ToJson(e)));
  client_.AddJson("GET", "/v1/evaluation/" + kEvalId + "/allocations",
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  EXPECT_EQ(RunJobRun({.job_file = {.file = file}}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "==> 2026-11-30T02:53:32Z: Monitoring evaluation \"5e2c6f8d\"\n"
            "    2026-11-30T02:53:32Z: Evaluation triggered by job \"hello\"\n"
            "    2026-11-30T02:53:32Z: Allocation \"a1b2c3d4\" created: node \"12345678\", group "
            "\"web\"\n"
            "    2026-11-30T02:53:32Z: Evaluation status changed: \"pending\" -> \"complete\"\n"
            "==> 2026-11-30T02:53:32Z: Evaluation \"5e2c6f8d\" finished with status "
            "\"complete\"\n");
}

TEST_F(CommandsTest, JobStatusListsJobs) {
  client_.AddJson("GET", "/v1/jobs", "[]");
  EXPECT_EQ(RunJobStatus({}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "No running jobs\n");

  FakeHttpClient client;
  client.AddJson("GET", "/v1/jobs",
                 codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  out_.str("");
  EXPECT_EQ(RunJobStatus({}, client, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "ID     Type     Priority  Status   Submit Date\n"
            "hello  service  50        running  2026-11-30T02:52:32Z\n");
}

TEST_F(CommandsTest, JobStatusShowsOneJob) {
  client_.AddJson("GET", "/v1/jobs?prefix=hel",
                  codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  client_.AddJson("GET", "/v1/job/hello", codec::Dump(codec::ToJson(Job())));
  model::JobSummary summary;
  summary.job_id = "hello";
  summary.summary["web"].running = 1;
  client_.AddJson("GET", "/v1/job/hello/summary", codec::Dump(codec::ToJson(summary)));
  client_.AddJson("GET", "/v1/job/hello/allocations",
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  client_.AddJson("GET", "/v1/job/hello/evaluations", "[]");
  model::Deployment d;
  d.id = "d1e2f3a4-0000-4000-8000-000000000000";
  d.status = "failed";
  d.status_description = "Failed due to unhealthy allocations - rolling back to job version 0";
  d.task_groups["web"] = {
      .auto_revert = true, .desired_total = 1, .placed_allocs = 1, .unhealthy_allocs = 1};
  client_.AddJson("GET", "/v1/job/hello/deployment", codec::Dump(codec::ToJson(d)));
  EXPECT_EQ(RunJobStatus({.id = "hel"}, client_, ui_), kExitOk);
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(out_.str(),
            "ID            = hello\n"
            "Name          = hello\n"
            "Submit Date   = 2026-11-30T02:52:32Z\n"
            "Type          = service\n"
            "Priority      = 50\n"
            "Datacenters   = dc1\n"
            "Namespace     = default\n"
            "Node Pool     = default\n"
            "Status        = running\n"
            "Periodic      = false\n"
            "Parameterized = false\n"
            "\n"
            "Summary\n"
            "Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown\n"
            "web         0       0         1        0       0         0     0\n"
            "\n"
            "Latest Deployment\n"
            "ID          = d1e2f3a4\n"
            "Status      = failed\n"
            "Description = Failed due to unhealthy allocations - rolling back to job version 0\n"
            "\n"
            "Deployed\n"
            "Task Group  Auto Revert  Desired  Placed  Healthy  Unhealthy\n"
            "web         true         1        1       0        1\n"
            "\n"
            "Allocations\n"
            "ID        Node ID   Task Group  Version  Desired  Status   Created    Modified\n"
            "a1b2c3d4  12345678  web         1        run      running  1m10s ago  10s ago\n");
}

TEST_F(CommandsTest, JobStatusShowsPlacementFailuresOfTheLatestEval) {
  client_.AddJson("GET", "/v1/jobs?prefix=hello",
                  codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  client_.AddJson("GET", "/v1/job/hello", codec::Dump(codec::ToJson(Job())));
  client_.AddJson("GET", "/v1/job/hello/summary", "null");
  client_.AddJson("GET", "/v1/job/hello/allocations", "[]");
  model::Evaluation e;
  e.id = kEvalId;
  e.status = "complete";
  e.create_index = 4;
  model::AllocMetric m;
  m.nodes_evaluated = 1;
  m.nodes_exhausted = 1;
  m.dimension_exhausted = {{"memory", 1}};
  e.failed_tg_allocs["web"] = m;
  client_.AddJson("GET", "/v1/job/hello/evaluations",
                  codec::Dump(nlohmann::json::array({codec::ToJson(e)})));
  client_.AddJson("GET", "/v1/job/hello/deployment", "null");
  EXPECT_EQ(RunJobStatus({.id = "hello", .evals = true}, client_, ui_), kExitOk);
  const std::string out = out_.str();
  EXPECT_NE(out.find("\nEvaluations\n"
                     "ID        Priority  Triggered By  Status    Placement Failures\n"
                     "5e2c6f8d  0         <none>        complete  true\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nPlacement Failure\n"
                     "Task Group \"web\":\n"
                     "  * Resources exhausted on 1 nodes\n"
                     "  * Dimension \"memory\" exhausted on 1 nodes\n"
                     "\nAllocations\nNo allocations placed\n"),
            std::string::npos)
      << out;
}

TEST_F(CommandsTest, JobStatusShortStopsAfterTheHeader) {
  client_.AddJson("GET", "/v1/jobs?prefix=hello",
                  codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  client_.AddJson("GET", "/v1/job/hello", codec::Dump(codec::ToJson(Job())));
  EXPECT_EQ(RunJobStatus({.id = "hello", .short_output = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str().find("Summary"), std::string::npos);
  EXPECT_EQ(client_.requests().size(), 2u);
}

TEST_F(CommandsTest, JobStatusPrefixErrors) {
  client_.AddJson("GET", "/v1/jobs?prefix=nope", "[]");
  EXPECT_EQ(RunJobStatus({.id = "nope"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "No job(s) with prefix or id \"nope\" found\n");

  model::Job a = Job();
  a.id = "web-a";
  model::Job b = Job();
  b.id = "web-b";
  client_.AddJson("GET", "/v1/jobs?prefix=web",
                  codec::Dump(nlohmann::json::array(
                      {codec::JobStubJson(a, nullptr), codec::JobStubJson(b, nullptr)})));
  err_.str("");
  EXPECT_EQ(RunJobStatus({.id = "web"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(),
            "Prefix matched multiple jobs\n\n"
            "ID     Type     Priority  Status   Submit Date\n"
            "web-a  service  50        running  2026-11-30T02:52:32Z\n"
            "web-b  service  50        running  2026-11-30T02:52:32Z\n");
}

TEST_F(CommandsTest, JobStopPurgesAndDetaches) {
  client_.AddJson("GET", "/v1/jobs?prefix=hello",
                  codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  client_.AddJson("DELETE", "/v1/job/hello?purge=true", R"({"EvalID":"ev9"})");
  EXPECT_EQ(RunJobStop({.id = "hello", .purge = true, .detach = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "ev9\n");
}

TEST_F(CommandsTest, JobStopAsksBeforeStoppingAPrefixMatch) {
  client_.AddJson("GET", "/v1/jobs?prefix=hel",
                  codec::Dump(nlohmann::json::array({codec::JobStubJson(Job(), nullptr)})));
  in_.str("n\n");
  EXPECT_EQ(RunJobStop({.id = "hel", .detach = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "Are you sure you want to stop job \"hello\"? [y/N] Cancelling job stop\n");
  EXPECT_EQ(client_.requests().size(), 1u);
}

TEST_F(CommandsTest, AllocStatusShowsTasksAndEvents) {
  client_.AddJson("GET", "/v1/allocations?prefix=a1b2",
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  client_.AddJson("GET", "/v1/allocation/" + kAllocId, codec::Dump(codec::ToJson(Alloc())));
  EXPECT_EQ(RunAllocStatus({.id = "a1b2"}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "ID                  = a1b2c3d4-1111-2222-3333-444444444444\n"
            "Eval ID             = 5e2c6f8d\n"
            "Name                = hello.web[0]\n"
            "Node ID             = 12345678\n"
            "Node Name           = laptop\n"
            "Job ID              = hello\n"
            "Job Version         = 1\n"
            "Client Status       = running\n"
            "Client Description  = Tasks are running\n"
            "Desired Status      = run\n"
            "Desired Description = <none>\n"
            "Created             = 1m10s ago\n"
            "Modified            = 10s ago\n"
            "\n"
            "Task \"init\" (prestart) is \"dead\"\n"
            "Task Resources:\n"
            "CPU      Memory   Disk     Addresses\n"
            "100 MHz  300 MiB  300 MiB  \n"
            "\n"
            "Task Events:\n"
            "Started At     = N/A\n"
            "Finished At    = N/A\n"
            "Total Restarts = 0\n"
            "Last Restart   = N/A\n"
            "\n"
            "Recent Events:\n"
            "Time  Type  Description\n"
            "\n"
            "Task \"server\" is \"running\"\n"
            "Task Resources:\n"
            "CPU      Memory   Disk     Addresses\n"
            "100 MHz  300 MiB  300 MiB  \n"
            "\n"
            "Task Events:\n"
            "Started At     = 2026-11-30T02:52:27Z\n"
            "Finished At    = N/A\n"
            "Total Restarts = 0\n"
            "Last Restart   = N/A\n"
            "\n"
            "Recent Events:\n"
            "Time                  Type      Description\n"
            "2026-11-30T02:52:27Z  Started   Task started by client\n"
            "2026-11-30T02:52:23Z  Received  Task received by client\n");
}

TEST_F(CommandsTest, AllocStatusUsesLiveStatsWhenAvailable) {
  client_.AddJson("GET", "/v1/allocations?prefix=" + kAllocId,
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  client_.AddJson("GET", "/v1/allocation/" + kAllocId, codec::Dump(codec::ToJson(Alloc())));
  client_.AddJson("GET", "/v1/client/allocation/" + kAllocId + "/stats",
                  R"({"Tasks": {"server": {"ResourceUsage": {
                        "CpuStats": {"TotalTicks": 12.7},
                        "MemoryStats": {"RSS": 1153434}}}}})");
  EXPECT_EQ(RunAllocStatus({.id = kAllocId}, client_, ui_), kExitOk);
  EXPECT_NE(out_.str().find("CPU         Memory           Disk     Addresses\n"
                            "12/100 MHz  1.1 MiB/300 MiB  300 MiB  \n"),
            std::string::npos)
      << out_.str();
}

TEST_F(CommandsTest, AllocStatusShort) {
  client_.AddJson("GET", "/v1/allocations?prefix=a1b2",
                  codec::Dump(nlohmann::json::array({codec::AllocStubJson(Alloc())})));
  client_.AddJson("GET", "/v1/allocation/" + kAllocId, codec::Dump(codec::ToJson(Alloc())));
  EXPECT_EQ(RunAllocStatus({.id = "a1b2", .short_output = true}, client_, ui_), kExitOk);
  EXPECT_NE(out_.str().find("\nTasks\n"
                            "Name    State    Last Event  Time                  Lifecycle\n"
                            "init    dead     <none>      <none>                prestart\n"
                            "server  running  Started     2026-11-30T02:52:27Z  main\n"),
            std::string::npos)
      << out_.str();
}

TEST_F(CommandsTest, AllocStatusPrefixErrors) {
  EXPECT_EQ(RunAllocStatus({.id = "a"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "Identifier must contain at least two characters.\n");
  client_.AddJson("GET", "/v1/allocations?prefix=ffff", "[]");
  err_.str("");
  EXPECT_EQ(RunAllocStatus({.id = "ffff"}, client_, ui_), kExitError);
  EXPECT_EQ(err_.str(), "No allocation(s) with prefix or id \"ffff\" found\n");
}

TEST_F(CommandsTest, NodeDrainRefusesConflictingFlags) {
  struct Case {
    NodeDrainOptions options;
    std::string error;
  };
  for (const Case& c : {
           Case{{.id = "1234"},
                "Either the '-enable' or '-disable' flag must be set, unless using "
                "'-monitor'\n"},
           Case{{.id = "1234", .enable = true, .disable = true},
                "Only one of -enable or -disable flag can be set\n"},
           Case{{.id = "1234", .enable = true, .monitor = true},
                "The -monitor flag cannot be used with the '-enable' or '-disable' flags\n"},
           Case{{.id = "1234", .enable = true, .deadline = "1h", .force = true},
                "Only one of -deadline, -force and -no-deadline can be set\n"},
           Case{{.id = "1234", .disable = true, .ignore_system = true},
                "-deadline, -force, -no-deadline and -ignore-system only apply with -enable\n"},
           Case{{.enable = true}, "This command takes one argument: <node>\n"},
           Case{{.id = "1234", .enable = true, .deadline = "soon"},
                "Failed to parse deadline \"soon\": a positive duration is required (e.g. 30m, "
                "1h)\n"},
       }) {
    err_.str("");
    EXPECT_EQ(RunNodeDrain(c.options, client_, ui_), kExitError) << c.error;
    EXPECT_EQ(err_.str(), c.error);
  }
  EXPECT_TRUE(client_.requests().empty());
}

TEST_F(CommandsTest, NodeDrainSendsNomadsRequest) {
  model::Node node;
  node.id = kNodeId;
  node.name = "laptop";
  client_.AddJson("GET", "/v1/nodes?prefix=1234",
                  codec::Dump(nlohmann::json::array({codec::NodeStubJson(node)})));
  client_.AddJson("PUT", "/v1/node/" + kNodeId + "/drain", R"({"NodeModifyIndex": 7})");
  EXPECT_EQ(RunNodeDrain({.id = "1234",
                          .enable = true,
                          .detach = true,
                          .yes = true,
                          .deadline = "30m",
                          .ignore_system = true,
                          .message = "kernel"},
                         client_, ui_),
            kExitOk);
  EXPECT_EQ(out_.str(), "2026-11-30T02:53:32Z: Node \"" + kNodeId + "\" drain strategy set\n");
  const nlohmann::json body = nlohmann::json::parse(client_.requests().back().body);
  EXPECT_EQ(body["DrainSpec"],
            nlohmann::json({{"Deadline", 1'800'000'000'000}, {"IgnoreSystemJobs", true}}));
  EXPECT_EQ(body["Meta"]["message"], "kernel");

  // Disabling asks first; anything but "y" cancels.
  out_.str("");
  in_.str("n\n");
  EXPECT_EQ(RunNodeDrain({.id = "1234", .disable = true}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(), "Are you sure you want to disable drain mode for node \"" + kNodeId +
                            "\"? [y/N] Canceling drain toggle\n");
  out_.str("");
  in_.clear();
  in_.str("y\n");
  EXPECT_EQ(RunNodeDrain({.id = "1234", .disable = true, .keep_ineligible = true}, client_, ui_),
            kExitOk);
  const nlohmann::json off = nlohmann::json::parse(client_.requests().back().body);
  // Anything but y or n is an error.
  out_.str("");
  in_.clear();
  in_.str("maybe\n");
  EXPECT_EQ(RunNodeDrain({.id = "1234", .disable = true}, client_, ui_), kExitError);
  EXPECT_NE(out_.str().find("No confirmation detected"), std::string::npos) << out_.str();
  EXPECT_TRUE(off["DrainSpec"].is_null());
  EXPECT_EQ(off["MarkEligible"], false);
}

TEST_F(CommandsTest, NodeStatusListAndDetail) {
  model::Node node;
  node.id = kNodeId;
  node.name = "laptop";
  node.datacenter = "dc1";
  node.status = "ready";
  node.node_resources.cpu_shares = 4000;
  node.node_resources.memory_mb = 8192;
  node.node_resources.disk_mb = 10240;
  node.drivers["raw_exec"] = model::DriverInfo{{}, true, true, "Healthy", {}};
  node.drivers["mock"] = model::DriverInfo{{}, true, true, "Healthy", {}};
  node.drivers["exec"] = model::DriverInfo{{}, false, false, "", {}};
  const common::Time t0 = common::FromUnixNanos(1'787'313'605'000'000'000);
  for (const char* message :
       {"Node registered", "Node heartbeat missed", "Node reregistered by heartbeat"}) {
    node.events.push_back({.message = message, .subsystem = "Cluster", .timestamp = t0});
  }
  node.events.push_back({.message = "Driver exec is not detected",
                         .subsystem = "Driver",
                         .details = {{"driver", "exec"}},
                         .timestamp = t0});
  const std::string when = FormatTime(t0);
  const std::string pad(when.size() - 4, ' ');
  client_.AddJson("GET", "/v1/nodes",
                  codec::Dump(nlohmann::json::array({codec::NodeStubJson(node)})));
  EXPECT_EQ(RunNodeStatus({}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "ID        Node Pool  DC   Name    Class   Drain  Eligibility  Status\n"
            "12345678  default    dc1  laptop  <none>  false  eligible     ready\n");

  out_.str("");
  client_.AddJson("GET", "/v1/nodes?prefix=1234",
                  codec::Dump(nlohmann::json::array({codec::NodeStubJson(node)})));
  client_.AddJson("GET", "/v1/node/" + kNodeId, codec::Dump(codec::ToJson(node)));
  client_.AddJson("GET", "/v1/node/" + kNodeId + "/allocations",
                  codec::Dump(nlohmann::json::array({codec::ToJson(Alloc())})));
  EXPECT_EQ(RunNodeStatus({.id = "1234"}, client_, ui_), kExitOk);
  EXPECT_EQ(out_.str(),
            "ID            = 12345678-aaaa-bbbb-cccc-dddddddddddd\n"
            "Name          = laptop\n"
            "Node Pool     = default\n"
            "Class         = <none>\n"
            "DC            = dc1\n"
            "Drain         = false\n"
            "Eligibility   = eligible\n"
            "Status        = ready\n"
            "Driver Status = mock,raw_exec\n"
            "\n"
            "Node Events\n"
            "Time" +
                pad + "  Subsystem  Message\n" + when +
                "  Driver     Driver exec is not detected\n" + when +
                "  Cluster    Node reregistered by heartbeat\n" + when +
                "  Cluster    Node heartbeat missed\n"
                "\n"
                "Allocated Resources\n"
                "CPU           Memory           Disk\n"
                "200/4000 MHz  600 MiB/8.0 GiB  300 MiB/10 GiB\n"
                "\n"
                "Allocations\n"
                "ID        Node ID   Task Group  Version  Desired  Status   Created    Modified\n"
                "a1b2c3d4  12345678  web         1        run      running  1m10s ago  10s ago\n");
}

TEST(AgentCommandTest, BuildsTheAgentConfig) {
  EXPECT_EQ(BuildAgentConfig({}).status().message(),
            "Must specify either a data directory or -dev");
  absl::StatusOr<agent::AgentConfig> c = BuildAgentConfig(
      {.dev = true, .http_port = 0, .node = "n1", .log_level = "DEBUG", .datacenter = "dc2"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->dev_mode);
  EXPECT_EQ(c->http_port, 0);
  EXPECT_EQ(c->bind_addr, "127.0.0.1");
  EXPECT_EQ(c->node_name, "n1");
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_EQ(c->datacenter, "dc2");
  EXPECT_EQ(c->region, "global");
  EXPECT_FALSE(BuildAgentConfig({.dev = true, .log_level = "loud"}).ok());
  EXPECT_FALSE(BuildAgentConfig({.dev = true, .http_port = 70000}).ok());
  EXPECT_TRUE(c->server_enabled && c->client_enabled);  // -dev is both
  EXPECT_TRUE(BuildAgentConfig({.server = true, .client = true, .data_dir = "/d"}).ok());
  // -bootstrap-expect: 1, on a server; more only with etcd (docs/ha.md).
  EXPECT_TRUE(BuildAgentConfig({.server = true, .bootstrap_expect = 1, .data_dir = "/d"}).ok());
  const std::string without_etcd =
      std::string(BuildAgentConfig({.server = true, .bootstrap_expect = 3, .data_dir = "/d"})
                      .status()
                      .message());
  EXPECT_NE(without_etcd.find("several servers share their state in etcd"), std::string::npos);
  EXPECT_NE(without_etcd.find("-etcd-endpoints"), std::string::npos);
  auto with_etcd = BuildAgentConfig({.server = true,
                                     .bootstrap_expect = 3,
                                     .etcd_endpoints = "127.0.0.1:2379, 127.0.0.1:2380",
                                     .data_dir = "/d"});
  ASSERT_TRUE(with_etcd.ok()) << with_etcd.status();
  EXPECT_EQ(with_etcd->bootstrap_expect, 3);
  EXPECT_EQ(with_etcd->etcd.endpoints,
            (std::vector<std::string>{"127.0.0.1:2379", "127.0.0.1:2380"}));
  // etcd is for server-only agents, over plain HTTP for now.
  EXPECT_FALSE(BuildAgentConfig({.dev = true, .etcd_endpoints = "127.0.0.1:2379"}).ok());
  EXPECT_FALSE(BuildAgentConfig(
                   {.server = true, .client = true, .etcd_endpoints = "e:2379", .data_dir = "/d"})
                   .ok());
  EXPECT_FALSE(
      BuildAgentConfig({.server = true, .etcd_endpoints = "https://e:2379", .data_dir = "/d"})
          .ok());
  // Bound to every address, a server with etcd must advertise one.
  const std::string wildcard = std::string(
      BuildAgentConfig(
          {.server = true, .etcd_endpoints = "e:2379", .bind = "0.0.0.0", .data_dir = "/d"})
          .status()
          .message());
  EXPECT_NE(wildcard.find("advertise"), std::string::npos) << wildcard;
  EXPECT_FALSE(BuildAgentConfig({.server = true, .bootstrap_expect = 0, .data_dir = "/d"}).ok());
  EXPECT_FALSE(BuildAgentConfig(
                   {.client = true, .servers = "a:4647", .bootstrap_expect = 1, .data_dir = "/d"})
                   .ok());
}

TEST(AgentCommandTest, RolesAreChosenAndAClientOnlyAgentNeedsServers) {
  EXPECT_EQ(BuildAgentConfig({.data_dir = "/d"}).status().message(),
            "Must specify either server, client or dev mode for the agent (-server, -client or "
            "-dev)");
  absl::StatusOr<agent::AgentConfig> server =
      BuildAgentConfig({.server = true, .rpc_port = 0, .data_dir = "/d"});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(server->server_enabled);
  EXPECT_FALSE(server->client_enabled);
  EXPECT_EQ(server->rpc_port, 0);
  EXPECT_EQ(BuildAgentConfig({.client = true, .data_dir = "/d"}).status().message(),
            "A client-only agent needs its servers: -servers host:port[,host:port] or client { "
            "servers = [...] }");
  absl::StatusOr<agent::AgentConfig> client =
      BuildAgentConfig({.client = true, .servers = "10.0.0.1, 10.0.0.2:5647", .data_dir = "/d"});
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->servers, (std::vector<std::string>{"10.0.0.1:4647", "10.0.0.2:5647"}));
  EXPECT_FALSE(BuildAgentConfig({.client = true, .servers = "h:99999", .data_dir = "/d"}).ok());
  EXPECT_EQ(BuildAgentConfig({.dev = true, .servers = "10.0.0.1"}).status().message(),
            "-servers (client.servers) is for client-only agents: this agent's client uses its "
            "own server, and joining other servers comes with several servers");
  EXPECT_FALSE(BuildAgentConfig({.server = true, .rpc_port = 70000, .data_dir = "/d"}).ok());
}

}  // namespace
}  // namespace drover::cli
