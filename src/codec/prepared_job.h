// A job ready to be stored: canonicalized and validated for one region. The only way
// to make one is PrepareJob, so a server that takes a PreparedJob knows it was checked.
// Pure and thread-safe: the API prepares large jobs on the blocking pool.
#pragma once

#include <string>

#include "absl/status/statusor.h"

#include "model/job.h"

namespace drover::codec {

class PreparedJob {
 public:
  const model::Job& job() const { return job_; }
  model::Job Release() && { return std::move(job_); }

 private:
  friend absl::StatusOr<PreparedJob> PrepareJob(model::Job job, const std::string& region);
  explicit PreparedJob(model::Job job) : job_(std::move(job)) {}
  model::Job job_;
};

// Canonicalizes and validates `job` (InvalidArgument with every problem) for a server
// of `region` (InvalidArgument "No path to region" for another).
absl::StatusOr<PreparedJob> PrepareJob(model::Job job, const std::string& region);

}  // namespace drover::codec
