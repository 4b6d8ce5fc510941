// Test fixture for drivers that run through the supervisor: a real drover-supervisor,
// started by a SupervisorLink exactly as the agent starts it, in a temp dir; every
// process a test started is killed and reaped when it ends.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "drivers/supervised/supervised_driver.h"
#include "testing/test_util.h"

namespace drover::drivers {

class SupervisedDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The reaper (the supervisor's parent) double-forks away from us; as subreaper we
    // get it back and can reap it (and any task it leaves) when the test ends.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::filesystem::create_directories(logs_);
  }

  void TearDown() override {
    for (int pid : pids_) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    driver_.reset();
    link_.reset();
    // The reaper passes SIGTERM to whichever supervisor runs now (a test that failed
    // early may not know it), then exits once it has no child left.
    const std::string reaper = testing::ReadFile(dir_.path() / "sup" / "state" / "reaper.pid");
    if (!reaper.empty()) {
      const int pid = std::stoi(reaper);
      kill(pid, SIGTERM);
      EXPECT_TRUE(testing::WaitFor([&] {
        Reap();
        return kill(pid, 0) != 0;
      })) << "drover-reaper "
          << pid << " did not exit";
    }
    for (int pid : supervisors_) {
      EXPECT_TRUE(testing::WaitFor([&] {
        Reap();
        return kill(pid, 0) != 0;
      }));
    }
    Reap();
  }

  static void Reap() {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  // A new link and driver, as a (re)started agent makes them.
  void Connect(const std::function<std::unique_ptr<SupervisedDriver>(SupervisorLink&)>& make) {
    driver_.reset();
    link_ = std::make_unique<SupervisorLink>(
        io_.get_executor(),
        SupervisorLinkOptions{.binary = testing::BinaryPath("drover-supervisor"),
                              .dir = dir_.path() / "sup",
                              .log_level = "warn"});
    absl::Status started = Run(link_->Start());
    ASSERT_TRUE(started.ok()) << started;
    supervisors_.insert(link_->supervisor_pid());
    driver_ = make(*link_);
  }

  absl::StatusOr<TaskHandle> Start(const TaskConfig& c) {
    auto h = Run(driver_->StartTask(c));
    if (h.ok())
      pids_.push_back(h->pid);
    return h;
  }

  template <typename T>
  T Run(asio::awaitable<T> op) {
    std::optional<T> out;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { out = co_await std::move(op); }, asio::detached);
    EXPECT_TRUE(testing::RunUntil(
        io_, [&] { return out.has_value(); }, std::chrono::seconds(20)));
    return std::move(*out);
  }
  bool RunUntil(const std::function<bool()>& pred) {
    return testing::RunUntil(io_, pred, std::chrono::seconds(20));
  }

  static std::string Helper() { return testing::BinaryPath("drover-test-helper").string(); }
  static int ReadPid(const std::filesystem::path& p) {
    const std::string s = testing::ReadFile(p);
    return s.empty() ? 0 : std::stoi(s);
  }
  static bool Alive(int pid) { return kill(pid, 0) == 0; }

  asio::io_context io_;
  common::RealClock clock_;
  testing::TempDir dir_;
  std::filesystem::path logs_ = dir_.path() / "logs";
  std::unique_ptr<SupervisorLink> link_;
  std::unique_ptr<SupervisedDriver> driver_;
  std::vector<int> pids_;
  std::set<int> supervisors_;
};

}  // namespace drover::drivers
