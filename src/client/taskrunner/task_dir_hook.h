// task_dir: builds <alloc>/<task>/{local,tmp,secrets,private} before the first start
// (reference §3.4 #3) and emits "Task Setup" the first time. It runs again before
// every start (building is idempotent and re-creates anything removed meanwhile), and
// remembers in its data that the directory was built so the event is not repeated.
// The directories are given to the user the task runs as (its `user`, else the driver's
// default), when that is not the agent's own (docs/security.md).
#pragma once

#include <functional>

#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

class TaskDirHook : public TaskHook {
 public:
  // `default_user`: the driver's user for tasks that name none ("": the agent's).
  // `image_user`: the task's `user` is one of its image's (docker), not the host's: it
  // is not looked up, and the task's local/ and secrets/ are open to every user.
  TaskDirHook(asio::thread_pool& pool, std::function<void(model::TaskEvent)> emit,
              std::string default_user = "", bool image_user = false)
      : pool_(pool),
        emit_(std::move(emit)),
        default_user_(std::move(default_user)),
        image_user_(image_user) {}
  std::string_view Name() const override { return "task_dir"; }
  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;

 private:
  asio::thread_pool& pool_;
  std::function<void(model::TaskEvent)> emit_;
  std::string default_user_;
  bool image_user_ = false;
};

}  // namespace drover::taskrunner
