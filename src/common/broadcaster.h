// Latest-value broadcaster: Send() stores a value and hands it to every listener; a
// listener holds only the newest value it has not consumed (older ones are replaced,
// never queued), so a slow listener can never block the sender. A new listener is
// primed with the last value sent. Close() ends every listener after it drains.
//
// An optional "is newer" predicate lets the broadcaster drop stale values (for allocs:
// a lower AllocModifyIndex than the last sent). Lives on one executor; not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/event.h"

namespace drover::common {

template <typename T>
class Broadcaster {
 public:
  using IsStale = std::function<bool(const T& last, const T& candidate)>;

  class Listener {
   public:
    explicit Listener(asio::any_io_executor ex) : notifier_(ex) {}
    // Next unseen value, or nullopt once the listener or broadcaster is closed and no
    // value is pending.
    asio::awaitable<std::optional<T>> Next() {
      while (!pending_ && !closed_) {
        co_await notifier_.Wait();
      }
      if (pending_) {
        std::optional<T> out = std::move(pending_);
        pending_.reset();
        co_return out;
      }
      co_return std::nullopt;
    }
    void Close() {
      closed_ = true;
      notifier_.Notify();
    }
    bool closed() const { return closed_; }

   private:
    friend class Broadcaster;
    void Offer(const T& v) {
      if (closed_) {
        return;
      }
      pending_ = v;
      notifier_.Notify();
    }
    std::optional<T> pending_;
    bool closed_ = false;
    Notifier notifier_;
  };

  explicit Broadcaster(asio::any_io_executor ex, IsStale is_stale = nullptr)
      : executor_(std::move(ex)), is_stale_(std::move(is_stale)) {}

  // Returns false (and drops the value) if it is stale or the broadcaster is closed.
  bool Send(const T& value) {
    if (closed_ || (last_ && is_stale_ && is_stale_(*last_, value))) {
      return false;
    }
    last_ = value;
    std::erase_if(listeners_, [](const auto& w) { return w.expired(); });
    for (auto& weak : listeners_) {
      if (auto l = weak.lock()) {
        l->Offer(value);
      }
    }
    return true;
  }

  std::shared_ptr<Listener> Listen() {
    auto l = std::make_shared<Listener>(executor_);
    if (last_) {
      l->Offer(*last_);
    }
    if (closed_) {
      l->Close();
    } else {
      listeners_.push_back(l);
    }
    return l;
  }

  void Close() {
    closed_ = true;
    for (auto& weak : listeners_) {
      if (auto l = weak.lock()) {
        l->Close();
      }
    }
    listeners_.clear();
  }

  const std::optional<T>& last() const { return last_; }

 private:
  asio::any_io_executor executor_;
  IsStale is_stale_;
  std::optional<T> last_;
  bool closed_ = false;
  std::vector<std::weak_ptr<Listener>> listeners_;
};

}  // namespace drover::common
