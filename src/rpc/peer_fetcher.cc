#include "rpc/peer_fetcher.h"

#include "rpc/http_call.h"
#include "rpc/protocol.h"

namespace drover::rpc {

asio::awaitable<absl::Status> PeerSnapshotFetcher::Fetch(std::string http_addr,
                                                         std::string alloc_id, std::string token,
                                                         uint64_t max_bytes,
                                                         allocwatcher::ChunkSink& sink) {
  HttpCall call{.method = "GET",
                .target = "/v1/client/allocation/" + alloc_id + "/snapshot",
                .headers = {{"X-Nomad-Token", std::move(token)}}};
  HttpCallLimits limits{.max_body_bytes = max_bytes};
  absl::StatusOr<HttpReply> reply =
      co_await SendHttpStreaming(http_addr, std::move(call), timeout_, limits, sink);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status != 200)
    co_return StatusFromHttp(reply->status, reply->body);
  co_return absl::OkStatus();
}

}  // namespace drover::rpc
