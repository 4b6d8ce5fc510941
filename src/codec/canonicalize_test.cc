#include "codec/canonicalize.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "codec/validate.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

model::Job MinimalJob(const std::string& type = "") {
  model::Job job;
  job.id = "example";
  job.type = type;
  model::TaskGroup g;
  g.name = "g";
  g.count = model::TaskGroup::kUnsetCount;
  model::Task t;
  t.name = "t";
  t.driver = "raw_exec";
  g.tasks = {t};
  job.task_groups = {g};
  return job;
}

TEST(CanonicalizeJobTest, FillsJobDefaults) {
  model::Job job = MinimalJob();
  CanonicalizeJob(job);
  EXPECT_EQ(job.region, "global");
  EXPECT_EQ(job.namespace_, "default");
  EXPECT_EQ(job.type, "service");
  EXPECT_EQ(job.priority, 50);
  EXPECT_EQ(job.name, "example");
  EXPECT_EQ(job.datacenters, std::vector<std::string>{"*"});
  EXPECT_EQ(job.node_pool, "default");
}

TEST(CanonicalizeJobTest, KeepsGivenJobValues) {
  model::Job job = MinimalJob("batch");
  job.region = "eu";
  job.namespace_ = "prod";
  job.priority = 90;
  job.name = "pretty name";
  job.datacenters = {"dc1"};
  job.node_pool = "gpu";
  CanonicalizeJob(job);
  EXPECT_EQ(job.region, "eu");
  EXPECT_EQ(job.namespace_, "prod");
  EXPECT_EQ(job.type, "batch");
  EXPECT_EQ(job.priority, 90);
  EXPECT_EQ(job.name, "pretty name");
  EXPECT_EQ(job.datacenters, std::vector<std::string>{"dc1"});
  EXPECT_EQ(job.node_pool, "gpu");
}

