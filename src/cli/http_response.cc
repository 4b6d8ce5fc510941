// The transport-independent parts of http_client.h (no Beast here, so tests with a fake
// client do not pull the Beast implementation in).
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/http_client.h"
#include <nlohmann/json.hpp>

#include "common/status_macros.h"

namespace drover::cli {

absl::StatusCode StatusCodeForHttp(int http_status) {
  switch (http_status) {
    case 200:
      return absl::StatusCode::kOk;
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return absl::StatusCode::kAborted;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status UnexpectedResponse(int http_status, std::string_view body) {
  return absl::Status(StatusCodeForHttp(http_status),
                      absl::StrCat("Unexpected response code: ", http_status, " (",
                                   std::string(absl::StripTrailingAsciiWhitespace(
                                       absl::string_view(body.data(), body.size()))),
                                   ")"));
}

absl::StatusOr<codec::Json> GetJson(HttpClient& client, std::string_view path) {
  DROVER_ASSIGN_OR_RETURN(HttpResponse response, client.Do("GET", path));
  return codec::ParseJson(response.body);
}

}  // namespace drover::cli
