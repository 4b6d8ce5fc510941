// The AllocRunner's hook phases and their error policies (reference §3.1). Every call
// goes through CallHook, which turns an exception into an error, so a throwing hook
// never leaves a phase half-run.
#include "client/allocrunner/alloc_runner.h"
#include "common/logging.h"

namespace drover::allocrunner {

namespace {

template <typename Fn>
asio::awaitable<absl::Status> CallHook(Fn fn) {
  try {
    co_return co_await fn();
  } catch (const std::exception& e) {
    co_return absl::InternalError(std::string("hook threw: ") + e.what());
  }
}

}  // namespace

asio::awaitable<std::optional<std::string>> AllocRunner::RunPrerunHooks() {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h] { return h->Prerun(); };
    absl::Status s = co_await CallHook(std::move(call));
    if (!s.ok()) {
      co_return "pre-run hook \"" + std::string(hook->Name()) +
          "\" failed: " + std::string(s.message());
    }
  }
  co_return std::nullopt;
}

asio::awaitable<void> AllocRunner::RunUpdateHooks(std::shared_ptr<const model::Allocation> alloc) {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h, alloc] { return h->Update(alloc); };
    if (absl::Status s = co_await CallHook(std::move(call)); !s.ok()) {
      DROVER_LOG_WARN("alloc {}: update hook {} failed: {}", id_, hook->Name(), s.ToString());
    }
  }
}

asio::awaitable<void> AllocRunner::RunPostrunHooks() {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h] { return h->Postrun(); };
    if (absl::Status s = co_await CallHook(std::move(call)); !s.ok()) {
      DROVER_LOG_WARN("alloc {}: post-run hook {} failed: {}", id_, hook->Name(), s.ToString());
    }
  }
}

asio::awaitable<void> AllocRunner::RunDestroyHooks() {
  // Best effort: every hook runs whatever the others did.
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h] { return h->Destroy(); };
    if (absl::Status s = co_await CallHook(std::move(call)); !s.ok()) {
      DROVER_LOG_ERROR("alloc {}: destroy hook {} failed: {}", id_, hook->Name(), s.ToString());
    }
  }
}

asio::awaitable<void> AllocRunner::RunPreKillHooks() {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h]() -> asio::awaitable<absl::Status> {
      co_await h->PreKill();
      co_return absl::OkStatus();
    };
    if (absl::Status s = co_await CallHook(std::move(call)); !s.ok()) {
      DROVER_LOG_WARN("alloc {}: pre-kill hook {} failed: {}", id_, hook->Name(), s.ToString());
    }
  }
}

asio::awaitable<void> AllocRunner::RunShutdownHooks() {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h]() -> asio::awaitable<absl::Status> {
      co_await h->Shutdown();
      co_return absl::OkStatus();
    };
    if (absl::Status s = co_await CallHook(std::move(call)); !s.ok()) {
      DROVER_LOG_WARN("alloc {}: shutdown hook {} failed: {}", id_, hook->Name(), s.ToString());
    }
  }
}

}  // namespace drover::allocrunner
