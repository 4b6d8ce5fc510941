#include "client/taskrunner/dispatch_payload_hook.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/beneath.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

namespace {

// Writes the payload to `file` under the task's local/. The task may have run here
// before and left anything in local/ (symlinks, FIFOs, hard links to host files), so
// the directories are made without following links and the file is always a new one.
absl::Status WritePayload(const std::filesystem::path& task_dir, const std::string& file,
                          const std::string& payload) {
  const std::filesystem::path rel = std::filesystem::path(file).lexically_normal();
  if (file.empty() || rel.is_absolute() || rel.empty() || *rel.begin() == ".." ||
      !rel.has_filename() || rel.filename() == "." || rel.filename() == "..") {
    return absl::InvalidArgumentError("dispatch_payload file \"" + file +
                                      "\" must be a relative path inside the task's local dir");
  }
  const std::string shown = (task_dir / "local" / rel).string();
  auto task = common::OpenDirectory(task_dir);
  if (!task.ok())
    return task.status();
  auto parent = common::MakeDirsBeneath(task->get(), ("local" / rel.parent_path()).string(), 0755);
  if (!parent.ok())
    return common::Annotate(parent.status(), "failed to write dispatch payload to " + shown);
  const std::string name = rel.filename().string();
  DROVER_RETURN_IF_ERROR(common::RemoveTreeAt(parent->get(), name));
  // Readable (and runnable) by the task whatever user it runs as.
  common::UniqueFd out(openat(parent->get(), name.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                              0755));
  if (!out.valid())
    return common::ErrnoStatus(errno, "failed to write dispatch payload to " + shown);
  fchmod(out.get(), 0755);
  for (size_t done = 0; done < payload.size();) {
    const ssize_t n = write(out.get(), payload.data() + done, payload.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return common::ErrnoStatus(errno, "failed to write dispatch payload to " + shown);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

asio::awaitable<absl::Status> DispatchPayloadHook::Prestart(const PrestartRequest& req,
                                                            PrestartResponse* resp) {
  const model::Task& task = *req.task;
  const std::string& payload = req.alloc->job->payload;
  if (task.dispatch_payload && !payload.empty()) {
    auto work = [dir = req.task_dir.dir, file = task.dispatch_payload->file, payload] {
      return WritePayload(dir, file, payload);
    };
    absl::Status s = co_await common::Offload(pool_, std::move(work));  // named: see Offload()
    if (!s.ok())
      co_return s;
  }
  resp->done = true;
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
