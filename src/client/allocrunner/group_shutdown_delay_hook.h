// Group shutdown_delay: before the group's tasks are killed, waits the task group's
// `shutdown_delay` so that traffic can drain (in Nomad this is part of the group
// services hook, after deregistration). Cut short when the server asks to skip
// shutdown delays (NoShutdownDelay).
#pragma once

#include "client/allocrunner/alloc_hook.h"
#include "common/cancellation.h"
#include "common/clock.h"

namespace drover::allocrunner {

class GroupShutdownDelayHook : public AllocHook {
 public:
  GroupShutdownDelayHook(common::Clock& clock, common::Duration delay,
                         common::CancellationScopePtr skip)
      : clock_(clock), delay_(delay), skip_(std::move(skip)) {}
  std::string_view Name() const override { return "group_shutdown_delay"; }
  asio::awaitable<void> PreKill() override;

 private:
  common::Clock& clock_;
  common::Duration delay_;
  common::CancellationScopePtr skip_;
  bool waited_ = false;
};

}  // namespace drover::allocrunner
