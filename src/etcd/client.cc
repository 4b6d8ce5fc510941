#include "etcd/client.h"

#include "etcd/wire.h"

namespace drover::etcd {

namespace {

std::string WithoutScheme(std::string endpoint) {
  constexpr std::string_view kHttp = "http://";
  if (endpoint.starts_with(kHttp))
    endpoint.erase(0, kHttp.size());
  while (!endpoint.empty() && endpoint.back() == '/')
    endpoint.pop_back();
  return endpoint;
}

}  // namespace

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();  // 0xff cannot grow: the range ends after every longer key
  }
  return std::string(1, '\0');
}

Op Op::Put(std::string key, std::string value, int64_t lease) {
  return Op{.kind = Kind::kPut, .key = std::move(key), .value = std::move(value), .lease = lease};
}
Op Op::Delete(std::string key, std::string range_end) {
  return Op{.kind = Kind::kDelete, .key = std::move(key), .range_end = std::move(range_end)};
}
Op Op::Get(std::string key, std::string range_end) {
  return Op{.kind = Kind::kRange, .key = std::move(key), .range_end = std::move(range_end)};
}

Client::Client(std::vector<std::string> endpoints, ClientOptions options) : options_(options) {
  for (std::string& e : endpoints)
    endpoints_.push_back(WithoutScheme(std::move(e)));
}

asio::awaitable<absl::StatusOr<std::string>> Client::Call(std::string_view path, std::string body,
                                                          Retry retry) {
  absl::Status last = absl::UnavailableError("etcd: no endpoint");
  const size_t start = current_;
  for (size_t tried = 0; tried < endpoints_.size(); ++tried) {
    const size_t i = (start + tried) % endpoints_.size();
    rpc::HttpCall call{.method = "POST", .target = std::string(path), .body = body};
    absl::StatusOr<rpc::HttpReply> reply = co_await rpc::SendHttp(
        endpoints_[i], std::move(call), options_.call_timeout, options_.limits);
    absl::Status failed;
    if (!reply.ok()) {
      // The caller cancelled, or an answer too large: final.
      if (!absl::IsUnavailable(reply.status()) && !absl::IsDeadlineExceeded(reply.status()))
        co_return reply.status();
      failed = absl::UnavailableError("etcd at " + endpoints_[i] + ": " +
                                      std::string(reply.status().message()));
    } else if (reply->status != 200) {
      failed = wire::DecodeError(reply->status, reply->body);
      // Only a member that cannot serve now ("leader changed", no leader) is worth
      // passing over; any other refusal is the answer.
      if (!absl::IsUnavailable(failed))
        co_return failed;
    } else {
      current_ = i;
      co_return std::move(reply->body);
    }
    // The next call starts with the next endpoint. A write is not sent again: it may
    // have been applied (a compare-and-swap would then fail on the retry as if it had
    // lost), so its caller decides.
    current_ = (i + 1) % endpoints_.size();
    last = failed;
    if (retry == Retry::kNo)
      break;
  }
  co_return last;
}

asio::awaitable<absl::StatusOr<RangeResponse>> Client::Range(RangeRequest request) {
  auto body = co_await Call("/v3/kv/range", wire::EncodeRange(request));
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeRange(*body);
}

asio::awaitable<absl::StatusOr<int64_t>> Client::Put(std::string key, std::string value,
                                                     int64_t lease) {
  auto body = co_await Call("/v3/kv/put", wire::EncodePut(key, value, lease), Retry::kNo);
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeRevision(*body);
}

asio::awaitable<absl::StatusOr<int64_t>> Client::Delete(std::string key, std::string range_end) {
  auto body = co_await Call("/v3/kv/deleterange", wire::EncodeDelete(key, range_end), Retry::kNo);
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeDeleted(*body);
}

asio::awaitable<absl::StatusOr<TxnResponse>> Client::Txn(std::vector<Compare> compare,
                                                         std::vector<Op> success,
                                                         std::vector<Op> failure) {
  auto body = co_await Call("/v3/kv/txn", wire::EncodeTxn(compare, success, failure), Retry::kNo);
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeTxn(*body);
}

asio::awaitable<absl::Status> Client::Compact(int64_t revision) {
  auto body = co_await Call("/v3/kv/compaction", wire::EncodeCompaction(revision));
  co_return body.status();
}

