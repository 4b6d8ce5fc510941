// The node's client as the HTTP API sees it (api/client_api.h): it answers from the
// client's allocation runners, so the API never holds one.
#pragma once

#include "api/client_api.h"
#include "client/client.h"

namespace drover::agent {

class ClientAdapter final : public api::ClientApi {
 public:
  // `client` must outlive the adapter.
  explicit ClientAdapter(client::Client& client) : client_(client) {}

  const std::string& node_id() const override { return client_.node().id; }
  size_t num_allocs() const override { return client_.num_allocs(); }
  bool HasAlloc(const std::string& alloc_id) const override;

  absl::StatusOr<api::AllocStats> AllocStatsOf(const std::string& alloc_id) const override;
  std::function<model::HostStats()> HostStatsCollector() override;
  std::string DeviceStatsJson() const override;

  absl::Status Restart(const std::string& alloc_id, api::RestartScope scope,
                       const std::string& task) override;
  absl::Status Signal(const std::string& alloc_id, const std::string& task,
                      const std::string& signal) override;
  asio::awaitable<absl::Status> CollectAllocation(std::string alloc_id) override;
  asio::awaitable<void> CollectAll() override;

  absl::StatusOr<allocdir::AllocDirLocation> AllocDirOf(const std::string& alloc_id) const override;
  bool MayGrow(const std::string& alloc_id, const std::string& task) const override;
  absl::StatusOr<api::SnapshotSource> SnapshotOf(const std::string& alloc_id,
                                                 const std::string& token) const override;

 private:
  // The allocation's runner unless it is not here or was destroyed.
  absl::StatusOr<allocrunner::AllocRunner*> Runner(const std::string& alloc_id) const;

  client::Client& client_;
};

}  // namespace drover::agent
