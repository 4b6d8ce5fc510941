#include "server/state_layout.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "state/state_db.h"

namespace drover::server::layout {

std::optional<JobRecordName> ParseJobRecordKey(std::string_view key) {
  const std::string_view prefix = kJobPrefix;
  if (key.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  key.remove_prefix(prefix.size());
  const size_t a = key.find('\0');
  if (a == std::string_view::npos)
    return std::nullopt;
  const size_t b = key.find('\0', a + 1);
  if (b == std::string_view::npos)
    return std::nullopt;
  JobRecordName out{.ns = std::string(key.substr(0, a)),
                    .id = std::string(key.substr(a + 1, b - a - 1))};
  const std::string_view digits = key.substr(b + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.version);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
    return std::nullopt;
  return out;
}

const char* TableName(model::Table t) {
  switch (t) {
    case model::Table::kJobs:
      return "jobs";
    case model::Table::kEvals:
      return "evals";
    case model::Table::kAllocs:
      return "allocs";
    case model::Table::kNodes:
      return "nodes";
    case model::Table::kDeployments:
      return "deployments";
  }
  return "unknown";
}

std::string EncodeRecord(const model::Job& job) {
  return state::Encode("Job", codec::ToJson(job));
}

std::string EncodeRecord(const model::Evaluation& eval) {
  return state::Encode("Evaluation", codec::ToJson(eval));
}

std::string EncodeRecord(const model::Allocation& alloc) {
  return state::EncodeAllocation("Allocation", alloc);
}

std::string EncodeRecord(const model::Deployment& deployment) {
  return state::Encode("Deployment", codec::ToJson(deployment));
}

std::string EncodeRecord(const model::Node& node) {
  codec::Json j = codec::ToJson(node);
  j["SecretID"] = node.secret_id;
  return state::Encode("Node", j);
}

std::string Printable(std::string_view key) {
  std::string out(key);
  std::replace(out.begin(), out.end(), '\0', '/');
  return out;
}

}  // namespace drover::server::layout
