// Cancellation scopes: the C++ counterpart of the Go contexts in Nomad's runners (kill,
// shutdown, shutdown-delay). A scope is cancelled explicitly or when its parent is;
// code observes it with cancelled() or by racing `Wait()` against other work:
//
//   co_await (driver.Wait(id) || kill_scope->Wait());
//
// Scopes live on the control loop; not thread-safe. Create a scope only where
// something observes it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/event.h"

namespace drover::common {

class CancellationScope : public std::enable_shared_from_this<CancellationScope> {
 public:
  static std::shared_ptr<CancellationScope> Create(asio::any_io_executor executor);
  // A child is cancelled when this scope is; cancelling the child leaves this one alone.
  std::shared_ptr<CancellationScope> Child();
  // Makes `scope` a child of this one as well: it is cancelled when either parent is
  // (at once if this one already is). One Wait() on it then replaces racing both
  // parents with `||`, which costs a parallel group and two spawned coroutines for as
  // long as the wait lasts.
  void Adopt(const std::shared_ptr<CancellationScope>& scope);

  void Cancel();
  bool cancelled() const { return event_.IsSet(); }
  asio::awaitable<void> Wait() { return event_.Wait(); }

  explicit CancellationScope(asio::any_io_executor executor);

 private:
  Event event_;
  std::vector<std::weak_ptr<CancellationScope>> children_;
  asio::any_io_executor executor_;
};

using CancellationScopePtr = std::shared_ptr<CancellationScope>;

}  // namespace drover::common
