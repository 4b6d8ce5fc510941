#include "metrics/registry.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "metrics/format.h"
#include "metrics/process_stats.h"

namespace drover::metrics {
namespace {

using namespace std::chrono_literals;  // NOLINT

const SampledValue* Find(const std::vector<SampledValue>& in, const std::string& name) {
  for (const auto& v : in) {
    if (v.name == name)
      return &v;
  }
  return nullptr;
}

TEST(MetricsRegistryTest, TheJsonShowsTheLastFinishedIntervalAndPrometheusTheTotals) {
  common::FakeClock clock;
  Registry r(clock, {.interval = 10s});
  r.IncrCounter("nomad.test.requests");
  r.IncrCounter("nomad.test.requests", 2);
  // While no interval has finished, the current one is shown.
  Snapshot s = r.Collect();
  ASSERT_NE(Find(s.counters, "nomad.test.requests"), nullptr);
  EXPECT_EQ(Find(s.counters, "nomad.test.requests")->interval.count, 2u);
  EXPECT_EQ(Find(s.counters, "nomad.test.requests")->interval.sum, 3);
  clock.Advance(10s);
  r.IncrCounter("nomad.test.requests", 5);
  s = r.Collect();
  const SampledValue* c = Find(s.counters, "nomad.test.requests");
  EXPECT_EQ(c->interval.sum, 3);  // the finished interval, not the 5 of the current one
  EXPECT_EQ(c->total.sum, 8);
  EXPECT_EQ(c->interval.min, 1);
  EXPECT_EQ(c->interval.max, 2);
  // Two intervals later with nothing recorded, the last finished interval saw nothing.
  clock.Advance(25s);
  s = r.Collect();
  EXPECT_EQ(Find(s.counters, "nomad.test.requests")->interval.count, 0u);
  EXPECT_EQ(Find(s.counters, "nomad.test.requests")->total.sum, 8);
  EXPECT_NE(ToPrometheus(s).find("# TYPE nomad_test_requests counter\nnomad_test_requests 8\n"),
            std::string::npos)
      << ToPrometheus(s);
}

TEST(MetricsRegistryTest, ARunningTotalCountsWhatItGrewBy) {
  common::FakeClock clock;
  Registry r(clock);
  r.SetCounterTotal("drover.state.commits", 10);
  r.SetCounterTotal("drover.state.commits", 10);
  r.SetCounterTotal("drover.state.commits", 15);
  const Snapshot s = r.Collect();
  const SampledValue* c = Find(s.counters, "drover.state.commits");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->total.sum, 15);
  EXPECT_EQ(c->total.count, 2u);
}

TEST(MetricsRegistryTest, GaugesComeFromCollectorsWithTheHostLabel) {
  common::FakeClock clock;
  Registry r(clock, {.hostname = "node-1"});
  int calls = 0;
  const int id = r.AddCollector([&](GaugeSink& sink) {
    ++calls;
    sink.Set("nomad.client.allocations.running", 3, {{"node_id", "abc"}});
  });
  Snapshot s = r.Collect();
  ASSERT_EQ(s.gauges.size(), 1u);
  EXPECT_EQ(s.gauges[0].value, 3);
  EXPECT_EQ(s.gauges[0].labels.at("host"), "node-1");
  EXPECT_EQ(s.gauges[0].labels.at("node_id"), "abc");
  r.RemoveCollector(id);
  EXPECT_TRUE(r.Collect().gauges.empty());
  EXPECT_EQ(calls, 1);
}

TEST(MetricsRegistryTest, NomadsJsonShape) {
  common::FakeClock clock;
  Registry r(clock, {.interval = 10s});
  r.AddSample("nomad.nomad.plan.submit", 2);
  r.AddSample("nomad.nomad.plan.submit", 4);
  r.AddCollector([](GaugeSink& sink) { sink.Set("nomad.runtime.alloc_bytes", 1024); });
  const nlohmann::json j = ToNomadJson(r.Collect());
  ASSERT_TRUE(j.contains("Timestamp"));
  EXPECT_TRUE(j["Timestamp"].get<std::string>().ends_with(" +0000 UTC"));
  EXPECT_EQ(j["Points"], nlohmann::json::array());
  EXPECT_EQ(j["Gauges"][0]["Name"], "nomad.runtime.alloc_bytes");
  EXPECT_EQ(j["Gauges"][0]["Value"], 1024.0);
  EXPECT_EQ(j["Gauges"][0]["Labels"], nlohmann::json::object());
  const nlohmann::json& sample = j["Samples"][0];
  EXPECT_EQ(sample["Name"], "nomad.nomad.plan.submit");
  EXPECT_EQ(sample["Count"], 2);
  EXPECT_EQ(sample["Sum"], 6.0);
  EXPECT_EQ(sample["Min"], 2.0);
  EXPECT_EQ(sample["Max"], 4.0);
  EXPECT_EQ(sample["Mean"], 3.0);
  EXPECT_NEAR(sample["Stddev"].get<double>(), 1.41421, 1e-4);
  EXPECT_EQ(sample["Rate"], 0.6);
  EXPECT_EQ(j["Counters"], nlohmann::json::array());
}

TEST(MetricsRegistryTest, PrometheusNamesAndLabelValuesAreEscaped) {
  common::FakeClock clock;
  Registry r(clock);
  r.AddCollector([](GaugeSink& sink) {
    sink.Set("nomad.client.allocs.memory.rss", 1, {{"task", "we\"b\\\n"}, {"alloc-id", "x"}});
    sink.Set("nomad.client.allocs.memory.rss", 2, {{"task", "db"}, {"alloc-id", "y"}});
  });
  r.AddSample("drover.http.request_seconds", 0.5, {{"method", "GET"}});
  const std::string text = ToPrometheus(r.Collect());
  EXPECT_EQ(text,
            "# TYPE nomad_client_allocs_memory_rss gauge\n"
            "nomad_client_allocs_memory_rss{alloc_id=\"x\",task=\"we\\\"b\\\\\\n\"} 1\n"
            "nomad_client_allocs_memory_rss{alloc_id=\"y\",task=\"db\"} 2\n"
            "# TYPE drover_http_request_seconds summary\n"
            "drover_http_request_seconds_sum{method=\"GET\"} 0.5\n"
            "drover_http_request_seconds_count{method=\"GET\"} 1\n");
}

TEST(ProcessStatsTest, ReadsItsOwnProcess) {
  auto s = ReadProcessStats(getpid());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->rss_bytes, 1u << 20);
  EXPECT_GE(s->threads, 1u);
  EXPECT_GE(s->open_fds, 3u);
  EXPECT_EQ(ReadProcessStats(0x3fffffff).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace drover::metrics
