// The TaskRunner's hook phases and the built-in task hooks (dispatch_payload,
// stats, validate) over the mock driver.
#include <filesystem>

#include <gtest/gtest.h>

#include "client/taskrunner/task_runner_fixture.h"

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::EventTypes;
using client::test::MakeAlloc;
using client::test::MockTask;
using Types = std::vector<std::string>;

// Records every phase it sees; optionally fails or throws in prestart.
class RecordingHook : public TaskHook {
 public:
  explicit RecordingHook(std::vector<std::string>* log) : log_(log) {}
  std::string_view Name() const override { return "recorder"; }
  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override {
    log_->push_back("prestart:" + std::to_string(req.previous_state.size()));
    if (throw_in_prestart)
      throw std::runtime_error("boom");
    if (!fail_prestart.ok())
      co_return fail_prestart;
    resp->env["HOOK_VAR"] = "from-hook";
    resp->state["seen"] = "1";
    resp->done = done;
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Poststart(const PoststartRequest&) override {
    log_->push_back("poststart");
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Exited() override {
    log_->push_back("exited");
    co_return absl::OkStatus();
  }
  void PreKill() override { log_->push_back("prekill"); }
  asio::awaitable<absl::Status> Stop(const StopRequest& req) override {
    log_->push_back(std::string("stop:") + (req.existing_state ? "state" : "none"));
    co_return absl::OkStatus();
  }
  asio::awaitable<void> Shutdown() override {
    log_->push_back("shutdown");
    co_return;
  }

  bool done = false;
  bool throw_in_prestart = false;
  absl::Status fail_prestart;

 private:
  std::vector<std::string>* log_;
};

class TaskHooksTest : public TaskRunnerTest {
 protected:
  std::function<std::vector<TaskHookPtr>()> Recorder(
      std::function<void(RecordingHook&)> setup = nullptr) {
    return [this, setup] {
      auto h = std::make_unique<RecordingHook>(&log_);
      if (setup)
        setup(*h);
      std::vector<TaskHookPtr> out;
      out.push_back(std::move(h));
      return out;
    };
  }
  std::vector<std::string> log_;
};

TEST_F(TaskHooksTest, PhasesRunInOrderAcrossARestart) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1s"}, {"exit_code", int64_t{1}}})},
                           "service", {.attempts = 1, .interval = 1h, .delay = 1s, .mode = "fail"}),
                 Recorder());
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  // The second prestart gets the data the first one returned.
  EXPECT_EQ(log_, (Types{"prestart:0", "poststart", "exited", "prestart:1", "poststart", "exited",
                         "stop:state"}));
  EXPECT_EQ(tr->local_state().hooks.at("recorder").data.at("seen"), "1");
  EXPECT_TRUE(tr->local_state().run_complete);
  EXPECT_FALSE(tr->local_state().handle.has_value());
  EXPECT_GT(local_state_changes_, 0);
  ASSERT_EQ(driver_.started_configs().size(), 2u);
  EXPECT_EQ(driver_.started_configs()[1].env.at("HOOK_VAR"), "from-hook");
}

TEST_F(TaskHooksTest, DoneHookIsSkippedButItsEnvStillApplies) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1s"}, {"exit_code", int64_t{1}}})},
                           "service", {.attempts = 1, .interval = 1h, .delay = 1s, .mode = "fail"}),
                 Recorder([](RecordingHook& h) { h.done = true; }));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "prestart:0"), 1);
  ASSERT_EQ(driver_.started_configs().size(), 2u);
  EXPECT_EQ(driver_.started_configs()[1].env.at("HOOK_VAR"), "from-hook");
  EXPECT_TRUE(tr->local_state().hooks.at("recorder").prestart_done);
}

TEST_F(TaskHooksTest, KillRunsPreKillAndStopHooks) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}), Recorder());
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(log_, (Types{"prestart:0", "poststart", "prekill", "exited", "stop:state"}));
}

// A failing prestart hook is a start error: recoverable ones are retried by the policy,
// and the error names the hook.
TEST_F(TaskHooksTest, FailingPrestartHookIsARecoverableStartError) {
  auto tr = Make(
      MakeAlloc({MockTask("t", {{"run_for", "1s"}})}, "service",
                {.attempts = 1, .interval = 1h, .delay = 1s, .mode = "fail"}),
      Recorder([](RecordingHook& h) { h.fail_prestart = drivers::RecoverableError("not yet"); }));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Task Setup", "Task hook failed",
                                            "Restarting", "Task hook failed", "Not Restarting"}));
  EXPECT_EQ(tr->state().events[2].display_message, "recorder: not yet");
  EXPECT_TRUE(tr->state().failed);
}

