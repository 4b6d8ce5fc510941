// The AllocRunner's hook phases and their error policies (reference §3.1). Every call
// goes through common::CallCatching, which turns an exception into an error, so a
// throwing hook never leaves a phase half-run.
#include "client/allocrunner/alloc_runner.h"
#include "common/call_catching.h"
#include "common/logging.h"

namespace drover::allocrunner {

namespace {

// The phases that cannot fail, as ones returning a status (for CallCatching). Plain
// functions, not coroutine lambdas: a lambda's captures die with the lambda object.
asio::awaitable<absl::Status> PreKillOf(AllocHook& h) {
  co_await h.PreKill();
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> ShutdownOf(AllocHook& h) {
  co_await h.Shutdown();
  co_return absl::OkStatus();
}

}  // namespace

asio::awaitable<std::optional<std::string>> AllocRunner::RunPrerunHooks() {
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto call = [h] { return h->Prerun(); };
    absl::Status s = co_await common::CallCatching(std::move(call));
    if (!s.ok()) {
      co_return "pre-run hook \"" + std::string(hook->Name()) +
          "\" failed: " + std::string(s.message());
    }
  }
  co_return std::nullopt;
}

template <typename Call>
asio::awaitable<void> AllocRunner::RunAllHooks(const char* phase, Call call) {
  // Every hook runs whatever the others did; failures are logged.
  for (auto& hook : hooks_) {
    AllocHook* h = hook.get();
    auto bound = [h, &call] { return call(*h); };
    if (absl::Status s = co_await common::CallCatching(std::move(bound)); !s.ok()) {
      DROVER_LOG_WARN("alloc {}: {} hook {} failed: {}", id_, phase, hook->Name(), s.ToString());
    }
  }
}

// The lambdas are named before co_await: GCC 12 destroys lambda temporaries inside a
// co_await expression twice (for `update`, a double release of the alloc).
asio::awaitable<void> AllocRunner::RunUpdateHooks(std::shared_ptr<const model::Allocation> alloc) {
  auto call = [alloc](AllocHook& h) { return h.Update(alloc); };
  co_await RunAllHooks("update", std::move(call));
}

asio::awaitable<void> AllocRunner::RunPostrunHooks() {
  auto call = [](AllocHook& h) { return h.Postrun(); };
  co_await RunAllHooks("post-run", std::move(call));
}

asio::awaitable<void> AllocRunner::RunDestroyHooks() {
  auto call = [](AllocHook& h) { return h.Destroy(); };
  co_await RunAllHooks("destroy", std::move(call));
}

asio::awaitable<void> AllocRunner::RunPreKillHooks() {
  auto call = [](AllocHook& h) { return PreKillOf(h); };
  co_await RunAllHooks("pre-kill", std::move(call));
}

asio::awaitable<void> AllocRunner::RunShutdownHooks() {
  auto call = [](AllocHook& h) { return ShutdownOf(h); };
  co_await RunAllHooks("shutdown", std::move(call));
}

}  // namespace drover::allocrunner
