#include "model/device.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace drover::model {

namespace {

enum class UnitKind { kBytes, kByteRate, kHertz, kWatts };

struct UnitDef {
  std::string_view name;
  UnitKind kind;
  long double factor;       // multiplier to the kind's base unit...
  long double divisor = 1;  // ...and divisor, so that milli-units are exact
};

constexpr long double kKi = 1024.0L;
constexpr long double kK = 1000.0L;

// The units Nomad's attributes know (psstructs/units), plus "kHz" spelled as SI does.
constexpr UnitDef kUnits[] = {
    {"B", UnitKind::kBytes, 1},
    {"KB", UnitKind::kBytes, kK},
    {"KiB", UnitKind::kBytes, kKi},
    {"MB", UnitKind::kBytes, kK* kK},
    {"MiB", UnitKind::kBytes, kKi* kKi},
    {"GB", UnitKind::kBytes, kK* kK* kK},
    {"GiB", UnitKind::kBytes, kKi* kKi* kKi},
    {"TB", UnitKind::kBytes, kK* kK* kK* kK},
    {"TiB", UnitKind::kBytes, kKi* kKi* kKi* kKi},
    {"PB", UnitKind::kBytes, kK* kK* kK* kK* kK},
    {"PiB", UnitKind::kBytes, kKi* kKi* kKi* kKi* kKi},
    {"EB", UnitKind::kBytes, kK* kK* kK* kK* kK* kK},
    {"EiB", UnitKind::kBytes, kKi* kKi* kKi* kKi* kKi* kKi},
    {"B/s", UnitKind::kByteRate, 1},
    {"KB/s", UnitKind::kByteRate, kK},
    {"KiB/s", UnitKind::kByteRate, kKi},
    {"MB/s", UnitKind::kByteRate, kK* kK},
    {"MiB/s", UnitKind::kByteRate, kKi* kKi},
    {"GB/s", UnitKind::kByteRate, kK* kK* kK},
    {"GiB/s", UnitKind::kByteRate, kKi* kKi* kKi},
    {"TB/s", UnitKind::kByteRate, kK* kK* kK* kK},
    {"TiB/s", UnitKind::kByteRate, kKi* kKi* kKi* kKi},
    {"Hz", UnitKind::kHertz, 1},
    {"KHz", UnitKind::kHertz, kK},
    {"kHz", UnitKind::kHertz, kK},
    {"MHz", UnitKind::kHertz, kK* kK},
    {"GHz", UnitKind::kHertz, kK* kK* kK},
    {"mW", UnitKind::kWatts, 1, kK},
    {"W", UnitKind::kWatts, 1},
    {"kW", UnitKind::kWatts, kK},
    {"MW", UnitKind::kWatts, kK* kK},
    {"GW", UnitKind::kWatts, kK* kK* kK},
};

const UnitDef* FindUnit(std::string_view name) {
  for (const UnitDef& u : kUnits) {
    if (u.name == name)
      return &u;
  }
  return nullptr;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

std::optional<long double> NumberOf(const Attribute& a) {
  if (a.int_val)
    return static_cast<long double>(*a.int_val);
  if (a.float_val)
    return static_cast<long double>(*a.float_val);
  return std::nullopt;
}

}  // namespace

Attribute Attribute::Int(int64_t v, std::string unit) {
  Attribute a;
  a.int_val = v;
  a.unit = std::move(unit);
  return a;
}

Attribute Attribute::Float(double v, std::string unit) {
  Attribute a;
  a.float_val = v;
  a.unit = std::move(unit);
  return a;
}

Attribute Attribute::String(std::string v) {
  Attribute a;
  a.string_val = std::move(v);
  return a;
}

Attribute Attribute::Bool(bool v) {
  Attribute a;
  a.bool_val = v;
  return a;
}

std::string Attribute::ToString() const {
  std::string out;
  if (int_val) {
    out = std::to_string(*int_val);
  } else if (float_val) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", *float_val);
    out = buf;
  } else if (bool_val) {
    out = *bool_val ? "true" : "false";
  } else if (string_val) {
    return *string_val;
  }
  if (!unit.empty())
    out += " " + unit;
  return out;
}