asio::awaitable<absl::StatusOr<Lease>> Client::GrantLease(int64_t ttl_seconds) {
  auto body = co_await Call("/v3/lease/grant", wire::EncodeLeaseGrant(ttl_seconds), Retry::kNo);
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeLeaseGrant(*body);
}

asio::awaitable<absl::StatusOr<int64_t>> Client::KeepAlive(int64_t lease_id) {
  auto body = co_await Call("/v3/lease/keepalive", wire::EncodeLeaseId(lease_id));
  if (!body.ok())
    co_return body.status();
  co_return wire::DecodeKeepAlive(*body);
}

asio::awaitable<absl::Status> Client::RevokeLease(int64_t lease_id) {
  auto body = co_await Call("/v3/lease/revoke", wire::EncodeLeaseId(lease_id));
  co_return body.status();
}

asio::awaitable<absl::StatusOr<std::unique_ptr<Watch>>> Client::WatchRange(
    std::string key, std::string range_end, int64_t start_revision, common::Duration idle_timeout) {
  absl::Status last = absl::UnavailableError("etcd: no endpoint");
  const size_t start = current_;
  for (size_t tried = 0; tried < endpoints_.size(); ++tried) {
    const size_t i = (start + tried) % endpoints_.size();
    // A member cut off from its cluster's leader cancels the watch rather than go
    // quiet (gRPC metadata "hasleader", through the gateway).
    rpc::HttpCall call{.method = "POST",
                       .target = "/v3/watch",
                       .headers = {{"Grpc-Metadata-hasleader", "true"}},
                       .body = wire::EncodeWatchCreate(key, range_end, start_revision)};
    auto stream = co_await rpc::HttpStream::Open(endpoints_[i], std::move(call),
                                                 options_.call_timeout, options_.limits);
    if (!stream.ok()) {
      if (!absl::IsUnavailable(stream.status()) && !absl::IsDeadlineExceeded(stream.status()))
        co_return stream.status();
      last = absl::UnavailableError("etcd at " + endpoints_[i] + ": " +
                                    std::string(stream.status().message()));
      continue;
    }
    current_ = i;
    if ((*stream)->head().status != 200) {
      std::string error;
      for (;;) {
        auto piece = co_await (*stream)->Next();
        if (!piece.ok() || piece->empty() || error.size() > 64 * 1024)
          break;
        error += *piece;
      }
      co_return wire::DecodeError((*stream)->head().status, error);
    }
    (*stream)->set_idle_timeout(idle_timeout);
    auto watch =
        std::unique_ptr<Watch>(new Watch(*std::move(stream), options_.limits.max_body_bytes));
    // The first message acknowledges the watch, or says why it could not start (a
    // compacted start revision). Events that came with it are kept for Next.
    auto first = co_await watch->NextMessage();
    if (!first.ok())
      co_return first.status();
    watch->created_at_ = first->response.revision;
    if (!first->created || !first->response.events.empty())
      watch->pending_ = std::move(first->response);
    co_return watch;
  }
  co_return last;
}

Watch::Watch(std::unique_ptr<rpc::HttpStream> stream, size_t max_message_bytes)
    : stream_(std::move(stream)), max_message_bytes_(max_message_bytes) {}

Watch::~Watch() = default;

asio::awaitable<absl::StatusOr<WatchResponse>> Watch::Next() {
  if (pending_) {
    WatchResponse r = *std::move(pending_);
    pending_.reset();
    co_return r;
  }
  auto message = co_await NextMessage();
  if (!message.ok())
    co_return message.status();
  co_return std::move(message->response);
}

asio::awaitable<absl::StatusOr<Watch::Message>> Watch::NextMessage() {
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string text = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (text.find_first_not_of(" \r\t") == std::string::npos)
        continue;
      auto decoded = wire::DecodeWatchMessage(text);
      if (!decoded.ok())
        co_return decoded.status();
      co_return Message{decoded->created, std::move(decoded->response)};
    }
    if (buffer_.size() > max_message_bytes_)
      co_return absl::ResourceExhaustedError("etcd watch message larger than the limit");
    auto piece = co_await stream_->Next();
    if (!piece.ok())
      co_return absl::UnavailableError("etcd watch broke off: " +
                                       std::string(piece.status().message()));
    if (piece->empty())
      co_return absl::UnavailableError("etcd closed the watch");
    buffer_ += *piece;
  }
}

}  // namespace drover::etcd
