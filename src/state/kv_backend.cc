#include "state/kv_backend.h"

#include <map>
#include <mutex>

namespace drover::state {

namespace {

bool HasPrefix(std::string_view key, std::string_view prefix) {
  return key.substr(0, prefix.size()) == prefix;
}

KvPairs ScanMap(const std::map<std::string, std::string, std::less<>>& m, std::string_view prefix) {
  KvPairs out;
  for (auto it = m.lower_bound(prefix); it != m.end() && HasPrefix(it->first, prefix); ++it)
    out.emplace_back(it->first, it->second);
  return out;
}

class MemoryBackend final : public KvBackend {
 public:
  std::string Name() const override { return "memory"; }
  absl::Status Commit(const std::vector<KvOp>& ops) override {
    std::lock_guard lock(mu_);
    for (const KvOp& op : ops) {
      switch (op.kind) {
        case KvOp::Kind::kPut:
          data_[op.key] = op.value;
          break;
        case KvOp::Kind::kDelete:
          data_.erase(op.key);
          break;
        case KvOp::Kind::kDeletePrefix: {
          auto it = data_.lower_bound(op.key);
          while (it != data_.end() && HasPrefix(it->first, op.key))
            it = data_.erase(it);
          break;
        }
      }
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    std::lock_guard lock(mu_);
    auto it = data_.find(key);
    if (it == data_.end())
      return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  absl::StatusOr<KvPairs> Scan(std::string_view prefix) override {
    std::lock_guard lock(mu_);
    return ScanMap(data_, prefix);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> data_;
};

class FailingBackend final : public KvBackend {
 public:
  FailingBackend(absl::Status error, KvPairs preset) : error_(std::move(error)) {
    for (auto& [k, v] : preset)
      data_[k] = v;
  }
  std::string Name() const override { return "failing"; }
  absl::Status Commit(const std::vector<KvOp>&) override { return error_; }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    auto it = data_.find(key);
    if (it == data_.end())
      return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  absl::StatusOr<KvPairs> Scan(std::string_view prefix) override { return ScanMap(data_, prefix); }

 private:
  absl::Status error_;
  std::map<std::string, std::string, std::less<>> data_;  // read-only after construction
};

}  // namespace

std::unique_ptr<KvBackend> NewMemoryBackend() {
  return std::make_unique<MemoryBackend>();
}

std::unique_ptr<KvBackend> NewFailingBackend(absl::Status error, KvPairs preset) {
  return std::make_unique<FailingBackend>(std::move(error), std::move(preset));
}

}  // namespace drover::state
