#include "rpc/peer_fetcher.h"

#include "rpc/http_call.h"
#include "rpc/protocol.h"

namespace drover::rpc {

namespace {

class ToChunkSink final : public BodySink {
 public:
  explicit ToChunkSink(allocwatcher::ChunkSink& sink) : sink_(sink) {}
  asio::awaitable<absl::Status> Write(std::string piece) override {
    co_return co_await sink_.Write(std::move(piece));
  }

 private:
  allocwatcher::ChunkSink& sink_;
};

}  // namespace

asio::awaitable<absl::Status> PeerSnapshotFetcher::Fetch(std::string http_addr,
                                                         std::string alloc_id, std::string token,
                                                         uint64_t max_bytes,
                                                         allocwatcher::ChunkSink& sink) {
  HttpCall call{.method = "GET",
                .target = "/v1/client/allocation/" + alloc_id + "/snapshot",
                .headers = {{"X-Nomad-Token", std::move(token)}}};
  ToChunkSink body(sink);
  HttpCallLimits limits{.max_body_bytes = max_bytes};
  absl::StatusOr<HttpReply> reply =
      co_await SendHttpStreaming(http_addr, std::move(call), timeout_, limits, body);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status != 200)
    co_return StatusFromHttp(reply->status, reply->body);
  co_return absl::OkStatus();
}

}  // namespace drover::rpc
