// HCL's conversions between values (to string, number, bool), type names for
// messages, and the size and depth measures the evaluator's limits use.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jobspec/eval.h"

namespace drover::jobspec {

namespace {

std::string FormatDouble(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
    return std::to_string(static_cast<int64_t>(d));
  }
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e21) {
    char digits[32];
    std::snprintf(digits, sizeof(digits), "%.0f", d);  // 1e20 → 100000000000000000000
    return digits;
  }
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, ec == std::errc() ? ptr : buf);
}

}  // namespace

uint64_t ValueWeight(const Json& v, uint64_t cap) {
  if (v.is_string()) {
    return 1 + v.get_ref<const std::string&>().size() / 16;
  }
  if (!v.is_array() && !v.is_object()) {
    return 1;
  }
  uint64_t total = 1;
  for (const Json& item : v) {
    total += ValueWeight(item, cap - std::min(cap, total));
    if (total > cap) {
      break;
    }
  }
  return total;
}

bool ValueDeeperThan(const Json& v, int limit) {
  if (!v.is_array() && !v.is_object()) {
    return false;
  }
  if (limit <= 0) {
    return true;
  }
  for (const Json& item : v) {
    if (ValueDeeperThan(item, limit - 1)) {
      return true;
    }
  }
  return false;
}

bool JsonTextDeeperThan(absl::string_view s, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > limit) {
      return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

bool ToHclString(const Json& v, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
  } else if (v.is_boolean()) {
    out = v.get<bool>() ? "true" : "false";
  } else if (v.is_number_integer()) {
    out = v.is_number_unsigned() ? std::to_string(v.get<uint64_t>())
                                 : std::to_string(v.get<int64_t>());
  } else if (v.is_number_float()) {
    out = FormatDouble(v.get<double>());
  } else {
    return false;
  }
  return true;
}

bool ToHclNumber(const Json& v, Json& out) {
  if (v.is_number()) {
    out = v;
    return true;
  }
  if (!v.is_string()) {
    return false;
  }
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) {
    return false;
  }
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      ec == std::errc() && p == s.data() + s.size()) {
    out = i;
    return true;
  }
  double d = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      ec == std::errc() && p == s.data() + s.size() && std::isfinite(d)) {
    out = d;
    return true;
  }
  return false;
}

bool ToHclBool(const Json& v, bool& out) {
  if (v.is_boolean()) {
    out = v.get<bool>();
    return true;
  }
  if (v.is_string() && (v == "true" || v == "false")) {
    out = v == "true";
    return true;
  }
  return false;
}

std::string TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "tuple";
    case Json::value_t::object:
      return "object";
    default:
      return v.is_number() ? "number" : "value";
  }
}

}  // namespace drover::jobspec
