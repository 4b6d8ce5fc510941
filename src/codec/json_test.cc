// Parsing, times, generic values, evaluations and nodes.
#include "codec/json.h"

#include <chrono>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json_test_util.h"
#include "model/evaluation.h"

namespace drover::codec {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

using testutil::kSomeTimeNs;
using testutil::MustParse;

// --- Parse / dump ---

TEST(ParseJsonTest, ParsesValidText) {
  absl::StatusOr<Json> j = ParseJson(R"({"a": [1, 2.5, "x", null, true]})");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["a"][0], 1);
  EXPECT_EQ((*j)["a"][1], 2.5);
  EXPECT_EQ((*j)["a"][2], "x");
}

TEST(ParseJsonTest, MalformedInputNamesTheByteOffset) {
  absl::StatusOr<Json> j = ParseJson(R"({"a": tru})");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().message(), HasSubstr("invalid JSON at byte"));
  EXPECT_THAT(j.status().message(), HasSubstr("syntax error"));

  EXPECT_FALSE(ParseJson("").ok());
  EXPECT_FALSE(ParseJson("{} extra").ok());
  EXPECT_FALSE(ParseJson("{\"a\": \"\xff\"}").ok());
}

TEST(DumpTest, CompactAndPretty) {
  Json j = {{"b", 1}, {"a", Json::array({1, 2})}};
  EXPECT_EQ(Dump(j), R"({"a":[1,2],"b":1})");
  EXPECT_EQ(Dump(j, true), "{\n    \"a\": [\n        1,\n        2\n    ],\n    \"b\": 1\n}");
}

TEST(DumpTest, InvalidUtf8IsReplacedNotThrown) {
  Json j = std::string(
      "a\xff"
      "b");
  EXPECT_EQ(Dump(j),
            "\"a\xEF\xBF\xBD"
            "b\"");
}

// --- Times ---

TEST(TimeTest, FormatsGoRfc3339Nano) {
  EXPECT_EQ(FormatTime(model::Time{}), "0001-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(kSomeTimeNs)), "2026-08-21T12:00:05.123456789Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(1787313605000000000)), "2026-08-21T12:00:05Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(1787313605500000000)), "2026-08-21T12:00:05.5Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(1787313605000001000)), "2026-08-21T12:00:05.000001Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(-1)), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(FormatTime(common::FromUnixNanos(951782400LL * 1000000000)), "2000-02-29T00:00:00Z");
}

TEST(TimeTest, ParsesWhatFormatProducesAndOffsets) {
  for (int64_t ns : {kSomeTimeNs, int64_t{1}, int64_t{-1}, int64_t{1787313605500000000}}) {
    const model::Time t = common::FromUnixNanos(ns);
    absl::StatusOr<model::Time> back = ParseTime(FormatTime(t));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t) << FormatTime(t);
  }
  absl::StatusOr<model::Time> zero = ParseTime("0001-01-01T00:00:00Z");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->time_since_epoch().count(), 0);

  absl::StatusOr<model::Time> offset = ParseTime("2026-08-21T14:00:05.123+02:00");
  ASSERT_TRUE(offset.ok()) << offset.status();
  EXPECT_EQ(common::ToUnixNanos(*offset), 1787313605123000000);
  absl::StatusOr<model::Time> negative = ParseTime("2026-08-21T11:30:05-00:30");
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(common::ToUnixNanos(*negative), 1787313605000000000);
  // More than nine fractional digits are truncated.
  absl::StatusOr<model::Time> long_frac = ParseTime("2026-08-21T12:00:05.1234567899Z");
  ASSERT_TRUE(long_frac.ok());
  EXPECT_EQ(common::ToUnixNanos(*long_frac), kSomeTimeNs);
}

