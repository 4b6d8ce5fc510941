#include "server/reschedule.h"

#include <algorithm>

namespace drover::server {
namespace {

// An unlimited policy only ever needs the latest delays; a limited one the events of
// its interval (at most `attempts`).
constexpr size_t kKeptUnlimitedEvents = 5;

const std::vector<model::RescheduleEvent>& Events(const model::Allocation& a) {
  static const std::vector<model::RescheduleEvent> kNone;
  return a.reschedule_tracker ? a.reschedule_tracker->events : kNone;
}

common::Time EventTime(const model::RescheduleEvent& e) {
  return common::Time(
      std::chrono::duration_cast<common::Duration>(std::chrono::nanoseconds(e.reschedule_time)));
}

// Nomad's growth: constant stays at `delay`; exponential doubles the last delay;
// fibonacci adds the last two (and starts a new series after a reset: a base delay
// following one at the maximum). A delay past max_delay (when set) is held at it,
// unless the allocation ran longer than that since its last replacement: then it
// starts over at the base delay.
common::Duration NextDelay(const model::Allocation& failed, const model::ReschedulePolicy& p,
                           common::Time fail_time) {
  const auto& events = Events(failed);
  if (events.empty())
    return p.delay;
  const model::RescheduleEvent& last = events.back();
  common::Duration next = p.delay;
  if (p.delay_function == "exponential") {
    next = last.delay * 2;
  } else if (p.delay_function == "fibonacci") {
    if (events.size() >= 2) {
      const common::Duration before = events[events.size() - 2].delay;
      next = (before == p.max_delay && last.delay == p.delay) ? last.delay : last.delay + before;
    }
  } else {
    return p.delay;
  }
  if (p.max_delay > common::Duration(0) && next > p.max_delay) {
    next = p.max_delay;
    if (fail_time - EventTime(last) > p.max_delay)
      next = p.delay;
  }
  return next;
}

}  // namespace

common::Time FailTime(const model::Allocation& alloc) {
  // A running allocation found unhealthy in a deployment failed when it was judged.
  if (!alloc.ClientTerminal() && alloc.deployment_status &&
      alloc.deployment_status->timestamp != common::Time{})
    return alloc.deployment_status->timestamp;
  common::Time latest{};
  for (const auto& [name, state] : alloc.task_states)
    latest = std::max(latest, state.finished_at);
  if (latest != common::Time{})
    return latest;
  return common::Time(
      std::chrono::duration_cast<common::Duration>(std::chrono::nanoseconds(alloc.modify_time)));
}

std::optional<RescheduleDecision> DecideReschedule(const model::Allocation& failed,
                                                   const model::ReschedulePolicy& policy) {
  const common::Time fail_time = FailTime(failed);
  if (!policy.unlimited) {
    if (policy.attempts <= 0)
      return std::nullopt;
    const auto& events = Events(failed);
    const auto recent = std::count_if(events.begin(), events.end(), [&](const auto& e) {
      return EventTime(e) > fail_time - policy.interval;
    });
    if (recent >= policy.attempts)
      return std::nullopt;
  }
  const common::Duration delay = NextDelay(failed, policy, fail_time);
  return RescheduleDecision{.at = fail_time + delay, .delay = delay};
}

model::RescheduleTracker NextTracker(const model::Allocation& failed,
                                     const model::ReschedulePolicy& policy, common::Time now,
                                     common::Duration delay) {
  model::RescheduleTracker out;
  for (const model::RescheduleEvent& e : Events(failed)) {
    if (policy.unlimited || EventTime(e) > now - policy.interval)
      out.events.push_back(e);
  }
  if (policy.unlimited && out.events.size() >= kKeptUnlimitedEvents)
    out.events.erase(out.events.begin(), out.events.end() - (kKeptUnlimitedEvents - 1));
  out.events.push_back(model::RescheduleEvent{
      .reschedule_time = common::ToUnixNanos(now),
      .prev_alloc_id = failed.id,
      .prev_node_id = failed.node_id,
      .delay = delay,
  });
  return out;
}

}  // namespace drover::server
