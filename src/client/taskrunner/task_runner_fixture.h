// Test fixture for TaskRunner tests: a runner over the mock driver, a fake clock and a
// temp alloc dir, driven on a test-owned io_context.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "client/client_test_util.h"
#include "client/taskrunner/device_hook.h"
#include "client/taskrunner/task_runner.h"
#include "drivers/mock/mock_driver.h"
#include "testing/test_util.h"

namespace drover::taskrunner {

class TaskRunnerTest : public ::testing::Test {
 protected:
  ~TaskRunnerTest() override { pool_.join(); }

  std::unique_ptr<TaskRunner> Make(
      std::shared_ptr<const model::Allocation> alloc,
      std::function<std::vector<TaskHookPtr>()> extra_hooks = nullptr) {
    alloc_ = alloc;
    if (alloc_dir_ != nullptr)
      earlier_dirs_.push_back(std::move(alloc_dir_));  // an earlier runner's, still in use
    alloc_dir_ = std::make_unique<allocdir::AllocDir>(dir_.path(), alloc->id);
    EXPECT_TRUE(alloc_dir_->Build().ok());
    TaskRunnerConfig c;
    c.alloc = alloc;
    c.task_name = alloc->Group()->tasks[0].name;
    c.driver = &driver_;
    c.alloc_dir = alloc_dir_.get();
    c.node = &node_;
    c.region = "global";
    c.clock = &clock_;
    c.pool = &pool_;
    c.on_state_change = [this] { ++state_changes_; };
    c.restart_jitter = [] { return 0.0; };
    c.extra_hooks = std::move(extra_hooks);
    c.wait_servers_contacted = wait_servers_contacted_;
    c.reserve_devices = reserve_devices_;
    c.on_local_state_change = [this](const LocalState&) { ++local_state_changes_; };
    return std::make_unique<TaskRunner>(io_.get_executor(), std::move(c));
  }
  void Start(TaskRunner& tr) { asio::co_spawn(io_, tr.Run(), asio::detached); }
  bool RunUntil(const std::function<bool()>& pred) {
    return testing::RunWithFakeClock(io_, clock_, pred);
  }
  // Runs until the task is dead and Run has finished: a dead task parks for a restart
  // of the whole alloc until killed (the alloc runner's job), so release it here.
  bool RunToEnd(TaskRunner& tr) {
    if (!RunUntil([&] { return tr.done() || tr.parked(); }))
      return false;
    tr.RequestKill(std::nullopt);
    return RunUntil([&] { return tr.done(); });
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  drivers::MockDriver driver_{io_.get_executor(), clock_};
  testing::TempDir dir_;
  model::Node node_;
  std::shared_ptr<const model::Allocation> alloc_;
  std::unique_ptr<allocdir::AllocDir> alloc_dir_;
  std::vector<std::unique_ptr<allocdir::AllocDir>> earlier_dirs_;
  int state_changes_ = 0;
  int local_state_changes_ = 0;
  std::function<asio::awaitable<void>()> wait_servers_contacted_;
  DeviceHook::ReserveFn reserve_devices_;
};

}  // namespace drover::taskrunner
