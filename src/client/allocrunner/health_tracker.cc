#include "client/allocrunner/health_tracker.h"

namespace drover::allocrunner {

using common::AddSaturating;

HealthTracker::HealthTracker(const model::TaskGroup& group, const model::MigrateStrategy& strategy,
                             common::Time start)
    : min_healthy_time_(strategy.min_healthy_time),
      deadline_(AddSaturating(start, strategy.healthy_deadline)) {
  for (const model::Task& t : group.tasks) {
    if (!t.IsPoststop())
      tasks_.push_back(&t);
  }
}

std::optional<bool> HealthTracker::Observe(const std::map<std::string, model::TaskState>& states,
                                           common::Time now) {
  if (verdict_)
    return verdict_;
  bool all_up = true;
  Signature sig;
  for (const model::Task* t : tasks_) {
    auto it = states.find(t->name);
    if (it == states.end()) {
      all_up = false;
      continue;
    }
    const model::TaskState& s = it->second;
    if (s.failed) {
      verdict_ = false;
      return verdict_;
    }
    sig.emplace_back(s.state, s.restarts, s.started_at);
    const bool ephemeral = (t->IsPrestart() || t->IsPoststart()) && !t->IsSidecar();
    if (s.state == model::kTaskStateRunning)
      continue;
    if (!(ephemeral && s.state == model::kTaskStateDead))
      all_up = false;
  }
  if (!all_up) {
    healthy_since_.reset();
  } else if (!healthy_since_ || sig != since_signature_) {
    healthy_since_ = now;
    since_signature_ = std::move(sig);
  }
  if (healthy_since_ && AddSaturating(*healthy_since_, min_healthy_time_) <= now) {
    verdict_ = true;
  } else if (now >= deadline_) {
    verdict_ = false;
  }
  return verdict_;
}

common::Time HealthTracker::NextCheck() const {
  if (healthy_since_)
    return std::min(AddSaturating(*healthy_since_, min_healthy_time_), deadline_);
  return deadline_;
}

}  // namespace drover::allocrunner
