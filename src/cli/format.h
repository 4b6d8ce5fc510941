// Output helpers that reproduce the formatting of Nomad's CLI (command/helpers.go and
// github.com/ryanuber/columnize): short IDs, timestamps, relative times, aligned tables,
// byte sizes and placement-failure metrics. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/go_strings.h"
#include "model/allocation.h"

namespace drover::cli {

inline constexpr size_t kShortIdLength = 8;
inline constexpr size_t kFullIdLength = 36;

// The first `length` characters of `s` (Nomad's `limit`).
std::string Limit(std::string_view s, size_t length);
inline std::string ShortId(std::string_view id) {
  return Limit(id, kShortIdLength);
}

// Go's %q: double-quoted with `"`, `\` and control characters escaped.
inline std::string Quote(std::string_view s) {
  return common::GoQuote(s);
}

// Nomad's formatTime: RFC 3339 to the second in the local time zone
// ("2026-11-30T02:53:32Z", "2026-11-30T03:53:32+01:00"); "" before 1970-01-01T00:00:01Z
// (unset times).
std::string FormatTime(common::Time t);
// The same with a fixed UTC offset in seconds (for deterministic tests).
std::string FormatTimeWithOffset(common::Time t, int utc_offset_seconds);
// FormatTime of a Unix-nanosecond timestamp (Nomad's formatUnixNanoTime).
std::string FormatUnixNano(int64_t unix_nanos);
// Task times: "N/A" when unset, else FormatTime.
std::string FormatTaskTime(common::Time t);

// Nomad's prettyTimeDiff: the two most significant non-zero units of |second - first|
// rounded to seconds, with " ago" or " from now" ("10s ago", "1h5m ago", "2d3h ago",
// "0s ago"); "" when `first` is unset.
std::string PrettyTimeDiff(common::Time first, common::Time second);

// Aligns "|"-separated rows into columns joined by two spaces; empty cells read
// "<none>" (Nomad's formatList).
std::string FormatList(const std::vector<std::string>& rows);
// As FormatList but keeps empty cells empty (Nomad's formatListWithSpaces).
std::string FormatListWithSpaces(const std::vector<std::string>& rows);
// "Key|Value" rows as "Key   = Value" (Nomad's formatKV).
std::string FormatKV(const std::vector<std::string>& rows);

// go-humanize IBytes: "300 MiB", "1.5 GiB", "512 B".
std::string HumanizeIBytes(uint64_t bytes);

// Why allocations could not be placed, one "* ..." line per reason, each starting with
// `prefix`, joined by '\n' (Nomad's formatAllocMetrics without scores).
std::string FormatAllocMetrics(const model::AllocMetric& metrics, std::string_view prefix);

}  // namespace drover::cli
