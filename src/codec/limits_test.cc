// Defect 5 of the security review and its class: numbers whose value, not the job's
// size, drove the cost of validation (a control loop frozen for 29 s per request) or of
// scheduling; and the limits every number, list and map now has.
#include "codec/limits.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/canonicalize.h"
#include "codec/json.h"
#include "codec/validate.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using ::testing::HasSubstr;

model::Job Job() {
  model::Job job;
  job.id = "example";
  job.type = "service";
  model::TaskGroup g;
  g.name = "web";
  g.count = 1;
  model::Task t;
  t.name = "server";
  t.driver = "raw_exec";
  g.tasks = {t};
  job.task_groups = {g};
  return job;
}

std::string Check(model::Job job) {
  CanonicalizeJob(job);
  absl::Status s = ValidateJob(job);
  return s.ok() ? "" : std::string(s.message());
}

TEST(JobLimitsTest, RescheduleAttemptsAreBoundedNotLooped) {
  for (const char* fn : {"exponential", "fibonacci"}) {
    model::Job job = Job();
    job.task_groups[0].reschedule_policy = model::ReschedulePolicy{.attempts = 2'000'000'000,
                                                                   .interval = hours(1),
                                                                   .delay = seconds(5),
                                                                   .delay_function = fn,
                                                                   .max_delay = hours(1)};
    // Refused by its size, before any loop over the attempts (2e9 used to take 29 s).
    EXPECT_THAT(Check(job), HasSubstr("reschedule attempts 2000000000 is above the limit of 1000"))
        << fn;
    // At the limit, the viability check still runs and says what fits, with sums that
    // saturate instead of overflowing.
    job.task_groups[0].reschedule_policy->attempts = JobLimits::kMaxAttempts;
    job.task_groups[0].reschedule_policy->max_delay = hours(24 * 300);
    EXPECT_THAT(Check(job), HasSubstr("attempts in 1h0m0s")) << fn;
  }
}

TEST(JobLimitsTest, CountIsBoundedAndNeverSilentlyChanged) {
  model::Job job = Job();
  job.task_groups[0].count = 200'000'000;
  EXPECT_THAT(Check(job), HasSubstr("count 200000000 is above the limit of 10000"));
  job.task_groups[0].count = -1;  // used to become 1
  EXPECT_THAT(Check(job), HasSubstr("Task group count can't be negative"));
  job.task_groups[0].count = model::TaskGroup::kUnsetCount;  // no Count in the request
  EXPECT_EQ(Check(job), "");
  job.task_groups[0].count = JobLimits::kMaxCount;
  EXPECT_EQ(Check(job), "");
}

