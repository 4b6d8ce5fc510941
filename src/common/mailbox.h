// Single-slot mailbox holding at most one value: Put() replaces a pending value unless
// `keep_pending(pending, incoming)` says the pending one wins (e.g. a queued alloc with
// a higher AllocModifyIndex beats an older one arriving late). Put() never blocks.
// After Close(), Put() is ignored and Take() returns nullopt once drained.
// Lives on one executor; not thread-safe.
#pragma once

#include <functional>
#include <optional>

#include "common/event.h"

namespace drover::common {

template <typename T>
class Mailbox {
 public:
  using KeepPending = std::function<bool(const T& pending, const T& incoming)>;

  explicit Mailbox(asio::any_io_executor ex, KeepPending keep_pending = nullptr)
      : notifier_(ex), keep_pending_(std::move(keep_pending)) {}

  // Returns false when the value was dropped (closed, or the pending value won).
  bool Put(T value) {
    if (closed_) {
      return false;
    }
    if (slot_ && keep_pending_ && keep_pending_(*slot_, value)) {
      return false;
    }
    slot_ = std::move(value);
    notifier_.Notify();
    return true;
  }

  asio::awaitable<std::optional<T>> Take() {
    while (!slot_ && !closed_) {
      co_await notifier_.Wait();
    }
    std::optional<T> out = std::move(slot_);
    slot_.reset();
    co_return out;
  }

  void Close() {
    closed_ = true;
    notifier_.Notify();
  }
  bool closed() const { return closed_; }
  const std::optional<T>& pending() const { return slot_; }

 private:
  std::optional<T> slot_;
  bool closed_ = false;
  Notifier notifier_;
  KeepPending keep_pending_;
};

}  // namespace drover::common
