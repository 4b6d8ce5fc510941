#include "client/taskrunner/validate_hook.h"

namespace drover::taskrunner {

std::shared_ptr<const ValidateHookConfig> DefaultValidateHookConfig() {
  // Never destroyed (a static's destructor would race the last runner at exit).
  static const auto* config =
      new std::shared_ptr<const ValidateHookConfig>(std::make_shared<ValidateHookConfig>());
  return *config;
}

asio::awaitable<absl::Status> ValidateHook::Prestart(const PrestartRequest& req,
                                                     PrestartResponse* resp) {
  const model::Task& task = *req.task;
  if (!allocdir::AllocDir::ValidTaskName(task.name)) {
    co_return absl::InvalidArgumentError("invalid task name \"" + task.name + "\"");
  }
  if (config_->user_checked_drivers.contains(task.driver)) {
    // An empty user runs as the driver's default (nobody for exec), never as root.
    if (!task.user.empty() && config_->user_denylist.contains(task.user)) {
      co_return absl::PermissionDeniedError("running as user \"" + task.user + "\" is disallowed");
    }
  }
  resp->done = true;
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
