// ExternalPlugin's plugin processes: killed with their process group, reaped without
// Reset() or a call ever waiting for one that will not die, inheriting nothing but
// their pipes, and never blocked by their stderr.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "devices/external/external_plugin.h"
#include "devices/external/external_plugin_test_util.h"
#include "testing/test_util.h"

namespace drover::devices {
namespace {

using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;
using Clock = std::chrono::steady_clock;

TEST_F(ExternalPluginTest, TimeoutKillsTheWholeProcessGroup) {
  auto plugin = Make({"--fail=hang-group", "--fail-method=stats"}, std::chrono::milliseconds(300));
  EXPECT_EQ(plugin->Stats().status().code(), absl::StatusCode::kDeadlineExceeded);
  const std::string child = testing::ReadFile(LogPath() + ".child");
  ASSERT_FALSE(child.empty());
  // The grandchild is init's to reap; it only has to be dead.
  EXPECT_TRUE(testing::WaitFor([&] { return ProcessGone(std::stoi(child)); }));
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, ResetKillsAndTheNextCallReaps) {
  auto plugin = Make();
  ASSERT_TRUE(plugin->Fingerprint().ok());
  const auto before = Children();
  ASSERT_THAT(before, SizeIs(1));
  const pid_t pid = before.begin()->first;
  plugin->Reset();
  // Dead, and left for the next call to reap: Reset never waits for a process.
  EXPECT_TRUE(testing::WaitFor([&] {
    const auto children = Children();
    return children.count(pid) == 1 && children.at(pid) == 'Z';
  }));
  const int starts = Starts();
  ASSERT_TRUE(plugin->Stats().ok());
  EXPECT_EQ(Starts(), starts + 1);
  const auto after = Children();
  EXPECT_THAT(after, SizeIs(1));
  EXPECT_EQ(after.count(pid), 0U) << "the next call reaps the killed plugin";
}

TEST_F(ExternalPluginTest, DestructionReapsAResetProcess) {
  {
    auto plugin = Make();
    ASSERT_TRUE(plugin->Fingerprint().ok());
    plugin->Reset();
  }
  EXPECT_THAT(Children(), SizeIs(0));
}

// Kills the tracer of a --fail=traced plugin on scope exit, so the plugin's destructor,
// which waits for the process, does not wait for the tracer's alarm.
class TracerKiller {
 public:
  explicit TracerKiller(std::string pid_file) : pid_file_(std::move(pid_file)) {}
  ~TracerKiller() { Kill(); }
  TracerKiller(const TracerKiller&) = delete;
  TracerKiller& operator=(const TracerKiller&) = delete;
  // Kills the tracer and waits until it has let go of the plugin.
  void Kill() {
    const std::string pid = testing::ReadFile(pid_file_);
    if (pid.empty() || killed_)
      return;
    killed_ = true;
    kill(std::stoi(pid), SIGKILL);
    EXPECT_TRUE(testing::WaitFor([&] { return ProcessGone(std::stoi(pid)); }));
  }

