// Resolution of a user-typed ID prefix against the IDs a prefix list returned, with
// Nomad's rules (command/job_status.go, alloc_status.go, node_status.go).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace drover::cli {

struct PrefixMatch {
  enum class Kind { kNone, kUnique, kAmbiguous };
  Kind kind = Kind::kNone;
  // kUnique: the chosen candidate. kAmbiguous: every candidate that starts with the
  // prefix, in input order.
  std::vector<size_t> indexes;
};

// Candidates that do not start with `prefix` are ignored (a server that ignores
// ?prefix= returns everything). An exact match wins even when other IDs share the
// prefix; otherwise exactly one candidate must match.
PrefixMatch ResolvePrefix(std::string_view prefix, const std::vector<std::string>& candidates);

}  // namespace drover::cli
