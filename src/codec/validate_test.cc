#include "codec/validate.h"

#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codec/canonicalize.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

// A valid, canonicalized service job with one group "web" and one task "server".
model::Job ValidJob(const std::string& type = "service") {
  model::Job job;
  job.id = "example";
  job.type = type;
  model::TaskGroup g;
  g.name = "web";
  g.count = 1;
  model::Task t;
  t.name = "server";
  t.driver = "raw_exec";
  g.tasks = {t};
  job.task_groups = {g};
  CanonicalizeJob(job);
  return job;
}

std::string ErrorText(const model::Job& job) {
  absl::Status s = ValidateJob(job);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

// The text Nomad nests for one problem of a task (by default "server") in group "web".
std::string TaskError(const std::string& message, const std::string& task = "server") {
  return "1 error occurred:\n\t* Task group web validation failed: 1 error occurred:\n\t* "
         "Task " +
         task + " validation failed: 1 error occurred:\n\t* " + message + "\n\n\n\n\n\n";
}

// The text for one problem of group "web".
std::string GroupError(const std::string& message) {
  return "1 error occurred:\n\t* Task group web validation failed: 1 error occurred:\n\t* " +
         message + "\n\n\n\n";
}

TEST(FormatMultiErrorTest, MatchesHashicorpMultierror) {
  EXPECT_EQ(FormatMultiError({}), "");
  EXPECT_EQ(FormatMultiError({"one"}), "1 error occurred:\n\t* one\n\n");
  EXPECT_EQ(FormatMultiError({"one", "two"}), "2 errors occurred:\n\t* one\n\t* two\n\n");
}

TEST(ValidateJobTest, AcceptsValidJobsOfEveryType) {
  for (const char* type : {"service", "batch", "system", "sysbatch"}) {
    EXPECT_TRUE(ValidateJob(ValidJob(type)).ok()) << type << ": " << ValidateJob(ValidJob(type));
  }
}

TEST(ValidateJobTest, ListsEveryJobLevelProblem) {
  model::Job job;
  EXPECT_EQ(ErrorText(job),
            "8 errors occurred:\n"
            "\t* Missing job region\n"
            "\t* Missing job ID\n"
            "\t* Missing job name\n"
            "\t* Job must be in a namespace\n"
            "\t* Missing job type\n"
            "\t* job priority must be between [1, 100]\n"
            "\t* Missing job datacenters\n"
            "\t* Missing job task groups\n\n");
}

TEST(ValidateJobTest, JobFieldProblems) {
  model::Job job = ValidJob();
  job.id = "has space";
  EXPECT_EQ(ErrorText(job), "1 error occurred:\n\t* Job ID contains a space\n\n");

  job = ValidJob();
  job.id = std::string("nul\0l", 5);
  EXPECT_THAT(ErrorText(job), HasSubstr("Job ID contains a null character"));

  job = ValidJob();
  job.name = std::string("a\0b", 3);
  EXPECT_THAT(ErrorText(job), HasSubstr("Job Name contains a null character"));

  job = ValidJob();
  job.type = "cron";
  EXPECT_EQ(ErrorText(job), "1 error occurred:\n\t* Invalid job type: \"cron\"\n\n");

  for (int priority : {0, 101, -5}) {
    job = ValidJob();
    job.priority = priority;
    EXPECT_THAT(ErrorText(job), HasSubstr("job priority must be between [1, 100]"));
  }
  job = ValidJob();
  job.priority = 100;
  EXPECT_TRUE(ValidateJob(job).ok());

  job = ValidJob();
  job.datacenters = {"dc1", ""};
  EXPECT_THAT(ErrorText(job), HasSubstr("Job datacenter must be non-empty string"));
}

TEST(ValidateJobTest, JobConstraints) {
  model::Job job = ValidJob();
  job.constraints = {{"${attr.kernel.name}", "linux", "="},
                     {"${attr.kernel.name}", "linux", "like"},
                     {"", "", "="}};
  EXPECT_EQ(ErrorText(job),
            "3 errors occurred:\n"
            "\t* Constraint 2 validation failed: Unknown constraint type \"like\"\n"
            "\t* Constraint 3 validation failed: Operator \"=\" requires an RTarget\n"
            "\t* Constraint 3 validation failed: No LTarget provided but is required by "
            "constraint\n\n");
}

TEST(ValidateJobTest, EveryKnownOperandIsAccepted) {
  model::Job job = ValidJob();
  for (const char* op :
       {"=", "==", "is", "!=", "not", "<", "<=", ">", ">=", "regexp", "set_contains",
        "set_contains_any", "set_contains_all", "version", "semver"}) {
    job.constraints.push_back({"${attr.x}", "1", op});
  }
  job.constraints.push_back({"", "", "distinct_hosts"});
  job.constraints.push_back({"${node.datacenter}", "2", "distinct_property"});
  job.constraints.push_back({"${node.datacenter}", "", "distinct_property"});
  job.constraints.push_back({"${attr.x}", "", "is_set"});
  job.constraints.push_back({"${attr.x}", "", "is_not_set"});
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidateJobTest, ConstraintOperandRules) {
  struct Case {
    model::Constraint c;
    const char* message;
  };
  for (const Case& c : {
           Case{{"a", "b", ""}, "Missing constraint operand"},
           Case{{"a", "", "set_contains"}, "Set contains constraint requires an RTarget"},
           Case{{"a", "", "version"}, "Version constraint is invalid"},
           Case{{"a", "x", "distinct_property"}, "Failed to convert RTarget \"x\" to uint64"},
           Case{{"a", "0", "distinct_property"},
                "Distinct Property must have an allowed count of 1 or greater: 0 < 1"},
           Case{{"a", "b", "is_set"}, "Operator \"is_set\" does not support an RTarget"},
           Case{{"a", "", "!="}, "Operator \"!=\" requires an RTarget"},
       }) {
    model::Job job = ValidJob();
    job.constraints = {c.c};
    EXPECT_THAT(ErrorText(job),
                HasSubstr(std::string("Constraint 1 validation failed: ") + c.message))
        << c.c.operand;
  }
}

TEST(ValidateJobTest, GroupNamesMustBeUniqueAndPresent) {
  model::Job job = ValidJob();
  job.task_groups.push_back(job.task_groups[0]);
  job.task_groups.push_back(job.task_groups[0]);
  job.task_groups[2].name = "";
  const std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("Job task group 2 redefines 'web' from group 1"));
  EXPECT_THAT(text, HasSubstr("Job task group 3 missing name"));
  EXPECT_THAT(text, HasSubstr("Task group  validation failed: 1 error occurred:\n\t* "
                              "Missing task group name"));
}

