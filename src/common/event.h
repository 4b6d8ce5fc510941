// One-shot Event and coalescing Notifier: the control loop's wake-ups. Both live on one
// executor (the control loop) and are not thread-safe.
//
// They keep their waiters in an intrusive list rather than in an Asio timer: a timer is
// ~120 bytes, and every allocation and task runner holds a dozen of these (its own and
// its cancellation scopes'), so at 1,000 tasks timers were ~2 MiB of the agent.
#pragma once

#include "common/asio.h"

namespace drover::common {

namespace internal {

// Coroutines suspended until woken, in the order they began to wait.
class WaitList {
 public:
  WaitList() = default;
  WaitList(const WaitList&) = delete;
  WaitList& operator=(const WaitList&) = delete;
  // Waiters still suspended resume with operation_aborted, as a destroyed timer's do.
  ~WaitList();

  // Suspends until WakeAll(). Throws operation_aborted when the awaiting coroutine is
  // cancelled (e.g. as the losing side of `||`) or the list is destroyed.
  asio::awaitable<void> Wait();
  // Resumes every current waiter, each through its own executor (never inline).
  void WakeAll();

  // A waiter: its completion handler, type-erased (event.cc).
  struct Node {
    virtual ~Node() = default;
    // Takes the node off its list's hands: resumes the waiter (posted) and deletes it.
    virtual void Complete(bool aborted) = 0;
    Node* prev = nullptr;
    Node* next = nullptr;
  };
  void Link(Node* n);
  void Unlink(Node* n);

 private:
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
};

}  // namespace internal

// One-shot event, the counterpart of a closed Go channel: once Set(), every current
// and future Wait() completes at once.
class Event {
 public:
  // `executor`: the one the event and its waiters live on (waiters resume through
  // their own executor, which is that one).
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
  internal::WaitList waiters_;
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
  internal::WaitList waiters_;
};

}  // namespace drover::common
