// The TaskRunner's hook phases (reference §3.3): bookkeeping of prestart state, and the
// error policy of each phase. Every call into a hook goes through CallCatching, which turns
// an exception into an error so a throwing hook never leaves a phase half-run.
#include "client/taskrunner/device_hook.h"
#include "client/taskrunner/task_runner.h"
#include "common/call_catching.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

using common::CallCatching;

namespace {
// The PATH of an isolated task whose job sets none.
constexpr char kIsolatedPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}  // namespace

void TaskRunner::EmitHookEvent(model::TaskEvent event) {
  if (event.time == 0)
    event.time = common::ToUnixNanos(Now());
  EmitEvent(std::move(event));
}

void TaskRunner::HookFailed(std::string_view hook, const absl::Status& error) {
  const std::string msg = std::string(hook) + ": " + std::string(error.message());
  DROVER_LOG_WARN("task {} of alloc {}: hook failed: {}", task_->name, alloc_->id, msg);
  EmitEvent(
      model::TaskEvent(model::kEventHookFailed, Now()).SetMessage(msg).SetDisplayMessage(msg));
}

void TaskRunner::SetLocalState(std::function<void(LocalState&)> change) {
  LocalState next = local_;
  change(next);
  if (next == local_)
    return;
  local_ = std::move(next);
  if (config_.on_local_state_change)
    config_.on_local_state_change(local_);
}

asio::awaitable<absl::Status> TaskRunner::Prestart() {
  if (config_.driver == nullptr) {
    absl::Status s = absl::FailedPreconditionError("driver \"" + task_->driver +
                                                   "\" is not available on this node");
    EmitEvent(model::TaskEvent(model::kEventHookFailed, Now())
                  .SetMessage(std::string(s.message()))
                  .SetDisplayMessage(std::string(s.message())));
    co_return s;
  }
  std::map<std::string, std::string> hook_env;
  hook_mounts_.clear();
  hook_devices_.clear();
  device_env_.clear();
  PrestartRequest req;
  req.alloc = alloc_.get();
  req.task = task_;
  req.alloc_dir = config_.alloc_dir;
  req.task_dir = TaskDirectories();
  for (auto& hook : hooks_) {
    const std::string name(hook->Name());
    HookState prev;
    if (auto it = local_.hooks.find(name); it != local_.hooks.end())
      prev = it->second;
    if (prev.prestart_done) {
      // Not run again, but what it contributed to the environment still applies.
      for (const auto& [k, v] : prev.env)
        hook_env[k] = v;
      continue;
    }
    req.previous_state = prev.data;
    PrestartResponse resp;
    TaskHook* h = hook.get();
    auto call = [h, &req, &resp] { return h->Prestart(req, &resp); };
    absl::Status s = co_await CallCatching(std::move(call));
    if (!s.ok()) {
      HookFailed(name, s);
      // Keeps the error's code and payload: a recoverable error stays recoverable.
      co_return common::Annotate(s, "prestart hook \"" + name + "\" failed");
    }
    HookState next{.prestart_done = resp.done, .data = resp.state, .env = resp.env};
    if (next != prev)
      SetLocalState([&](LocalState& l) { l.hooks[name] = next; });
    for (const auto& [k, v] : resp.env)
      hook_env[k] = v;
    if (name == DeviceHook::kName)
      device_env_ = resp.env;
    hook_mounts_.insert(hook_mounts_.end(), resp.mounts.begin(), resp.mounts.end());
    hook_devices_.insert(hook_devices_.end(), resp.devices.begin(), resp.devices.end());
    if (kill_->cancelled() || shutdown_->cancelled())
      co_return absl::CancelledError("task is being stopped");
  }
  TaskEnvInput in;
  in.alloc = alloc_.get();
  in.task = task_;
  in.node = config_.node;
  in.region = config_.region;
  const std::string isolation =
      config_.driver != nullptr ? config_.driver->GetCapabilities().fs_isolation : "none";
  if (isolation != "none") {
    // The task sees its task dir as / (exec) or its image's root with the directories
    // mounted (docker): the paths as it sees them. It gets none of the agent's
    // environment, only the job's and Nomad's variables, and a PATH unless its image
    // has its own.
    in.alloc_dir = "/alloc";
    in.task_dir = "/local";
    in.secrets_dir = "/secrets";
    if (isolation == "chroot")
      in.host_env = {{"PATH", kIsolatedPath}};
  } else {
    in.alloc_dir = config_.alloc_dir->shared_dir().string();
    const allocdir::TaskDir dirs = TaskDirectories();
    in.task_dir = dirs.local.string();
    in.secrets_dir = dirs.secrets.string();
    if (config_.host_env)
      in.host_env = *config_.host_env;
  }
  in.hook_env = std::move(hook_env);
  env_ = TaskEnv::Build(in);
  co_return absl::OkStatus();
}

asio::awaitable<void> TaskRunner::RunPoststartHooks(const std::string& task_id) {
  PoststartRequest req{.driver = config_.driver, .task_id = task_id};
  for (auto& hook : hooks_) {
    TaskHook* h = hook.get();
    auto call = [h, &req] { return h->Poststart(req); };
    if (absl::Status s = co_await CallCatching(std::move(call)); !s.ok())
      HookFailed(hook->Name(), s);
  }
}

asio::awaitable<void> TaskRunner::RunExitedHooks() {
  for (auto& hook : hooks_) {
    TaskHook* h = hook.get();
    auto call = [h] { return h->Exited(); };
    if (absl::Status s = co_await CallCatching(std::move(call)); !s.ok())
      HookFailed(hook->Name(), s);
  }
}

void TaskRunner::RunPreKillHooks() {
  for (auto& hook : hooks_) {
    try {
      hook->PreKill();
    } catch (const std::exception& e) {
      HookFailed(hook->Name(), absl::InternalError(std::string("hook threw: ") + e.what()));
    }
  }
}

asio::awaitable<void> TaskRunner::RunStopHooks() {
  StopRequest req{.existing_state = nullptr, .task_dir = TaskDirectories()};
  for (auto& hook : hooks_) {
    const std::string name(hook->Name());
    auto it = local_.hooks.find(name);
    req.existing_state = it == local_.hooks.end() ? nullptr : &it->second.data;
    TaskHook* h = hook.get();
    auto call = [h, &req] { return h->Stop(req); };
    if (absl::Status s = co_await CallCatching(std::move(call)); !s.ok())
      HookFailed(name, s);
  }
}

asio::awaitable<void> TaskRunner::RunShutdownHooks() {
  for (auto& hook : hooks_) {
    try {
      co_await hook->Shutdown();
    } catch (const std::exception& e) {
      DROVER_LOG_WARN("task {}: shutdown hook {} threw: {}", task_->name, hook->Name(), e.what());
    }
  }
}

}  // namespace drover::taskrunner
