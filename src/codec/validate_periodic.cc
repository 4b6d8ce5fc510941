// Validation of a job's periodic and parameterized blocks (Nomad's PeriodicConfig and
// ParameterizedJobConfig Validate, and Job.Validate's rules about them).
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "codec/internal/validate_policies.h"
#include "codec/validate.h"
#include "common/go_strings.h"
#include "cron/cron.h"

namespace drover::codec::internal {

namespace {

using Errors = std::vector<std::string>;

bool BatchOrSysbatch(const model::Job& job) {
  return job.type == model::kJobTypeBatch || job.type == model::kJobTypeSysbatch;
}

Errors PeriodicErrors(const model::PeriodicConfig& p) {
  Errors errs;
  if (!p.spec.empty() && !p.specs.empty())
    errs.push_back("Only cron or crons may be used");
  if (p.spec.empty() && p.specs.empty())
    errs.push_back("Must specify a spec");
  if (!p.time_zone.empty()) {
    if (absl::StatusOr<absl::TimeZone> zone = cron::LoadZone(p.time_zone); !zone.ok()) {
      errs.push_back(absl::StrCat("Invalid time zone ", common::GoQuote(p.time_zone), ": ",
                                  zone.status().message()));
    }
  }
  if (p.spec_type != model::kPeriodicSpecCron) {
    errs.push_back(
        absl::StrCat("Unknown periodic specification type ", common::GoQuote(p.spec_type)));
    return errs;
  }
  for (const std::string& spec : p.AllSpecs()) {
    if (absl::StatusOr<cron::Expression> e = cron::Expression::Parse(spec); !e.ok()) {
      errs.push_back(
          absl::StrCat("Invalid cron spec ", common::GoQuote(spec), ": ", e.status().message()));
    }
  }
  return errs;
}

Errors ParameterizedErrors(const model::ParameterizedJobConfig& p) {
  Errors errs;
  if (p.payload != model::kDispatchPayloadOptional &&
      p.payload != model::kDispatchPayloadRequired &&
      p.payload != model::kDispatchPayloadForbidden) {
    errs.push_back(absl::StrCat("Unknown payload requirement: ", common::GoQuote(p.payload)));
  }
  const std::set<std::string> required(p.meta_required.begin(), p.meta_required.end());
  std::set<std::string> both;
  for (const std::string& key : p.meta_optional) {
    if (required.contains(key))
      both.insert(key);
  }
  if (!both.empty()) {
    errs.push_back(absl::StrCat(
        "Required and optional meta keys should be disjoint. Following keys exist in both: [",
        absl::StrJoin(both, " "), "]"));
  }
  return errs;
}

}  // namespace

void CheckPeriodicAndParameterized(const model::Job& job, std::vector<std::string>& errs) {
  if (job.periodic && job.periodic->enabled) {
    if (!BatchOrSysbatch(job))
      errs.push_back(R"(Periodic can only be used with "batch" or "sysbatch" scheduler)");
    if (Errors p = PeriodicErrors(*job.periodic); !p.empty())
      errs.push_back(FormatMultiError(p));
  }
  if (job.IsParameterized()) {
    if (!BatchOrSysbatch(job))
      errs.push_back(R"(Parameterized job can only be used with "batch" or "sysbatch" scheduler)");
    if (Errors p = ParameterizedErrors(*job.parameterized); !p.empty())
      errs.push_back(FormatMultiError(p));
  }
}

}  // namespace drover::codec::internal
