#include "client/gc.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::client {
namespace {

using namespace std::chrono_literals;  // NOLINT

TEST(GcQueueTest, PopsOldestTerminalFirstAndKeepsFirstTime) {
  GcQueue q;
  const common::Time t0{};
  q.MarkTerminal("b", t0 + 2s);
  q.MarkTerminal("a", t0 + 1s);
  q.MarkTerminal("c", t0 + 3s);
  q.MarkTerminal("c", t0);  // already queued: keeps its first time
  q.Remove("b");
  EXPECT_EQ(q.size(), 2u);
  EXPECT_TRUE(q.Contains("c"));
  EXPECT_EQ(q.PopOldest([](const std::string& id) { return id != "a"; }), "c");
  EXPECT_EQ(q.PopOldest([](const std::string&) { return false; }), std::nullopt);
  EXPECT_EQ(q.PopOldest(), "a");
  EXPECT_EQ(q.PopOldest(), std::nullopt);
}

TEST(GcQueueTest, StatDiskReportsPercentages) {
  testing::TempDir dir;
  auto u = StatDisk(dir.path());
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_GE(u->used_percent, 0);
  EXPECT_LE(u->used_percent, 100);
  EXPECT_GE(u->inodes_used_percent, 0);
  EXPECT_LE(u->inodes_used_percent, 100);
  EXPECT_FALSE(StatDisk(dir.path() / "missing").ok());
}

}  // namespace
}  // namespace drover::client
