// Node events (model::NodeEvent): the servers' own, and those a node reports.
#include "server/server.h"

namespace drover::server {

model::NodeEvent Server::Event(std::string subsystem, std::string message) const {
  return model::NodeEvent{
      .message = std::move(message), .subsystem = std::move(subsystem), .timestamp = clock_.Now()};
}

namespace {

absl::Status CheckNodeEvent(const model::NodeEvent& e) {
  if (e.message.empty() || e.subsystem.empty())
    return absl::InvalidArgumentError("a node event needs a message and a subsystem");
  if (e.message.size() > model::kMaxNodeEventMessageBytes)
    return absl::InvalidArgumentError("node event message longer than " +
                                      std::to_string(model::kMaxNodeEventMessageBytes) + " bytes");
  if (e.details.size() > model::kMaxNodeEventDetails)
    return absl::InvalidArgumentError("node event with more than " +
                                      std::to_string(model::kMaxNodeEventDetails) + " details");
  bool too_long = e.subsystem.size() > model::kMaxNodeEventFieldBytes;
  for (const auto& [k, v] : e.details)
    too_long |=
        k.size() > model::kMaxNodeEventFieldBytes || v.size() > model::kMaxNodeEventFieldBytes;
  if (too_long)
    return absl::InvalidArgumentError("node event subsystem or detail longer than " +
                                      std::to_string(model::kMaxNodeEventFieldBytes) + " bytes");
  return absl::OkStatus();
}

}  // namespace

absl::Status Server::EmitNodeEvents(const std::string& node_id,
                                    std::vector<model::NodeEvent> events) {
  if (!leader_)
    return NotLeaderError();
  if (events.size() > model::kMaxNodeEventsPerCall)
    return absl::InvalidArgumentError("more than " + std::to_string(model::kMaxNodeEventsPerCall) +
                                      " node events in one call");
  for (const model::NodeEvent& e : events) {
    if (absl::Status s = CheckNodeEvent(e); !s.ok())
      return s;
  }
  NodePtr node = state_.GetNode(node_id);
  if (!node)
    return absl::NotFoundError("node not found");
  if (events.empty())
    return absl::OkStatus();
  const common::Time now = clock_.Now();
  model::Node copy = *node;
  for (model::NodeEvent& e : events) {
    if (e.timestamp == common::Time{} || e.timestamp > now)
      e.timestamp = now;
    e.create_index = 0;  // the index of this write
    model::AddNodeEvent(copy, std::move(e));
  }
  state_.UpsertNode(std::move(copy));
  return absl::OkStatus();
}

}  // namespace drover::server
