#include "codec/snapshot.h"

#include "absl/strings/escaping.h"
#include <nlohmann/json.hpp>

namespace drover::codec {
namespace {

constexpr std::string_view kMagic = "DROVER-SNAPSHOT 1";

absl::Status Bad(const std::string& why) {
  return absl::InvalidArgumentError("not a Drover snapshot (" + why + ")");
}

// The next line of `text` from `pos` (without its newline); false at the end.
bool NextLine(std::string_view text, size_t& pos, std::string_view& line) {
  if (pos >= text.size())
    return false;
  const size_t end = text.find('\n', pos);
  const size_t stop = end == std::string_view::npos ? text.size() : end;
  line = text.substr(pos, stop - pos);
  pos = stop + 1;
  return true;
}

absl::StatusOr<SnapshotHeader> ParseHeader(std::string_view text, size_t& pos) {
  std::string_view line;
  if (!NextLine(text, pos, line) || line != kMagic)
    return Bad("the first line is not \"DROVER-SNAPSHOT 1\"");
  if (!NextLine(text, pos, line))
    return Bad("no header");
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j["Region"].is_string() || !j["SchemaVersion"].is_number_integer() ||
      !j["Index"].is_number_unsigned() || !j["Records"].is_number_unsigned())
    return Bad("the header is not {Region, SchemaVersion, Index, Records}");
  return SnapshotHeader{.region = j["Region"].get<std::string>(),
                        .schema_version = j["SchemaVersion"].get<int>(),
                        .index = j["Index"].get<uint64_t>(),
                        .records = j["Records"].get<uint64_t>()};
}

}  // namespace

std::string EncodeSnapshot(const SnapshotHeader& header,
                           const std::vector<model::StateRecord>& records) {
  std::string out(kMagic);
  out += '\n';
  out += nlohmann::json{{"Region", header.region},
                        {"SchemaVersion", header.schema_version},
                        {"Index", header.index},
                        {"Records", records.size()}}
             .dump();
  out += '\n';
  for (const model::StateRecord& r : records) {
    out += "{\"K\":\"";
    out += absl::Base64Escape(r.key);
    out += "\",\"V\":\"";
    out += absl::Base64Escape(r.value);
    out += "\"}\n";
  }
  return out;
}

absl::StatusOr<SnapshotHeader> DecodeSnapshotHeader(std::string_view text) {
  size_t pos = 0;
  return ParseHeader(text, pos);
}

absl::StatusOr<Snapshot> DecodeSnapshot(std::string_view text) {
  size_t pos = 0;
  auto header = ParseHeader(text, pos);
  if (!header.ok())
    return header.status();
  Snapshot out{.header = *header};
  std::string_view line;
  uint64_t n = 0;
  while (NextLine(text, pos, line)) {
    ++n;
    if (n > header->records)
      return Bad("more records than its header says");
    auto j = nlohmann::json::parse(line, nullptr, false);
    model::StateRecord r;
    if (!j.is_object() || !j["K"].is_string() || !j["V"].is_string() ||
        !absl::Base64Unescape(j["K"].get<std::string>(), &r.key) ||
        !absl::Base64Unescape(j["V"].get<std::string>(), &r.value) || r.key.empty())
      return Bad("record " + std::to_string(n) + " does not decode");
    out.records.push_back(std::move(r));
  }
  if (n != header->records)
    return Bad("it ends after " + std::to_string(n) + " of " + std::to_string(header->records) +
               " records");
  return out;
}

}  // namespace drover::codec