bool IsKnownUnit(std::string_view unit) {
  return FindUnit(unit) != nullptr;
}

Attribute ParseAttribute(std::string_view text) {
  const std::string_view s = Trim(text);
  if (s == "true" || s == "false")
    return Attribute::Bool(s == "true");
  // The longest numeric prefix, then an optional unit.
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+'))
    ++i;
  const size_t digits_start = i;
  bool dot = false;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !dot))) {
    dot = dot || s[i] == '.';
    ++i;
  }
  const std::string_view number = s.substr(0, i);
  const std::string_view unit = Trim(s.substr(i));
  const bool has_digit = number.find_first_of("0123456789") != std::string_view::npos;
  if (i == digits_start || !has_digit || (!unit.empty() && !IsKnownUnit(unit)))
    return Attribute::String(std::string(s));
  const char* first = number.data() + (number.front() == '+' ? 1 : 0);
  const char* last = number.data() + number.size();
  if (!dot) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && end == last)
      return Attribute::Int(v, std::string(unit));
  }
  double d = 0;
  auto [end, ec] = std::from_chars(first, last, d);
  if (ec != std::errc() || end != last)
    return Attribute::String(std::string(s));
  return Attribute::Float(d, std::string(unit));
}

std::optional<int> CompareAttributes(const Attribute& a, const Attribute& b) {
  if (a.string_val || b.string_val) {
    if (!a.string_val || !b.string_val)
      return std::nullopt;
    const int c = a.string_val->compare(*b.string_val);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.bool_val || b.bool_val) {
    if (!a.bool_val || !b.bool_val)
      return std::nullopt;
    return *a.bool_val == *b.bool_val ? 0 : (*a.bool_val ? 1 : -1);
  }
  std::optional<long double> x = NumberOf(a);
  std::optional<long double> y = NumberOf(b);
  if (!x || !y)
    return std::nullopt;
  if (a.unit != b.unit) {
    // A bare number compares in the other side's unit ("4 GiB" vs 4 means 4 GiB).
    const UnitDef* ua = a.unit.empty() ? nullptr : FindUnit(a.unit);
    const UnitDef* ub = b.unit.empty() ? nullptr : FindUnit(b.unit);
    if (ua != nullptr && ub != nullptr) {
      if (ua->kind != ub->kind)
        return std::nullopt;
      // x·fa/da vs y·fb/db, compared as x·fa·db vs y·fb·da: integers stay exact.
      *x *= ua->factor * ub->divisor;
      *y *= ub->factor * ua->divisor;
    } else if ((ua == nullptr && !a.unit.empty()) || (ub == nullptr && !b.unit.empty())) {
      return std::nullopt;
    }
  }
  return *x < *y ? -1 : (*x > *y ? 1 : 0);
}

bool DeviceNameMatches(std::string_view requested, const NodeDeviceResource& group) {
  const size_t first = requested.find('/');
  if (first == std::string_view::npos)
    return requested == group.type;
  const std::string_view vendor = requested.substr(0, first);
  const std::string_view rest = requested.substr(first + 1);
  const size_t second = rest.find('/');
  if (second == std::string_view::npos)
    return vendor == group.vendor && rest == group.type;
  return vendor == group.vendor && rest.substr(0, second) == group.type &&
         rest.substr(second + 1) == group.name;
}

std::vector<DeviceGroupStats> MergeDeviceGroupStats(std::vector<DeviceGroupStats> groups) {
  std::vector<DeviceGroupStats> out;
  for (DeviceGroupStats& g : groups) {
    DeviceGroupStats* into = nullptr;
    for (DeviceGroupStats& o : out) {
      if (o.vendor == g.vendor && o.type == g.type && o.name == g.name) {
        into = &o;
        break;
      }
    }
    if (into == nullptr) {
      out.push_back(std::move(g));
      continue;
    }
    for (auto& [id, s] : g.instance_stats)
      into->instance_stats.insert_or_assign(id, std::move(s));
  }
  return out;
}

}  // namespace drover::model