TEST(ValidateJobTest, SystemJobsRunAtMostOneInstancePerGroup) {
  model::Job job = ValidJob("system");
  job.task_groups[0].count = 3;
  EXPECT_EQ(ErrorText(job),
            "1 error occurred:\n\t* Job task group web has count 3. Count cannot exceed 1 with "
            "system scheduler\n\n");
}

TEST(ValidateJobTest, GroupProblemsNestUnderTheGroup) {
  model::Job job = ValidJob();
  job.task_groups[0].count = -2;
  job.task_groups[0].tasks.clear();
  EXPECT_EQ(ErrorText(job),
            "1 error occurred:\n\t* Task group web validation failed: 2 errors occurred:\n"
            "\t* Task group count can't be negative\n"
            "\t* Missing tasks for task group\n\n\n\n");
}

TEST(ValidateJobTest, MaxClientDisconnectCannotBeNegative) {
  model::Job job = ValidJob();
  job.task_groups[0].max_client_disconnect = std::chrono::seconds(-1);
  EXPECT_NE(ErrorText(job).find("max_client_disconnect cannot be negative"), std::string::npos)
      << ErrorText(job);
}

TEST(ValidateJobTest, GroupNameWithNull) {
  model::Job job = ValidJob();
  job.task_groups[0].name = std::string("w\0b", 3);
  EXPECT_THAT(ErrorText(job), HasSubstr("Task group name contains null character"));
}

TEST(ValidateJobTest, GroupConstraints) {
  model::Job job = ValidJob();
  job.task_groups[0].constraints = {{"${attr.a}", "b", "~"}};
  EXPECT_EQ(ErrorText(job),
            GroupError("Constraint 1 validation failed: Unknown constraint type \"~\""));
}

TEST(ValidateJobTest, TaskNamesMustBeUniqueAndPresentAndOneLeader) {
  model::Job job = ValidJob();
  model::TaskGroup& g = job.task_groups[0];
  g.tasks.push_back(g.tasks[0]);
  g.tasks.push_back(g.tasks[0]);
  g.tasks[2].name = "";
  g.tasks[0].leader = true;
  g.tasks[1].leader = true;
  const std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("\t* Task 2 redefines 'server' from task 1\n"));
  EXPECT_THAT(text, HasSubstr("\t* Task 3 missing name\n"));
  EXPECT_THAT(text, HasSubstr("\t* Only one task may be marked as leader\n"));
  EXPECT_THAT(text, HasSubstr("Task  validation failed: 1 error occurred:\n\t* Missing task "
                              "name\n"));
}

