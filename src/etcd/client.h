// A client of etcd's v3 API through its JSON gateway (/v3/kv/*, /v3/lease/*, /v3/watch)
// over plain HTTP/1.1 (rpc/http_call.h), so no code generation is needed. Keys and
// values are bytes; the gateway's base64 and its int64-as-string encoding stay in here.
//
// Coroutines on the caller's control loop. Every call goes to the endpoint that
// answered last. Reads, watches, keepalives and revocations fail over to the others
// when one cannot be reached or cannot serve; writes (put, delete, transactions, lease
// grants) are not sent twice: they fail with Unavailable, and the next call starts with
// the next endpoint. What etcd sends
// back is bounded (ClientOptions::limits); its errors keep their gRPC code, which
// absl::StatusCode shares (a compacted revision is OutOfRange, a failed lease NotFound).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/clock.h"
#include "rpc/http_call.h"

namespace drover::etcd {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

struct RangeRequest {
  std::string key;
  std::string range_end;  // empty: `key` alone; PrefixEnd(key): every key with the prefix
  int64_t revision = 0;   // 0: the latest
  int64_t limit = 0;      // 0: no limit
  bool count_only = false;
};

struct RangeResponse {
  int64_t revision = 0;  // the store's revision when it was read
  std::vector<KeyValue> kvs;
  bool more = false;  // `limit` cut the answer short
  int64_t count = 0;  // keys in the range
};

// A condition of a transaction on one key.
struct Compare {
  enum class Target { kVersion, kCreateRevision, kModRevision, kValue, kLease };
  enum class Result { kEqual, kGreater, kLess, kNotEqual };
  std::string key;
  Target target = Target::kModRevision;
  Result result = Result::kEqual;
  int64_t number = 0;  // for every target but kValue (0 for a key that does not exist)
  std::string value;   // for kValue
};

// One operation of a transaction.
struct Op {
  enum class Kind { kPut, kDelete, kRange };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;      // kPut
  std::string range_end;  // kDelete, kRange
  int64_t lease = 0;      // kPut

  static Op Put(std::string key, std::string value, int64_t lease = 0);
  static Op Delete(std::string key, std::string range_end = "");
  static Op Get(std::string key, std::string range_end = "");
};

struct TxnResponse {
  bool succeeded = false;  // whether every Compare held (the success ops ran)
  int64_t revision = 0;
  std::vector<RangeResponse> ranges;  // one per kRange op that ran, in order
};

struct Lease {
  int64_t id = 0;
  int64_t ttl_seconds = 0;
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // for kDelete: the key and the revision that deleted it
};

struct WatchResponse {
  int64_t revision = 0;  // the store's revision (a progress notification has no events)
  std::vector<WatchEvent> events;
};

struct ClientOptions {
  common::Duration call_timeout = std::chrono::seconds(5);
  rpc::HttpCallLimits limits;
};

// The smallest key greater than every key that starts with `prefix` (etcd's range_end
// for a prefix); "\0" (every key) for an empty prefix.
std::string PrefixEnd(std::string_view prefix);

class Watch;

class Client {
 public:
  // `endpoints`: "host:port" or "http://host:port". REQUIRES: not empty.
  explicit Client(std::vector<std::string> endpoints, ClientOptions options = {});

  asio::awaitable<absl::StatusOr<RangeResponse>> Range(RangeRequest request);
  // The revision of the write.
  asio::awaitable<absl::StatusOr<int64_t>> Put(std::string key, std::string value,
                                               int64_t lease = 0);
  // How many keys were deleted.
  asio::awaitable<absl::StatusOr<int64_t>> Delete(std::string key, std::string range_end = "");
  // Runs `success` if every comparison holds, else `failure`, as one atomic write.
  asio::awaitable<absl::StatusOr<TxnResponse>> Txn(std::vector<Compare> compare,
                                                   std::vector<Op> success,
                                                   std::vector<Op> failure = {});

  // Drops the history before `revision`: a read or watch from earlier is OutOfRange.
  asio::awaitable<absl::Status> Compact(int64_t revision);

  asio::awaitable<absl::StatusOr<Lease>> GrantLease(int64_t ttl_seconds);
  // Refreshes the lease; its TTL again. NotFound once it has expired.
  asio::awaitable<absl::StatusOr<int64_t>> KeepAlive(int64_t lease_id);
  asio::awaitable<absl::Status> RevokeLease(int64_t lease_id);

  // Events on [key, range_end) from `start_revision` on (0: from now), in revision
  // order. OutOfRange, from here or the first Next, when that revision was compacted:
  // read again, then watch from the read's revision + 1. `idle_timeout` bounds each wait for the
  // next message; etcd sends a progress notification at least every 10 minutes.
  asio::awaitable<absl::StatusOr<std::unique_ptr<Watch>>> WatchRange(
      std::string key, std::string range_end, int64_t start_revision,
      common::Duration idle_timeout = std::chrono::minutes(15));

  const std::string& current_endpoint() const { return endpoints_[current_]; }

 private:
  // Whether a call that failed on one endpoint is sent to the next: reads and
  // idempotent writes are; writes that may have been applied are not.
  enum class Retry { kYes, kNo };
  // POSTs `body` to `path` (a /v3 path: a literal, so the view outlives the call) and
  // returns the answer's JSON text.
  asio::awaitable<absl::StatusOr<std::string>> Call(std::string_view path, std::string body,
                                                    Retry retry = Retry::kYes);

  std::vector<std::string> endpoints_;
  size_t current_ = 0;
  ClientOptions options_;
};

// One watch: its messages as they come. Destroying it closes the stream.
class Watch {
 public:
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // The next message (events, or a progress notification). OutOfRange with the
  // compacted revision when the start was compacted; Unavailable when the stream broke
  // (watch again from the last revision seen + 1); Cancelled when etcd cancelled it.
  asio::awaitable<absl::StatusOr<WatchResponse>> Next();
  // etcd's revision when it created the watch.
  int64_t created_at() const { return created_at_; }

 private:
  friend class Client;
  Watch(std::unique_ptr<rpc::HttpStream> stream, size_t max_message_bytes);

  std::unique_ptr<rpc::HttpStream> stream_;
  // The next whole message of the stream; `created` for the watch's acknowledgement.
  struct Message {
    bool created = false;
    WatchResponse response;
  };
  asio::awaitable<absl::StatusOr<Message>> NextMessage();

  std::string buffer_;  // what came after the last whole message
  size_t max_message_bytes_;
  int64_t created_at_ = 0;
  std::optional<WatchResponse> pending_;  // events that came with the first message
};

}  // namespace drover::etcd
