#include "cli/periodic_launch.h"

#include <chrono>
#include <vector>

#include "cli/format.h"
#include "cli/json_fields.h"

#include "cron/cron.h"
#include "model/task_state.h"

namespace drover::cli {

absl::StatusOr<std::optional<std::string>> NextLaunchText(const codec::Json& periodic,
                                                          common::Time now) {
  std::vector<std::string> specs;
  if (const std::string spec = JsonString(periodic, "Spec"); !spec.empty())
    specs.push_back(spec);
  for (const std::string& spec : JsonStrings(periodic, "Specs"))
    specs.push_back(spec);
  const std::string zone_name = JsonString(periodic, "TimeZone");
  absl::StatusOr<absl::TimeZone> zone = cron::LoadZone(zone_name);
  if (!zone.ok())
    return zone.status();
  const absl::Time from = absl::FromUnixNanos(common::ToUnixNanos(now));
  absl::StatusOr<std::optional<absl::Time>> next = cron::NextOfAny(specs, zone_name, from);
  if (!next.ok())
    return next.status();
  if (!*next)
    return std::nullopt;
  const common::Time at = common::FromUnixNanos(absl::ToUnixNanos(**next));
  const int offset = zone->At(**next).offset;
  // Both truncated to the second, as Nomad's formatTimeDifference.
  const auto seconds = [](common::Time t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch());
  };
  const common::Duration until = seconds(at) - seconds(now);
  return FormatTimeWithOffset(at, offset) + " (" + model::FormatGoDuration(until) + " from now)";
}

}  // namespace drover::cli