TEST(ValidateJobTest, MissingPoliciesAndDisk) {
  model::Job job = ValidJob();
  job.task_groups[0].restart_policy.reset();
  job.task_groups[0].tasks[0].restart_policy.reset();
  job.task_groups[0].reschedule_policy.reset();
  job.task_groups[0].ephemeral_disk.reset();
  EXPECT_EQ(ErrorText(job),
            "1 error occurred:\n\t* Task group web validation failed: 3 errors occurred:\n"
            "\t* Task Group web should have a restart policy\n"
            "\t* Task Group web should have a reschedule policy\n"
            "\t* Task Group web should have an ephemeral disk object\n\n\n\n");
}

TEST(ValidateJobTest, RestartPolicyRules) {
  struct Case {
    model::RestartPolicy policy;
    std::string message;
  };
  for (const Case& c : {
           Case{{2, minutes(30), seconds(15), "retry", false},
                "Unsupported restart mode: \"retry\""},
           Case{{0, minutes(30), seconds(15), "delay", false},
                "Restart policy \"delay\" with 0 attempts is ambiguous"},
           Case{{-1, minutes(30), seconds(15), "fail", false},
                "Restart policy \"fail\" with -1 attempts is invalid (attempts must be >= 0)"},
           Case{{1, seconds(2), seconds(1), "fail", false},
                "Interval can not be less than 5s (got 2s)"},
           Case{{3, minutes(1), seconds(30), "fail", false},
                "Nomad can't restart the TaskGroup 3 times in an interval of 1m0s with a delay "
                "of 30s"},
       }) {
    model::Job job = ValidJob();
    job.task_groups[0].restart_policy = c.policy;
    job.task_groups[0].tasks[0].restart_policy = c.policy;
    // Reported once, for the group (the task's copy is not checked again).
    EXPECT_EQ(ErrorText(job), GroupError(c.message));
  }
  // A task's own policy is checked under the task.
  model::Job job = ValidJob();
  job.task_groups[0].tasks[0].restart_policy =
      model::RestartPolicy{2, minutes(30), seconds(15), "", false};
  EXPECT_EQ(ErrorText(job), TaskError("Unsupported restart mode: \"\""));
}

TEST(ValidateJobTest, ReschedulePolicyRules) {
  struct Case {
    model::ReschedulePolicy policy;
    std::vector<std::string> messages;
  };
  for (const Case& c : {
           Case{{3, hours(1), seconds(1), "constant", seconds(0), false},
                {"Delay cannot be less than 5s (got 1s)"}},
           Case{{3, hours(1), seconds(10), "linear", seconds(0), false},
                {"Invalid delay function \"linear\", must be one of [\"constant\" "
                 "\"exponential\" \"fibonacci\"]"}},
           Case{{3, hours(1), seconds(10), "exponential", seconds(1), false},
                {"Max Delay cannot be less than 5s (got 1s)",
                 "Max Delay cannot be less than Delay 10s (got 1s)"}},
           Case{{2, seconds(0), seconds(10), "constant", seconds(0), true},
                {"Interval must be a non zero value if Attempts > 0",
                 "Reschedule Policy with Attempts = 2, Interval = 0s, and Unlimited = true is "
                 "ambiguous",
                 "If Attempts >0, Unlimited cannot also be set to true"}},
           Case{{2, seconds(10), seconds(5), "constant", seconds(0), false},
                {"Interval cannot be less than 15s (got 10s)"}},
           Case{{10, minutes(1), seconds(10), "constant", seconds(0), false},
                {"Nomad can only make 6 attempts in 1m0s with initial delay 10s and delay "
                 "function \"constant\"",
                 "Set the interval to at least 1m40s to accommodate 10 attempts"}},
           Case{{5, minutes(1), seconds(10), "exponential", minutes(10), false},
                {"Nomad can only make 3 attempts in 1m0s with initial delay 10s, delay function "
                 "\"exponential\", and delay ceiling 10m0s",
                 "Set the interval to at least 2m40s to accommodate 5 attempts"}},
           Case{{6, minutes(1), seconds(10), "fibonacci", minutes(10), false},
                {"Nomad can only make 5 attempts in 1m0s with initial delay 10s, delay function "
                 "\"fibonacci\", and delay ceiling 10m0s",
                 "Set the interval to at least 1m20s to accommodate 6 attempts"}},
       }) {
    model::Job job = ValidJob("batch");
    job.task_groups[0].reschedule_policy = c.policy;
    absl::Status s = ValidateJob(job);
    ASSERT_FALSE(s.ok()) << c.policy.delay_function;
    for (const std::string& m : c.messages) {
      EXPECT_THAT(std::string(s.message()), HasSubstr("\t* " + m + "\n")) << s;
    }
  }
  // Disabled rescheduling (no attempts, not unlimited) is not checked further.
  model::Job job = ValidJob("batch");
  job.task_groups[0].reschedule_policy = model::ReschedulePolicy{};
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  // Viable limited policies pass.
  job.task_groups[0].reschedule_policy =
      model::ReschedulePolicy{3, hours(1), seconds(30), "exponential", minutes(5), false};
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidateJobTest, SystemJobsMayNotReschedule) {
  for (const char* type : {"system", "sysbatch"}) {
    model::Job job = ValidJob(type);
    job.task_groups[0].reschedule_policy =
        model::ReschedulePolicy{1, hours(24), seconds(5), "constant", seconds(0), false};
    EXPECT_EQ(ErrorText(job), GroupError("System jobs should not have a reschedule policy"));
  }
}

