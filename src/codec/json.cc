// Parsing and dumping, generic values, and Go-compatible RFC 3339 times.
#include "codec/json.h"

#include <cstdio>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

#include "codec/internal/json_util.h"

namespace drover::codec {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;
constexpr char kZeroTime[] = "0001-01-01T00:00:00Z";

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) {
    --q;
  }
  return q;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, int& m, int& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  y = yoe + era * 400 + (m <= 2 ? 1 : 0);
}

bool IsLeap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at `pos`.
bool ReadDigits(std::string_view s, size_t& pos, size_t n, int64_t& out) {
  if (pos + n > s.size()) {
    return false;
  }
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') {
      return false;
    }
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool Expect(std::string_view s, size_t& pos, char c) {
  if (pos < s.size() && s[pos] == c) {
    ++pos;
    return true;
  }
  return false;
}

}  // namespace

namespace {

// nlohmann's DOM builder, counting as it goes: parsing stops at the first value past
// the depth or element limit instead of building it (sax_parse calls these by name).
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  BoundedDomParser(Json& root, const JsonLimits& limits)
      : json_sax_dom_parser(root, /*allow_exceptions_=*/false), limits_(limits) {}

  bool null() { return Count() && json_sax_dom_parser::null(); }
  bool boolean(bool v) { return Count() && json_sax_dom_parser::boolean(v); }
  bool number_integer(Json::number_integer_t v) {
    return Count() && json_sax_dom_parser::number_integer(v);
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return Count() && json_sax_dom_parser::number_unsigned(v);
  }
  bool number_float(Json::number_float_t v, const std::string& s) {
    return Count() && json_sax_dom_parser::number_float(v, s);
  }
  bool string(std::string& v) { return Count() && json_sax_dom_parser::string(v); }
  bool binary(Json::binary_t& v) { return Count() && json_sax_dom_parser::binary(v); }
  bool start_object(std::size_t n) { return Enter() && json_sax_dom_parser::start_object(n); }
  bool end_object() {
    --depth_;
    return json_sax_dom_parser::end_object();
  }
  bool start_array(std::size_t n) { return Enter() && json_sax_dom_parser::start_array(n); }
  bool end_array() {
    --depth_;
    return json_sax_dom_parser::end_array();
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    // ex.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string what = ex.what();
    if (const size_t cut = what.find("] "); cut != std::string::npos)
      what = what.substr(cut + 2);
    error_ =
        absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", position, ": ", what));
    return json_sax_dom_parser::parse_error(position, last_token, ex);
  }

  const absl::Status& error() const { return error_; }

 private:
  bool Count() {
    if (++elements_ <= limits_.max_elements)
      return true;
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "invalid JSON: more than ", limits_.max_elements, " values (the limit for one document)"));
    return false;
  }
  bool Enter() {
    if (!Count())
      return false;
    if (++depth_ <= limits_.max_depth)
      return true;
    error_ = absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: nested deeper than ", limits_.max_depth, " levels"));
    return false;
  }

  const JsonLimits limits_;
  size_t depth_ = 0;
  size_t elements_ = 0;
  absl::Status error_;
};

// Appends to a string and gives up once it would pass a size.
class BoundedOutput : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  struct Full {};
  BoundedOutput(std::string& out, size_t max) : out_(out), max_(max) {}
  void write_character(char c) override {
    if (out_.size() >= max_)
      throw Full{};
    out_.push_back(c);
  }
  void write_characters(const char* s, std::size_t n) override {
    if (n > max_ - out_.size())
      throw Full{};
    out_.append(s, n);
  }

 private:
  std::string& out_;
  const size_t max_;
};

}  // namespace

absl::StatusOr<Json> ParseJson(std::string_view text, const JsonLimits& limits) {
  Json root;
  BoundedDomParser sax(root, limits);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", e.what()));
  }
  if (!ok || sax.is_errored()) {
    if (!sax.error().ok())
      return sax.error();
    return absl::InvalidArgumentError("invalid JSON");
  }
  return root;
}

std::string Dump(const Json& j, bool pretty) {
  // Invalid UTF-8 in strings is replaced (U+FFFD), as Go's encoder does, instead of
  // throwing.
  return j.dump(pretty ? 4 : -1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<std::string> DumpBounded(const Json& j, bool pretty, size_t max_bytes) {
  std::string out;
  auto adapter = std::make_shared<BoundedOutput>(out, max_bytes);
  nlohmann::detail::serializer<Json> s(adapter, ' ', Json::error_handler_t::replace);
  try {
    s.dump(j, pretty, /*ensure_ascii=*/false, pretty ? 4 : 0);
  } catch (const BoundedOutput::Full&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the encoded response would be larger than ", max_bytes, " bytes"));
  }
  return out;
}

std::string RawObject(const std::map<std::string, std::string>& members) {
  std::string out = "{";
  for (const auto& [key, value] : members) {
    if (out.size() > 1)
      out.push_back(',');
    out.append(Dump(Json(key))).append(":").append(value);
  }
  out.push_back('}');
  return out;
}

Json ToJson(const model::Value& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, model::Value::Array>) {
          Json out = Json::array();
          for (const model::Value& e : x) {
            out.push_back(ToJson(e));
          }
          return out;
        } else if constexpr (std::is_same_v<T, model::Value::Object>) {
          Json out = Json::object();
          for (const auto& [k, e] : x) {
            out[k] = ToJson(e);
          }
          return out;
        } else {
          return Json(x);
        }
      },
      v.storage());
}

