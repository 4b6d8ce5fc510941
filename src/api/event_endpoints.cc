// GET /v1/event/stream (docs/api.md#event-stream): the servers' change feed as
// newline-delimited JSON, one line per index with the events of that index that match
// the request's topics, and `{}` every 10 s without any.
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/json.h"

namespace drover::api {
namespace {

using namespace std::chrono_literals;  // NOLINT

constexpr common::Duration kHeartbeat = 10s;
// Events read from the feed at once, and topics one request may name.
constexpr size_t kBatch = 256;
constexpr size_t kMaxTopics = 64;

const std::set<std::string>& KnownTopics() {
  static const std::set<std::string> topics = {"*",
                                               model::kTopicJob,
                                               model::kTopicEvaluation,
                                               model::kTopicAllocation,
                                               model::kTopicDeployment,
                                               model::kTopicNode};
  return topics;
}

// topic -> keys ("*": any); every topic with any key when the request names none.
using Topics = std::map<std::string, std::set<std::string>>;

absl::StatusOr<Topics> ParseTopics(const Request& req) {
  Topics topics;
  std::vector<std::string> raw;
  for (const auto& [key, value] : req.query_list) {
    if (key == "topic")
      raw.push_back(value);
  }
  if (raw.empty())
    return Topics{{"*", {"*"}}};
  if (raw.size() > kMaxTopics)
    return absl::InvalidArgumentError("Invalid topic query: more than 64 topics");
  for (const std::string& t : raw) {
    std::vector<std::string> parts = absl::StrSplit(t, ':');
    if (parts.size() > 2) {
      return absl::InvalidArgumentError(
          "Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: " +
          t);
    }
    if (!KnownTopics().contains(parts[0])) {
      return absl::InvalidArgumentError("Invalid topic query: unknown topic \"" + parts[0] +
                                        "\" (topics: Job, Evaluation, Allocation, Deployment, "
                                        "Node, *)");
    }
    topics[parts[0]].insert(parts.size() == 2 ? parts[1] : "*");
  }
  return topics;
}

bool Matches(const Topics& topics, const std::string& ns, const model::StateEvent& e) {
  if (!e.namespace_.empty() && ns != "*" && e.namespace_ != ns)
    return false;
  for (const std::string& topic : {std::string("*"), e.topic}) {
    auto it = topics.find(topic);
    if (it == topics.end())
      continue;
    if (it->second.contains("*") || it->second.contains(e.key))
      return true;
    for (const std::string& k : e.filter_keys) {
      if (!k.empty() && it->second.contains(k))
        return true;
    }
  }
  return false;
}

codec::Json EventJson(const model::StateEvent& e) {
  codec::Json payload = codec::Json::object();
  if (e.job) {
    payload["Job"] = codec::ToJson(*e.job);
  } else if (e.eval) {
    payload["Evaluation"] = codec::ToJson(*e.eval);
  } else if (e.alloc) {
    payload["Allocation"] = codec::ToJson(*e.alloc);  // without its job (state_events.cc)
  } else if (e.deployment) {
    payload["Deployment"] = codec::ToJson(*e.deployment);
  } else if (e.node) {
    payload["Node"] = codec::ToJson(*e.node);
  }
  return {{"Topic", e.topic},
          {"Type", e.type},
          {"Key", e.key},
          {"Namespace", e.namespace_},
          {"FilterKeys", e.filter_keys.empty() ? codec::Json(nullptr) : codec::Json(e.filter_keys)},
          {"Index", e.index},
          {"Payload", std::move(payload)}};
}

// One line per index: {"Index": N, "Events": [...]}.
std::string Lines(const std::vector<model::StateEventPtr>& events) {
  std::string out;
  for (size_t i = 0; i < events.size();) {
    const uint64_t index = events[i]->index;
    codec::Json batch = codec::Json::array();
    for (; i < events.size() && events[i]->index == index; ++i)
      batch.push_back(EventJson(*events[i]));
    out += codec::Dump(codec::Json{{"Index", index}, {"Events", std::move(batch)}});
    out += '\n';
  }
  return out;
}

// The last line of a stream that ends on an error.
std::string ErrorLine(const absl::Status& status) {
  return codec::Dump(codec::Json{{"Error", std::string(status.message())}}) + "\n";
}

asio::awaitable<void> Stream(ApiContext& ctx, Topics topics, std::string ns, uint64_t seq,
                             StreamWriter& out) {
  common::Time last_sent = ctx.clock->Now();
  while (!out.ClientGone()) {
    const uint64_t seen = ctx.server->LatestIndex();
    absl::StatusOr<std::vector<model::StateEventPtr>> events = ctx.server->EventsFrom(seq, kBatch);
    if (!events.ok()) {
      // Fallen behind the feed: said, and the stream ends (the client resubscribes).
      std::string error = ErrorLine(events.status());
      co_await out.Write(std::move(error));
      co_return;
    }
    if (!events->empty()) {
      const uint64_t batch = seq;
      seq += events->size();
      std::vector<model::StateEventPtr> matching;
      for (const model::StateEventPtr& e : *events) {
        if (Matches(topics, ns, *e))
          matching.push_back(e);
      }
      if (matching.empty())
        continue;
      // Only what is durable is told: a write that cannot be is undone.
      absl::Status durable = co_await ctx.server->WaitDurable();
      // A write undone meanwhile resets the feed: these events may not have happened.
      if (durable.ok())
        durable = ctx.server->EventsFrom(batch, 0).status();
      if (!durable.ok()) {
        std::string error = ErrorLine(durable);
        co_await out.Write(std::move(error));
        co_return;
      }
      std::function<std::string()> encode = [matching] { return Lines(matching); };
      std::string lines = co_await OffloadRequestWork(ctx, std::move(encode));
      if (!co_await out.Write(std::move(lines)))
        co_return;
      last_sent = ctx.clock->Now();
      continue;
    }
    const common::Duration idle = ctx.clock->Now() - last_sent;
    if (idle >= kHeartbeat) {
      std::string heartbeat = "{}\n";
      if (!co_await out.Write(std::move(heartbeat)))
        co_return;
      last_sent = ctx.clock->Now();
      continue;
    }
    std::vector<model::Table> tables = {model::Table::kJobs, model::Table::kEvals,
                                        model::Table::kAllocs, model::Table::kDeployments,
                                        model::Table::kNodes};
    co_await ctx.server->BlockUntil(std::move(tables), seen, kHeartbeat - idle);
  }
}

}  // namespace

void RegisterEventRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/event/stream", [&ctx](Request& req) -> asio::awaitable<Response> {
    absl::StatusOr<Topics> topics = ParseTopics(req);
    if (!topics.ok())
      co_return Response::Error(400, std::string(topics.status().message()));
    uint64_t index = 0;
    if (const std::string raw = req.Query("index"); !raw.empty() && !absl::SimpleAtoi(raw, &index))
      co_return Response::Error(
          400, "Unable to parse index: strconv.Atoi: parsing \"" + raw + "\": invalid syntax");
    const uint64_t seq = ctx.server->EventSeqAtIndex(index);
    Response resp;
    resp.content_type = "application/json";
    resp.stream = [&ctx, topics = *std::move(topics), ns = NamespaceOf(req),
                   seq](StreamWriter& out) { return Stream(ctx, topics, ns, seq, out); };
    co_return resp;
  });
}

}  // namespace drover::api
