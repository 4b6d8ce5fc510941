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
    : options_(std::move(options)),
      state_prefix_(StatePrefix(options_.prefix)),
      client_(options_.endpoints, ClientOptions{.call_timeout = options_.call_timeout}) {}

std::vector<std::vector<state::KvOp>> StateBackend::Chunks(const std::vector<state::KvOp>& ops,
                                                           size_t max_ops, size_t max_bytes) {
  // Each chunk is one transaction, so its effect is its operations applied in order:
  // within it the last write of a key replaces an earlier one in place (etcd refuses a
  // key named twice) and a deleted prefix drops the writes under it. A chunk ends where
  // it is full, or where a write falls under a prefix it deletes. Chunks follow the
  // operations' order, so what committed chunks leave is a prefix of the writes.
  struct Chunk {
    std::vector<state::KvOp> ops;
    std::map<std::string, size_t> at;  // key -> index in ops
    std::vector<std::string> ranges;
    size_t bytes = 0;
  };
  std::vector<Chunk> chunks(1);
  const auto covered = [](const Chunk& c, const std::string& key) {
    return std::any_of(c.ranges.begin(), c.ranges.end(),
                       [&](const std::string& p) { return key.compare(0, p.size(), p) == 0; });
  };
  for (const state::KvOp& op : ops) {
    const size_t size = op.key.size() + op.value.size();
    Chunk* c = &chunks.back();
    const bool fits = c->ops.empty() || (c->ops.size() < max_ops && c->bytes + size <= max_bytes);
    if (!fits || (op.kind != state::KvOp::Kind::kDeletePrefix && covered(*c, op.key))) {
      chunks.emplace_back();
      c = &chunks.back();
    }
    c->bytes += size;
    if (op.kind == state::KvOp::Kind::kDeletePrefix) {
      // The writes it deletes go (their slots are kept, emptied, to keep indexes valid).
      for (auto it = c->at.lower_bound(op.key);
           it != c->at.end() && it->first.compare(0, op.key.size(), op.key) == 0;) {
        c->ops[it->second].key.clear();
        it = c->at.erase(it);
      }
      c->ranges.push_back(op.key);
      c->ops.push_back(op);
      continue;
    }
    if (auto it = c->at.find(op.key); it != c->at.end()) {
      c->ops[it->second] = op;
      continue;
    }
    c->at[op.key] = c->ops.size();
    c->ops.push_back(op);
  }
  std::vector<std::vector<state::KvOp>> out;
  for (Chunk& c : chunks) {
    std::vector<state::KvOp> kept;
    for (state::KvOp& op : c.ops) {
      if (!op.key.empty())
        kept.push_back(std::move(op));
    }
    if (!kept.empty())
      out.push_back(std::move(kept));
  }
  return out;
}

absl::Status StateBackend::Commit(const std::vector<state::KvOp>& all) {
  // After a failure nothing more is sent: a later commit would leave a gap in what
  // etcd holds rather than a prefix of the leader's writes (which then steps down).
  if (!failure_.ok())
    return failure_;
  for (const std::vector<state::KvOp>& ops : Chunks(all, options_.max_ops, options_.max_bytes)) {
    if (absl::Status s = CommitChunk(client_, ops, 0, ops.size()); !s.ok()) {
      failure_ = absl::Status(
          s.code(), std::string(s.message()) + " (this term writes nothing more to etcd)");
      return s;
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
