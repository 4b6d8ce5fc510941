// The fixture of the ExternalPlugin tests (external_plugin_test.cc: the conversation;
// external_plugin_process_test.cc: the plugin process's lifecycle): the test plugin
// drover-test-device-plugin, its log, and our child processes as /proc shows them.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "devices/external/external_plugin.h"
#include "testing/test_util.h"

namespace drover::devices {

// Our child processes: pid -> state letter ('Z' for a zombie), from /proc.
inline std::map<pid_t, char> Children() {
  std::map<pid_t, char> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    // Read through rdbuf (testing::ReadFile): a process that exits while its file is
    // read fails the read with ESRCH, which an istreambuf_iterator would throw.
    const std::string stat = testing::ReadFile(entry.path() / "stat");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == getpid())
      out[static_cast<pid_t>(std::stoi(name))] = state;
  }
  return out;
}

inline bool ProcessGone(pid_t pid) {
  const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  // Gone, or a zombie waiting for init: either way no longer running.
  return stat.empty() || (close != std::string::npos && stat.substr(close + 2, 1) == "Z");
}

class ExternalPluginTest : public ::testing::Test {
 protected:
  std::string LogPath() const { return (dir_.path() / "plugin.log").string(); }

  // The test plugin with `flags` (besides --log).
  DevicePluginPtr Make(std::vector<std::string> flags = {},
                       common::Duration timeout = std::chrono::seconds(10)) {
    ExternalPluginConfig config;
    config.name = "fpga";
    config.command = DROVER_TEST_DEVICE_PLUGIN;
    config.args = std::move(flags);
    config.args.push_back("--log=" + LogPath());
    config.config_json = R"({"model": "Stratix 10", "verbose": true})";
    config.request_timeout = timeout;
    return MakeExternalPlugin(std::move(config));
  }

  std::vector<std::string> LogLines() const {
    std::istringstream in(testing::ReadFile(LogPath()));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }

  int Starts() const {
    int n = 0;
    for (const std::string& line : LogLines())
      n += line.rfind("start ", 0) == 0 ? 1 : 0;
    return n;
  }

  // After a failed call: nothing of the plugin left, then the next call works with a
  // fresh, reconfigured process.
  void ExpectRecovers(DevicePlugin& plugin) {
    EXPECT_THAT(Children(), ::testing::SizeIs(0)) << "the failed plugin must be killed and reaped";
    const int starts = Starts();
    ASSERT_TRUE(plugin.Stats().ok());
    EXPECT_EQ(Starts(), starts + 1);
    EXPECT_THAT(LogLines().back(), ::testing::HasSubstr("stats"));
    EXPECT_THAT(LogLines()[LogLines().size() - 2], ::testing::HasSubstr("configure"));
  }

  testing::TempDir dir_;
};

}  // namespace drover::devices
