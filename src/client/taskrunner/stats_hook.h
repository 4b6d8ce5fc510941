// stats: has the node's StatsSampler sample the running task's resource usage every
// interval and hands each sample to the runner, which keeps the latest for the stats
// API (reference §3.5). Unlike Nomad it always collects: the stats API must not go
// empty because metrics publishing is off (reference §12.1 #1).
//
// Poststart registers the task with the sampler (after removing any earlier run);
// Exited and Shutdown remove it and clear the latest sample.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "client/taskrunner/stats_sampler.h"
#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

class StatsHook : public TaskHook {
 public:
  using Sink = std::function<void(std::optional<drivers::TaskResourceUsage>)>;
  StatsHook(std::shared_ptr<StatsSampler> sampler, Sink sink)
      : sampler_(std::move(sampler)), sink_(std::move(sink)) {}
  // (No sink call: the runner that owns the sink may be half destroyed.)
  ~StatsHook() override {
    if (key_)
      sampler_->Remove(*key_);
  }
  std::string_view Name() const override { return "stats_hook"; }

  asio::awaitable<absl::Status> Poststart(const PoststartRequest& req) override;
  asio::awaitable<absl::Status> Exited() override;
  asio::awaitable<void> Shutdown() override;

 private:
  void Stop();

  std::shared_ptr<StatsSampler> sampler_;
  Sink sink_;
  std::optional<uint64_t> key_;
};

}  // namespace drover::taskrunner
