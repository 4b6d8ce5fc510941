#include "codec/job_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::codec {
namespace {

using model::FieldDiff;
using model::ObjectDiff;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

model::Job BaseJob() {
  model::Job job;
  job.region = "global";
  job.namespace_ = "default";
  job.id = "web";
  job.name = "web";
  job.type = "service";
  job.priority = 50;
  job.datacenters = {"dc1"};
  job.constraints = {{"${attr.kernel.name}", "linux", "="}};
  model::TaskGroup g;
  g.name = "front";
  g.count = 1;
  model::Task t;
  t.name = "server";
  t.driver = "raw_exec";
  t.config = model::Value::Object{{"command", model::Value("/bin/sleep")},
                                  {"args", model::Value(model::Value::Array{model::Value("60")})}};
  t.resources.cpu = 100;
  t.resources.memory_mb = 64;
  t.kill_timeout = std::chrono::seconds(5);
  g.tasks.push_back(t);
  job.task_groups.push_back(g);
  // Server-managed: never diffed.
  job.version = 3;
  job.modify_index = 17;
  return job;
}

const model::TaskGroupDiff& Group(const model::JobDiff& d, const std::string& name) {
  for (const auto& g : d.task_groups) {
    if (g.name == name)
      return g;
  }
  ADD_FAILURE() << "no group " << name;
  static const model::TaskGroupDiff none;
  return none;
}

FieldDiff F(const char* type, const std::string& name, const std::string& old_value,
            const std::string& new_value) {
  return FieldDiff{.type = type,
                   .name = name,
                   .old_value = old_value,
                   .new_value = new_value,
                   .annotations = {}};
}

TEST(JobDiffTest, SameSpecIsNoneAndListsItsGroupsAndTasksOnly) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.version = 4;  // server-managed fields differ
  b.modify_index = 99;
  b.submit_time = 123;
  const model::JobDiff d = DiffJobs(&a, &b, /*contextual=*/false);
  EXPECT_EQ(d.type, model::kDiffNone);
  EXPECT_EQ(d.id, "web");
  EXPECT_THAT(d.fields, IsEmpty());
  EXPECT_THAT(d.objects, IsEmpty());
  ASSERT_EQ(d.task_groups.size(), 1u);
  EXPECT_EQ(d.task_groups[0].type, model::kDiffNone);
  ASSERT_EQ(d.task_groups[0].tasks.size(), 1u);
  EXPECT_EQ(d.task_groups[0].tasks[0].type, model::kDiffNone);
  EXPECT_THAT(d.task_groups[0].tasks[0].fields, IsEmpty());
}

TEST(JobDiffTest, CountAndMetaAreFlattenedFields) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.task_groups[0].count = 3;
  b.meta["owner"] = "ops";
  const model::JobDiff d = DiffJobs(&a, &b, false);
  EXPECT_EQ(d.type, model::kDiffEdited);
  EXPECT_THAT(d.fields, ElementsAre(F(model::kDiffAdded, "Meta[owner]", "", "ops")));
  const auto& g = Group(d, "front");
  EXPECT_EQ(g.type, model::kDiffEdited);
  EXPECT_THAT(g.fields, ElementsAre(F(model::kDiffEdited, "Count", "1", "3")));
  EXPECT_EQ(g.tasks[0].type, model::kDiffNone);
}

TEST(JobDiffTest, ConfigIsOneObjectFlattenedAllTheWayDown) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  (*b.task_groups[0].tasks[0].config.as_object())["args"] =
      model::Value(model::Value::Array{model::Value("120"), model::Value("-x")});
  b.task_groups[0].tasks[0].kill_timeout = std::chrono::seconds(10);
  const model::JobDiff d = DiffJobs(&a, &b, false);
  const model::TaskDiff& t = Group(d, "front").tasks.at(0);
  EXPECT_EQ(t.type, model::kDiffEdited);
  EXPECT_THAT(t.fields,
              ElementsAre(F(model::kDiffEdited, "KillTimeout", "5000000000", "10000000000")));
  ASSERT_EQ(t.objects.size(), 1u);
  EXPECT_EQ(t.objects[0].name, "Config");
  EXPECT_EQ(t.objects[0].type, model::kDiffEdited);
  EXPECT_THAT(t.objects[0].fields, ElementsAre(F(model::kDiffEdited, "args[0]", "60", "120"),
                                               F(model::kDiffAdded, "args[1]", "", "-x")));
}

// Each flattened name repeats the keys above it: a config of a long key over a long list
// would flatten to far more than its size. Past a bound it is one field.
TEST(JobDiffTest, AConfigTooLargeToFlattenIsOneField) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  model::Value::Array many(100'000, model::Value(0));
  (*b.task_groups[0].tasks[0].config.as_object())[std::string(4096, 'k')] = model::Value(many);
  const model::JobDiff d = DiffJobs(&a, &b, true);
  const model::TaskDiff& t = Group(d, "front").tasks.at(0);
  ASSERT_EQ(t.objects.size(), 1u);
  EXPECT_EQ(t.objects[0].name, "Config");
  EXPECT_EQ(t.objects[0].type, model::kDiffEdited);
  ASSERT_EQ(t.objects[0].fields.size(), 1u);
  EXPECT_EQ(t.objects[0].fields[0].name, "Config");
  EXPECT_EQ(t.objects[0].fields[0].type, model::kDiffEdited);
  EXPECT_EQ(t.objects[0].fields[0].new_value, "(not shown: over 1048576 bytes flattened)");
}

