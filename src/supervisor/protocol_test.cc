#include "supervisor/protocol.h"

#include <gtest/gtest.h>

namespace drover::supervisor {
namespace {

TEST(FrameTest, RoundTripsAcrossArbitrarySplits) {
  const std::string stream = EncodeFrame({{"id", 1}, {"op", "list"}}) +
                             EncodeFrame({{"event", "exited"}, {"task", {{"pid", 7}}}});
  FrameDecoder d;
  std::vector<Json> got;
  for (char c : stream) {
    d.Append(std::string_view(&c, 1));
    while (true) {
      auto m = d.Next();
      ASSERT_TRUE(m.ok()) << m.status();
      if (!*m)
        break;
      got.push_back(**m);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["op"], "list");
  EXPECT_EQ(got[1]["task"]["pid"], 7);
}

TEST(FrameTest, OversizedAndMalformedFramesAreErrors) {
  FrameDecoder big;
  big.Append(std::string("\xff\xff\xff\xff", 4));
  EXPECT_TRUE(absl::IsInvalidArgument(big.Next().status()));
  FrameDecoder array;
  array.Append(EncodeFrame(Json::array({1, 2})));
  EXPECT_TRUE(absl::IsInvalidArgument(array.Next().status()));
  FrameDecoder garbage;
  garbage.Append(std::string("\0\0\0\3{x}", 7));
  EXPECT_TRUE(absl::IsInvalidArgument(garbage.Next().status()));
}

TEST(SpawnSpecTest, RoundTripsAndValidates) {
  SpawnSpec s;
  s.task_id = "a/t/1";
  s.argv = {"/bin/true", "x"};
  s.env = {{"A", "1"}};
  s.cwd = "/tmp";
  s.user = "nobody";
  s.umask = 077;
  s.logs = {.dir = "/tmp/l",
            .stdout_base = "t.stdout",
            .stderr_base = "t.stderr",
            .max_files = 3,
            .max_file_size = 100};
  auto back = SpawnSpecFromJson(ToJson(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env, s.env);
  EXPECT_EQ(back->umask, 077);
  EXPECT_EQ(back->logs.max_file_size, 100);

  s.isolation = {.enabled = true,
                 .root = "/data/t",
                 .binds = {{"/devs/g0", "/dev-files/g0", true}},
                 .devices = {{"/dev/nvidia0", "/dev/nvidia0", "rwm"}}};
  back = SpawnSpecFromJson(ToJson(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->isolation.devices, s.isolation.devices);
  Json outside = ToJson(s);
  outside["isolation"]["devices"][0]["task_path"] = "/etc/passwd";
  EXPECT_EQ(SpawnSpecFromJson(outside).status().message(),
            "device path \"/etc/passwd\" must be under /dev and without \"..\"");
  Json dev_bind = ToJson(s);
  dev_bind["isolation"]["binds"][0]["target"] = "/dev/dri";
  EXPECT_EQ(SpawnSpecFromJson(dev_bind).status().message(),
            "bind target \"/dev/dri\" is under /dev; give device nodes as devices");

  EXPECT_EQ(SpawnSpecFromJson({{"argv", {"x"}}}).status().message(), "missing field \"task_id\"");
  EXPECT_EQ(SpawnSpecFromJson({{"task_id", "t"}, {"argv", Json::array()}}).status().message(),
            "argv must name a command");
  EXPECT_NE(SpawnSpecFromJson({{"task_id", "t"}, {"argv", "notalist"}})
                .status()
                .message()
                .find("bad field \"argv\""),
            std::string::npos);
}

TEST(TaskInfoTest, RoundTripsWithAndWithoutExit) {
  TaskInfo t{.task_id = "x", .pid = 42, .start_ticks = 99, .running = true};
  auto back = TaskInfoFromJson(ToJson(t));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->exit.has_value());
  t.running = false;
  t.exit = ExitStatus{.exit_code = 3, .signal = 0, .unknown = false, .time_ns = 5};
  back = TaskInfoFromJson(ToJson(t));
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->exit.has_value());
  EXPECT_EQ(back->exit->exit_code, 3);
  EXPECT_EQ(back->start_ticks, 99u);
}

}  // namespace
}  // namespace drover::supervisor
