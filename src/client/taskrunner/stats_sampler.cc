#include "client/taskrunner/stats_sampler.h"

#include <vector>

#include "common/logging.h"
#include "common/offload.h"

namespace drover::taskrunner {
namespace {

// Samples per turn of the control loop in one pass.
constexpr size_t kSamplesPerTurn = 64;

}  // namespace

std::shared_ptr<StatsSampler> StatsSampler::Create(asio::any_io_executor executor,
                                                   common::Clock& clock,
                                                   common::Duration interval) {
  return std::make_shared<StatsSampler>(std::move(executor), clock, interval);
}

StatsSampler::StatsSampler(asio::any_io_executor executor, common::Clock& clock,
                           common::Duration interval)
    : executor_(std::move(executor)), clock_(clock), interval_(interval) {}

uint64_t StatsSampler::Add(drivers::Driver* driver, std::string task_id, Sink sink) {
  const uint64_t key = next_key_++;
  Entry e{.driver = driver, .task_id = std::move(task_id), .sink = std::move(sink)};
  if (!SampleOne(e))
    return key;  // nothing to sample, ever: the key stays unknown
  tasks_.emplace(key, std::move(e));
  if (!idle_ || idle_->cancelled())
    idle_ = common::CancellationScope::Create(executor_);
  if (!looping_) {
    looping_ = true;
    common::SpawnDetached(executor_, Loop(shared_from_this()), "task stats sampler");
  }
  return key;
}

void StatsSampler::Remove(uint64_t key) {
  tasks_.erase(key);
  if (tasks_.empty() && idle_)
    idle_->Cancel();
}

bool StatsSampler::SampleOne(const Entry& e) {
  absl::StatusOr<drivers::TaskResourceUsage> usage = e.driver->TaskStats(e.task_id);
  if (usage.ok()) {
    e.sink(std::move(*usage));
  } else if (absl::IsUnimplemented(usage.status())) {
    return false;
  } else if (!absl::IsNotFound(usage.status())) {
    DROVER_LOG_DEBUG("stats of task {}: {}", e.task_id, usage.status().ToString());
  }
  return true;
}

// `self` keeps the sampler alive while the loop runs.
asio::awaitable<void> StatsSampler::Loop([[maybe_unused]] std::shared_ptr<StatsSampler> self) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  while (!tasks_.empty()) {
    const common::CancellationScopePtr idle = idle_;
    co_await (clock_.Sleep(interval_) || idle->Wait());
    // Tasks added or removed while this pass yields are seen by key.
    std::vector<uint64_t> keys;
    keys.reserve(tasks_.size());
    for (const auto& [key, e] : tasks_)
      keys.push_back(key);
    size_t done = 0;
    for (uint64_t key : keys) {
      auto it = tasks_.find(key);
      if (it == tasks_.end())
        continue;
      if (!SampleOne(it->second))
        tasks_.erase(it);
      if (++done % kSamplesPerTurn == 0)
        co_await asio::post(executor_, asio::use_awaitable);
    }
  }
  looping_ = false;
}

}  // namespace drover::taskrunner
