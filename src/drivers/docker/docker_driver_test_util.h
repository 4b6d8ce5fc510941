// The docker driver tests' fixture: a real dockerd of its own, the busybox test image
// imported, and a DockerDriver started against it on the test's io_context.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "codec/json.h"
#include "common/clock.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/docker/docker_test_util.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"
#include "testing/test_util.h"

namespace drover::drivers::docker::test {

inline void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

class DockerDriverTest : public ::testing::Test {
 protected:
  explicit DockerDriverTest(testing::DockerdProcess::Options options = {}) : dockerd_(options) {}

  void SetUp() override {
    DROVER_SKIP_WITHOUT_DOCKERD();
    ASSERT_TRUE(dockerd_.ok()) << dockerd_.Log();
    engine_ = std::make_unique<Engine>(EndpointAddress(dockerd_.endpoint()).value());
    ASSERT_TRUE(testing::Await(io_, engine_->Negotiate()).ok());
    ASSERT_TRUE(ImportBusybox(io_, *engine_, dir_).ok());
    plugin_.endpoint = dockerd_.endpoint();
    plugin_.fingerprint_period = std::chrono::milliseconds(200);
    plugin_.gc_image = false;  // the test image stays
    StartDriver();
  }

  void TearDown() override { StopDriver(); }

  // Runs `work` to completion on io_.
  void Run(asio::awaitable<void> work) {
    auto done = [](asio::awaitable<void> w) -> asio::awaitable<bool> {
      co_await std::move(w);
      co_return true;
    };
    EXPECT_TRUE(testing::Await(io_, done(std::move(work)), std::chrono::seconds(60)));
  }
  void StartDriver() {
    driver_ = std::make_unique<DockerDriver>(io_.get_executor(), pool_, clock_, plugin_,
                                             dir_.path() / "state");
    Run(driver_->Start());
  }
  void StopDriver() {
    if (driver_ != nullptr)
      Run(driver_->Shutdown());
    driver_.reset();
  }
  // A new driver instance, as after an agent restart.
  void RestartDriver() {
    StopDriver();
    StartDriver();
  }

  // A task of a new allocation, with Nomad's directories made.
  TaskConfig Task(const std::string& name, const codec::Json& config) {
    TaskConfig t;
    t.alloc_id = "0a" + std::to_string(++allocs_) + "c0ffee-0000-0000-0000-000000000000";
    t.id = t.alloc_id + "/" + name + "/0000000" + std::to_string(allocs_ % 10);
    t.job_id = "job";
    t.job_name = "job";
    t.task_group = "group";
    t.name = name;
    t.node_id = "node-1";
    t.config = codec::ValueFromJson(config);
    const std::filesystem::path alloc = dir_.path() / "allocs" / t.alloc_id;
    t.alloc_dir = alloc.string();
    t.task_dir = (alloc / name).string();
    for (const char* d : {"alloc/logs", "alloc/data", "alloc/tmp"})
      std::filesystem::create_directories(alloc / d);
    for (const char* d : {"local", "secrets", "tmp"})
      std::filesystem::create_directories(alloc / name / d);
    t.logs.dir = (alloc / "alloc" / "logs").string();
    t.logs.stdout_base = name + ".stdout";
    t.logs.stderr_base = name + ".stderr";
    return t;
  }

  absl::StatusOr<TaskHandle> Start(const TaskConfig& task) {
    return testing::Await(io_, driver_->StartTask(task), std::chrono::seconds(60));
  }
  absl::StatusOr<ExitResult> Wait(const std::string& task_id,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return testing::Await(io_, driver_->WaitTask(task_id), timeout);
  }
  static std::string Stdout(const TaskConfig& task) {
    return testing::ReadFile(std::filesystem::path(task.logs.dir) / (task.logs.stdout_base + ".0"));
  }
  static std::string Stderr(const TaskConfig& task) {
    return testing::ReadFile(std::filesystem::path(task.logs.dir) / (task.logs.stderr_base + ".0"));
  }
  bool ContainerExists(const std::string& id) {
    return testing::Await(io_, engine_->InspectContainer(id)).ok();
  }

  // Declared in destruction order's reverse: the clock outlives the io_context, the
  // io_context the driver.
  common::RealClock clock_;
  asio::io_context io_;
  asio::thread_pool pool_{2};
  testing::TempDir dir_;
  testing::DockerdProcess dockerd_;
  std::unique_ptr<Engine> engine_;
  PluginConfig plugin_;
  std::unique_ptr<DockerDriver> driver_;
  int allocs_ = 0;
};

}  // namespace drover::drivers::docker::test
