#include "common/event.h"

#include <utility>

#include <boost/intrusive/list.hpp>

namespace drover::common {

namespace internal {

namespace {

// A waiter is also on its execution context's list of pending waits, so that a context
// shut down (destroyed) while coroutines still wait destroys them, resuming nothing, as
// it destroys pending timer waits. Otherwise a coroutine that owns, through its frame,
// the event it waits on would never be freed.
class PendingWait : public WaitList::Node {
 public:
  // Unlinks and destroys the waiter and its handler (the waiting coroutine with it).
  virtual void Abandon() = 0;
  boost::intrusive::list_member_hook<> context_hook;
};

class WaitService final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit WaitService(asio::execution_context& context)
      : asio::execution_context::service(context) {}

  void Add(PendingWait* w) { waits_.push_back(*w); }
  void Remove(PendingWait* w) { waits_.erase(waits_.iterator_to(*w)); }
  bool shut_down() const { return shut_down_; }

 private:
  void shutdown() override {
    shut_down_ = true;
    // Destroying a coroutine may abandon or complete others: take the front each time.
    while (!waits_.empty())
      waits_.front().Abandon();
  }

  bool shut_down_ = false;
  boost::intrusive::list<
      PendingWait,
      boost::intrusive::member_hook<PendingWait, boost::intrusive::list_member_hook<>,
                                    &PendingWait::context_hook>,
      boost::intrusive::constant_time_size<false>>
      waits_;
};

asio::execution_context::id WaitService::id;

// One suspended Wait(): owns its completion handler (and so the waiting coroutine)
// until it is completed, and keeps the handler's executor busy meanwhile, as a pending
// timer wait does (io_context::run does not return while a coroutine waits here).
template <typename Handler>
class Waiter final : public PendingWait {
 public:
  Waiter(WaitList* list, Handler handler)
      : list_(list),
        handler_(std::move(handler)),
        work_(asio::prefer(asio::get_associated_executor(handler_),
                           asio::execution::outstanding_work.tracked)),
        service_(&asio::use_service<WaitService>(asio::query(work_, asio::execution::context))) {
    service_->Add(this);
  }

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
    service_->Remove(this);
    if (service_->shut_down()) {
      delete this;  // the context is going: nothing can run the handler any more
      return;
    }
    auto executor = std::move(work_);
    Handler handler = std::move(handler_);
    delete this;
    const boost::system::error_code ec =
        aborted ? asio::error::operation_aborted : boost::system::error_code();
    asio::post(executor, [handler = std::move(handler), ec]() mutable { std::move(handler)(ec); });
  }

  void Abandon() override {
    list_->Unlink(this);
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.clear();
    service_->Remove(this);
    delete this;
  }

 private:
  struct OnCancel {
    explicit OnCancel(Waiter* w) : waiter(w) {}  // (clang 14: no aggregate emplace)
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
  WaitService* service_;
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
