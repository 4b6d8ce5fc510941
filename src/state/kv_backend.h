// The storage engines under the client state DB (DESIGN.md §5): an ordered key-value
// space where Nomad's nested buckets are key prefixes ("allocations/<id>/alloc",
// "allocations/<id>/task-web/local_state"), written in atomic batches.
//
// Commit runs on one thread at a time (the Store's writer); Get and Scan may run on any
// thread, concurrently with a commit, and see a committed state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::state {

struct KvOp {
  enum class Kind { kPut, kDelete, kDeletePrefix };
  Kind kind = Kind::kPut;
  std::string key;  // the prefix for kDeletePrefix
  std::string value;
};

using KvPairs = std::vector<std::pair<std::string, std::string>>;

class KvBackend {
 public:
  virtual ~KvBackend() = default;
  virtual std::string Name() const = 0;
  // Applies `ops` in order as one transaction: all or nothing, durable once OK.
  // Deleting a missing key or prefix is not an error.
  virtual absl::Status Commit(const std::vector<KvOp>& ops) = 0;
  virtual absl::StatusOr<std::optional<std::string>> Get(std::string_view key) = 0;
  // Every key starting with `prefix`, in key order.
  virtual absl::StatusOr<KvPairs> Scan(std::string_view prefix) = 0;
};

// In memory (tests; and what a dev agent without a data dir would use).
std::unique_ptr<KvBackend> NewMemoryBackend();

// Accepts nothing: every commit fails with `error` (fault tests). Reads see `preset`.
std::unique_ptr<KvBackend> NewFailingBackend(absl::Status error, KvPairs preset = {});

}  // namespace drover::state