TEST(TimeTest, RejectsMalformedTimes) {
  for (const char* bad : {"", "yesterday", "2026-08-21", "2026-08-21 12:00:05Z",
                          "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-08-21T24:00:00Z",
                          "2026-08-21T12:00:05", "2026-08-21T12:00:05.Z", "2026-08-21T12:00:05Zx",
                          "2026-08-21T12:00:05+0200", "3000-01-01T00:00:00Z"}) {
    absl::StatusOr<model::Time> t = ParseTime(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(t.status().message(), HasSubstr("parsing time"));
    }
  }
  EXPECT_TRUE(ParseTime("2024-02-29T00:00:00Z").ok());
}

// --- Values ---

TEST(ValueTest, RoundTripsKeepingIntsAndFloatsApart) {
  model::Value v = model::Value::Object{
      {"i", int64_t{-5}}, {"f", 2.5},
      {"s", "x"},         {"b", false},
      {"n", nullptr},     {"a", model::Value::Array{1, "two", model::Value::Object{}}}};
  Json j = ToJson(v);
  EXPECT_TRUE(j["i"].is_number_integer());
  EXPECT_TRUE(j["f"].is_number_float());
  EXPECT_TRUE(j["n"].is_null());
  EXPECT_EQ(ValueFromJson(j), v);

  model::Value parsed = ValueFromJson(MustParse(R"({"port": 8080, "ratio": 0.5})"));
  EXPECT_EQ(std::get<int64_t>(parsed.Find("port")->storage()), 8080);
  EXPECT_EQ(std::get<double>(parsed.Find("ratio")->storage()), 0.5);
  // Unsigned values beyond int64 become doubles rather than wrapping.
  model::Value big = ValueFromJson(MustParse("18446744073709551615"));
  EXPECT_TRUE(std::holds_alternative<double>(big.storage()));
}

// --- Evaluations ---

