// The parts of an HTTP request the handlers see (http_types.h Request), from what the
// server read: the method, the request target (path and query, percent-encoded as
// sent), the header fields and the body. No Beast types, so the HTTP fuzzer
// (fuzz/http_fuzz.cc) drives exactly what the server uses.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api/http_types.h"

namespace drover::api {

// Header names are lower-cased (the last of repeated fields wins); the query is split
// and decoded (the last of repeated keys wins); the path is kept as sent for routing
// (raw_path) and decoded (path). A target that is not origin-form keeps it as the path.
Request DecodeRequest(std::string method, const std::string& target,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string body);

}  // namespace drover::api
