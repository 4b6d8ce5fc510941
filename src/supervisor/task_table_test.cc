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

// A change is one appended line, however many tasks are held; the table is rewritten
// only when the journal outgrows it.
TEST(TaskTableTest, AChangeAppendsToTheJournalUntilItOutgrowsTheTable) {
  testing::TempDir tmp;
  auto t = TaskTable::Open(tmp.path());
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(
        t->Put({.task_id = "task-" + std::to_string(i), .pid = 100 + i, .running = true}).ok());
  }
  const auto table = fs::file_size(tmp.path() / "tasks.json");
  const auto journal = fs::file_size(tmp.path() / "tasks.journal");
  // The journal never holds more than twice the table (or 64 KiB) before folding.
  EXPECT_LE(journal, std::max<uintmax_t>(64 << 10, 2 * table) + 1024);
  ASSERT_TRUE(
      t->Put({.task_id = "task-7", .pid = 7, .running = false, .exit = ExitStatus{.exit_code = 1}})
          .ok());
  ASSERT_TRUE(t->Remove("task-8").ok());
  EXPECT_GT(fs::file_size(tmp.path() / "tasks.journal"), journal);
  auto again = TaskTable::Open(tmp.path());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tasks().size(), 499u);
  EXPECT_EQ(again->Find("task-7")->exit->exit_code, 1);
  EXPECT_EQ(again->Find("task-8"), nullptr);
  EXPECT_EQ(again->Find("task-499")->pid, 599);
  // Opening folds the journal into the table: only its header is left.
  EXPECT_EQ(testing::ReadFile(tmp.path() / "tasks.journal").find("\n"),
            testing::ReadFile(tmp.path() / "tasks.journal").size() - 1);
}

// A crash in the middle of an append leaves a last line without its newline: that
// change was never acknowledged, and the rest stands. Damage anywhere else is refused.
TEST(TaskTableTest, ALastLineCutShortIsDroppedAndOtherDamageRefused) {
  testing::TempDir tmp;
  {
    auto t = TaskTable::Open(tmp.path());
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(t->Put({.task_id = "a", .pid = 10, .running = true}).ok());
  }
  // The journal as a crash of a later append could leave it (the table is folded at
  // open, so it is written by hand here).
  std::ofstream(tmp.path() / "tasks.journal", std::ios::app)
      << R"({"put":{"task_id":"b","pid":11,"running":true}})"
      << "\n"
      << R"({"remove":"a"})"
      << "\n"
      << R"({"put":{"task_id":"c","pi)";
  auto t = TaskTable::Open(tmp.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Find("a"), nullptr);
  EXPECT_NE(t->Find("b"), nullptr);
  EXPECT_EQ(t->Find("c"), nullptr);
  std::ofstream(tmp.path() / "tasks.journal", std::ios::app) << "garbage\n"
                                                             << R"({"remove":"b"})"
                                                             << "\n";
  auto damaged = TaskTable::Open(tmp.path());
  EXPECT_TRUE(absl::IsDataLoss(damaged.status())) << damaged.status();
  EXPECT_NE(damaged.status().message().find("line 2"), std::string::npos) << damaged.status();
}

// A journal left by an earlier boot (a crash between folding it and emptying it):
// whatever file times say, its header names that boot, so its tasks are dead.
TEST(TaskTableTest, AJournalOfAnEarlierBootHoldsNoLiveTasks) {
  testing::TempDir tmp;
  {
    auto t = TaskTable::Open(tmp.path());
    ASSERT_TRUE(t.ok());
  }
  std::ofstream(tmp.path() / "tasks.journal", std::ios::trunc)
      << R"({"boot_id":"another-boot"})"
      << "\n"
      << R"({"put":{"task_id":"a","pid":10,"start_ticks":3,"running":true}})"
      << "\n"
      << "torn by that crash\n";
  auto t = TaskTable::Open(tmp.path());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_NE(t->Find("a"), nullptr);
  EXPECT_FALSE(t->Find("a")->running);
  EXPECT_TRUE(t->Find("a")->exit->unknown);
}

}  // namespace
}  // namespace drover::supervisor
