#include "cron/cron.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::cron {
namespace {

using ::testing::HasSubstr;

absl::Time At(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return t;
}

std::string Fmt(const std::optional<absl::Time>& t, absl::TimeZone z = absl::UTCTimeZone()) {
  return t ? absl::FormatTime("%Y-%m-%d %H:%M:%S %a", *t, z) : "never";
}

// The next `n` times after `from` (UTC).
std::vector<std::string> Series(const std::string& spec, const std::string& from, int n,
                                absl::TimeZone z = absl::UTCTimeZone()) {
  absl::StatusOr<Expression> x = Expression::Parse(spec);
  EXPECT_TRUE(x.ok()) << spec << ": " << x.status();
  std::vector<std::string> out;
  if (!x.ok())
    return out;
  absl::Time t = At(from);
  for (int i = 0; i < n; ++i) {
    std::optional<absl::Time> next = x->Next(t, z);
    out.push_back(Fmt(next, z));
    if (!next)
      break;
    t = *next;
  }
  return out;
}

std::string Error(const std::string& spec) {
  absl::StatusOr<Expression> x = Expression::Parse(spec);
  return x.ok() ? "parsed" : std::string(x.status().message());
}

TEST(CronTest, FiveFieldsStartAtSecondZeroAndComeStrictlyAfter) {
  EXPECT_THAT(Series("*/15 * * * *", "2026-12-03T10:07:30Z", 3),
              ::testing::ElementsAre("2026-12-03 10:15:00 Thu", "2026-12-03 10:30:00 Thu",
                                     "2026-12-03 10:45:00 Thu"));
  // Exactly on a match: the next one, not the same.
  EXPECT_THAT(Series("0 12 * * *", "2026-12-03T12:00:00Z", 1),
              ::testing::ElementsAre("2026-12-04 12:00:00 Fri"));
}

TEST(CronTest, SevenFieldsHaveSecondsAndSixAYear) {
  EXPECT_THAT(Series("* * * * * * *", "2026-12-03T10:00:00Z", 2),
              ::testing::ElementsAre("2026-12-03 10:00:01 Thu", "2026-12-03 10:00:02 Thu"));
  EXPECT_THAT(Series("30 0 0 1 1 * 2028", "2026-12-03T00:00:00Z", 2),
              ::testing::ElementsAre("2028-01-01 00:00:30 Sat", "never"));
  EXPECT_THAT(Series("0 0 29 2 * 2027-2030", "2026-01-01T00:00:00Z", 2),
              ::testing::ElementsAre("2028-02-29 00:00:00 Tue", "never"));
}

TEST(CronTest, RangesStepsListsAndNames) {
  EXPECT_THAT(Series("0 9-17/4 * * mon-fri", "2026-12-04T12:00:00Z", 4),
              ::testing::ElementsAre("2026-12-04 13:00:00 Fri", "2026-12-04 17:00:00 Fri",
                                     "2026-12-07 09:00:00 Mon", "2026-12-07 13:00:00 Mon"));
  EXPECT_THAT(Series("0 0 1 JAN,Jul ?", "2026-12-03T00:00:00Z", 2),
              ::testing::ElementsAre("2027-01-01 00:00:00 Fri", "2027-07-01 00:00:00 Thu"));
  EXPECT_THAT(Series("5/20 0 1 1 *", "2026-12-03T00:00:00Z", 3),
              ::testing::ElementsAre("2027-01-01 00:05:00 Fri", "2027-01-01 00:25:00 Fri",
                                     "2027-01-01 00:45:00 Fri"));
  // Weekday 7 is Sunday, as 0 is.
  EXPECT_THAT(Series("0 0 * * 7", "2026-12-03T00:00:00Z", 1),
              ::testing::ElementsAre("2026-12-06 00:00:00 Sun"));
}

TEST(CronTest, Macros) {
  EXPECT_THAT(Series("@hourly", "2026-12-03T10:20:00Z", 1),
              ::testing::ElementsAre("2026-12-03 11:00:00 Thu"));
  EXPECT_THAT(Series("@daily", "2026-12-03T10:20:00Z", 1),
              ::testing::ElementsAre("2026-12-04 00:00:00 Fri"));
  EXPECT_THAT(Series("@weekly", "2026-12-03T10:20:00Z", 1),
              ::testing::ElementsAre("2026-12-06 00:00:00 Sun"));
  EXPECT_THAT(Series("@monthly", "2026-12-03T10:20:00Z", 1),
              ::testing::ElementsAre("2027-01-01 00:00:00 Fri"));
  EXPECT_THAT(Series("@yearly", "2026-12-03T10:20:00Z", 1),
              ::testing::ElementsAre("2027-01-01 00:00:00 Fri"));
  EXPECT_EQ(Error("@annually"), "parsed");
  EXPECT_EQ(Error("@midnight"), "parsed");
}

TEST(CronTest, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // The 13th, or any Friday.
  EXPECT_THAT(Series("0 0 13 * fri", "2026-12-03T00:00:00Z", 3),
              ::testing::ElementsAre("2026-12-04 00:00:00 Fri", "2026-12-11 00:00:00 Fri",
                                     "2026-12-13 00:00:00 Sun"));
}

TEST(CronTest, LastDaysNearestWeekdaysAndNthWeekdays) {
  EXPECT_THAT(Series("0 0 L * *", "2027-01-31T12:00:00Z", 2),
              ::testing::ElementsAre("2027-02-28 00:00:00 Sun", "2027-03-31 00:00:00 Wed"));
  // The last weekday of January 2027 (31st is a Sunday) is Friday the 29th.
  EXPECT_THAT(Series("0 0 LW * *", "2027-01-01T00:00:00Z", 1),
              ::testing::ElementsAre("2027-01-29 00:00:00 Fri"));
  // 2027-05-01 is a Saturday: the nearest weekday within May is Monday the 3rd; the
  // 15th (a Saturday) moves to Friday the 14th.
  EXPECT_THAT(Series("0 0 1W,15W 5 *", "2027-01-01T00:00:00Z", 2),
              ::testing::ElementsAre("2027-05-03 00:00:00 Mon", "2027-05-14 00:00:00 Fri"));
  EXPECT_THAT(Series("0 0 * * 5L", "2026-12-01T00:00:00Z", 2),
              ::testing::ElementsAre("2026-12-25 00:00:00 Fri", "2027-01-29 00:00:00 Fri"));
  EXPECT_THAT(Series("0 0 * * mon#2", "2026-12-01T00:00:00Z", 2),
              ::testing::ElementsAre("2026-12-14 00:00:00 Mon", "2027-01-11 00:00:00 Mon"));
}

TEST(CronTest, ExpressionsThatNeverMatchEnd) {
  EXPECT_THAT(Series("0 0 30 2 *", "2026-12-03T00:00:00Z", 1), ::testing::ElementsAre("never"));
}

TEST(CronTest, TimeZonesFollowTheWallClockAcrossDaylightSaving) {
  absl::TimeZone ny;
  ASSERT_TRUE(absl::LoadTimeZone("America/New_York", &ny));
  // 09:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer.
  absl::StatusOr<Expression> nine = Expression::Parse("0 9 * * *");
  ASSERT_TRUE(nine.ok());
  EXPECT_EQ(Fmt(nine->Next(At("2027-03-13T15:00:00Z"), ny)), "2027-03-14 13:00:00 Sun");
  EXPECT_EQ(Fmt(nine->Next(At("2027-03-12T15:00:00Z"), ny)), "2027-03-13 14:00:00 Sat");
  // 02:30 does not exist on 2027-03-14 there: it runs at the transition (03:00 EDT).
  EXPECT_THAT(Series("30 2 * * *", "2027-03-13T12:00:00Z", 2, ny),
              ::testing::ElementsAre("2027-03-14 03:00:00 Sun", "2027-03-15 02:30:00 Mon"));
  // 01:30 happens twice on 2027-11-07: it runs once.
  EXPECT_THAT(Series("30 1 * * *", "2027-11-06T12:00:00Z", 2, ny),
              ::testing::ElementsAre("2027-11-07 01:30:00 Sun", "2027-11-08 01:30:00 Mon"));
}

TEST(CronTest, ErrorsNameTheFieldAndThePart) {
  EXPECT_EQ(Error("* * * *"), "missing field(s)");
  EXPECT_EQ(Error("* * * * * * * *"), "too many fields");
  EXPECT_EQ(Error("61 * * * *"), "syntax error in minute field: '61'");
  EXPECT_EQ(Error("* 24 * * *"), "syntax error in hour field: '24'");
  EXPECT_EQ(Error("* * 0 * *"), "syntax error in day-of-month field: '0'");
  EXPECT_EQ(Error("* * * 13 *"), "syntax error in month field: '13'");
  EXPECT_EQ(Error("* * * foo *"), "syntax error in month field: 'foo'");
  EXPECT_EQ(Error("* * * * 8"), "syntax error in day-of-week field: '8'");
  EXPECT_EQ(Error("* * * * mon#6"), "syntax error in day-of-week field: 'mon#6'");
  EXPECT_EQ(Error("*/0 * * * *"), "syntax error in minute field: '*/0'");
  EXPECT_EQ(Error("5-1 * * * *"), "syntax error in minute field: '5-1'");
  EXPECT_EQ(Error("1,,2 * * * *"), "syntax error in minute field: ''");
  EXPECT_EQ(Error("* * * * * 1969"), "syntax error in year field: '1969'");
  EXPECT_EQ(Error("60 * * * * * *"), "syntax error in second field: '60'");
  EXPECT_THAT(Error("99999999999 * * * *"), HasSubstr("minute field"));
}

TEST(CronTest, LoadZoneTakesIanaNamesAndRefusesPaths) {
  EXPECT_EQ(LoadZone("").value(), absl::UTCTimeZone());
  EXPECT_EQ(LoadZone("UTC").value(), absl::UTCTimeZone());
  absl::StatusOr<absl::TimeZone> ny = LoadZone("America/New_York");
  ASSERT_TRUE(ny.ok()) << ny.status();
  EXPECT_EQ(ny->name(), "America/New_York");
  EXPECT_EQ(LoadZone("Mars/Olympus_Mons").status().message(),
            "unknown time zone Mars/Olympus_Mons");
  for (const char* path : {"/etc/passwd", "../../etc/passwd", "Europe/../../../etc/shadow",
                           "\\share", "file:/etc/localtime"})
    EXPECT_EQ(LoadZone(path).status().message(), "time: invalid location name") << path;
}

}  // namespace
}  // namespace drover::cron
