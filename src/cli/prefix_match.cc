#include "cli/prefix_match.h"

namespace drover::cli {

PrefixMatch ResolvePrefix(std::string_view prefix, const std::vector<std::string>& candidates) {
  PrefixMatch match;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& id = candidates[i];
    if (id == prefix) {
      match.kind = PrefixMatch::Kind::kUnique;
      match.indexes = {i};
      return match;
    }
    if (id.size() >= prefix.size() && std::string_view(id).substr(0, prefix.size()) == prefix) {
      match.indexes.push_back(i);
    }
  }
  if (match.indexes.empty()) {
    match.kind = PrefixMatch::Kind::kNone;
  } else if (match.indexes.size() == 1) {
    match.kind = PrefixMatch::Kind::kUnique;
  } else {
    match.kind = PrefixMatch::Kind::kAmbiguous;
  }
  return match;
}

}  // namespace drover::cli