TEST(ValidateJobTest, MigrateRules) {
  model::Job job = ValidJob();
  ASSERT_TRUE(job.task_groups[0].migrate.has_value());  // the service default
  job.task_groups[0].migrate = model::MigrateStrategy{-1, "manual", seconds(-1), seconds(-2)};
  const std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("\t* MaxParallel must be >= 0 but found -1\n"));
  EXPECT_THAT(text, HasSubstr("\t* Invalid HealthCheck: \"manual\"\n"));
  EXPECT_THAT(text, HasSubstr("\t* MinHealthyTime is -1s and must be >= 0\n"));
  EXPECT_THAT(text, HasSubstr("\t* HealthyDeadline is -2s and must be >= 0\n"));
  job.task_groups[0].migrate = model::MigrateStrategy{2, "", seconds(0), seconds(0)};
  EXPECT_THAT(ErrorText(job), HasSubstr("\t* Missing HealthCheck\n"));
  job.task_groups[0].migrate = model::MigrateStrategy{0, "task_states", minutes(2), minutes(1)};
  EXPECT_THAT(ErrorText(job), HasSubstr("MinHealthyTime must be less than HealthyDeadline"));
  job.task_groups[0].migrate = model::MigrateStrategy{3, "task_states", seconds(1), minutes(1)};
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  for (const char* type : {"batch", "system", "sysbatch"}) {
    model::Job other = ValidJob(type);
    EXPECT_FALSE(other.task_groups[0].migrate.has_value()) << type;
    other.task_groups[0].migrate = model::MigrateStrategy{1, "checks", seconds(1), minutes(1)};
    EXPECT_THAT(ErrorText(other),
                HasSubstr("Job type \"" + std::string(type) + "\" does not allow migrate block"));
  }
}

TEST(ValidateJobTest, PeriodicAndParameterizedRules) {
  model::Job job = ValidJob("batch");
  job.periodic = model::PeriodicConfig{.specs = {"*/5 * * * *", "@daily"}};
  CanonicalizeJob(job);
  EXPECT_EQ(job.periodic->spec_type, "cron");
  EXPECT_EQ(job.periodic->time_zone, "UTC");
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);

  job.periodic->specs = {"61 * * * *", "bad"};
  job.periodic->time_zone = "Mars/Olympus_Mons";
  EXPECT_EQ(ErrorText(job),
            "1 error occurred:\n\t* 3 errors occurred:\n"
            "\t* Invalid time zone \"Mars/Olympus_Mons\": unknown time zone Mars/Olympus_Mons\n"
            "\t* Invalid cron spec \"61 * * * *\": syntax error in minute field: '61'\n"
            "\t* Invalid cron spec \"bad\": missing field(s)\n\n\n\n");
  job.periodic = model::PeriodicConfig{.spec = "@hourly", .specs = {"@daily"}, .spec_type = "cron"};
  EXPECT_THAT(ErrorText(job), HasSubstr("Only cron or crons may be used"));
  job.periodic = model::PeriodicConfig{.spec_type = "cron"};
  EXPECT_THAT(ErrorText(job), HasSubstr("Must specify a spec"));
  job.periodic = model::PeriodicConfig{.spec = "@hourly", .spec_type = "_internal_test"};
  EXPECT_THAT(ErrorText(job), HasSubstr("Unknown periodic specification type \"_internal_test\""));
  // A disabled block is not checked (Nomad's).
  job.periodic = model::PeriodicConfig{.enabled = false, .spec = "bad"};
  EXPECT_TRUE(ValidateJob(job).ok());
  job.periodic = model::PeriodicConfig{.spec = "@hourly", .spec_type = "cron"};
  job.type = "service";
  EXPECT_THAT(ErrorText(job),
              HasSubstr("Periodic can only be used with \"batch\" or \"sysbatch\" scheduler"));

  job = ValidJob("batch");
  job.parameterized = model::ParameterizedJobConfig{};
  CanonicalizeJob(job);
  EXPECT_EQ(job.parameterized->payload, "optional");
  EXPECT_TRUE(ValidateJob(job).ok());
  job.parameterized = model::ParameterizedJobConfig{
      .payload = "sometimes", .meta_required = {"a", "b"}, .meta_optional = {"b", "a", "c"}};
  EXPECT_EQ(ErrorText(job),
            "1 error occurred:\n\t* 2 errors occurred:\n"
            "\t* Unknown payload requirement: \"sometimes\"\n"
            "\t* Required and optional meta keys should be disjoint. Following keys exist in "
            "both: [a b]\n\n\n\n");
  job.parameterized = model::ParameterizedJobConfig{.payload = "optional"};
  job.type = "system";
  EXPECT_THAT(ErrorText(job), HasSubstr("Parameterized job can only be used with \"batch\" or "
                                        "\"sysbatch\" scheduler"));
  // Templates leave room in their IDs for their children's.
  job = ValidJob("batch");
  job.parameterized = model::ParameterizedJobConfig{.payload = "optional"};
  job.id = job.name = std::string(250, 'j');
  EXPECT_THAT(ErrorText(job), HasSubstr("Job ID bytes of a periodic or parameterized job: 250 is "
                                        "more than the limit of 227"));
  job.periodic = model::PeriodicConfig{.spec = "@daily", .spec_type = "cron", .time_zone = "UTC"};
  EXPECT_THAT(ErrorText(job), HasSubstr("limit of 207"));  // its dispatched children launch
  job.parameterized.reset();
  EXPECT_THAT(ErrorText(job), HasSubstr("limit of 236"));
  job.id = job.name = std::string(236, 'j');
  EXPECT_TRUE(ValidateJob(job).ok());
  // A dispatched child is no template: its own periodic suffix is what it leaves room for.
  job.parameterized = model::ParameterizedJobConfig{.payload = "optional"};
  job.dispatched = true;
  EXPECT_TRUE(ValidateJob(job).ok());
}