 private:
  const std::string pid_file_;
  bool killed_ = false;
};

TEST_F(ExternalPluginTest, ResetDoesNotWaitForAProcessThatCannotBeReaped) {
  auto plugin = Make({"--fail=traced", "--fail-method=stats"}, std::chrono::seconds(60));
  TracerKiller tracer(LogPath() + ".child");
  auto call = std::async(std::launch::async, [&] { return plugin->Stats(); });
  ASSERT_TRUE(testing::WaitFor([&] {
    const auto lines = LogLines();
    return !lines.empty() && (lines.back() == "traced" || lines.back() == "untraceable");
  }));
  if (LogLines().back() == "untraceable") {
    plugin->Reset();
    (void)call.get();
    GTEST_SKIP() << "ptrace is not permitted here";
  }
  // Killed, the plugin cannot be reaped until its tracer lets go.
  const auto start = Clock::now();
  plugin->Reset();
  EXPECT_LT(Clock::now() - start, kExternalPluginKillGrace) << "Reset must not wait";
  auto stats = call.get();
  EXPECT_LT(Clock::now() - start, 2 * kExternalPluginKillGrace);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(stats.status().message(), "device plugin 'fpga' was reset during 'stats'");
  const auto children = Children();
  ASSERT_THAT(children, SizeIs(1)) << "killed but not reaped";
  const pid_t pid = children.begin()->first;
  // Once the tracer lets go, the next call reaps it.
  tracer.Kill();
  ASSERT_TRUE(plugin->Stats().ok());
  EXPECT_THAT(Children(), SizeIs(1));
  EXPECT_EQ(Children().count(pid), 0U);
}

TEST_F(ExternalPluginTest, CallEndsWithinItsBoundAlsoWhenThePluginCannotBeReaped) {
  ExternalPluginConfig config;
  config.request_timeout = std::chrono::seconds(1);
  const auto bound = MaxExternalPluginCallDuration(config);
  EXPECT_EQ(bound, std::chrono::seconds(3));
  auto plugin = Make({"--fail=traced", "--fail-method=stats"}, config.request_timeout);
  TracerKiller tracer(LogPath() + ".child");
  // A fresh process: configure and stats both in this call.
  const auto start = Clock::now();
  auto stats = plugin->Stats();
  const auto elapsed = Clock::now() - start;
  if (LogLines().back() == "untraceable")
    GTEST_SKIP() << "ptrace is not permitted here";
  EXPECT_EQ(stats.status().message(), "device plugin 'fpga' did not answer 'stats' within 1s");
  EXPECT_GE(elapsed, config.request_timeout + kExternalPluginKillGrace);
  EXPECT_LT(elapsed, bound);
  EXPECT_THAT(Children(), SizeIs(1)) << "killed, left for later";
  tracer.Kill();
  plugin.reset();
  EXPECT_THAT(Children(), SizeIs(0)) << "the destructor reaps it";
}

TEST_F(ExternalPluginTest, PluginInheritsOnlyItsPipes) {
  // As if another thread had just opened it and not yet set close-on-exec.
  const std::string leaked = (dir_.path() / "leaked").string();
  const int fd = open(leaked.c_str(), O_CREAT | O_WRONLY, 0600);  // NOLINT: no O_CLOEXEC
  ASSERT_GE(fd, 0);
  auto plugin = Make();
  const bool ok = plugin->Fingerprint().ok();
  close(fd);
  ASSERT_TRUE(ok);
  const auto children = Children();
  ASSERT_THAT(children, SizeIs(1));
  std::vector<std::string> fds;
  const auto dir = std::filesystem::path("/proc") / std::to_string(children.begin()->first) / "fd";
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    fds.push_back(entry.path().filename());
  EXPECT_THAT(fds, UnorderedElementsAre("0", "1", "2"));
}

TEST_F(ExternalPluginTest, ResetWakesACallInFlight) {
  auto plugin = Make({"--fail=hang", "--fail-method=stats"}, std::chrono::seconds(60));
  const auto start = std::chrono::steady_clock::now();
  auto call = std::async(std::launch::async, [&] { return plugin->Stats(); });
  ASSERT_TRUE(
      testing::WaitFor([&] { return !LogLines().empty() && LogLines().back() == "stats {}"; }));
  plugin->Reset();
  auto stats = call.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(stats.status().message(), "device plugin 'fpga' was reset during 'stats'");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, DestructionKillsAndReapsTheProcess) {
  {
    auto plugin = Make({"--fail=hang", "--fail-method=stats"});
    ASSERT_TRUE(plugin->Fingerprint().ok());
    EXPECT_THAT(Children(), SizeIs(1));
  }
  EXPECT_THAT(Children(), SizeIs(0));
}

TEST_F(ExternalPluginTest, ChattyStderrDoesNotBlockThePlugin) {
  // 256 KiB of stderr per answer would fill an undrained pipe and hang the plugin.
  auto plugin = Make({"--noisy"}, std::chrono::seconds(5));
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(plugin->Stats().ok());
  EXPECT_EQ(Starts(), 1);
}

}  // namespace
}  // namespace drover::devices