TEST(CanonicalizeJobTest, FillsGroupAndTaskDefaults) {
  model::Job job = MinimalJob();
  CanonicalizeJob(job);
  const model::TaskGroup& g = job.task_groups[0];
  EXPECT_EQ(g.count, 1);
  ASSERT_TRUE(g.ephemeral_disk);
  EXPECT_EQ(*g.ephemeral_disk, (model::EphemeralDisk{false, false, 300}));
  EXPECT_FALSE(g.shutdown_delay);

  const model::Task& t = g.tasks[0];
  EXPECT_EQ(t.kill_timeout, seconds(5));
  EXPECT_EQ(t.log_config, (model::LogConfig{10, 10, false}));
  EXPECT_EQ(t.resources.cpu, 100);
  EXPECT_EQ(t.resources.memory_mb, 300);
  EXPECT_EQ(t.resources.memory_max_mb, 0);
  EXPECT_EQ(t.resources.cores, 0);
  ASSERT_TRUE(t.restart_policy);
  EXPECT_EQ(*t.restart_policy, *g.restart_policy);
  EXPECT_TRUE(t.config.is_object());
  EXPECT_FALSE(t.lifecycle);

  // A canonicalized minimal job is valid.
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(CanonicalizeJobTest, ZeroCountStaysZero) {
  model::Job job = MinimalJob();
  job.task_groups[0].count = 0;
  CanonicalizeJob(job);
  EXPECT_EQ(job.task_groups[0].count, 0);
}

TEST(CanonicalizeJobTest, RestartAndReschedulePoliciesDependOnJobType) {
  const model::RestartPolicy service_restart{2, minutes(30), seconds(15), "fail", false};
  const model::RestartPolicy batch_restart{3, hours(24), seconds(15), "fail", false};
  const model::ReschedulePolicy service_reschedule{0,        seconds(0), seconds(30), "exponential",
                                                   hours(1), true};
  const model::ReschedulePolicy batch_reschedule{1,          hours(24),          seconds(5),
                                                 "constant", model::Duration(0), false};
  struct Case {
    const char* type;
    model::RestartPolicy restart;
    std::optional<model::ReschedulePolicy> reschedule;
  };
  for (const Case& c : {Case{"service", service_restart, service_reschedule},
                        Case{"system", service_restart, std::nullopt},
                        Case{"batch", batch_restart, batch_reschedule},
                        Case{"sysbatch", batch_restart, std::nullopt}}) {
    model::Job job = MinimalJob(c.type);
    CanonicalizeJob(job);
    const model::TaskGroup& g = job.task_groups[0];
    ASSERT_TRUE(g.restart_policy) << c.type;
    EXPECT_EQ(*g.restart_policy, c.restart) << c.type;
    EXPECT_EQ(g.reschedule_policy, c.reschedule) << c.type;
    EXPECT_EQ(g.tasks[0].restart_policy, c.restart) << c.type;
    EXPECT_TRUE(ValidateJob(job).ok()) << c.type << ": " << ValidateJob(job);
  }
}

TEST(CanonicalizeJobTest, ServiceGroupsGetNomadsMigrateDefaultsUnderTheirOwnFields) {
  model::Job job = MinimalJob("service");
  job.task_groups.push_back(job.task_groups[0]);
  job.task_groups[1].name = "other";
  job.task_groups[1].migrate = model::MigrateStrategy{};
  job.task_groups[1].migrate->max_parallel = 3;
  CanonicalizeJob(job);
  EXPECT_EQ(job.task_groups[0].migrate,
            (model::MigrateStrategy{1, "checks", seconds(10), minutes(5)}));
  EXPECT_EQ(job.task_groups[1].migrate,
            (model::MigrateStrategy{3, "checks", seconds(10), minutes(5)}));
  model::Job batch = MinimalJob("batch");
  CanonicalizeJob(batch);
  EXPECT_FALSE(batch.task_groups[0].migrate.has_value());
}

TEST(CanonicalizeJobTest, KeepsGivenPoliciesFillingOnlyTheirMode) {
  model::Job job = MinimalJob("batch");
  model::TaskGroup& g = job.task_groups[0];
  g.restart_policy = model::RestartPolicy{5, minutes(10), seconds(1), "", false};
  g.reschedule_policy = model::ReschedulePolicy{2, hours(1), seconds(10), "", hours(2), false};
  g.tasks[0].restart_policy = model::RestartPolicy{1, minutes(1), seconds(2), "", false};
  model::Task second = g.tasks[0];
  second.name = "second";
  second.restart_policy.reset();
  g.tasks.push_back(second);
  CanonicalizeJob(job);

  EXPECT_EQ(*g.restart_policy, (model::RestartPolicy{5, minutes(10), seconds(1), "fail", false}));
  EXPECT_EQ(*g.reschedule_policy,
            (model::ReschedulePolicy{2, hours(1), seconds(10), "constant", hours(2), false}));
  // A task's own policy keeps its values and takes the group's mode; a task without one
  // copies the group's.
  EXPECT_EQ(*g.tasks[0].restart_policy,
            (model::RestartPolicy{1, minutes(1), seconds(2), "fail", false}));
  EXPECT_EQ(*g.tasks[1].restart_policy, *g.restart_policy);
}

TEST(CanonicalizeJobTest, KeepsGivenGroupAndTaskValues) {
  model::Job job = MinimalJob();
  model::TaskGroup& g = job.task_groups[0];
  g.count = 4;
  g.ephemeral_disk = model::EphemeralDisk{true, false, 0};
  model::Task& t = g.tasks[0];
  t.kill_timeout = seconds(30);
  t.log_config = model::LogConfig{2, 0, true};
  t.resources.cpu = 0;
  t.resources.cores = 2;
  t.resources.memory_mb = 64;
  t.lifecycle = model::Lifecycle{"", true};
  t.config = model::Value();
  CanonicalizeJob(job);

  EXPECT_EQ(g.count, 4);
  EXPECT_EQ(*g.ephemeral_disk, (model::EphemeralDisk{true, false, 300}));
  EXPECT_EQ(t.kill_timeout, seconds(30));
  EXPECT_EQ(t.log_config, (model::LogConfig{2, 10, true}));
  EXPECT_EQ(t.resources.cpu, 0) << "cores given, so no default CPU";
  EXPECT_EQ(t.resources.cores, 2);
  EXPECT_EQ(t.resources.memory_mb, 64);
  EXPECT_FALSE(t.lifecycle) << "a lifecycle without a hook is dropped";
  EXPECT_EQ(t.config, model::Value(model::Value::Object{}));
}

TEST(CanonicalizeJobTest, KeepsLifecycleWithHook) {
  model::Job job = MinimalJob();
  job.task_groups[0].tasks[0].lifecycle = model::Lifecycle{"poststop", false};
  CanonicalizeJob(job);
  ASSERT_TRUE(job.task_groups[0].tasks[0].lifecycle);
  EXPECT_EQ(job.task_groups[0].tasks[0].lifecycle->hook, "poststop");
}

TEST(CanonicalizeJobTest, IsIdempotent) {
  model::Job job = MinimalJob("batch");
  CanonicalizeJob(job);
  const model::Job once = job;
  CanonicalizeJob(job);
  EXPECT_EQ(job, once);
}

TEST(CanonicalizeJobTest, DecodedJsonJobBecomesValid) {
  absl::StatusOr<Json> j = ParseJson(R"({
    "ID": "redis", "Type": "service",
    "TaskGroups": [{"Name": "cache", "Tasks": [{"Name": "redis", "Driver": "docker",
                                                  "Config": {"image": "redis:7"}}]}]
  })");
  ASSERT_TRUE(j.ok());
  absl::StatusOr<model::Job> job = JobFromJson(*j);
  ASSERT_TRUE(job.ok()) << job.status();
  CanonicalizeJob(*job);
  EXPECT_TRUE(ValidateJob(*job).ok()) << ValidateJob(*job);
  const Json out = ToJson(*job);
  EXPECT_EQ(out["TaskGroups"][0]["Count"], 1);
  EXPECT_EQ(out["TaskGroups"][0]["Tasks"][0]["KillTimeout"], 5'000'000'000);
  EXPECT_EQ(out["TaskGroups"][0]["EphemeralDisk"]["SizeMB"], 300);
  EXPECT_EQ(out["Datacenters"], Json::array({"*"}));
}

// Nomad merges a partial policy with the defaults: a group's with its job type's, a
// task's with its group's. Zero given explicitly stays zero.
TEST(CanonicalizeJobTest, PartialRestartPoliciesTakeTheRestFromTheDefaults) {
  absl::StatusOr<Json> j = ParseJson(R"({
    "ID": "b", "Type": "batch",
    "TaskGroups": [{"Name": "g", "RestartPolicy": {"Attempts": 0, "Mode": "fail"},
                    "Tasks": [{"Name": "t", "Driver": "raw_exec",
                               "RestartPolicy": {"Delay": 1000000000}}]}]
  })");
  ASSERT_TRUE(j.ok());
  absl::StatusOr<model::Job> job = JobFromJson(*j);
  ASSERT_TRUE(job.ok()) << job.status();
  CanonicalizeJob(*job);
  EXPECT_TRUE(ValidateJob(*job).ok()) << ValidateJob(*job);
  const model::RestartPolicy& g = *job->task_groups[0].restart_policy;
  EXPECT_EQ(g.attempts, 0);
  EXPECT_EQ(g.interval, hours(24));
  EXPECT_EQ(g.delay, seconds(15));
  EXPECT_EQ(g.mode, "fail");
  const model::RestartPolicy& t = *job->task_groups[0].tasks[0].restart_policy;
  EXPECT_EQ(t.attempts, 0);
  EXPECT_EQ(t.interval, hours(24));
  EXPECT_EQ(t.delay, seconds(1));
}

}  // namespace
}  // namespace drover::codec
