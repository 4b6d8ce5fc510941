#include "cli/format.h"

#include <string>
#include <vector>

#include "cli/listing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace drover::cli {
namespace {

using common::FromUnixNanos;
using common::Time;

constexpr int64_t kSecond = 1'000'000'000;
// 2026-11-30T02:53:32Z.
constexpr int64_t kT0 = 1796007212 * kSecond;

Time At(int64_t unix_nanos) {
  return FromUnixNanos(unix_nanos);
}

TEST(FormatTest, LimitCutsIdsToLength) {
  EXPECT_EQ(ShortId("5e2c6f8d-1111-2222-3333-444455556666"), "5e2c6f8d");
  EXPECT_EQ(ShortId("abc"), "abc");
  EXPECT_EQ(ShortId(""), "");
  EXPECT_EQ(Limit("5e2c6f8d-1111", kFullIdLength), "5e2c6f8d-1111");
}

TEST(FormatTest, QuoteEscapesLikeGo) {
  EXPECT_EQ(Quote("hello"), "\"hello\"");
  EXPECT_EQ(Quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(Quote("${attr.kernel.name} = windows"), "\"${attr.kernel.name} = windows\"");
}

TEST(FormatTest, FormatTimeIsRfc3339ToTheSecond) {
  EXPECT_EQ(FormatTimeWithOffset(At(kT0), 0), "2026-11-30T02:53:32Z");
  EXPECT_EQ(FormatTimeWithOffset(At(kT0 + 999'999'999), 0), "2026-11-30T02:53:32Z");
  EXPECT_EQ(FormatTimeWithOffset(At(kT0), 3600), "2026-11-30T03:53:32+01:00");
  EXPECT_EQ(FormatTimeWithOffset(At(kT0), -4 * 3600 - 1800), "2026-11-29T22:23:32-04:30");
}

TEST(FormatTest, UnsetTimesFormatAsEmptyOrNA) {
  EXPECT_EQ(FormatTimeWithOffset(At(0), 0), "");
  EXPECT_EQ(FormatTime(At(0)), "");
  EXPECT_EQ(FormatUnixNano(0), "");
  EXPECT_EQ(FormatTaskTime(At(0)), "N/A");
  EXPECT_NE(FormatTaskTime(At(kT0)), "N/A");
}

TEST(FormatTest, PrettyTimeDiffKeepsTwoMostSignificantUnits) {
  const Time now = At(kT0);
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - 10 * kSecond), now), "10s ago");
  EXPECT_EQ(PrettyTimeDiff(now, now), "0s ago");
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - 9'600'000'000), now), "10s ago");  // rounded
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - 95 * kSecond), now), "1m35s ago");
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - 3605 * kSecond), now), "1h5s ago");  // zero minutes skipped
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - (2 * 86400 + 3 * 3600 + 240) * kSecond), now), "2d3h ago");
  EXPECT_EQ(PrettyTimeDiff(At(kT0 - int64_t{400} * 86400 * kSecond), now), "1y1mo ago");
  EXPECT_EQ(PrettyTimeDiff(At(kT0 + 90 * kSecond), now), "1m30s from now");
  EXPECT_EQ(PrettyTimeDiff(At(0), now), "");
}

TEST(FormatTest, FormatListAlignsColumnsAndFillsEmptyCells) {
  EXPECT_EQ(FormatList({"ID|Type|Priority", "hello|service|50", "a-much-longer-id||1"}),
            "ID                Type     Priority\n"
            "hello             service  50\n"
            "a-much-longer-id  <none>   1");
}

TEST(FormatTest, FormatListDoesNotPadTheLastColumn) {
  EXPECT_EQ(FormatList({"A|B", "aaaa|bbbbbbbb", "a|b"}), "A     B\naaaa  bbbbbbbb\na     b");
}

TEST(FormatTest, FormatListWithSpacesKeepsEmptyCells) {
  EXPECT_EQ(FormatListWithSpaces({"CPU|Memory|Disk|Addresses", "100 MHz|300 MiB|300 MiB|"}),
            "CPU      Memory   Disk     Addresses\n"
            "100 MHz  300 MiB  300 MiB  ");
}

TEST(FormatTest, FormatKVAlignsKeys) {
  EXPECT_EQ(FormatKV({"ID|hello", "Submit Date|2026-11-30T02:53:32Z", "Periodic|"}),
            "ID          = hello\n"
            "Submit Date = 2026-11-30T02:53:32Z\n"
            "Periodic    = <none>");
}

TEST(FormatTest, HumanizeIBytesMatchesGoHumanize) {
  EXPECT_EQ(HumanizeIBytes(5), "5 B");
  EXPECT_EQ(HumanizeIBytes(512), "512 B");
  EXPECT_EQ(HumanizeIBytes(1024), "1.0 KiB");
  EXPECT_EQ(HumanizeIBytes(300ULL * 1024 * 1024), "300 MiB");
  EXPECT_EQ(HumanizeIBytes(1536ULL * 1024 * 1024), "1.5 GiB");
  EXPECT_EQ(HumanizeIBytes(1100ULL * 1024), "1.1 MiB");
}

