#include "rpc/protocol.h"

#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::rpc {
namespace {

using codec::Json;

absl::StatusOr<Json> ParseObject(std::string_view body, std::string_view what) {
  absl::StatusOr<Json> j = codec::ParseJson(body);
  if (!j.ok())
    return absl::InvalidArgumentError(std::string(what) + ": " + std::string(j.status().message()));
  if (!j->is_object())
    return absl::InvalidArgumentError(std::string(what) + ": expected a JSON object");
  return j;
}

absl::Status Annotated(const absl::Status& s, std::string_view what) {
  return absl::Status(s.code(), std::string(what) + ": " + std::string(s.message()));
}

}  // namespace

std::string EncodeNode(const model::Node& node) {
  Json j = codec::ToJson(node);
  j["SecretID"] = node.secret_id;  // the API's encoding never carries it
  return codec::Dump(j);
}

absl::StatusOr<model::Node> DecodeNode(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "node");
  if (!j.ok())
    return j.status();
  absl::StatusOr<model::Node> node = codec::NodeFromJson(*j);
  if (!node.ok())
    return Annotated(node.status(), "node");
  return node;
}

std::string EncodeTtl(common::Duration ttl) {
  return codec::Dump(Json{{"HeartbeatTTL", std::chrono::nanoseconds(ttl).count()}});
}

absl::StatusOr<common::Duration> DecodeTtl(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "heartbeat reply");
  if (!j.ok())
    return j.status();
  auto it = j->find("HeartbeatTTL");
  if (it == j->end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
    return absl::InvalidArgumentError("heartbeat reply: HeartbeatTTL must be a positive integer");
  return std::chrono::duration_cast<common::Duration>(std::chrono::nanoseconds(it->get<int64_t>()));
}

std::string EncodePrevAllocInfo(const model::PrevAllocInfo& info) {
  return codec::Dump(Json{{"AllocID", info.alloc_id},
                          {"Gone", info.gone},
                          {"Done", info.done},
                          {"ClientStatus", info.client_status},
                          {"NodeID", info.node_id},
                          {"NodeStatus", info.node_status},
                          {"NodeHTTPAddr", info.node_http_addr},
                          {"MigrateToken", info.migrate_token},
                          {"Index", info.index}});
}

absl::StatusOr<model::PrevAllocInfo> DecodePrevAllocInfo(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "previous allocation");
  if (!j.ok())
    return j.status();
  model::PrevAllocInfo info;
  auto text = [&](const char* key, std::string& out) -> absl::Status {
    auto it = j->find(key);
    if (it == j->end() || !it->is_string() || it->get_ref<const std::string&>().size() > 4096)
      return absl::InvalidArgumentError(std::string("previous allocation: ") + key +
                                        " must be a string");
    out = it->get<std::string>();
    return absl::OkStatus();
  };
  auto flag = [&](const char* key, bool& out) -> absl::Status {
    auto it = j->find(key);
    if (it == j->end() || !it->is_boolean())
      return absl::InvalidArgumentError(std::string("previous allocation: ") + key +
                                        " must be a boolean");
    out = it->get<bool>();
    return absl::OkStatus();
  };
  for (absl::Status s :
       {text("AllocID", info.alloc_id), flag("Gone", info.gone), flag("Done", info.done),
        text("ClientStatus", info.client_status), text("NodeID", info.node_id),
        text("NodeStatus", info.node_status), text("NodeHTTPAddr", info.node_http_addr),
        text("MigrateToken", info.migrate_token)}) {
    if (!s.ok())
      return s;
  }
  auto index = j->find("Index");
  if (index == j->end() || !index->is_number_unsigned())
    return absl::InvalidArgumentError("previous allocation: Index must be a non-negative integer");
  info.index = index->get<uint64_t>();
  return info;
}

