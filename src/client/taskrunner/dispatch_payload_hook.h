// dispatch_payload: writes a dispatched job's payload into the task's local dir as
// `dispatch_payload { file = "..." }` names it (reference §3.4 #9). Done once written.
// The file name must stay inside local/ (no absolute path, no "..").
#pragma once

#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

class DispatchPayloadHook : public TaskHook {
 public:
  explicit DispatchPayloadHook(asio::thread_pool& pool) : pool_(pool) {}
  std::string_view Name() const override { return "dispatch_payload"; }
  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;

 private:
  asio::thread_pool& pool_;
};

}  // namespace drover::taskrunner