model::Value ValueFromJson(const Json& j) {
  switch (j.type()) {
    case Json::value_t::boolean:
      return model::Value(j.get<bool>());
    case Json::value_t::number_integer:
      return model::Value(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return model::Value(static_cast<double>(u));
      }
      return model::Value(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float:
      return model::Value(j.get<double>());
    case Json::value_t::string:
      return model::Value(j.get<std::string>());
    case Json::value_t::array: {
      model::Value::Array out;
      out.reserve(j.size());
      for (const Json& e : j) {
        out.push_back(ValueFromJson(e));
      }
      return model::Value(std::move(out));
    }
    case Json::value_t::object: {
      model::Value::Object out;
      for (const auto& [k, e] : j.items()) {
        out.emplace(k, ValueFromJson(e));
      }
      return model::Value(std::move(out));
    }
    default:
      return model::Value();
  }
}

std::string FormatTime(model::Time t) {
  const int64_t ns = t.time_since_epoch().count();
  if (ns == 0) {
    return kZeroTime;
  }
  const int64_t secs = FloorDiv(ns, kNanosPerSecond);
  const int64_t frac = ns - secs * kNanosPerSecond;
  const int64_t days = FloorDiv(secs, kSecondsPerDay);
  const int64_t sod = secs - days * kSecondsPerDay;
  int64_t year = 0;
  int month = 0;
  int day = 0;
  CivilFromDays(days, year, month, day);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02d-%02dT%02d:%02d:%02d", static_cast<long long>(year),
                month, day, static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                static_cast<int>(sod % 60));
  std::string out = buf;
  if (frac != 0) {
    // Go's RFC3339Nano: up to nine digits, trailing zeros dropped.
    std::snprintf(buf, sizeof(buf), ".%09lld", static_cast<long long>(frac));
    std::string f = buf;
    while (f.back() == '0') {
      f.pop_back();
    }
    out += f;
  }
  out += "Z";
  return out;
}

absl::StatusOr<model::Time> ParseTime(std::string_view s) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("parsing time \"", std::string(s), "\": ", std::string(why)));
  };
  size_t pos = 0;
  int64_t year = 0;
  int64_t month = 0;
  int64_t day = 0;
  int64_t hour = 0;
  int64_t minute = 0;
  int64_t second = 0;
  if (!ReadDigits(s, pos, 4, year) || !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, month) ||
      !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, day)) {
    return bad("expected YYYY-MM-DD");
  }
  if (!(Expect(s, pos, 'T') || Expect(s, pos, 't'))) {
    return bad("expected 'T'");
  }
  if (!ReadDigits(s, pos, 2, hour) || !Expect(s, pos, ':') || !ReadDigits(s, pos, 2, minute) ||
      !Expect(s, pos, ':') || !ReadDigits(s, pos, 2, second)) {
    return bad("expected hh:mm:ss");
  }
  int64_t frac = 0;
  if (Expect(s, pos, '.')) {
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (s[pos] - '0');
      }
      ++digits;
      ++pos;
    }
    if (digits == 0) {
      return bad("expected fractional seconds");
    }
    for (int i = digits; i < 9; ++i) {
      frac *= 10;
    }
  }
  int64_t offset = 0;
  if (Expect(s, pos, 'Z') || Expect(s, pos, 'z')) {
    offset = 0;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int64_t sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh = 0;
    int64_t om = 0;
    if (!ReadDigits(s, pos, 2, oh) || !Expect(s, pos, ':') || !ReadDigits(s, pos, 2, om) ||
        oh > 23 || om > 59) {
      return bad("bad time zone offset");
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return bad("expected time zone ('Z' or an offset)");
  }
  if (pos != s.size()) {
    return bad("extra text after time");
  }
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, static_cast<int>(month)) ||
      hour > 23 || minute > 59 || second > 59) {
    return bad("field out of range");
  }
  const int64_t secs =
      DaysFromCivil(year, static_cast<int>(month), static_cast<int>(day)) * kSecondsPerDay +
      hour * 3600 + minute * 60 + second - offset;
  static const int64_t kGoZeroSeconds = DaysFromCivil(1, 1, 1) * kSecondsPerDay;
  if (secs == kGoZeroSeconds && frac == 0) {
    return model::Time{};
  }
  // Time is int64 nanoseconds: about years 1678 to 2262.
  constexpr int64_t kMaxSecs = std::numeric_limits<int64_t>::max() / kNanosPerSecond;
  if (secs >= kMaxSecs || secs <= -kMaxSecs) {
    return bad("time out of range");
  }
  return model::Time(model::Duration(secs * kNanosPerSecond + frac));
}

}  // namespace drover::codec
