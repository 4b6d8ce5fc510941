// validate: refuses to start a task that breaks the node's rules (reference §3.4 #1):
// an unusable task name, or a user on the node's deny list for drivers that check
// users. Runs once per task (done).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

struct ValidateHookConfig {
  // Nomad's defaults: tasks of these drivers may not run as these users.
  std::set<std::string> user_denylist = {"root"};
  std::set<std::string> user_checked_drivers = {"exec", "qemu", "java"};
};

// The defaults, one instance for every task runner of the process.
std::shared_ptr<const ValidateHookConfig> DefaultValidateHookConfig();

class ValidateHook : public TaskHook {
 public:
  explicit ValidateHook(std::shared_ptr<const ValidateHookConfig> config)
      : config_(std::move(config)) {}
  std::string_view Name() const override { return "validate"; }
  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;

 private:
  std::shared_ptr<const ValidateHookConfig> config_;
};

}  // namespace drover::taskrunner
