#include "cron/cron.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"

namespace drover::cron {

namespace {

constexpr int kFirstYear = 1970;
// Where the tz database is: $TZDIR, as absl reads it, else where Debian's tzdata puts it.
std::filesystem::path ZoneInfoDir() {
  const char* dir = std::getenv("TZDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo";
}
constexpr int kLastYear = 2099;

struct Field {
  const char* name;
  int min;
  int max;
  // Names accepted for values (lower case), index = value - name_base; empty: none.
  std::vector<std::string_view> names;
  int name_base = 0;
};

const Field kSecond{"second", 0, 59, {}};
const Field kMinute{"minute", 0, 59, {}};
const Field kHour{"hour", 0, 23, {}};
const Field kDayOfMonth{"day-of-month", 1, 31, {}};
const Field kMonth{
    "month",
    1,
    12,
    {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
    1};
const Field kDayOfWeek{"day-of-week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, 0};
const Field kYear{"year", kFirstYear, kLastYear, {}};

constexpr std::array<std::string_view, 12> kMonthLong = {
    "january", "february", "march",     "april",   "may",      "june",
    "july",    "august",   "september", "october", "november", "december"};
constexpr std::array<std::string_view, 7> kDayLong = {"sunday",   "monday", "tuesday", "wednesday",
                                                      "thursday", "friday", "saturday"};

absl::Status SyntaxError(const Field& f, std::string_view part) {
  return absl::InvalidArgumentError(std::string("syntax error in ") + f.name + " field: '" +
                                    std::string(part) + "'");
}

// `s` cut at every character of `separators`; empty pieces kept unless `skip_empty`.
std::vector<std::string_view> Split(std::string_view s, std::string_view separators,
                                    bool skip_empty = false) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find_first_of(separators, start);
    std::string_view piece = s.substr(start, end == std::string_view::npos ? end : end - start);
    if (!skip_empty || !piece.empty())
      out.push_back(piece);
    if (end == std::string_view::npos)
      return out;
    start = end + 1;
  }
}

std::optional<int> Number(std::string_view s) {
  if (s.empty() || s.size() > 4)
    return std::nullopt;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

// One value of `f`: a number in range or a name (lower case already).
std::optional<int> Value(const Field& f, std::string_view s) {
  if (std::optional<int> n = Number(s); n) {
    if (*n < f.min || *n > f.max)
      return std::nullopt;
    return *n;
  }
  for (size_t i = 0; i < f.names.size(); ++i) {
    if (s == f.names[i])
      return static_cast<int>(i) + f.name_base;
  }
  if (&f == &kMonth) {
    for (size_t i = 0; i < kMonthLong.size(); ++i)
      if (s == kMonthLong[i])
        return static_cast<int>(i) + 1;
  } else if (&f == &kDayOfWeek) {
    for (size_t i = 0; i < kDayLong.size(); ++i)
      if (s == kDayLong[i])
        return static_cast<int>(i);
  }
  return std::nullopt;
}

// The values one list entry of `f` stands for (`*`, `?`, `5`, `1-5`, `*/15`, `5/15`,
// `1-30/2`); nothing when it is not one of those (a special form, or an error).
// `all` tells a `*` or `?` apart.
std::optional<std::vector<int>> Entry(const Field& f, std::string_view e, bool& all) {
  all = false;
  std::string_view range = e;
  int step = 1;
  bool stepped = false;
  if (size_t slash = e.find('/'); slash != std::string_view::npos) {
    std::optional<int> s = Number(e.substr(slash + 1));
    if (!s)
      return std::nullopt;
    step = *s;
    stepped = true;
    range = e.substr(0, slash);
  }
  int first = f.min, last = f.max;
  if (range == "*" || range == "?") {
    all = !stepped;
  } else if (size_t dash = range.find('-'); dash != std::string_view::npos) {
    std::optional<int> a = Value(f, range.substr(0, dash));
    std::optional<int> b = Value(f, range.substr(dash + 1));
    if (!a || !b || *a > *b)
      return std::nullopt;
    first = *a;
    last = *b;
  } else {
    std::optional<int> a = Value(f, range);
    if (!a)
      return std::nullopt;
    first = *a;
    last = stepped ? f.max : *a;
  }
  if (step < 1 || step > f.max)
    return std::nullopt;
  std::vector<int> out;
  for (int v = first; v <= last; v += step)
    out.push_back(v);
  return out;
}

// The entries of a plain field, into `bits` offset by `base`.
template <size_t N>
absl::Status Plain(const Field& f, std::string_view text, std::bitset<N>& bits, int base = 0) {
  for (std::string_view e : Split(text, ",")) {
    bool all = false;
    std::optional<std::vector<int>> values = Entry(f, e, all);
    if (!values)
      return SyntaxError(f, e);
    for (int v : *values)
      bits.set(static_cast<size_t>(v - base));
  }
  return absl::OkStatus();
}

int DaysIn(const absl::CivilMonth& m) {
  return static_cast<int>(absl::CivilDay(absl::CivilMonth(m + 1)) - absl::CivilDay(m));
}

// 0 (Sunday)..6; absl counts from Monday (0) to Sunday (6).
int Weekday(const absl::CivilDay& d) {
  return (static_cast<int>(absl::GetWeekday(d)) + 1) % 7;
}

// The weekday (Monday..Friday) nearest to day `n` of `m`, within the month.
int NearestWorkday(const absl::CivilMonth& m, int n) {
  const int days = DaysIn(m);
  const int wd = Weekday(absl::CivilDay(m.year(), m.month(), n));
  if (wd == 6)
    return n == 1 ? n + 2 : n - 1;
  if (wd == 0)
    return n == days ? n - 2 : n + 1;
  return n;
}

}  // namespace

struct Parser {
  static absl::Status DayOfMonth(std::string_view text, Expression& x) {
    x.dom_restricted_ = true;
    for (std::string_view e : Split(text, ",")) {
      bool all = false;
      if (std::optional<std::vector<int>> v = Entry(kDayOfMonth, e, all); v) {
        x.dom_restricted_ = x.dom_restricted_ && !all;
        for (int d : *v)
          x.days_of_month_.set(static_cast<size_t>(d));
      } else if (e == "l") {
        x.last_day_ = true;
      } else if (e == "lw") {
        x.last_workday_ = true;
      } else if (std::optional<int> d = e.size() > 1 && e.back() == 'w'
                                            ? Value(kDayOfMonth, e.substr(0, e.size() - 1))
                                            : std::nullopt;
                 d) {
        x.workdays_.set(static_cast<size_t>(*d));
      } else {
        return SyntaxError(kDayOfMonth, e);
      }
    }
    return absl::OkStatus();
  }

  static absl::Status DayOfWeek(std::string_view text, Expression& x) {
    x.dow_restricted_ = true;
    for (std::string_view e : Split(text, ",")) {
      bool all = false;
      if (std::optional<std::vector<int>> v = Entry(kDayOfWeek, e, all); v) {
        x.dow_restricted_ = x.dow_restricted_ && !all;
        for (int d : *v)
          x.days_of_week_.set(static_cast<size_t>(d % 7));
        continue;
      }
      const size_t hash = e.find('#');
      if (e.size() > 1 && e.back() == 'l') {
        if (std::optional<int> d = Value(kDayOfWeek, e.substr(0, e.size() - 1)); d) {
          x.last_weekdays_.set(static_cast<size_t>(*d % 7));
          continue;
        }
      } else if (hash != std::string_view::npos) {
        std::optional<int> d = Value(kDayOfWeek, e.substr(0, hash));
        std::optional<int> nth = Number(e.substr(hash + 1));
        if (d && nth && *nth >= 1 && *nth <= 5) {
          x.nth_weekdays_.set(static_cast<size_t>((*nth - 1) * 7 + *d % 7));
          continue;
        }
      }
      return SyntaxError(kDayOfWeek, e);
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<Expression> Expression::Parse(std::string_view spec) {
  std::string text(spec);
  absl::AsciiStrToLower(&text);
  absl::StripAsciiWhitespace(&text);
  if (text == "@yearly" || text == "@annually")
    text = "0 0 0 1 1 * *";
  else if (text == "@monthly")
    text = "0 0 0 1 * * *";
  else if (text == "@weekly")
    text = "0 0 0 * * 0 *";
  else if (text == "@daily" || text == "@midnight")
    text = "0 0 0 * * * *";
  else if (text == "@hourly")
    text = "0 0 * * * * *";
  const std::vector<std::string_view> fields = Split(text, " \t\n", /*skip_empty=*/true);
  if (fields.size() < 5)
    return absl::InvalidArgumentError("missing field(s)");
  if (fields.size() > 7)
    return absl::InvalidArgumentError("too many fields");

  Expression x;
  size_t i = 0;
  if (fields.size() == 7) {
    if (absl::Status s = Plain(kSecond, fields[i++], x.seconds_); !s.ok())
      return s;
  } else {
    x.seconds_.set(0);
  }
  if (absl::Status s = Plain(kMinute, fields[i++], x.minutes_); !s.ok())
    return s;
  if (absl::Status s = Plain(kHour, fields[i++], x.hours_); !s.ok())
    return s;
  if (absl::Status s = Parser::DayOfMonth(fields[i++], x); !s.ok())
    return s;
  if (absl::Status s = Plain(kMonth, fields[i++], x.months_); !s.ok())
    return s;
  if (absl::Status s = Parser::DayOfWeek(fields[i++], x); !s.ok())
    return s;
  if (i < fields.size()) {
    if (absl::Status s = Plain(kYear, fields[i], x.years_, kFirstYear); !s.ok())
      return s;
  } else {
    x.years_.set();
  }
  return x;
}

bool Expression::DayMatches(const absl::CivilDay& day) const {
  const absl::CivilMonth month(day);
  const int d = day.day();
  const int days = DaysIn(month);
  bool dom = days_of_month_.test(static_cast<size_t>(d)) || (last_day_ && d == days);
  if (!dom && last_workday_)
    dom = d == NearestWorkday(month, days);
  for (int n = 1; !dom && n <= days; ++n) {
    if (workdays_.test(static_cast<size_t>(n)))
      dom = d == NearestWorkday(month, n);
  }
  const int wd = Weekday(day);
  const bool dow = days_of_week_.test(static_cast<size_t>(wd)) ||
                   (last_weekdays_.test(static_cast<size_t>(wd)) && d + 7 > days) ||
                   nth_weekdays_.test(static_cast<size_t>((d - 1) / 7 * 7 + wd));
  if (dom_restricted_ && dow_restricted_)
    return dom || dow;
  if (dom_restricted_)
    return dom;
  if (dow_restricted_)
    return dow;
  return true;
}

std::optional<absl::Time> Expression::Next(absl::Time after, absl::TimeZone zone) const {
  absl::CivilSecond t = absl::ToCivilSecond(after, zone) + 1;
  // Each step moves to the start of the next year, month, day, hour or minute that
  // could match, so the walk is short even for rare expressions.
  while (t.year() <= kLastYear) {
    if (t.year() < kFirstYear || !years_.test(static_cast<size_t>(t.year() - kFirstYear))) {
      t = absl::CivilSecond(absl::CivilYear(t) + 1);
    } else if (!months_.test(static_cast<size_t>(t.month()))) {
      t = absl::CivilSecond(absl::CivilMonth(t) + 1);
    } else if (!DayMatches(absl::CivilDay(t))) {
      t = absl::CivilSecond(absl::CivilDay(t) + 1);
    } else if (!hours_.test(static_cast<size_t>(t.hour()))) {
      t = absl::CivilSecond(absl::CivilHour(t) + 1);
    } else if (!minutes_.test(static_cast<size_t>(t.minute()))) {
      t = absl::CivilSecond(absl::CivilMinute(t) + 1);
    } else if (!seconds_.test(static_cast<size_t>(t.second()))) {
      t += 1;
    } else {
      const absl::TimeZone::TimeInfo info = zone.At(t);
      // Skipped by a clock change: at the transition. Repeated: its first occurrence
      // only; when that is not after `after`, it ran already and the search goes on.
      const absl::Time at = info.kind == absl::TimeZone::TimeInfo::SKIPPED ? info.trans : info.pre;
      if (at > after)
        return at;
      t += 1;
    }
  }
  return std::nullopt;
}

absl::StatusOr<absl::TimeZone> LoadZone(std::string_view name) {
  if (name.empty() || name == "UTC")
    return absl::UTCTimeZone();
  if (name == "Local")
    return absl::LocalTimeZone();
  if (name.find("..") != std::string_view::npos || name.front() == '/' || name.front() == '\\' ||
      name.substr(0, 5) == "file:" || name.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("time: invalid location name");
  }
  // Only names the tz database has reach absl, whose process-wide cache keeps every
  // name it was asked for, found or not.
  const bool plausible = name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
                           return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '/' ||
                                  c == '_' || c == '-' || c == '+';
                         });
  std::error_code ec;
  if (!plausible || !std::filesystem::is_regular_file(ZoneInfoDir() / name, ec)) {
    return absl::NotFoundError("unknown time zone " + std::string(name));
  }
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(std::string(name), &zone))
    return absl::NotFoundError("unknown time zone " + std::string(name));
  return zone;
}

absl::StatusOr<std::optional<absl::Time>> NextOfAny(const std::vector<std::string>& specs,
                                                    std::string_view zone_name, absl::Time after) {
  absl::StatusOr<absl::TimeZone> zone = LoadZone(zone_name);
  if (!zone.ok())
    return zone.status();
  std::optional<absl::Time> next;
  for (const std::string& spec : specs) {
    absl::StatusOr<Expression> e = Expression::Parse(spec);
    if (!e.ok())
      return e.status();
    std::optional<absl::Time> t = e->Next(after, *zone);
    if (t && (!next || *t < *next))
      next = t;
  }
  return next;
}

}  // namespace drover::cron
