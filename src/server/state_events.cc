// The server state's change feed (state_store.h): the events the event stream sends.
#include "server/state_store.h"

namespace drover::server {

void StateStore::Append(model::StateEvent event) {
  if (!publish_)
    return;
  events_.push_back(std::make_shared<const model::StateEvent>(std::move(event)));
  if (events_.size() > max_events_) {
    events_.pop_front();
    ++first_event_seq_;
  }
}

void StateStore::set_max_events(size_t n) {
  max_events_ = std::max<size_t>(n, 1);
  while (events_.size() > max_events_) {
    events_.pop_front();
    ++first_event_seq_;
  }
}

void StateStore::Publish(const JobPtr& job, const char* type) {
  // Nomad's: a stop is a deregistration; a purge says so itself.
  if (type == nullptr)
    type = job->stop ? "JobDeregistered" : "JobRegistered";
  Append({.topic = model::kTopicJob,
          .type = type,
          .key = job->id,
          .namespace_ = job->namespace_,
          .index = index_,
          .job = job});
}

void StateStore::Publish(const EvalPtr& eval) {
  Append({.topic = model::kTopicEvaluation,
          .type = "EvaluationUpdated",
          .key = eval->id,
          .namespace_ = eval->namespace_,
          .filter_keys = {eval->job_id, eval->deployment_id},
          .index = index_,
          .eval = eval});
}

void StateStore::Publish(const AllocPtr& alloc) {
  if (!publish_)
    return;
  // Without its job, as Nomad's payload: the job has events of its own, and an event
  // must not keep a job version alive.
  AllocPtr bare = alloc;
  if (alloc->job) {
    model::Allocation copy = *alloc;
    copy.job.reset();
    bare = std::make_shared<const model::Allocation>(std::move(copy));
  }
  Append({.topic = model::kTopicAllocation,
          .type = "AllocationUpdated",
          .key = alloc->id,
          .namespace_ = alloc->namespace_,
          .filter_keys = {alloc->job_id, alloc->deployment_id},
          .index = index_,
          .alloc = std::move(bare)});
}

void StateStore::Publish(const DeploymentPtr& deployment) {
  Append({.topic = model::kTopicDeployment,
          .type = "DeploymentStatusUpdate",
          .key = deployment->id,
          .namespace_ = deployment->namespace_,
          .filter_keys = {deployment->job_id},
          .index = index_,
          .deployment = deployment});
}

void StateStore::Publish(const NodePtr& node) {
  Append({.topic = model::kTopicNode,
          .type = node->create_index == node->modify_index ? "NodeRegistration" : "NodeEvent",
          .key = node->id,
          .index = index_,
          .node = node});
}

void StateStore::ResetEventFeed() {
  first_event_seq_ = next_event_seq() + 1;
  events_.clear();
}

absl::StatusOr<std::vector<model::StateEventPtr>> StateStore::EventsFrom(uint64_t seq,
                                                                         size_t max) const {
  if (seq < first_event_seq_) {
    return absl::OutOfRangeError(
        "subscription closed by server, client should resubscribe: events from " +
        std::to_string(seq) + " are gone (the servers keep the newest " +
        std::to_string(max_events_) + ", and start over when a write is undone or the state " +
        "is replaced)");
  }
  std::vector<model::StateEventPtr> out;
  for (uint64_t i = seq - first_event_seq_; i < events_.size() && out.size() < max; ++i)
    out.push_back(events_[i]);
  return out;
}

uint64_t StateStore::EventSeqAtIndex(uint64_t index) const {
  auto it =
      std::lower_bound(events_.begin(), events_.end(), index,
                       [](const model::StateEventPtr& e, uint64_t i) { return e->index < i; });
  return first_event_seq_ + static_cast<uint64_t>(it - events_.begin());
}

}  // namespace drover::server
