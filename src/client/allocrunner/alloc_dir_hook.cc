#include "client/allocrunner/alloc_dir_hook.h"

#include "common/offload.h"

namespace drover::allocrunner {

asio::awaitable<absl::Status> AllocDirHook::Prerun() {
  allocdir::AllocDir* dir = &dir_;
  auto work = [dir] { return dir->Build(); };  // named: see Offload()
  co_return co_await common::Offload(pool_, std::move(work));
}

asio::awaitable<absl::Status> AllocDirHook::Destroy() {
  allocdir::AllocDir* dir = &dir_;
  auto work = [dir] { return dir->Destroy(); };  // named: see Offload()
  co_return co_await common::Offload(pool_, std::move(work));
}

}  // namespace drover::allocrunner
