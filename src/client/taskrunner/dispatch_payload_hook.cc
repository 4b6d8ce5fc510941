#include "client/taskrunner/dispatch_payload_hook.h"

#include <fstream>

#include "common/offload.h"

namespace drover::taskrunner {

namespace {

absl::Status WritePayload(const std::filesystem::path& local, const std::string& file,
                          const std::string& payload) {
  const std::filesystem::path rel = std::filesystem::path(file).lexically_normal();
  if (file.empty() || rel.is_absolute() || rel.empty() || *rel.begin() == "..") {
    return absl::InvalidArgumentError("dispatch_payload file \"" + file +
                                      "\" must be a relative path inside the task's local dir");
  }
  const std::filesystem::path dest = local / rel;
  std::error_code ec;
  std::filesystem::create_directories(dest.parent_path(), ec);
  if (ec) {
    return absl::InternalError("failed to create " + dest.parent_path().string() + ": " +
                               ec.message());
  }
  std::ofstream out(dest, std::ios::binary | std::ios::trunc);
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  out.close();
  if (!out) {
    return absl::InternalError("failed to write dispatch payload to " + dest.string());
  }
  // Tasks may run as another user and must be able to read it (Nomad writes 0777).
  std::filesystem::permissions(dest, std::filesystem::perms::all, ec);
  return absl::OkStatus();
}

}  // namespace

asio::awaitable<absl::Status> DispatchPayloadHook::Prestart(const PrestartRequest& req,
                                                            PrestartResponse* resp) {
  const model::Task& task = *req.task;
  const std::string& payload = req.alloc->job->payload;
  if (task.dispatch_payload && !payload.empty()) {
    auto work = [local = req.task_dir.local, file = task.dispatch_payload->file, payload] {
      return WritePayload(local, file, payload);
    };
    absl::Status s = co_await common::Offload(pool_, std::move(work));  // named: see Offload()
    if (!s.ok())
      co_return s;
  }
  resp->done = true;
  co_return absl::OkStatus();
}

}  // namespace drover::taskrunner