TEST(ValidateJobTest, DockerConfigIsCheckedOptionByOption) {
  model::Job job = ValidJob();
  model::Task& t = job.task_groups[0].tasks[0];
  t.driver = "docker";
  job.task_groups[0].networks = {model::NetworkResource{
      .mode = "host", .dynamic_ports = {model::Port{.label = "http", .to = 8080}}}};
  t.config = model::Value::Object{
      {"image", "registry.local:5000/team/web:1.2"},
      {"args", model::Value::Array{"-p", "8080"}},
      {"ports", model::Value::Array{"http"}},
      {"labels", model::Value::Array{model::Value::Object{{"team", "a"}}}},
      {"mount",
       model::Value::Array{model::Value::Object{{"type", "tmpfs"}, {"target", "/scratch"}}}},
      {"auth", model::Value::Array{model::Value::Object{{"username", "u"}, {"password", "p"}}}}};
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  t.config = model::Value::Object{
      {"image", "Busybox:1"},
      {"ports", model::Value::Array{"admin"}},
      {"tty", true},
      {"bogus", 1},
      {"network_mode", "macvlan"},
      {"image_pull_timeout", "soon"},
      {"mount", model::Value::Array{model::Value::Object{
                    {"type", "nfs"}, {"target", "relative"}, {"tmpfs_options", 1}}}},
      {"logging", model::Value::Array{model::Value::Object{{"type", "syslog"}}}}};
  const std::string text = ErrorText(job);
  for (const char* expected :
       {"config: unknown option \"bogus\"",
        "config.tty: not supported by Drover's docker driver yet",
        "config.image: \"Busybox:1\" is not a valid image reference",
        "config.ports: port label \"admin\" is not declared in the group's network",
        "config.network_mode: \"macvlan\" is not bridge, host or none",
        "config.image_pull_timeout: \"soon\" is not a positive duration",
        "config.mount: type \"nfs\" is not bind, volume or tmpfs",
        "config.mount: target must be an absolute path in the container",
        "config.logging: type \"syslog\" is not supported: Drover collects the task's logs",
        "config.mount.tmpfs_options: not supported by Drover's docker driver yet"})
    EXPECT_THAT(text, HasSubstr(expected));
  t.config = model::Value::Object{};
  EXPECT_THAT(ErrorText(job), HasSubstr("config.image: required"));
}

