// stats: samples the running task's resource usage from the driver every interval and
// hands each sample to the runner, which keeps the latest for the stats API (reference
// §3.5). Unlike Nomad it always collects: the stats API must not go empty because
// metrics publishing is off (reference §12.1 #1).
//
// Poststart starts a sampler (after cancelling any earlier one); Exited and Shutdown
// stop it and wait for it to finish, so the hook can be destroyed afterwards.
#pragma once

#include <functional>

#include "client/taskrunner/task_hook.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"

namespace drover::taskrunner {

class StatsHook : public TaskHook {
 public:
  using Sink = std::function<void(std::optional<drivers::TaskResourceUsage>)>;
  StatsHook(asio::any_io_executor executor, common::Clock& clock, common::Duration interval,
            Sink sink)
      : executor_(std::move(executor)),
        clock_(clock),
        interval_(interval),
        sink_(std::move(sink)) {}
  std::string_view Name() const override { return "stats_hook"; }

  asio::awaitable<absl::Status> Poststart(const PoststartRequest& req) override;
  asio::awaitable<absl::Status> Exited() override;
  asio::awaitable<void> Shutdown() override;

 private:
  asio::awaitable<void> Sample(drivers::Driver* driver, std::string task_id,
                               common::CancellationScopePtr stop,
                               std::shared_ptr<common::Event> done);
  asio::awaitable<void> StopSampler();

  asio::any_io_executor executor_;
  common::Clock& clock_;
  common::Duration interval_;
  Sink sink_;
  common::CancellationScopePtr stop_;
  std::shared_ptr<common::Event> done_;
};

}  // namespace drover::taskrunner