TEST(EvalJsonTest, EncodesNomadShapeAndRoundTrips) {
  model::Evaluation e;
  e.id = "e1";
  e.priority = 50;
  e.type = "service";
  e.triggered_by = model::kTriggerJobRegister;
  e.namespace_ = "default";
  e.job_id = "web";
  e.job_modify_index = 7;
  e.node_id = "n1";
  e.node_modify_index = 8;
  e.deployment_id = "d1";
  e.status = model::kEvalBlocked;
  e.status_description = "created due to placement conflicts";
  e.next_eval = "e2";
  e.previous_eval = "e0";
  e.blocked_eval = "e3";
  e.failed_tg_allocs["frontend"].nodes_evaluated = 2;
  e.failed_tg_allocs["frontend"].dimension_exhausted = {{"cpu", 2}};
  e.queued_allocations = {{"frontend", 1}};
  e.snapshot_index = 99;
  e.create_index = 100;
  e.modify_index = 101;
  e.create_time = kSomeTimeNs;
  e.modify_time = kSomeTimeNs + 1;

  const Json j = ToJson(e);
  EXPECT_EQ(j["ID"], "e1");
  EXPECT_EQ(j["Priority"], 50);
  EXPECT_EQ(j["Type"], "service");
  EXPECT_EQ(j["TriggeredBy"], "job-register");
  EXPECT_EQ(j["Namespace"], "default");
  EXPECT_EQ(j["JobID"], "web");
  EXPECT_EQ(j["JobModifyIndex"], 7);
  EXPECT_EQ(j["NodeID"], "n1");
  EXPECT_EQ(j["NodeModifyIndex"], 8);
  EXPECT_EQ(j["DeploymentID"], "d1");
  EXPECT_EQ(j["Status"], "blocked");
  EXPECT_EQ(j["StatusDescription"], "created due to placement conflicts");
  EXPECT_EQ(j["Wait"], 0);
  EXPECT_EQ(j["WaitUntil"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(j["NextEval"], "e2");
  EXPECT_EQ(j["PreviousEval"], "e0");
  EXPECT_EQ(j["BlockedEval"], "e3");
  EXPECT_TRUE(j["RelatedEvals"].is_null());
  EXPECT_EQ(j["FailedTGAllocs"]["frontend"]["DimensionExhausted"], Json({{"cpu", 2}}));
  EXPECT_TRUE(j["ClassEligibility"].is_null());
  EXPECT_EQ(j["EscapedComputedClass"], false);
  EXPECT_EQ(j["QuotaLimitReached"], "");
  EXPECT_EQ(j["AnnotatePlan"], false);
  EXPECT_EQ(j["QueuedAllocations"], Json({{"frontend", 1}}));
  EXPECT_EQ(j["SnapshotIndex"], 99);
  EXPECT_EQ(j["CreateIndex"], 100);
  EXPECT_EQ(j["ModifyIndex"], 101);
  EXPECT_EQ(j["CreateTime"], kSomeTimeNs);
  EXPECT_EQ(j["ModifyTime"], kSomeTimeNs + 1);

  absl::StatusOr<model::Evaluation> back = EvaluationFromJson(MustParse(Dump(j)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, e);

  const Json empty = ToJson(model::Evaluation{});
  EXPECT_TRUE(empty["FailedTGAllocs"].is_null());
  EXPECT_TRUE(empty["QueuedAllocations"].is_null());  // Nomad's until a pass sets it
  EXPECT_EQ(empty["LeaderACL"], "");
  back = EvaluationFromJson(empty);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, model::Evaluation{});

  absl::StatusOr<model::Evaluation> bad =
      EvaluationFromJson(MustParse(R"({"QueuedAllocations": {"g": "1"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Evaluation.QueuedAllocations[\"g\"]: expected number, got string");
}

// --- Nodes ---

model::Node SomeNode() {
  model::Node n;
  n.id = "n1";
  n.secret_id = "s3cr3t";
  n.datacenter = "dc1";
  n.name = "node-1";
  n.http_addr = "127.0.0.1:4646";
  n.attributes = {{"kernel.name", "linux"}, {"os.name", "debian"}};
  n.node_resources.cpu_shares = 8000;
  n.node_resources.total_cores = 4;
  n.node_resources.memory_mb = 16384;
  n.node_resources.disk_mb = 100000;
  model::NetworkResource net;
  net.device = "lo";
  net.ip = "127.0.0.1";
  net.mbits = 1000;
  n.node_resources.networks = {net};
  n.node_resources.min_dynamic_port = 21000;
  n.node_resources.max_dynamic_port = 22000;
  n.reserved_resources = {100, 256, 1024, "22,80"};
  n.meta = {{"rack", "r1"}};
  n.node_class = "gpu";
  n.node_pool = "default";
  n.drain = false;
  n.scheduling_eligibility = "eligible";
  n.status = model::kNodeStatusReady;
  n.status_description = "ok";
  n.status_updated_at = 1787313605;
  n.drivers["raw_exec"] = model::DriverInfo{
      {{"driver.raw_exec", "true"}}, true, true, "Healthy", common::FromUnixNanos(kSomeTimeNs)};
  n.create_index = 5;
  n.modify_index = 6;
  return n;
}

TEST(NodeJsonTest, FullObjectHasNomadShapeAndNeverLeaksTheSecret) {
  const model::Node n = SomeNode();
  const Json j = ToJson(n);
  EXPECT_EQ(j["ID"], "n1");
  EXPECT_EQ(j["SecretID"], "");
  EXPECT_EQ(j["Datacenter"], "dc1");
  EXPECT_EQ(j["Name"], "node-1");
  EXPECT_EQ(j["HTTPAddr"], "127.0.0.1:4646");
  EXPECT_EQ(j["TLSEnabled"], false);
  EXPECT_EQ(j["Attributes"]["os.name"], "debian");
  const Json& res = j["NodeResources"];
  EXPECT_EQ(res["Cpu"],
            Json({{"CpuShares", 8000}, {"TotalCpuCores", 4}, {"ReservableCpuCores", nullptr}}));
  EXPECT_EQ(res["Memory"], Json({{"MemoryMB", 16384}}));
  EXPECT_EQ(res["Disk"], Json({{"DiskMB", 100000}}));
  EXPECT_EQ(res["Networks"][0]["Device"], "lo");
  EXPECT_TRUE(res["Devices"].is_null());
  EXPECT_EQ(res["MinDynamicPort"], 21000);
  EXPECT_EQ(res["MaxDynamicPort"], 22000);
  EXPECT_EQ(j["ReservedResources"], Json({{"Cpu", {{"CpuShares", 100}}},
                                          {"Memory", {{"MemoryMB", 256}}},
                                          {"Disk", {{"DiskMB", 1024}}},
                                          {"Networks", {{"ReservedHostPorts", "22,80"}}}}));
  EXPECT_EQ(j["Meta"], Json({{"rack", "r1"}}));
  EXPECT_EQ(j["NodeClass"], "gpu");
  EXPECT_EQ(j["NodePool"], "default");
  EXPECT_EQ(j["ComputedClass"], "");
  EXPECT_EQ(j["Drain"], false);
  EXPECT_EQ(j["SchedulingEligibility"], "eligible");
  EXPECT_EQ(j["Status"], "ready");
  EXPECT_EQ(j["StatusDescription"], "ok");
  EXPECT_EQ(j["StatusUpdatedAt"], 1787313605);
  EXPECT_EQ(j["Drivers"]["raw_exec"], Json({{"Attributes", {{"driver.raw_exec", "true"}}},
                                            {"Detected", true},
                                            {"Healthy", true},
                                            {"HealthDescription", "Healthy"},
                                            {"UpdateTime", "2026-08-21T12:00:05.123456789Z"}}));
  for (const char* key : {"Links", "DrainStrategy", "HostVolumes", "HostNetworks", "LastDrain"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  EXPECT_EQ(j["Events"], Json::array());
  EXPECT_EQ(j["CreateIndex"], 5);
  EXPECT_EQ(j["ModifyIndex"], 6);
  EXPECT_EQ(Dump(j).find("s3cr3t"), std::string::npos);
}

TEST(NodeJsonTest, EventsAsNomadEncodesThemAndBack) {
  model::Node n = SomeNode();
  n.events.push_back({.message = "Node registered",
                      .subsystem = "Cluster",
                      .timestamp = model::Time{} + std::chrono::hours(24 * 365 * 56),
                      .create_index = 5});
  n.events.push_back({.message = "Driver exec is unhealthy",
                      .subsystem = "Driver",
                      .details = {{"driver", "exec"}},
                      .timestamp = model::Time{} + std::chrono::hours(24 * 365 * 56),
                      .create_index = 9});
  const Json j = ToJson(n);
  ASSERT_EQ(j["Events"].size(), 2u);
  EXPECT_EQ(j["Events"][0], Json({{"Message", "Node registered"},
                                  {"Subsystem", "Cluster"},
                                  {"Details", nullptr},
                                  {"Timestamp", "2025-12-18T00:00:00Z"},
                                  {"CreateIndex", 5}}));
  EXPECT_EQ(j["Events"][1]["Details"], Json({{"driver", "exec"}}));
  auto back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->events, n.events);
}

TEST(NodeJsonTest, DrainStrategyAndLastDrainAsNomadEncodesThem) {
  model::Node n = SomeNode();
  n.drain = true;
  const model::Time t0 = model::Time{} + std::chrono::hours(24 * 365 * 56);
  n.drain_strategy = model::DrainStrategy{.deadline = std::chrono::hours(1),
                                          .force_deadline = t0 + std::chrono::hours(1),
                                          .ignore_system_jobs = true,
                                          .started_at = t0};
  n.last_drain = model::DrainMetadata{.started_at = t0,
                                      .updated_at = t0 + std::chrono::seconds(3),
                                      .status = model::kDrainStatusDraining,
                                      .meta = {{"message", "kernel upgrade"}},
                                      .ignore_system_jobs = true};
  const Json j = MustParse(Dump(ToJson(n)));
  EXPECT_EQ(j["DrainStrategy"]["Deadline"], 3'600'000'000'000);
  EXPECT_EQ(j["DrainStrategy"]["IgnoreSystemJobs"], true);
  EXPECT_TRUE(j["DrainStrategy"]["ForceDeadline"].is_string());
  EXPECT_EQ(j["LastDrain"]["Status"], "draining");
  EXPECT_EQ(j["LastDrain"]["Meta"]["message"], "kernel upgrade");
  absl::StatusOr<model::Node> back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->drain_strategy, n.drain_strategy);
  EXPECT_EQ(back->last_drain, n.last_drain);
}

TEST(NodeJsonTest, RoundTripsExceptTheSecret) {
  model::Node n = SomeNode();
  absl::StatusOr<model::Node> back = NodeFromJson(MustParse(Dump(ToJson(n))));
  ASSERT_TRUE(back.ok()) << back.status();
  n.secret_id = "";
  EXPECT_EQ(*back, n);
  // A registering client does send its secret, and the decoder keeps it.
  back = NodeFromJson(MustParse(R"({"ID": "n", "SecretID": "s"})"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->secret_id, "s");
  EXPECT_EQ(back->node_pool, "default");
  EXPECT_EQ(back->node_resources.min_dynamic_port, 20000);

  absl::StatusOr<model::Node> bad =
      NodeFromJson(MustParse(R"({"NodeResources": {"Cpu": {"CpuShares": "lots"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Node.NodeResources.Cpu.CpuShares: expected number, got string");
  bad = NodeFromJson(MustParse(R"({"Drivers": {"docker": {"UpdateTime": 5}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Node.Drivers[\"docker\"].UpdateTime: expected RFC 3339 time string, got number");
}

TEST(NodeJsonTest, StubHasAddressHostAndNoResources) {
  model::Node n = SomeNode();
  Json stub = NodeStubJson(n);
  EXPECT_EQ(stub["Address"], "127.0.0.1");
  EXPECT_EQ(stub["ID"], "n1");
  EXPECT_FALSE(stub.contains("Attributes"));  // only with ?os=true
  EXPECT_EQ(stub["Datacenter"], "dc1");
  EXPECT_EQ(stub["Name"], "node-1");
  EXPECT_EQ(stub["NodeClass"], "gpu");
  EXPECT_EQ(stub["NodePool"], "default");
  EXPECT_EQ(stub["Version"], "");
  EXPECT_EQ(stub["Drain"], false);
  EXPECT_EQ(stub["SchedulingEligibility"], "eligible");
  EXPECT_EQ(stub["Status"], "ready");
  EXPECT_EQ(stub["StatusDescription"], "ok");
  EXPECT_EQ(stub["Drivers"], ToJson(n)["Drivers"]);
  EXPECT_FALSE(stub.contains("NodeResources"));
  EXPECT_FALSE(stub.contains("ReservedResources"));
  EXPECT_TRUE(stub["LastDrain"].is_null());
  n.attributes["nomad.version"] = "1.9.5";
  EXPECT_EQ(NodeStubJson(n)["Version"], "1.9.5");
  EXPECT_EQ(stub["CreateIndex"], 5);
  EXPECT_EQ(stub["ModifyIndex"], 6);
  EXPECT_FALSE(stub.contains("SecretID"));

  n.http_addr = "[::1]:4646";
  EXPECT_EQ(NodeStubJson(n)["Address"], "::1");
  n.http_addr = "10.1.2.3";
  EXPECT_EQ(NodeStubJson(n)["Address"], "10.1.2.3");
}

}  // namespace
}  // namespace drover::codec