TEST(ValidateJobTest, UpdateRules) {
  model::Job job = ValidJob();
  model::UpdateStrategy u{.stagger = seconds(0),
                          .max_parallel = -1,
                          .health_check = "bogus",
                          .min_healthy_time = seconds(-1),
                          .healthy_deadline = seconds(0),
                          .progress_deadline = seconds(-1),
                          .auto_promote = true,
                          .canary = -1};
  job.task_groups[0].update = u;
  std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("\t* Invalid health check given: \"bogus\"\n"));
  EXPECT_THAT(text, HasSubstr("\t* Max parallel can not be less than zero: -1 < 0\n"));
  EXPECT_THAT(text, HasSubstr("\t* Canary count can not be less than zero: -1 < 0\n"));
  EXPECT_THAT(text, HasSubstr("\t* Minimum healthy time may not be less than zero: -1s\n"));
  EXPECT_THAT(text, HasSubstr("\t* Healthy deadline must be greater than zero: 0s\n"));
  EXPECT_THAT(text, HasSubstr("\t* Progress deadline must be zero or greater: -1s\n"));
  EXPECT_THAT(text, HasSubstr("\t* Stagger must be greater than zero: 0s\n"));
  u = model::UpdateStrategy{.stagger = seconds(30),
                            .max_parallel = 1,
                            .health_check = "checks",
                            .min_healthy_time = minutes(2),
                            .healthy_deadline = minutes(1),
                            .progress_deadline = seconds(30),
                            .auto_promote = true,
                            .canary = 0};
  job.task_groups[0].update = u;
  text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("health_check \"checks\" is not supported by Drover yet"));
  EXPECT_THAT(text, HasSubstr("Auto Promote requires a Canary count greater than zero"));
  EXPECT_THAT(text,
              HasSubstr("Minimum healthy time must be less than healthy deadline: 2m0s > 1m0s"));
  EXPECT_THAT(text, HasSubstr("Healthy deadline must be less than progress deadline: 1m0s > 30s"));
  u.health_check = "task_states";
  u.min_healthy_time = seconds(10);
  u.healthy_deadline = minutes(5);
  u.progress_deadline = minutes(10);
  u.canary = 1;
  job.task_groups[0].update = u;
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
  model::Job batch = ValidJob("batch");
  batch.task_groups[0].update = u;
  EXPECT_THAT(ErrorText(batch), HasSubstr("Job type \"batch\" does not allow update block"));
  // A system job rolls out by max_parallel and stagger; it has no deployment to promote
  // or revert.
  model::Job system = ValidJob("system");
  system.task_groups[0].reschedule_policy.reset();
  u.auto_revert = true;
  system.task_groups[0].update = u;
  text = ErrorText(system);
  EXPECT_THAT(text, HasSubstr("System jobs may not have canaries: canary must be 0"));
  EXPECT_THAT(text, HasSubstr("System jobs do not auto-revert"));
  u.canary = 0;
  u.auto_promote = false;
  u.auto_revert = false;
  system.task_groups[0].update = u;
  EXPECT_TRUE(ValidateJob(system).ok()) << ValidateJob(system);
}

TEST(ValidateJobTest, EphemeralDiskMinimum) {
  model::Job job = ValidJob();
  job.task_groups[0].ephemeral_disk->size_mb = 5;
  const std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("\t* Minimum DiskMB value is 10; got 5\n"));
  // The default 100 MB of logs no longer fit either.
  EXPECT_THAT(text, HasSubstr("log storage (100 MB) must be less than requested disk capacity "
                              "(5 MB)"));
}

