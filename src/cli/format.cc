#include "cli/format.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace drover::cli {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// Number of UTF-8 code points, which is how Go's fmt pads "%-10s".
size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++n;
    }
  }
  return n;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) {
    --q;
  }
  return q;
}

// github.com/ryanuber/columnize with the given glue and empty-cell text.
std::string Columnize(const std::vector<std::string>& rows, std::string_view glue,
                      std::string_view empty) {
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows.size());
  std::vector<size_t> widths;
  for (const std::string& row : rows) {
    std::vector<std::string> elems;
    for (absl::string_view field : absl::StrSplit(row, '|')) {
      std::string value(absl::StripAsciiWhitespace(field));
      if (value.empty() && !empty.empty()) {
        value = std::string(empty);
      }
      elems.push_back(std::move(value));
    }
    for (size_t i = 0; i < elems.size(); ++i) {
      if (widths.size() <= i) {
        widths.push_back(0);
      }
      widths[i] = std::max(widths[i], DisplayWidth(elems[i]));
    }
    cells.push_back(std::move(elems));
  }
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    const auto& elems = cells[r];
    for (size_t i = 0; i < elems.size(); ++i) {
      out += elems[i];
      if (i + 1 < elems.size()) {
        out.append(widths[i] - DisplayWidth(elems[i]), ' ');
        out += glue;
      }
    }
    if (r + 1 < cells.size()) {
      out += '\n';
    }
  }
  return out;
}

}  // namespace

std::string Limit(std::string_view s, size_t length) {
  if (s.size() < length) {
    return std::string(s);
  }
  return std::string(s.substr(0, length));
}

std::string FormatTimeWithOffset(common::Time t, int utc_offset_seconds) {
  const int64_t nanos = common::ToUnixNanos(t);
  const int64_t seconds = FloorDiv(nanos, kNanosPerSecond);
  if (seconds < 1) {
    return "";
  }
  const absl::Time at = absl::FromUnixSeconds(seconds);
  const absl::TimeZone zone = absl::FixedTimeZone(utc_offset_seconds);
  std::string out = absl::FormatTime("%Y-%m-%dT%H:%M:%S", at, zone);
  if (utc_offset_seconds == 0) {
    return out + "Z";
  }
  const int abs_offset = utc_offset_seconds < 0 ? -utc_offset_seconds : utc_offset_seconds;
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%c%02d:%02d", utc_offset_seconds < 0 ? '-' : '+',
                abs_offset / 3600, (abs_offset % 3600) / 60);
  return out + buf;
}

std::string FormatTime(common::Time t) {
  const int64_t seconds = FloorDiv(common::ToUnixNanos(t), kNanosPerSecond);
  if (seconds < 1) {
    return "";
  }
  const absl::TimeZone local = absl::LocalTimeZone();
  const int offset = local.At(absl::FromUnixSeconds(seconds)).offset;
  return FormatTimeWithOffset(t, offset);
}

std::string FormatUnixNano(int64_t unix_nanos) {
  return FormatTime(common::FromUnixNanos(unix_nanos));
}

std::string FormatTaskTime(common::Time t) {
  if (common::ToUnixNanos(t) == 0) {
    return "N/A";
  }
  return FormatTime(t);
}

std::string PrettyTimeDiff(common::Time first, common::Time second) {
  const int64_t first_ns = common::ToUnixNanos(first);
  if (first_ns == 0) {
    return "";
  }
  auto round_seconds = [](int64_t ns) {
    return FloorDiv(ns + kNanosPerSecond / 2, kNanosPerSecond);
  };
  const int64_t a = round_seconds(first_ns);
  const int64_t b = round_seconds(common::ToUnixNanos(second));
  std::string suffix = " ago";
  uint64_t diff = 0;
  if (b >= a) {
    diff = static_cast<uint64_t>(b - a);
  } else {
    diff = static_cast<uint64_t>(a - b);
    suffix = " from now";
  }
  const uint64_t secs = diff % 60;
  const uint64_t total_minutes = diff / 60;
  const uint64_t mins = total_minutes % 60;
  const uint64_t total_hours = total_minutes / 60;
  const uint64_t hours = total_hours % 24;
  const uint64_t total_days = total_hours / 24;
  const uint64_t days = total_days % 30;
  const uint64_t total_months = total_days / 30;
  const uint64_t months = total_months % 12;
  const uint64_t years = total_months / 12;
  // Most significant first; zero units are skipped, as in Nomad.
  const std::pair<uint64_t, const char*> units[] = {{years, "y"}, {months, "mo"}, {days, "d"},
                                                    {hours, "h"}, {mins, "m"},    {secs, "s"}};
  std::string out;
  int taken = 0;
  for (const auto& [value, unit] : units) {
    if (value == 0 || taken == 2) {
      continue;
    }
    absl::StrAppend(&out, value, unit);
    ++taken;
  }
  if (out.empty()) {
    out = "0s";
  }
  return out + suffix;
}

std::string FormatList(const std::vector<std::string>& rows) {
  return Columnize(rows, "  ", "<none>");
}

std::string FormatListWithSpaces(const std::vector<std::string>& rows) {
  return Columnize(rows, "  ", "");
}

std::string FormatKV(const std::vector<std::string>& rows) {
  return Columnize(rows, " = ", "<none>");
}

std::string HumanizeIBytes(uint64_t bytes) {
  if (bytes < 10) {
    return absl::StrCat(bytes, " B");
  }
  static constexpr const char* kSizes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t exp = 0;
  long double scale = 1;
  while (exp + 1 < std::size(kSizes) && static_cast<long double>(bytes) >= scale * 1024) {
    scale *= 1024;
    ++exp;
  }
  const double val = static_cast<double>(static_cast<long long>(
                         static_cast<long double>(bytes) / scale * 10 + 0.5)) /
                     10;
  char buf[64];
  std::snprintf(buf, sizeof(buf), val < 10 ? "%.1f %s" : "%.0f %s", val, kSizes[exp]);
  return buf;
}

std::string FormatAllocMetrics(const model::AllocMetric& metrics, std::string_view prefix) {
  const std::string p(prefix);
  std::vector<std::string> lines;
  if (metrics.nodes_evaluated == 0) {
    lines.push_back(absl::StrCat(p, "* No nodes were eligible for evaluation"));
  }
  for (const auto& [node_class, n] : metrics.class_filtered) {
    lines.push_back(
        absl::StrCat(p, "* Class ", Quote(node_class), ": ", n, " nodes excluded by filter"));
  }
  for (const auto& [constraint, n] : metrics.constraint_filtered) {
    lines.push_back(
        absl::StrCat(p, "* Constraint ", Quote(constraint), ": ", n, " nodes excluded by filter"));
  }
  if (metrics.nodes_exhausted > 0) {
    lines.push_back(
        absl::StrCat(p, "* Resources exhausted on ", metrics.nodes_exhausted, " nodes"));
  }
  for (const auto& [dimension, n] : metrics.dimension_exhausted) {
    lines.push_back(
        absl::StrCat(p, "* Dimension ", Quote(dimension), " exhausted on ", n, " nodes"));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace drover::cli
