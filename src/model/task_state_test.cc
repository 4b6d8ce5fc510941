#include "model/task_state.h"

#include <gtest/gtest.h>

namespace drover::model {
namespace {

using namespace std::chrono_literals;  // NOLINT

TEST(TaskStateTest, KeepsLastTenEventsAndFailedIsSticky) {
  TaskState ts;
  for (int i = 0; i < 15; ++i) {
    TaskEvent ev(kEventRestarting, common::FromUnixNanos(i));
    ts.AppendEvent(ev);
  }
  ASSERT_EQ(ts.events.size(), 10u);
  EXPECT_EQ(ts.events.front().time, 5);
  EXPECT_EQ(ts.events.back().time, 14);
  ts.AppendEvent(TaskEvent(kEventNotRestarting, {}).SetFailsTask());
  EXPECT_TRUE(ts.failed);
  ts.AppendEvent(TaskEvent(kEventStarted, {}));
  EXPECT_TRUE(ts.failed);
}

TEST(TaskStateTest, CopiesShareEventsAndAnAppendChangesOnlyItsOwnCopy) {
  TaskState ts;
  ts.AppendEvent(TaskEvent(kEventReceived, common::FromUnixNanos(1)));
  ts.AppendEvent(TaskEvent(kEventTaskSetup, common::FromUnixNanos(2)));
  const TaskState copy = ts;
  EXPECT_EQ(&copy.events.front(), &ts.events.front());  // shared, not copied
  EXPECT_EQ(copy, ts);

  ts.AppendEvent(TaskEvent(kEventStarted, common::FromUnixNanos(3)));
  ASSERT_EQ(ts.events.size(), 3u);
  ASSERT_EQ(copy.events.size(), 2u);
  EXPECT_EQ(copy.events.back().type, kEventTaskSetup);
  EXPECT_EQ(ts.events.back().type, kEventStarted);
  EXPECT_NE(copy, ts);

  // Equal contents compare equal whether shared or not.
  TaskState rebuilt;
  rebuilt.AppendEvent(TaskEvent(kEventReceived, common::FromUnixNanos(1)));
  rebuilt.AppendEvent(TaskEvent(kEventTaskSetup, common::FromUnixNanos(2)));
  EXPECT_EQ(rebuilt, copy);
  rebuilt.events.clear();
  EXPECT_TRUE(rebuilt.events.empty());
  EXPECT_EQ(rebuilt.events.begin(), rebuilt.events.end());
  EXPECT_EQ(rebuilt.events, TaskEventList{});
}

TEST(TaskEventTest, DisplayMessagesAndDetails) {
  TaskState ts;
  ts.AppendEvent(TaskEvent(kEventTerminated, {}).SetExitCode(2).SetSignal(9));
  EXPECT_EQ(ts.events.back().display_message, "Exit Code: 2, Signal: 9");
  EXPECT_EQ(ts.events.back().details.at("exit_code"), "2");
  ts.AppendEvent(TaskEvent(kEventKilling, {}).SetKillTimeout(5s));
  EXPECT_EQ(ts.events.back().display_message, "Sent interrupt. Waiting 5s before force killing");
  EXPECT_EQ(ts.events.back().details.at("kill_timeout"), "5s");
  ts.AppendEvent(TaskEvent(kEventRestarting, {})
                     .SetRestartReason("Restart within policy")
                     .SetStartDelay(16200ms));
  EXPECT_EQ(ts.events.back().display_message, "Task restarting in 16.2s");
  ts.AppendEvent(TaskEvent(kEventSiblingFailed, {}).SetFailedSibling("web"));
  EXPECT_EQ(ts.events.back().display_message, "Task's sibling \"web\" failed");
}

TEST(FormatGoDurationTest, MatchesGo) {
  EXPECT_EQ(FormatGoDuration(0s), "0s");
  EXPECT_EQ(FormatGoDuration(5s), "5s");
  EXPECT_EQ(FormatGoDuration(90s), "1m30s");
  EXPECT_EQ(FormatGoDuration(1h), "1h0m0s");
  EXPECT_EQ(FormatGoDuration(1500ms), "1.5s");
  EXPECT_EQ(FormatGoDuration(250ms), "250ms");
}

}  // namespace
}  // namespace drover::model