TEST(JobDiffTest, ListsOfStringsAndOfBlocksAreSets) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.datacenters = {"dc1", "dc2"};
  b.constraints = {{"${attr.kernel.name}", "darwin", "="}};
  const model::JobDiff d = DiffJobs(&a, &b, false);
  ASSERT_EQ(d.objects.size(), 3u);
  // Sorted by name, then Edited, Added, Deleted.
  EXPECT_EQ(d.objects[0].name, "Constraint");
  EXPECT_EQ(d.objects[0].type, model::kDiffAdded);
  EXPECT_THAT(d.objects[0].fields,
              ElementsAre(F(model::kDiffAdded, "LTarget", "", "${attr.kernel.name}"),
                          F(model::kDiffAdded, "Operand", "", "="),
                          F(model::kDiffAdded, "RTarget", "", "darwin")));
  EXPECT_EQ(d.objects[1].name, "Constraint");
  EXPECT_EQ(d.objects[1].type, model::kDiffDeleted);
  EXPECT_EQ(d.objects[2].name, "Datacenters");
  EXPECT_EQ(d.objects[2].type, model::kDiffEdited);
  EXPECT_THAT(d.objects[2].fields, ElementsAre(F(model::kDiffAdded, "Datacenters", "", "dc2")));
}

TEST(JobDiffTest, ContextualListsWhatDidNotChangeInsideChangedObjectsOnly) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.task_groups[0].tasks[0].resources.memory_mb = 128;
  const model::JobDiff d = DiffJobs(&a, &b, /*contextual=*/true);
  EXPECT_THAT(d.fields, IsEmpty());   // Priority and the rest did not change
  EXPECT_THAT(d.objects, IsEmpty());  // nor did the constraint or the datacenters
  const model::TaskDiff& t = Group(d, "front").tasks.at(0);
  EXPECT_THAT(t.fields, IsEmpty());
  ASSERT_EQ(t.objects.size(), 1u);  // Config did not change
  const ObjectDiff& resources = t.objects[0];
  EXPECT_EQ(resources.name, "Resources");
  EXPECT_EQ(resources.type, model::kDiffEdited);
  EXPECT_THAT(resources.fields, ::testing::Contains(F(model::kDiffNone, "CPU", "100", "100")));
  EXPECT_THAT(resources.fields,
              ::testing::Contains(F(model::kDiffEdited, "MemoryMB", "64", "128")));
}

TEST(JobDiffTest, AddedAndDeletedGroupsAndJobs) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.task_groups[0].name = "back";
  const model::JobDiff d = DiffJobs(&a, &b, false);
  ASSERT_EQ(d.task_groups.size(), 2u);
  EXPECT_EQ(Group(d, "back").type, model::kDiffAdded);
  EXPECT_EQ(Group(d, "back").tasks.at(0).type, model::kDiffAdded);
  EXPECT_THAT(Group(d, "back").fields, ::testing::Contains(F(model::kDiffAdded, "Count", "", "1")));
  EXPECT_EQ(Group(d, "front").type, model::kDiffDeleted);

  const model::JobDiff added = DiffJobs(nullptr, &b, false);
  EXPECT_EQ(added.type, model::kDiffAdded);
  EXPECT_EQ(added.id, "web");
  const model::JobDiff deleted = DiffJobs(&a, nullptr, false);
  EXPECT_EQ(deleted.type, model::kDiffDeleted);
}

TEST(JobDiffTest, JsonHasNomadsShape) {
  model::Job a = BaseJob();
  model::Job b = BaseJob();
  b.task_groups[0].count = 2;
  model::JobDiff d = DiffJobs(&a, &b, false);
  d.task_groups[0].updates["in-place update"] = 1;
  d.task_groups[0].fields[0].annotations.push_back(model::kAnnotationForcesCreate);
  const Json j = ToJson(d);
  EXPECT_EQ(j["Type"], "Edited");
  EXPECT_EQ(j["ID"], "web");
  EXPECT_TRUE(j["Fields"].is_null());
  EXPECT_TRUE(j["Objects"].is_null());
  const Json& g = j["TaskGroups"][0];
  EXPECT_EQ(g["Name"], "front");
  EXPECT_EQ(g["Updates"]["in-place update"], 1);
  EXPECT_EQ(g["Fields"][0], Json({{"Annotations", {"forces create"}},
                                  {"Name", "Count"},
                                  {"New", "2"},
                                  {"Old", "1"},
                                  {"Type", "Edited"}}));
  EXPECT_EQ(g["Tasks"][0]["Type"], "None");
  EXPECT_TRUE(g["Tasks"][0]["Annotations"].is_null());
  EXPECT_EQ(ToJson(model::DesiredUpdates{.place = 2})["Place"], 2);
}

}  // namespace
}  // namespace drover::codec
