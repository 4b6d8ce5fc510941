#include "etcd/state_backend.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/logging.h"

namespace drover::etcd {
namespace {

// Runs `work` to completion on a private io_context on this thread.
template <typename T>
T RunHere(std::function<asio::awaitable<T>()> work) {
  asio::io_context io;
  std::optional<T> out;
  asio::co_spawn(io, work(), [&out](std::exception_ptr e, T value) {
    if (e)
      std::rethrow_exception(e);
    out = std::move(value);
  });
  io.run();
  return std::move(*out);
}

}  // namespace

std::string StatePrefix(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty() && out.back() == '/')
    out.pop_back();
  return out + "/state/";
}

StateBackend::StateBackend(StateBackendOptions options)
    : options_(std::move(options)), state_prefix_(StatePrefix(options_.prefix)) {}

std::vector<std::vector<state::KvOp>> StateBackend::Segments(const std::vector<state::KvOp>& ops) {
  // etcd refuses a transaction that names a key twice, or puts a key inside a range it
  // deletes. Within a segment the last write of a key wins (the ones before it would
  // never be seen), and a deleted prefix drops the writes under it; a write under a
  // prefix the segment deletes starts the next segment.
  struct Segment {
    std::vector<std::string> ranges;
    std::map<std::string, const state::KvOp*> keyed;
  };
  std::vector<Segment> segments(1);
  const auto covered = [](const Segment& seg, const std::string& key) {
    return std::any_of(seg.ranges.begin(), seg.ranges.end(),
                       [&](const std::string& p) { return key.compare(0, p.size(), p) == 0; });
  };
  for (const state::KvOp& op : ops) {
    if (op.kind == state::KvOp::Kind::kDeletePrefix) {
      Segment& seg = segments.back();
      auto it = seg.keyed.lower_bound(op.key);
      while (it != seg.keyed.end() && it->first.compare(0, op.key.size(), op.key) == 0)
        it = seg.keyed.erase(it);
      seg.ranges.push_back(op.key);
      continue;
    }
    if (covered(segments.back(), op.key))
      segments.emplace_back();
    segments.back().keyed[op.key] = &op;
  }
  std::vector<std::vector<state::KvOp>> out;
  for (const Segment& seg : segments) {
    std::vector<state::KvOp> flat;
    for (const std::string& p : seg.ranges)
      flat.push_back(state::KvOp{.kind = state::KvOp::Kind::kDeletePrefix, .key = p});
    for (const auto& [key, op] : seg.keyed)
      flat.push_back(*op);
    if (!flat.empty())
      out.push_back(std::move(flat));
  }
  return out;
}

absl::Status StateBackend::Commit(const std::vector<state::KvOp>& all) {
  ClientOptions copts;
  copts.call_timeout = options_.call_timeout;
  Client client(options_.endpoints, copts);
  for (const std::vector<state::KvOp>& ops : Segments(all)) {
    size_t begin = 0;
    while (begin < ops.size()) {
      size_t end = begin;
      size_t bytes = 0;
      while (end < ops.size() && end - begin < options_.max_ops) {
        const size_t size = ops[end].key.size() + ops[end].value.size();
        if (end > begin && bytes + size > options_.max_bytes)
          break;
        bytes += size;
        ++end;
      }
      if (absl::Status s = CommitChunk(client, ops, begin, end); !s.ok())
        return s;
      begin = end;
    }
  }
  return absl::OkStatus();
}

absl::Status StateBackend::CommitChunk(Client& client, const std::vector<state::KvOp>& ops,
                                       size_t begin, size_t end) {
  std::vector<Op> success;
  success.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const state::KvOp& op = ops[i];
    std::string key = state_prefix_ + op.key;
    switch (op.kind) {
      case state::KvOp::Kind::kPut:
        success.push_back(Op::Put(std::move(key), op.value));
        break;
      case state::KvOp::Kind::kDelete:
        success.push_back(Op::Delete(std::move(key)));
        break;
      case state::KvOp::Kind::kDeletePrefix: {
        std::string end_key = PrefixEnd(key);
        success.push_back(Op::Delete(std::move(key), std::move(end_key)));
        break;
      }
    }
  }
  std::vector<Compare> fence = {Fence(options_.leader_key, options_.term)};
  std::function<asio::awaitable<absl::StatusOr<TxnResponse>>()> work =
      [&client, &fence, &success]() { return client.Txn(fence, success); };
  absl::StatusOr<TxnResponse> txn = RunHere(std::move(work));
  ++transactions_;
  if (!txn.ok() && options_.on_failure)
    options_.on_failure();
  if (!txn.ok())
    return absl::Status(txn.status().code(),
                        "etcd transaction failed: " + std::string(txn.status().message()));
  if (!txn->succeeded) {
    if (options_.on_failure)
      options_.on_failure();
    return absl::FailedPreconditionError(
        "etcd refused the write: this server is no longer the leader (its term, leader key "
        "revision " +
        std::to_string(options_.term.revision) + ", has ended)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> StateBackend::Get(std::string_view key) {
  ClientOptions copts;
  copts.call_timeout = options_.call_timeout;
  Client client(options_.endpoints, copts);
  RangeRequest req{.key = state_prefix_ + std::string(key)};
  std::function<asio::awaitable<absl::StatusOr<RangeResponse>>()> work = [&client, &req]() {
    return client.Range(req);
  };
  absl::StatusOr<RangeResponse> resp = RunHere(std::move(work));
  if (!resp.ok())
    return resp.status();
  if (resp->kvs.empty())
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(resp->kvs[0].value));
}

absl::StatusOr<state::KvPairs> StateBackend::Scan(std::string_view prefix) {
  ClientOptions copts;
  copts.call_timeout = options_.call_timeout;
  Client client(options_.endpoints, copts);
  std::string key = state_prefix_ + std::string(prefix);
  RangeRequest req{.key = key, .range_end = PrefixEnd(key)};
  std::function<asio::awaitable<absl::StatusOr<RangeResponse>>()> work = [&client, &req]() {
    return client.Range(req);
  };
  absl::StatusOr<RangeResponse> resp = RunHere(std::move(work));
  if (!resp.ok())
    return resp.status();
  state::KvPairs out;
  out.reserve(resp->kvs.size());
  for (KeyValue& kv : resp->kvs)
    out.emplace_back(kv.key.substr(state_prefix_.size()), std::move(kv.value));
  return out;
}

}  // namespace drover::etcd
