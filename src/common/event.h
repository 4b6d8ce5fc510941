// One-shot event, the counterpart of a closed Go channel: once Set(), every current
// and future Wait() completes at once. Lives on one executor (the control loop); not
// thread-safe.
#pragma once

#include "common/asio.h"

namespace drover::common {

class Event {
 public:
  explicit Event(asio::any_io_executor executor);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void Set();
  bool IsSet() const { return set_; }
  // Completes once the event is set. Cancellable (throws operation_aborted when the
  // awaiting coroutine is cancelled, e.g. as the losing side of `||`).
  asio::awaitable<void> Wait();

 private:
  bool set_ = false;
  asio::steady_timer timer_;
};

// Coalescing notification, the counterpart of a Go channel of capacity 1 used only to
// say "something changed": Notify() never blocks; notifications made while nobody is
// waiting collapse into one; Wait() consumes it. Intended for one consumer.
class Notifier {
 public:
  explicit Notifier(asio::any_io_executor executor);
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  void Notify();
  bool pending() const { return pending_; }
  asio::awaitable<void> Wait();

 private:
  bool pending_ = false;
  asio::steady_timer timer_;
};

}  // namespace drover::common