std::string EncodeAllocations(uint64_t index, const std::vector<const model::Allocation*>& allocs) {
  Json list = Json::array();
  for (const model::Allocation* a : allocs)
    list.push_back(codec::ToJson(*a));
  return codec::Dump(Json{{"Index", index}, {"Allocations", std::move(list)}});
}

absl::StatusOr<Allocations> DecodeAllocations(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "allocations");
  if (!j.ok())
    return j.status();
  auto index = j->find("Index");
  auto list = j->find("Allocations");
  if (index == j->end() || !index->is_number_unsigned())
    return absl::InvalidArgumentError("allocations: Index must be an unsigned integer");
  if (list == j->end() || !list->is_array())
    return absl::InvalidArgumentError("allocations: Allocations must be an array");
  Allocations out;
  out.index = index->get<uint64_t>();
  out.allocs.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<model::Allocation> a = codec::AllocationFromJson((*list)[i]);
    if (!a.ok())
      return Annotated(a.status(), "allocations[" + std::to_string(i) + "]");
    out.allocs.push_back(std::move(*a));
  }
  return out;
}

std::string EncodeUpdates(const std::vector<model::AllocClientUpdate>& updates) {
  Json list = Json::array();
  for (const model::AllocClientUpdate& u : updates)
    list.push_back(codec::ToJson(u));
  return codec::Dump(Json{{"Updates", std::move(list)}});
}

absl::StatusOr<std::vector<model::AllocClientUpdate>> DecodeUpdates(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "updates");
  if (!j.ok())
    return j.status();
  auto list = j->find("Updates");
  if (list == j->end() || !list->is_array())
    return absl::InvalidArgumentError("updates: Updates must be an array");
  std::vector<model::AllocClientUpdate> out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<model::AllocClientUpdate> u = codec::AllocClientUpdateFromJson((*list)[i]);
    if (!u.ok())
      return Annotated(u.status(), "updates[" + std::to_string(i) + "]");
    if (u->id.empty())
      return absl::InvalidArgumentError("updates[" + std::to_string(i) + "]: missing ID");
    out.push_back(std::move(*u));
  }
  return out;
}

std::string EncodeNodeEvents(const std::vector<model::NodeEvent>& events) {
  Json list = Json::array();
  for (const model::NodeEvent& e : events)
    list.push_back(codec::ToJson(e));
  return codec::Dump(Json{{"Events", std::move(list)}});
}

absl::StatusOr<std::vector<model::NodeEvent>> DecodeNodeEvents(std::string_view body) {
  absl::StatusOr<Json> j = ParseObject(body, "events");
  if (!j.ok())
    return j.status();
  auto list = j->find("Events");
  if (list == j->end() || !list->is_array())
    return absl::InvalidArgumentError("events: Events must be an array");
  if (list->size() > model::kMaxNodeEventsPerCall)
    return absl::InvalidArgumentError("events: more than " +
                                      std::to_string(model::kMaxNodeEventsPerCall) + " events");
  std::vector<model::NodeEvent> out;
  for (size_t i = 0; i < list->size(); ++i) {
    absl::StatusOr<model::NodeEvent> e = codec::NodeEventFromJson((*list)[i]);
    if (!e.ok())
      return Annotated(e.status(), "events[" + std::to_string(i) + "]");
    out.push_back(std::move(*e));
  }
  return out;
}

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

absl::Status StatusFromHttp(int http_status, std::string_view body) {
  std::string message(body.substr(0, 1024));
  if (message.empty())
    message = "HTTP status " + std::to_string(http_status);
  switch (http_status) {
    case 400:
    case 413:
      return absl::InvalidArgumentError(message);
    case 401:
      return absl::UnauthenticatedError(message);
    case 403:
      return absl::PermissionDeniedError(message);
    case 404:
      return absl::NotFoundError(message);
    case 409:
      return absl::FailedPreconditionError(message);
    case 429:
    case 502:
    case 503:
    case 504:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace drover::rpc
