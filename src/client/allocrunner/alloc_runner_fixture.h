// Test fixture for AllocRunner tests: runners over the mock driver, a fake clock and a
// temp alloc root, driven on a test-owned io_context.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "client/allocrunner/alloc_runner.h"
#include "drivers/mock/mock_driver.h"
#include "testing/test_util.h"

namespace drover::allocrunner {

class AllocRunnerTest : public ::testing::Test {
 protected:
  ~AllocRunnerTest() override { pool_.join(); }

  std::unique_ptr<AllocRunner> Make(std::shared_ptr<const model::Allocation> alloc,
                                    std::function<void(AllocRunnerConfig&)> customize = nullptr) {
    AllocRunnerConfig c;
    c.alloc = alloc;
    c.alloc_root = dir_.path();
    c.node = &node_;
    c.region = "global";
    c.drivers = {{"mock_driver", &driver_}};
    c.clock = &clock_;
    c.pool = &pool_;
    c.on_update = [this](const ReportPtr& u) { updates_.push_back(*u); };
    c.restart_jitter = [] { return 0.0; };
    if (customize)
      customize(c);
    return std::make_unique<AllocRunner>(io_.get_executor(), std::move(c));
  }
  void Start(AllocRunner& ar) { asio::co_spawn(io_, ar.Run(), asio::detached); }
  bool RunUntil(const std::function<bool()>& pred) {
    return testing::RunWithFakeClock(io_, clock_, pred);
  }
  void Destroy(AllocRunner& ar) {
    asio::co_spawn(io_, ar.Destroy(), asio::detached);
    ASSERT_TRUE(RunUntil([&] { return ar.destroyed(); }));
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  drivers::MockDriver driver_{io_.get_executor(), clock_};
  testing::TempDir dir_;
  model::Node node_;
  std::vector<model::AllocClientUpdate> updates_;
};

}  // namespace drover::allocrunner
