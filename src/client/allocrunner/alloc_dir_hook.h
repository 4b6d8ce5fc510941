// alloc_dir: builds the allocation's directory before its tasks run and removes it when
// the allocation is destroyed (reference §3.2 #2).
#pragma once

#include "client/allocdir/alloc_dir.h"
#include "client/allocrunner/alloc_hook.h"

namespace drover::allocrunner {

class AllocDirHook : public AllocHook {
 public:
  AllocDirHook(asio::thread_pool& pool, allocdir::AllocDir& dir) : pool_(pool), dir_(dir) {}
  std::string_view Name() const override { return "alloc_dir"; }
  asio::awaitable<absl::Status> Prerun() override;
  asio::awaitable<absl::Status> Destroy() override;

 private:
  asio::thread_pool& pool_;
  allocdir::AllocDir& dir_;
};

}  // namespace drover::allocrunner
