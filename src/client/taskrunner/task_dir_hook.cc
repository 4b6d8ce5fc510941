#include "client/taskrunner/task_dir_hook.h"

#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

asio::awaitable<absl::Status> TaskDirHook::Prestart(const PrestartRequest& req,
                                                    PrestartResponse* resp) {
  if (!req.previous_state.contains("is_done")) {
    emit_(model::TaskEvent(model::kEventTaskSetup, model::Time{})
              .SetMessage("Building Task Directory"));
  }
  allocdir::AllocDir* ad = req.alloc_dir;
  const std::string name = req.task->name;
  const std::string user = req.task->user.empty() ? default_user_ : req.task->user;
  const bool image_user = image_user_;
  auto work = [ad, name, user, image_user]() -> absl::StatusOr<allocdir::TaskDir> {
    if (image_user)
      return ad->BuildTaskDir(name, std::nullopt, /*open_to_all=*/true);
    auto owner = allocdir::OwnerFor(user);
    if (!owner.ok())
      return owner.status();
    return ad->BuildTaskDir(name, *owner);
  };  // named: see Offload()
  auto built = co_await common::Offload(pool_, std::move(work));
  if (!built.ok()) {
    co_return common::Annotate(built.status(), "failed to build task directory");
  }
  resp->state["is_done"] = "true";
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