TEST(ValidateJobTest, TaskFieldProblems) {
  struct Case {
    void (*mutate)(model::Task&);
    std::string message;
  };
  for (const Case& c : {
           Case{[](model::Task& t) { t.driver = ""; }, "Missing task driver"},
           Case{[](model::Task& t) { t.name = "a/b"; }, "Task name cannot include slashes"},
           Case{[](model::Task& t) { t.name = std::string("a\0b", 3); },
                "Task name cannot include null characters"},
           Case{[](model::Task& t) { t.kill_timeout = seconds(-1); },
                "KillTimeout must be a positive value"},
           Case{[](model::Task& t) { t.shutdown_delay = seconds(-1); },
                "ShutdownDelay must be a positive value"},
           Case{[](model::Task& t) { t.resources.cpu = 0; }, "minimum CPU value is 1; got 0"},
           Case{[](model::Task& t) { t.resources.memory_mb = 5; },
                "minimum MemoryMB value is 10; got 5"},
           Case{[](model::Task& t) { t.resources.cores = 2; },
                "Task can only ask for 'cpu' or 'cores' resource, not both."},
           Case{[](model::Task& t) { t.resources.disk_mb = 100; },
                "Task can't ask for disk resources, they have to be specified at the task group "
                "level."},
           Case{[](model::Task& t) { t.resources.memory_max_mb = 100; },
                "MemoryMaxMB value (100) should be larger than MemoryMB value (300)"},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"", 1, {}}};
                },
                "device 1 failed validation: device name must be given as one of the following: "
                "type, vendor/type, or vendor/type/name"},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"gpu", 1, {{"a", "", "distinct_hosts"}}}};
                },
                "device 1 failed validation: Constraint 1 validation failed: using unsupported "
                "operand \"distinct_hosts\""},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"gpu", 1, {{"a", "b", "??"}}}};
                },
                "device 1 failed validation: Constraint 1 validation failed: Unknown constraint "
                "type \"??\""},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"gpu", 0, {}, {}}};
                },
                "device 1 failed validation: device count must be at least 1"},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"gpu", 1, {}, {{"${device.model}", "T4", "=", 0}}}};
                },
                "device 1 failed validation: Affinity 1 validation failed: Affinity weight "
                "cannot be zero"},
           Case{[](model::Task& t) {
                  t.resources.devices = {{"gpu", 1, {}, {{"${device.model}", "T4", "=", 101}}}};
                },
                "device 1 failed validation: Affinity 1 validation failed: Affinity weight must "
                "be within the range [-100,100]"},
           Case{[](model::Task& t) { t.log_config.max_files = 0; },
                "minimum number of files is 1; got 0"},
           Case{[](model::Task& t) { t.log_config.max_file_size_mb = 0; },
                "minimum file size is 1MB; got 0"},
           Case{[](model::Task& t) { t.log_config.max_files = 30; },
                "log storage (300 MB) must be less than requested disk capacity (300 MB)"},
           Case{[](model::Task& t) {
                  t.constraints = {{"${attr.a}", "", ">"}};
                },
                "Constraint 1 validation failed: Operator \">\" requires an RTarget"},
           Case{[](model::Task& t) {
                  t.lifecycle = model::Lifecycle{"prerun", false};
                },
                "Lifecycle validation failed: invalid hook: prerun"},
           Case{[](model::Task& t) {
                  t.lifecycle = model::Lifecycle{"", true};
                },
                "Lifecycle validation failed: no lifecycle hook provided"},
           Case{[](model::Task& t) {
                  t.dispatch_payload = model::DispatchPayloadConfig{"../../../x"};
                },
                "Dispatch Payload validation failed: dispatch payload file escapes allocation "
                "directory"},
       }) {
    model::Job job = ValidJob();
    c.mutate(job.task_groups[0].tasks[0]);
    EXPECT_EQ(ErrorText(job), TaskError(c.message, job.task_groups[0].tasks[0].name));
  }
}

TEST(ValidateJobTest, TaskLevelDistinctConstraintsAreDisallowed) {
  model::Job job = ValidJob();
  job.task_groups[0].tasks[0].constraints = {{"", "", "distinct_hosts"}};
  EXPECT_EQ(ErrorText(job),
            TaskError("Constraint 1 has disallowed Operand at task level: distinct_hosts"));
}

TEST(ValidateJobTest, ValidTaskVariantsPass) {
  model::Job job = ValidJob();
  model::Task& t = job.task_groups[0].tasks[0];
  t.resources.memory_max_mb = 600;
  t.lifecycle = model::Lifecycle{"poststart", true};
  t.dispatch_payload = model::DispatchPayloadConfig{"in/../input.json"};
  t.resources.devices = {{"nvidia/gpu", 1, {{"${device.attr.memory}", "2 GiB", ">="}}}};
  EXPECT_TRUE(ValidateJob(job).ok()) << ValidateJob(job);
}

TEST(ValidateJobTest, PortConflictsWithinAGroup) {
  model::Job job = ValidJob();
  model::TaskGroup& g = job.task_groups[0];
  model::NetworkResource net;
  net.reserved_ports = {{"http", 8080, 0, ""}, {"http", 8081, 0, ""}, {"admin", 8080, 0, ""}};
  net.dynamic_ports = {{"metrics", 0, -5, ""}, {"big", 0, 70000, ""}};
  g.networks = {net};
  model::NetworkResource task_net;
  task_net.reserved_ports = {{"http", 9000, 0, ""},
                             {"debug", 8081, 0, ""},
                             {"huge", 70000, 0, ""},
                             {"other", 8080, 0, "public"}};
  g.tasks[0].resources.networks = {task_net};
  const std::string text = ErrorText(job);
  EXPECT_THAT(text, HasSubstr("\t* Port label http already in use by taskgroup network\n"));
  EXPECT_THAT(text, HasSubstr("\t* Static port 8080 already reserved by taskgroup network:http\n"));
  EXPECT_THAT(text, HasSubstr("\t* Port \"metrics\" cannot be mapped to negative value -5\n"));
  EXPECT_THAT(
      text, HasSubstr("\t* Port \"big\" cannot be mapped to a port (70000) greater than 65535\n"));
  EXPECT_THAT(text, HasSubstr("\t* Static port 8081 already reserved by taskgroup network:http\n"));
  EXPECT_THAT(text, HasSubstr("\t* Port huge (70000) cannot be greater than 65535\n"));
  // The same port on another host network does not conflict.
  EXPECT_THAT(text, Not(HasSubstr("by server:other")));
  EXPECT_THAT(text, Not(HasSubstr("Static port 8080 already reserved by server")));

  g.networks.push_back(model::NetworkResource{});
  EXPECT_THAT(ErrorText(job), HasSubstr("\t* Only one network resource is allowed\n"));
}

