#include "client/taskrunner/stats_hook.h"

#include "common/logging.h"
#include "common/offload.h"

namespace drover::taskrunner {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

asio::awaitable<absl::Status> StatsHook::Poststart(const PoststartRequest& req) {
  co_await StopSampler();
  stop_ = common::CancellationScope::Create(executor_);
  done_ = std::make_shared<common::Event>(executor_);
  common::SpawnDetached(executor_, Sample(req.driver, req.task_id, stop_, done_),
                        "stats of task " + req.task_id);
  co_return absl::OkStatus();
}

asio::awaitable<void> StatsHook::Sample(drivers::Driver* driver, std::string task_id,
                                        common::CancellationScopePtr stop,
                                        std::shared_ptr<common::Event> done) {
  while (!stop->cancelled()) {
    auto usage = driver->TaskStats(task_id);
    if (usage.ok()) {
      sink_(*usage);
    } else if (absl::IsUnimplemented(usage.status())) {
      break;  // the driver cannot report usage: nothing to sample
    } else if (!absl::IsNotFound(usage.status())) {
      DROVER_LOG_DEBUG("stats of task {}: {}", task_id, usage.status().ToString());
    }
    co_await (clock_.Sleep(interval_) || stop->Wait());
  }
  done->Set();
}

asio::awaitable<void> StatsHook::StopSampler() {
  if (!stop_)
    co_return;
  stop_->Cancel();
  co_await done_->Wait();
  stop_.reset();
  done_.reset();
  sink_(std::nullopt);
}

asio::awaitable<absl::Status> StatsHook::Exited() {
  co_await StopSampler();
  co_return absl::OkStatus();
}

asio::awaitable<void> StatsHook::Shutdown() {
  co_await StopSampler();
}

}  // namespace drover::taskrunner
