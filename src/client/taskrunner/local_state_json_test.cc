#include "client/taskrunner/local_state_json.h"

#include <gtest/gtest.h>

namespace drover::taskrunner {
namespace {

TEST(LocalStateJsonTest, RoundTripsHooksHandleRunCompleteAndTheRestartWindow) {
  LocalState s;
  s.hooks["task_dir"] = HookState{.prestart_done = true};
  s.hooks["dispatch_payload"] =
      HookState{.prestart_done = true, .data = {{"written", "1"}}, .env = {{"K", "V"}}};
  s.handle = drivers::TaskHandle{.version = 1,
                                 .driver = "raw_exec",
                                 .task_id = "a1/web/0011aabb",
                                 .pid = 4242,
                                 .started_at = 1700000000000000000,
                                 .proc_start_ticks = 987654};
  s.run_complete = true;
  s.restarts = RestartWindow{.start_unix_nanos = 1700000000000000000, .count = 2};
  auto back = LocalStateFromJson(ToJson(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(ToJson(s)["TaskHandle"]["Pid"], 4242);
}

TEST(LocalStateJsonTest, AnEmptyStateAndUnknownFieldsAreFineAndWrongTypesAreNot) {
  auto empty = LocalStateFromJson(ToJson(LocalState{}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, LocalState{});
  auto newer = LocalStateFromJson({{"RunComplete", true}, {"SomethingNew", 1}});
  ASSERT_TRUE(newer.ok());
  EXPECT_TRUE(newer->run_complete);
  EXPECT_FALSE(LocalStateFromJson({{"RunComplete", "yes"}}).ok());
  EXPECT_FALSE(LocalStateFromJson("nope").ok());
}

}  // namespace
}  // namespace drover::taskrunner
