// Decoding what a job write carries (PUT /v1/jobs, /v1/job/:id, /v1/job/:id/plan)
// and encoding what it answers: shared by the job endpoints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "api/api_context.h"
#include "api/http_types.h"
#include "codec/json.h"
#include "codec/prepared_job.h"
#include "model/server_types.h"

namespace drover::api {

// What a register (or plan) request says, decoded, canonicalized and validated.
struct RegisterRequest {
  std::optional<codec::PreparedJob> job;
  std::vector<std::string> warnings;  // accepted but not carried out (unsupported_fields.h)
  bool enforce_index = false;
  uint64_t job_modify_index = 0;
  bool diff = false;  // a plan's "Diff"
};

// Pool work: everything that needs only the request (parsing, refusing unsupported
// fields, decoding, canonicalizing and validating), so a large body never holds the
// control loop. `path_id` is empty for /v1/jobs. InvalidArgument is a 400; a job that
// does not validate is another code (Nomad's 500).
absl::StatusOr<RegisterRequest> DecodeRegister(const std::string& body, const std::string& path_id,
                                               const std::string& ns, const std::string& region,
                                               const std::string& server_region);

// DecodeRegister on the pool (one request's work at a time, OffloadRequestWork). The
// body moves there: it is not held twice.
asio::awaitable<absl::StatusOr<RegisterRequest>> DecodeRegisterOffloaded(ApiContext& ctx,
                                                                         Request& req,
                                                                         std::string path_id);
// What DecodeRegister's error answers: 400 for a request that cannot be read, Nomad's
// 500 for a job that does not validate.
Response DecodeErrorResponse(const absl::Status& status);

// Nomad's JobRegisterResponse (EvalID, EvalCreateIndex, JobModifyIndex, Warnings, Index).
codec::Json RegisterResponseJson(const model::EvalResponse& r);
// 200 with `body` and X-Nomad-Index: what a write answers.
Response WriteResponse(const Request& req, const codec::Json& body, uint64_t index);

}  // namespace drover::api
