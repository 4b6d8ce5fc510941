// A local copy of every key under a prefix in etcd, kept current by a watch: what a
// server reads and blocks on without asking etcd (the HA issue's in-memory view).
//
// Run loads the prefix at one revision, then applies the watch's events in revision
// order. When the watch breaks it watches again from the next revision; when that
// revision was compacted meanwhile it loads the prefix again, at a revision no older
// than the one it holds, and reports the difference as changes. The copy never goes
// back: revision() only grows, and an etcd that answers with an older revision (restored
// from a backup, another cluster) stops Run with an error rather than be served. While
// etcd does not answer, the copy stays as it was (stale reads) and Run retries with
// backoff (100 ms doubling to 5 s).
//
// On the caller's control loop; listeners run there, before revision() moves.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "common/asio.h"
#include "common/clock.h"
#include "etcd/client.h"

namespace drover::etcd {

class Mirror {
 public:
  struct Change {
    std::string key;
    std::optional<std::string> value;  // nullopt: deleted
  };
  // The changes that take the copy to `revision`, in order.
  using Listener = std::function<void(const std::vector<Change>& changes, int64_t revision)>;

  // `client` and `clock` must outlive the mirror.
  Mirror(asio::any_io_executor executor, Client& client, common::Clock& clock, std::string prefix);

  void OnChange(Listener listener) { listeners_.push_back(std::move(listener)); }

  // Follows the prefix until the caller cancels it (e.g. `Run() || stop->Wait()`), or
  // etcd goes back in time (FailedPrecondition). May be run again after it returns: it
  // goes on from revision().
  asio::awaitable<absl::Status> Run();

  // Whether the copy was loaded at least once.
  bool ready() const { return revision_ > 0; }
  int64_t revision() const { return revision_; }
  const std::map<std::string, std::string>& data() const { return data_; }
  // How many times the prefix was loaded again after a compaction.
  int reloads() const { return reloads_; }

  // Completes once revision() >= `revision`, or after `max_wait`; whether it got there.
  asio::awaitable<bool> WaitFor(int64_t revision, common::Duration max_wait);

 private:
  // Loads the whole prefix; reports what differs from the copy.
  asio::awaitable<absl::Status> Load();
  // Watches from revision() + 1 until the watch breaks.
  asio::awaitable<absl::Status> Follow();
  void Publish(std::vector<Change> changes, int64_t revision);

  Client& client_;
  common::Clock& clock_;
  std::string prefix_;
  std::map<std::string, std::string> data_;
  int64_t revision_ = 0;
  int reloads_ = 0;
  std::vector<Listener> listeners_;
  // Never expires; cancelled to wake every WaitFor when the revision moves.
  asio::steady_timer advanced_;
};

}  // namespace drover::etcd
