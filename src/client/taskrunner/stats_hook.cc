#include "client/taskrunner/stats_hook.h"

namespace drover::taskrunner {

asio::awaitable<absl::Status> StatsHook::Poststart(const PoststartRequest& req) {
  Stop();
  Sink sink = sink_;
  key_ = sampler_->Add(req.driver, req.task_id,
                       [sink](drivers::TaskResourceUsage u) { sink(std::move(u)); });
  co_return absl::OkStatus();
}

void StatsHook::Stop() {
  if (!key_)
    return;
  sampler_->Remove(*std::exchange(key_, std::nullopt));
  sink_(std::nullopt);
}

asio::awaitable<absl::Status> StatsHook::Exited() {
  Stop();
  co_return absl::OkStatus();
}

asio::awaitable<void> StatsHook::Shutdown() {
  Stop();
  co_return;
}

}  // namespace drover::taskrunner
