// Cron expressions with the syntax Nomad's periodic block takes (the cronexpr
// dialect): 5 fields (minute hour day-of-month month day-of-week), 6 (a year after
// them) or 7 (a second before them); `*` and `?`, values, `a-b` ranges, `/n` steps,
// `,` lists, month and weekday names (case-insensitive; weekday 7 is Sunday), and in
// day-of-month `L` (last day), `LW` (last weekday), `15W` (nearest weekday); in
// day-of-week `5L` (last Friday) and `5#3` (third Friday); and the @yearly,
// @annually, @monthly, @weekly, @daily (@midnight) and @hourly macros. When both
// day-of-month and day-of-week are restricted, a day matching either matches.
//
// A leaf library: no dependency but Abseil. Times are computed in an absl::TimeZone,
// so launches follow the wall clock across daylight-saving changes: a time the clock
// skips runs at the transition, one it repeats runs once, at its first occurrence.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace drover::cron {

class Expression {
 public:
  // Parses `spec`; an error names the field and the part that did not parse, as
  // cronexpr's do ("syntax error in minute field: '61'").
  static absl::StatusOr<Expression> Parse(std::string_view spec);

  // The first time strictly after `after` that the expression matches, in `zone`;
  // nothing when none comes before the end of year 2099.
  std::optional<absl::Time> Next(absl::Time after, absl::TimeZone zone) const;

 private:
  friend struct Parser;
  bool DayMatches(const absl::CivilDay& day) const;

  std::bitset<60> seconds_, minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<32> workdays_;       // `15W`: the weekday nearest the 15th
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0 (Sunday)..6
  std::bitset<7> last_weekdays_;   // `5L`
  std::bitset<35> nth_weekdays_;   // `5#3`: (3-1)*7+5
  std::bitset<130> years_;         // 1970..2099
  bool last_day_ = false;          // `L`
  bool last_workday_ = false;      // `LW`
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

// The IANA time zone `name` names (Go's time.LoadLocation, whose errors Nomad shows):
// "" and "UTC" are UTC, "Local" the machine's zone; a name with "..", or one that
// starts with '/' or '\\' (a path, not a zone) is "time: invalid location name", and a
// zone the tz database does not have "unknown time zone <name>". Reads the zone's file
// the first time (tzdata), then from a process-wide cache.
absl::StatusOr<absl::TimeZone> LoadZone(std::string_view name);

// The first time strictly after `after` that any of `specs` matches in the zone named
// `zone_name` (a periodic block's launch); nothing when none has one. An error for a
// spec or zone that does not parse.
absl::StatusOr<std::optional<absl::Time>> NextOfAny(const std::vector<std::string>& specs,
                                                    std::string_view zone_name, absl::Time after);

}  // namespace drover::cron
