// The JSON of etcd's v3 gateway, to and from client.h's types: keys and values in
// base64, 64-bit numbers as strings, and fields left out when they hold their default
// (proto3's JSON mapping). Decoders refuse what does not have the expected shape with
// InvalidArgument; they never throw.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "etcd/client.h"

namespace drover::etcd::wire {

std::string EncodeRange(const RangeRequest& r);
std::string EncodePut(const std::string& key, const std::string& value, int64_t lease);
std::string EncodeDelete(const std::string& key, const std::string& range_end);
std::string EncodeTxn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                      const std::vector<Op>& failure);
std::string EncodeCompaction(int64_t revision);  // physical: done before it answers
std::string EncodeLeaseGrant(int64_t ttl_seconds);
std::string EncodeLeaseId(int64_t id);
std::string EncodeWatchCreate(const std::string& key, const std::string& range_end,
                              int64_t start_revision);

absl::StatusOr<RangeResponse> DecodeRange(std::string_view body);
absl::StatusOr<int64_t> DecodeRevision(std::string_view body);  // header.revision
absl::StatusOr<int64_t> DecodeDeleted(std::string_view body);
absl::StatusOr<TxnResponse> DecodeTxn(std::string_view body);
absl::StatusOr<Lease> DecodeLeaseGrant(std::string_view body);
// A keepalive answer ({"result": {"TTL"}}); NotFound when the lease is gone (TTL <= 0).
absl::StatusOr<int64_t> DecodeKeepAlive(std::string_view body);

// One message of a watch stream ({"result": {...}} or {"error": {...}}). `created` is
// set for the acknowledgement of the watch (no events). OutOfRange (naming the compact
// revision) for a watch whose start was compacted, Cancelled for another cancellation.
struct WatchMessage {
  bool created = false;
  WatchResponse response;
};
absl::StatusOr<WatchMessage> DecodeWatchMessage(std::string_view text);

// An error answer of the gateway ({"error", "code", "message"}) as a Status with its
// gRPC code; Unknown with the text when the body is not one.
absl::Status DecodeError(int http_status, std::string_view body);

}  // namespace drover::etcd::wire
