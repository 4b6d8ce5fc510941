#include "common/event.h"

#include <utility>

namespace drover::common {

namespace internal {

namespace {

// One suspended Wait(): owns its completion handler (and so the waiting coroutine)
// until it is completed, and keeps the handler's executor busy meanwhile, as a pending
// timer wait does (io_context::run does not return while a coroutine waits here).
template <typename Handler>
class Waiter final : public WaitList::Node {
 public:
  Waiter(WaitList* list, Handler handler)
      : list_(list),
        handler_(std::move(handler)),
        work_(asio::prefer(asio::get_associated_executor(handler_),
                           asio::execution::outstanding_work.tracked)) {}

  // Registers for cancellation of the awaiting coroutine, if it can be cancelled.
  void WatchCancellation() {
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.template emplace<OnCancel>(this);
  }

  void Complete(bool aborted) override {
    // Cleared here, also when called from OnCancel: clear() destroys the OnCancel
    // object, which touches nothing after this call.
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.clear();
    auto executor = std::move(work_);
    Handler handler = std::move(handler_);
    delete this;
    const boost::system::error_code ec =
        aborted ? asio::error::operation_aborted : boost::system::error_code();
    asio::post(executor, [handler = std::move(handler), ec]() mutable { std::move(handler)(ec); });
  }

 private:
  struct OnCancel {
    Waiter* waiter;
    void operator()(asio::cancellation_type type) {
      if (type == asio::cancellation_type::none)
        return;
      Waiter* w = waiter;  // `this` is destroyed by Complete
      w->list_->Unlink(w);
      w->Complete(/*aborted=*/true);
    }
  };

  WaitList* list_;
  Handler handler_;
  asio::any_io_executor work_;
};

}  // namespace

WaitList::~WaitList() {
  while (head_ != nullptr) {
    Node* n = head_;
    Unlink(n);
    n->Complete(/*aborted=*/true);
  }
}

void WaitList::Link(Node* n) {
  n->prev = tail_;
  n->next = nullptr;
  if (tail_ != nullptr)
    tail_->next = n;
  else
    head_ = n;
  tail_ = n;
}

void WaitList::Unlink(Node* n) {
  if (n->prev != nullptr)
    n->prev->next = n->next;
  else
    head_ = n->next;
  if (n->next != nullptr)
    n->next->prev = n->prev;
  else
    tail_ = n->prev;
  n->prev = n->next = nullptr;
}

void WaitList::WakeAll() {
  // Detached first: a waiter resumed later may wait again, on a fresh list.
  Node* n = std::exchange(head_, nullptr);
  tail_ = nullptr;
  while (n != nullptr) {
    Node* next = n->next;
    n->prev = n->next = nullptr;
    n->Complete(/*aborted=*/false);
    n = next;
  }
}

asio::awaitable<void> WaitList::Wait() {
  auto initiate = [this](auto handler) {
    using H = decltype(handler);
    auto* w = new Waiter<H>(this, std::move(handler));
    Link(w);
    w->WatchCancellation();
  };
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(boost::system::error_code)>(
      std::move(initiate), asio::use_awaitable);
}

}  // namespace internal

Event::Event(asio::any_io_executor /*executor*/) {}

void Event::Set() {
  if (!set_) {
    set_ = true;
    waiters_.WakeAll();
  }
}

asio::awaitable<void> Event::Wait() {
  if (!set_)
    co_await waiters_.Wait();
}

Notifier::Notifier(asio::any_io_executor /*executor*/) {}

void Notifier::Notify() {
  pending_ = true;
  waiters_.WakeAll();
}

asio::awaitable<void> Notifier::Wait() {
  while (!pending_) {
    co_await waiters_.Wait();
  }
  pending_ = false;
}

}  // namespace drover::common