TEST(ValidateJobTest, StaticPortsConflictAcrossTasks) {
  model::Job job = ValidJob();
  model::TaskGroup& g = job.task_groups[0];
  model::Task second = g.tasks[0];
  second.name = "sidecar";
  model::NetworkResource net;
  net.reserved_ports = {{"http", 8080, 0, ""}};
  g.tasks[0].resources.networks = {net};
  second.resources.networks = {net};
  g.tasks.push_back(second);
  EXPECT_EQ(ErrorText(job), GroupError("Static port 8080 already reserved by server:http"));
}

TEST(ValidateJobTest, ListsProblemsOfEveryGroupAndTask) {
  model::Job job = ValidJob();
  job.priority = 0;
  job.task_groups.push_back(job.task_groups[0]);
  job.task_groups[1].name = "db";
  job.task_groups[1].tasks[0].driver = "";
  job.task_groups[0].tasks[0].resources.memory_mb = 1;
  job.task_groups[0].tasks[0].log_config.max_files = 0;
  EXPECT_EQ(ErrorText(job),
            "3 errors occurred:\n"
            "\t* job priority must be between [1, 100]\n"
            "\t* Task group web validation failed: 1 error occurred:\n"
            "\t* Task server validation failed: 2 errors occurred:\n"
            "\t* minimum MemoryMB value is 10; got 1\n"
            "\t* minimum number of files is 1; got 0\n\n\n\n\n"
            "\t* Task group db validation failed: 1 error occurred:\n"
            "\t* Task server validation failed: 1 error occurred:\n"
            "\t* Missing task driver\n\n\n\n\n\n");
}

}  // namespace
}  // namespace drover::codec

namespace drover::codec {
namespace {

TEST(ValidateKillSignalTest, UnknownOrOutOfRangeSignalsAreRejected) {
  model::Job job = ValidJob();
  job.task_groups[0].tasks[0].kill_signal = "SIGTERN";
  EXPECT_EQ(ErrorText(job), TaskError("Unknown kill signal \"SIGTERN\""));
  job.task_groups[0].tasks[0].kill_signal = "99999999999";
  EXPECT_EQ(ErrorText(job), TaskError("Unknown kill signal \"99999999999\""));
  job.task_groups[0].tasks[0].kill_signal = "SIGUSR1";
  EXPECT_TRUE(ValidateJob(job).ok());
}

}  // namespace
}  // namespace drover::codec

namespace drover::codec {
namespace {

TEST(ValidateJobTest, ScalingPolicyBoundsTheCount) {
  model::Job job = ValidJob();
  job.task_groups[0].scaling = model::ScalingPolicy{.min = 1, .max = 3};
  EXPECT_TRUE(ValidateJob(job).ok());
  job.task_groups[0].scaling->max = model::ScalingPolicy::kUnset;
  EXPECT_EQ(ErrorText(job),
            GroupError("Scaling policy invalid: maximum count must be specified and non-negative"));
  job.task_groups[0].scaling->max = 0;
  EXPECT_EQ(
      ErrorText(job),
      GroupError("Scaling policy invalid: maximum count must not be less than minimum count"));
  job.task_groups[0].scaling = model::ScalingPolicy{.min = 2, .max = 3};
  EXPECT_EQ(ErrorText(job), GroupError("Scaling policy invalid: task group count must not be "
                                       "less than minimum count in scaling policy"));
  job.task_groups[0].scaling = model::ScalingPolicy{.type = "vertical_cpu", .min = 1, .max = 3};
  EXPECT_EQ(ErrorText(job), GroupError("Scaling policy invalid: type \"vertical_cpu\" is not "
                                       "supported by Drover (only \"horizontal\")"));
}

TEST(CanonicalizeTest, AScalingMinimumDefaultsToTheCountAndACountToTheMinimum) {
  model::Job job = ValidJob();
  job.task_groups[0].count = 2;
  job.task_groups[0].scaling = model::ScalingPolicy{.type = "", .max = 5};
  CanonicalizeJob(job);
  EXPECT_EQ(job.task_groups[0].scaling->min, 2);
  EXPECT_EQ(job.task_groups[0].scaling->type, "horizontal");
  job.task_groups[0].count = model::TaskGroup::kUnsetCount;
  job.task_groups[0].scaling = model::ScalingPolicy{.min = 3, .max = 5};
  CanonicalizeJob(job);
  EXPECT_EQ(job.task_groups[0].count, 3);
}

}  // namespace
}  // namespace drover::codec
