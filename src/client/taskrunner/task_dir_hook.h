// task_dir: builds <alloc>/<task>/{local,tmp,secrets,private} before the first start
// (reference §3.4 #3) and emits "Task Setup" the first time. It runs again before
// every start (building is idempotent and re-creates anything removed meanwhile), and
// remembers in its data that the directory was built so the event is not repeated.
#pragma once

#include <functional>

#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

class TaskDirHook : public TaskHook {
 public:
  TaskDirHook(asio::thread_pool& pool, std::function<void(model::TaskEvent)> emit)
      : pool_(pool), emit_(std::move(emit)) {}
  std::string_view Name() const override { return "task_dir"; }
  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;

 private:
  asio::thread_pool& pool_;
  std::function<void(model::TaskEvent)> emit_;
};

}  // namespace drover::taskrunner