TEST(FormatTest, FormatAllocMetricsListsEveryReason) {
  model::AllocMetric m;
  m.nodes_evaluated = 2;
  m.constraint_filtered = {{"${attr.kernel.name} = windows", 1}};
  m.class_filtered = {{"gpu", 3}};
  m.nodes_exhausted = 1;
  m.dimension_exhausted = {{"memory", 1}};
  EXPECT_EQ(FormatAllocMetrics(m, "  "),
            "  * Class \"gpu\": 3 nodes excluded by filter\n"
            "  * Constraint \"${attr.kernel.name} = windows\": 1 nodes excluded by filter\n"
            "  * Resources exhausted on 1 nodes\n"
            "  * Dimension \"memory\" exhausted on 1 nodes");
}

TEST(FormatTest, FormatAllocMetricsWithNoEligibleNodes) {
  model::AllocMetric m;
  EXPECT_EQ(FormatAllocMetrics(m, ""), "* No nodes were eligible for evaluation");
}

TEST(ListingTest, FormatAllocListShortForm) {
  AllocRow a;
  a.id = "a1b2c3d4-0000-0000-0000-000000000000";
  a.node_id = "12345678-9999-9999-9999-999999999999";
  a.task_group = "web";
  a.job_version = 3;
  a.desired_status = "run";
  a.client_status = "running";
  a.create_time = kT0 - 70 * kSecond;
  a.modify_time = kT0 - 10 * kSecond;
  EXPECT_EQ(FormatAllocList({a}, /*verbose=*/false, kShortIdLength, At(kT0)),
            "ID        Node ID   Task Group  Version  Desired  Status   Created    Modified\n"
            "a1b2c3d4  12345678  web         3        run      running  1m10s ago  10s ago");
}

TEST(ListingTest, FormatAllocListEmpty) {
  EXPECT_EQ(FormatAllocList({}, false, kShortIdLength, At(kT0)), "No allocations placed");
}

TEST(ListingTest, AllocRowReadsStubsAndFullAllocations) {
  const auto stub = nlohmann::json::parse(
      R"({"ID":"a","JobVersion":2,"ClientStatus":"running","ClientDescription":"ok",
          "CreateIndex":7,"NodeID":null})");
  AllocRow row = AllocRowFromJson(stub);
  EXPECT_EQ(row.id, "a");
  EXPECT_EQ(row.job_version, 2u);
  EXPECT_EQ(row.client_description, "ok");
  EXPECT_EQ(row.create_index, 7u);
  EXPECT_EQ(row.node_id, "");

  const auto full = nlohmann::json::parse(R"({"ID":"b","Job":{"Version":5}})");
  EXPECT_EQ(AllocRowFromJson(full).job_version, 5u);
}

TEST(ListingTest, JobListShowsTypeSuffixesAndStoppedStatus) {
  const auto stub = nlohmann::json::parse(
      R"({"ID":"cron","Type":"batch","Priority":50,"Status":"dead","Stop":true,
          "Periodic":true,"ParameterizedJob":false,"SubmitTime":0})");
  JobRow row = JobRowFromJson(stub);
  EXPECT_TRUE(row.periodic);
  EXPECT_FALSE(row.parameterized);
  EXPECT_EQ(FormatJobList({row}),
            "ID    Type            Priority  Status          Submit Date\n"
            "cron  batch/periodic  50        dead (stopped)  <none>");
  // Full jobs carry objects or null instead of booleans.
  const auto full = nlohmann::json::parse(R"({"ID":"j","Periodic":null,"ParameterizedJob":{}})");
  EXPECT_FALSE(JobRowFromJson(full).periodic);
  EXPECT_TRUE(JobRowFromJson(full).parameterized);
}

TEST(ListingTest, NodeList) {
  NodeRow n;
  n.id = "f00dfeed-0000-0000-0000-000000000000";
  n.node_pool = "default";
  n.datacenter = "dc1";
  n.name = "laptop";
  n.eligibility = "eligible";
  n.status = "ready";
  EXPECT_EQ(FormatNodeList({n}, false, kShortIdLength),
            "ID        Node Pool  DC   Name    Class   Drain  Eligibility  Status\n"
            "f00dfeed  default    dc1  laptop  <none>  false  eligible     ready");
}

TEST(ListingTest, JobSummaryTable) {
  model::JobSummary s;
  s.summary["web"].running = 2;
  s.summary["db"].queued = 1;
  EXPECT_EQ(FormatJobSummary(s),
            "Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown\n"
            "db          1       0         0        0       0         0     0\n"
            "web         0       0         2        0       0         0     0");
}

}  // namespace
}  // namespace drover::cli
