#include "agent/server_adapter.h"

namespace drover::agent {

std::map<std::string, std::string> ServerAdapter::ReplicationStats() const {
  std::map<std::string, std::string> out = {
      {"state", server_.leader() ? "Leader" : "Follower"},
      {"applied_index", std::to_string(server_.state().LatestIndex())},
      {"state_records_skipped", std::to_string(server_.state().skipped_records())},
      {"backend", ha_ != nullptr ? "etcd" : (server_.state().durable() ? "lmdb" : "memory")}};
  if (ha_ != nullptr)
    out["etcd_revision"] = std::to_string(ha_->mirror().revision());
  return out;
}

std::vector<api::ServerPeer> ServerAdapter::Peers() const {
  std::vector<api::ServerPeer> out;
  if (ha_ == nullptr)
    return out;
  for (const server::Member& m : ha_->Members()) {
    out.push_back(api::ServerPeer{
        .name = m.name, .http_addr = m.http_addr, .rpc_addr = m.rpc_addr, .leader = m.leader});
  }
  return out;
}

asio::awaitable<absl::StatusOr<std::pair<bool, uint64_t>>> ServerAdapter::SetSchedulerConfigDurably(
    model::SchedulerConfig config, std::optional<uint64_t> cas) {
  auto done = co_await server_.SetSchedulerConfigDurably(std::move(config), cas);
  if (!done.ok())
    co_return done.status();
  co_return std::make_pair(done->updated, done->index);
}

model::JobPtr ServerAdapter::GetJob(const std::string& ns, const std::string& id) const {
  return server_.state().GetJob(ns, id);
}
std::vector<model::JobPtr> ServerAdapter::ListJobs(const std::string& ns,
                                                   const std::string& prefix) const {
  return server_.state().ListJobs(ns, prefix);
}
model::JobSummary ServerAdapter::JobSummary(const model::Job& job) const {
  return server_.state().JobSummary(job);
}
model::EvalPtr ServerAdapter::GetEval(const std::string& id) const {
  return server_.state().GetEval(id);
}
std::vector<model::EvalPtr> ServerAdapter::ListEvals(const std::string& ns,
                                                     const std::string& prefix) const {
  return server_.state().ListEvals(ns, prefix);
}
std::vector<model::EvalPtr> ServerAdapter::EvalsByJob(const std::string& ns,
                                                      const std::string& job_id) const {
  return server_.state().EvalsByJob(ns, job_id);
}
model::AllocPtr ServerAdapter::GetAlloc(const std::string& id) const {
  return server_.state().GetAlloc(id);
}
std::vector<model::AllocPtr> ServerAdapter::ListAllocs(const std::string& ns,
                                                       const std::string& prefix) const {
  return server_.state().ListAllocs(ns, prefix);
}
std::vector<model::AllocPtr> ServerAdapter::AllocsByJob(const std::string& ns,
                                                        const std::string& job_id) const {
  return server_.state().AllocsByJob(ns, job_id);
}
std::vector<model::AllocPtr> ServerAdapter::AllocsByNode(const std::string& node_id) const {
  return server_.state().AllocsByNode(node_id);
}
std::vector<model::AllocPtr> ServerAdapter::AllocsByEval(const std::string& eval_id) const {
  return server_.state().AllocsByEval(eval_id);
}
model::NodePtr ServerAdapter::GetNode(const std::string& id) const {
  return server_.state().GetNode(id);
}
std::vector<model::NodePtr> ServerAdapter::ListNodes(const std::string& prefix) const {
  return server_.state().ListNodes(prefix);
}

uint64_t ServerAdapter::LatestIndex() const {
  return server_.state().LatestIndex();
}
uint64_t ServerAdapter::TableIndex(model::Table table) const {
  return server_.state().TableIndex(table);
}
asio::awaitable<uint64_t> ServerAdapter::BlockUntil(std::vector<model::Table> tables,
                                                    uint64_t min_index, common::Duration max_wait) {
  return server_.state().BlockUntil(std::move(tables), min_index, max_wait);
}

asio::awaitable<absl::StatusOr<model::EvalResponse>> ServerAdapter::RegisterJobDurably(
    codec::PreparedJob job, std::optional<uint64_t> enforce_index) {
  return server_.RegisterJobDurably(std::move(job), enforce_index);
}
asio::awaitable<absl::StatusOr<model::EvalResponse>> ServerAdapter::DeregisterJobDurably(
    std::string ns, std::string id, bool purge, bool no_shutdown_delay) {
  return server_.DeregisterJobDurably(std::move(ns), std::move(id), purge, no_shutdown_delay);
}
asio::awaitable<absl::StatusOr<model::EvalResponse>> ServerAdapter::StopAllocDurably(
    std::string alloc_id, bool no_shutdown_delay) {
  return server_.StopAllocDurably(std::move(alloc_id), no_shutdown_delay);
}
asio::awaitable<absl::StatusOr<model::EvalResponse>> ServerAdapter::SetNodeEligibilityDurably(
    std::string node_id, std::string eligibility) {
  return server_.SetNodeEligibilityDurably(std::move(node_id), std::move(eligibility));
}
asio::awaitable<absl::StatusOr<model::EvalResponse>> ServerAdapter::UpdateNodeDrainDurably(
    std::string node_id, std::optional<model::DrainSpec> spec, bool mark_eligible,
    std::map<std::string, std::string> meta) {
  return server_.UpdateNodeDrainDurably(std::move(node_id), std::move(spec), mark_eligible,
                                        std::move(meta));
}

absl::StatusOr<common::Duration> ServerAdapter::RegisterNode(model::Node node) {
  return server_.RegisterNode(std::move(node));
}
absl::StatusOr<common::Duration> ServerAdapter::Heartbeat(const std::string& node_id) {
  return server_.Heartbeat(node_id);
}
absl::Status ServerAdapter::AuthenticateNode(const std::string& node_id,
                                             const std::string& secret_id) const {
  return server_.AuthenticateNode(node_id, secret_id);
}
asio::awaitable<absl::Status> ServerAdapter::UpdateAllocsDurably(
    std::string node_id, std::vector<model::AllocClientUpdate> updates) {
  return server_.UpdateAllocsDurably(std::move(node_id), std::move(updates));
}
absl::Status ServerAdapter::EmitNodeEvents(const std::string& node_id,
                                           std::vector<model::NodeEvent> events) {
  return server_.EmitNodeEvents(node_id, std::move(events));
}
asio::awaitable<absl::StatusOr<model::NodeAllocs>> ServerAdapter::WatchNodeAllocs(
    std::string node_id, uint64_t min_index, common::Duration max_wait) {
  return server_.WatchNodeAllocs(std::move(node_id), min_index, max_wait);
}
asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> ServerAdapter::WatchPreviousAlloc(
    std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) {
  return server_.WatchPreviousAlloc(std::move(node_id), std::move(alloc_id), min_index, max_wait);
}

}  // namespace drover::agent
