// Random identifiers: RFC 4122 version-4 UUIDs as Nomad uses for jobs' evals, allocs
// and nodes, and short random suffixes. Thread-safe.
#pragma once

#include <string>

namespace drover::common {

std::string NewUuid();
// `n` random lowercase hex characters.
std::string RandomHex(size_t n);
bool IsUuid(std::string_view s);
// A uniform random number in [0, 1), from the calling thread's generator.
double RandomUnit();

}  // namespace drover::common
