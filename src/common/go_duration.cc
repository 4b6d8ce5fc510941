#include "common/go_duration.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace drover::common {

absl::StatusOr<Duration> ParseGoDuration(std::string_view text) {
  const std::string original(text);
  auto invalid = [&] {
    return absl::InvalidArgumentError("invalid duration \"" + original + "\"");
  };
  if (text.empty()) {
    return invalid();
  }
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text == "0") {
    return Duration(0);
  }
  if (text.empty()) {
    return invalid();
  }
  long double total = 0;
  while (!text.empty()) {
    size_t i = 0;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == 0) {
      return invalid();
    }
    const std::string number(text.substr(0, i));
    if (number == ".") {
      return invalid();
    }
    text.remove_prefix(i);
    size_t j = 0;
    while (j < text.size() && !std::isdigit(static_cast<unsigned char>(text[j])) &&
           text[j] != '.') {
      ++j;
    }
    const std::string_view unit = text.substr(0, j);
    text.remove_prefix(j);
    long double scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "µs" || unit == "μs") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else {
      return unit.empty()
                 ? absl::InvalidArgumentError("missing unit in duration \"" + original + "\"")
                 : absl::InvalidArgumentError("unknown unit \"" + std::string(unit) +
                                              "\" in duration \"" + original + "\"");
    }
    char* end = nullptr;
    const long double v = std::strtold(number.c_str(), &end);
    if (end == nullptr || *end != '\0') {
      return invalid();
    }
    total += v * scale;
  }
  if (total > static_cast<long double>(INT64_MAX)) {
    return invalid();
  }
  const auto ns = static_cast<int64_t>(std::llround(total));
  return Duration(negative ? -ns : ns);
}

}  // namespace drover::common
