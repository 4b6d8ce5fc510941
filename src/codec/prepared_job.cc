#include "codec/prepared_job.h"

#include "codec/canonicalize.h"
#include "codec/validate.h"

namespace drover::codec {

absl::StatusOr<PreparedJob> PrepareJob(model::Job job, const std::string& region) {
  CanonicalizeJob(job);
  if (job.region != region) {
    // Nomad forwards to the job's region; we are the only one.
    return absl::InvalidArgumentError("No path to region \"" + job.region + "\"");
  }
  if (absl::Status s = ValidateJob(job); !s.ok()) {
    return s;
  }
  job.stop = false;
  return PreparedJob(std::move(job));
}

}  // namespace drover::codec
