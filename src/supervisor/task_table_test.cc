#include "supervisor/task_table.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

TEST(TaskTableTest, PersistsAcrossReopenAndForgetsRemovedTasks) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path() / "state";
  {
    auto t = TaskTable::Open(dir);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(t->Put({.task_id = "a", .pid = 10, .start_ticks = 5, .running = true}).ok());
    ASSERT_TRUE(t->Put({.task_id = "b",
                        .pid = 11,
                        .start_ticks = 6,
                        .running = false,
                        .exit = ExitStatus{.exit_code = 2}})
                    .ok());
    ASSERT_TRUE(t->Remove("a").ok());
    ASSERT_TRUE(t->Remove("never").ok());
  }
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(dir / "tasks.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  auto t = TaskTable::Open(dir);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->tasks().size(), 1u);
  const TaskInfo* b = t->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->exit->exit_code, 2);
  EXPECT_EQ(t->Find("a"), nullptr);
}

TEST(TaskTableTest, AnUnreadableTableOfThisBootIsDataLoss) {
  testing::TempDir tmp;
  std::ofstream(tmp.path() / "tasks.json") << "{not json";
  auto t = TaskTable::Open(tmp.path());
  EXPECT_TRUE(absl::IsDataLoss(t.status())) << t.status();
}

TEST(TaskTableTest, ATableFromAnEarlierBootHoldsNoLiveTasks) {
  testing::TempDir tmp;
  // Torn by a machine crash (written before this boot): its tasks died with it.
  std::ofstream(tmp.path() / "tasks.json") << "{not json";
  fs::last_write_time(tmp.path() / "tasks.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 30));
  auto t = TaskTable::Open(tmp.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->tasks().empty());
  // Readable, but of another boot: a matching pid and start time mean nothing now.
  std::ofstream(tmp.path() / "tasks.json", std::ios::trunc)
      << R"({"version": 1, "boot_id": "another-boot", "tasks": [
           {"task_id": "a", "pid": 1, "start_ticks": 1, "running": true},
           {"task_id": "b", "pid": 2, "running": false, "exit": {"exit_code": 3}}]})";
  t = TaskTable::Open(tmp.path());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->tasks().size(), 2u);
  EXPECT_FALSE(t->Find("a")->running);
  EXPECT_TRUE(t->Find("a")->exit->unknown);
  EXPECT_EQ(t->Find("b")->exit->exit_code, 3);  // a recorded exit stays as it was
}

}  // namespace
}  // namespace drover::supervisor
