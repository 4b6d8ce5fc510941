#include "common/cancellation.h"

namespace drover::common {

CancellationScope::CancellationScope(asio::any_io_executor executor)
    : event_(executor), executor_(std::move(executor)) {}

std::shared_ptr<CancellationScope> CancellationScope::Create(asio::any_io_executor executor) {
  return std::make_shared<CancellationScope>(std::move(executor));
}

std::shared_ptr<CancellationScope> CancellationScope::Child() {
  auto child = Create(executor_);
  Adopt(child);
  return child;
}

void CancellationScope::Adopt(const std::shared_ptr<CancellationScope>& scope) {
  if (cancelled()) {
    scope->Cancel();
  } else {
    std::erase_if(children_, [](const auto& w) { return w.expired(); });
    children_.push_back(scope);
  }
}

void CancellationScope::Cancel() {
  if (cancelled()) {
    return;
  }
  event_.Set();
  auto children = std::move(children_);
  for (auto& weak : children) {
    if (auto child = weak.lock()) {
      child->Cancel();
    }
  }
}

}  // namespace drover::common