// The scheduler makes a slot per canary and adds the durations to the clock.
TEST(JobLimitsTest, UpdateAndMigrateBlocksAreBounded) {
  model::Job job = Job();
  job.task_groups[0].update =
      model::UpdateStrategy{.max_parallel = 1, .progress_deadline = hours(24 * 400)};
  job.task_groups[0].update->canary = 2'147'483'647;
  job.task_groups[0].migrate = model::MigrateStrategy{.max_parallel = 2'000'000'000};
  const std::string text = Check(job);
  EXPECT_THAT(text, HasSubstr("update canary 2147483647 is above the limit of 10000"));
  EXPECT_THAT(text, HasSubstr("update progress_deadline is longer than the limit of 366 days"));
  EXPECT_THAT(text, HasSubstr("migrate max_parallel 2000000000 is above the limit of 10000"));
}

TEST(JobLimitsTest, SizesOfListsMapsAndValues) {
  model::Job job = Job();
  for (size_t i = 0; i <= JobLimits::kMaxMapEntries; ++i)
    job.task_groups[0].tasks[0].env["K" + std::to_string(i)] = "v";
  EXPECT_THAT(Check(job), HasSubstr("env entries: 1025 is more than the limit of 1024"));

  job = Job();
  job.task_groups[0].tasks[0].meta["big"] = std::string(JobLimits::kMaxStringBytes + 1, 'x');
  EXPECT_THAT(Check(job), HasSubstr("meta entry \"big\" is too large"));

  job = Job();
  model::Value deep = model::Value::Array{};
  for (int i = 0; i < JobLimits::kMaxConfigDepth + 1; ++i)
    deep = model::Value(model::Value::Array{deep});
  job.task_groups[0].tasks[0].config = model::Value::Object{{"args", deep}};
  EXPECT_THAT(Check(job), HasSubstr("config is nested deeper than 64 levels"));

  job = Job();
  job.id = std::string(300, 'j');
  EXPECT_THAT(Check(job), HasSubstr("Job ID is 300 bytes long"));

  job = Job();
  job.task_groups[0].tasks[0].resources.memory_max_mb = 2'000'000'000;  // 2 PB
  EXPECT_THAT(Check(job), HasSubstr("memory_max 2000000000 is above the limit"));

  job = Job();
  job.task_groups[0].tasks[0].kill_timeout = hours(24 * 400);
  EXPECT_THAT(Check(job), HasSubstr("kill_timeout is longer than the limit of 366 days"));
}

TEST(JobLimitsTest, StringsAreBounded) {
  // A constraint's pattern and target: once unbounded (a recursive regex crashed).
  model::Job job = Job();
  job.constraints = {{std::string(200'000, 'a'), "(a|b)*", "regexp"}};
  EXPECT_THAT(Check(job), HasSubstr("constraint target is 200000 bytes long"));
  job = Job();
  job.task_groups[0].tasks[0].driver = std::string(100'000, 'd');
  EXPECT_THAT(Check(job), HasSubstr("is 100000 bytes long"));
  job = Job();
  job.payload = std::string(20'000, 'p');
  EXPECT_THAT(Check(job), HasSubstr("Job payload is 20000 bytes"));
}

TEST(JobLimitsTest, CoresAreRefusedByName) {
  model::Job job = Job();
  job.task_groups[0].tasks[0].resources.cores = 1'000'000'000;
  job.task_groups[0].tasks[0].resources.cpu = 0;
  EXPECT_THAT(Check(job), HasSubstr("resources.cores is not supported by Drover yet"));
}

// Defect 16: namespaces with NUL bytes, and namespaces that do not exist, were accepted.
TEST(JobLimitsTest, NamespacesMustBeValidAndExist) {
  model::Job job = Job();
  job.namespace_ = std::string("a\0b", 3);
  EXPECT_THAT(Check(job), HasSubstr("invalid namespace"));
  job.namespace_ = "*";
  EXPECT_THAT(Check(job), HasSubstr("invalid namespace"));
  job.namespace_ = "prod";
  EXPECT_THAT(Check(job), HasSubstr("is in nonexistent namespace \"prod\""));
  job.namespace_ = "default";
  EXPECT_EQ(Check(job), "");
  EXPECT_TRUE(ValidNamespaceName("team-a1"));
  EXPECT_FALSE(ValidNamespaceName(std::string(129, 'a')));
}

// Defect 4: 30,000 nested brackets in a task config crashed the agent; the parser now
// stops at the depth limit without building anything deeper, and past the element limit.
TEST(JsonLimitsTest, ParsingIsBoundedInDepthAndSize) {
  const std::string deep = std::string(30'000, '[') + std::string(30'000, ']');
  auto parsed = ParseJson(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("nested deeper than 256"));
  EXPECT_TRUE(ParseJson(std::string(200, '[') + std::string(200, ']')).ok());
  std::string many = "[";
  for (int i = 0; i < 100; ++i)
    many += "0,";
  many += "0]";
  auto capped = ParseJson(many, JsonLimits{.max_depth = 8, .max_elements = 50});
  ASSERT_FALSE(capped.ok());
  EXPECT_THAT(std::string(capped.status().message()), HasSubstr("more than 50 values"));
  EXPECT_FALSE(ParseJson("{\"a\":").ok());
}

TEST(JsonLimitsTest, BoundedDumpStopsAtItsLimit) {
  Json deep = Json::array();
  Json* at = &deep;
  for (int i = 0; i < 200; ++i) {
    at->push_back(Json::array());
    at = &(*at)[0];
  }
  // Indentation grows with depth: pretty output is much larger than compact.
  auto compact = DumpBounded(deep, false, 1 << 20);
  ASSERT_TRUE(compact.ok());
  EXPECT_EQ(compact->size(), 402u);
  auto pretty = DumpBounded(deep, true, 10'000);
  EXPECT_TRUE(absl::IsResourceExhausted(pretty.status())) << pretty.status();
  EXPECT_EQ(*DumpBounded(deep, true, 1 << 20), Dump(deep, true));
}

}  // namespace
}  // namespace drover::codec