TEST_F(TaskHooksTest, ThrowingPrestartHookFailsTheTaskCleanly) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1s"}})}),
                 Recorder([](RecordingHook& h) { h.throw_in_prestart = true; }));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_TRUE(tr->state().failed);
  EXPECT_EQ(tr->state().state, "dead");
  EXPECT_EQ(tr->state().events[2].display_message, "recorder: hook threw: boom");
  EXPECT_EQ(log_.back(), "stop:none");  // stop hooks still ran
}

TEST_F(TaskHooksTest, ShutdownLeavesTheTaskRunningAndRunsShutdownHooks) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}), Recorder());
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  const std::string id = tr->local_state().handle->task_id;
  tr->Shutdown();
  ASSERT_TRUE(RunUntil([&] { return tr->done(); }));
  EXPECT_EQ(log_.back(), "shutdown");
  EXPECT_EQ(tr->state().state, "running");
  EXPECT_FALSE(tr->local_state().run_complete);
  auto status = driver_.InspectTask(id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state, drivers::TaskRunState::kRunning);
  // The test plays the part of whoever adopts the task later, and ends it.
  EXPECT_TRUE(driver_.DestroyTask(id, true).ok());
  while (io_.poll() > 0) {
  }
}

TEST_F(TaskHooksTest, TheDriverIsToldWhereAndHowToKeepTheLogs) {
  auto task = MockTask("web", {{"run_for", "1s"}, {"stdout_string", "hello from the task\n"}});
  task.log_config = {.max_files = 2, .max_file_size_mb = 1};
  auto tr = Make(MakeAlloc({task}, "batch"));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  ASSERT_EQ(driver_.started_configs().size(), 1u);
  const auto logs = alloc_dir_->logs_dir();
  const drivers::TaskLogConfig& given = driver_.started_configs()[0].logs;
  EXPECT_EQ(given.dir, logs.string());
  EXPECT_EQ(given.stdout_base, "web.stdout");
  EXPECT_EQ(given.stderr_base, "web.stderr");
  EXPECT_EQ(given.max_files, 2);
  EXPECT_EQ(given.max_file_size, 1 << 20);
  EXPECT_EQ(testing::ReadFile(logs / "web.stdout.0"), "hello from the task\n");
}

TEST_F(TaskHooksTest, DisabledLogsGiveTheDriverNoPaths) {
  auto task = MockTask("web", {{"run_for", "1s"}});
  task.log_config.disabled = true;
  auto tr = Make(MakeAlloc({task}, "batch"));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  ASSERT_EQ(driver_.started_configs().size(), 1u);
  EXPECT_EQ(driver_.started_configs()[0].logs.dir, "");
  EXPECT_FALSE(std::filesystem::exists(alloc_dir_->logs_dir() / "web.stdout.0"));
}

TEST_F(TaskHooksTest, DispatchPayloadIsWrittenIntoLocal) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1s"}})}, "batch");
  auto job = std::make_shared<model::Job>(*alloc->job);
  job->payload = std::string("bin\0ary", 7);
  job->task_groups[0].tasks[0].dispatch_payload = model::DispatchPayloadConfig{.file = "in/p.bin"};
  alloc->job = job;
  auto tr = Make(alloc);
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(testing::ReadFile(alloc_dir_->task_dir("t").local / "in" / "p.bin"),
            std::string("bin\0ary", 7));
}

TEST_F(TaskHooksTest, DispatchPayloadMayNotEscapeLocal) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1s"}})}, "batch");
  auto job = std::make_shared<model::Job>(*alloc->job);
  job->payload = "x";
  job->task_groups[0].tasks[0].dispatch_payload = model::DispatchPayloadConfig{.file = "../../x"};
  alloc->job = job;
  auto tr = Make(alloc);
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_TRUE(tr->state().failed);
  EXPECT_NE(tr->state().events[2].display_message.find("dispatch_payload"), std::string::npos);
}

TEST_F(TaskHooksTest, StatsAreSampledWhileRunningAndClearedOnExit) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "10s"}})}, "batch"));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->LatestStats().has_value(); }));
  const int64_t first = tr->LatestStats()->timestamp;
  ASSERT_TRUE(RunUntil([&] { return tr->LatestStats() && tr->LatestStats()->timestamp > first; }));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_FALSE(tr->LatestStats().has_value());
}

TEST_F(TaskHooksTest, ValidateRefusesDeniedUsersForCheckedDrivers) {
  ValidateHook hook(std::make_shared<const ValidateHookConfig>(
      ValidateHookConfig{.user_denylist = {"root"}, .user_checked_drivers = {"mock_driver"}}));
  model::Task task = MockTask("t", {});
  task.user = "root";
  PrestartRequest req;
  req.task = &task;
  PrestartResponse resp;
  absl::Status s;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { s = co_await hook.Prestart(req, &resp); },
      asio::detached);
  io_.run();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_EQ(s.message(), "running as user \"root\" is disallowed");
}

}  // namespace
}  // namespace drover::taskrunner
