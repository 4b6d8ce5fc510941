// GET /v1/metrics on a real agent: Nomad's JSON, and the Prometheus text checked with
// a real parser (Debian's python3-prometheus-client), with the telemetry block on.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

std::vector<std::string> TelemetryArgs(const testing::TempDir& dir) {
  const auto path = dir.path() / "telemetry.hcl";
  std::ofstream(path) << R"(
telemetry {
  collection_interval        = "1s"
  prometheus_metrics         = true
  publish_allocation_metrics = true
  publish_node_metrics       = true
}
)";
  return {"-config", path.string()};
}

// The gauge `name` whose labels include `labels`, or null.
const codec::Json* FindGauge(const codec::Json& metrics, const std::string& name,
                             const std::map<std::string, std::string>& labels = {}) {
  for (const codec::Json& g : metrics["Gauges"]) {
    if (g["Name"] != name)
      continue;
    bool match = true;
    for (const auto& [k, v] : labels)
      match = match && g["Labels"].contains(k) && g["Labels"][k] == v;
    if (match)
      return &g;
  }
  return nullptr;
}

// Parses Prometheus text with prometheus_client's parser: {family: {"type", "samples":
// [[name, labels, value]]}}. Fails the test if the parser refuses it.
codec::Json ParsePrometheus(const std::string& file) {
  const char* script = R"(
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(open(sys.argv[1]).read()):
    out[f.name] = {"type": f.type,
                   "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
)";
  // Debian's interpreter, which has Debian's python3-prometheus-client.
  CliResult r = RunProcess({"/usr/bin/python3", "-c", script, file}, {});
  EXPECT_EQ(r.exit_code, 0) << "the Prometheus parser refused the text: " << r.err;
  auto parsed = codec::ParseJson(r.out);
  EXPECT_TRUE(parsed.ok()) << r.out;
  return parsed.ok() ? *parsed : codec::Json::object();
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.ok()) << agent_.log(); }
  void TearDown() override {
    if (HasFailure())
      std::cerr << "---- agent log ----\n" << agent_.log();
  }

  testing::TempDir config_;
  AgentProcess agent_{TelemetryArgs(config_)};
};

TEST_F(MetricsTest, NomadsJsonAndPrometheusTextForARunningAllocation) {
  const std::string file =
      agent_.WriteFile("m.json", RawExecJob("metered", "service", "sleep 300 & wait"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  std::string alloc_id;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        codec::Json allocs = agent_.Get("/v1/job/metered/allocations");
        if (allocs.empty() || allocs[0]["ClientStatus"] != "running")
          return false;
        alloc_id = allocs[0]["ID"];
        return true;
      },
      30s));
  const std::string node_id = agent_.Get("/v1/nodes")[0]["ID"];

  // The JSON: the allocation counts, its task's usage (once sampled), the host's.
  codec::Json m;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        m = agent_.Get("/v1/metrics");
        // The first sample may predate the shell's fork: one with memory in use.
        const codec::Json* rss =
            FindGauge(m, "nomad.client.allocs.memory.rss", {{"alloc_id", alloc_id}});
        return rss != nullptr && (*rss)["Value"].get<double>() > 0 &&
               FindGauge(m, "nomad.client.host.memory.total");
      },
      30s))
      << m.dump();
  EXPECT_TRUE(m["Timestamp"].get<std::string>().ends_with("+0000 UTC")) << m["Timestamp"];
  EXPECT_EQ(m["Points"], codec::Json::array());
  const codec::Json* running =
      FindGauge(m, "nomad.client.allocations.running", {{"node_id", node_id}});
  ASSERT_NE(running, nullptr) << m.dump();
  EXPECT_EQ((*running)["Value"], 1.0);
  EXPECT_EQ((*running)["Labels"]["datacenter"], "dc1");
  EXPECT_TRUE((*running)["Labels"].contains("host"));  // disable_hostname is off
  const codec::Json* rss =
      FindGauge(m, "nomad.client.allocs.memory.rss",
                {{"alloc_id", alloc_id}, {"task", "t"}, {"job", "metered"}, {"task_group", "g"}});
  ASSERT_NE(rss, nullptr);
  EXPECT_GT((*rss)["Value"].get<double>(), 0);
  EXPECT_GT((*FindGauge(m, "nomad.client.host.memory.total"))["Value"].get<double>(), 0);
  EXPECT_NE(FindGauge(m, "nomad.client.unallocated.memory"), nullptr);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer builds leave jemalloc out: their runtime serves malloc.
  const codec::Json* heap = FindGauge(m, "nomad.runtime.alloc_bytes", {{"allocator", "other"}});
  ASSERT_NE(heap, nullptr) << m.dump();
#else
  // The agent's heap is jemalloc's (src/cmd/drover), as its own statistics count it.
  const codec::Json* heap = FindGauge(m, "nomad.runtime.alloc_bytes", {{"allocator", "jemalloc"}});
  ASSERT_NE(heap, nullptr) << m.dump();
  EXPECT_GT((*heap)["Value"].get<double>(), 0);
#endif
  EXPECT_GT((*FindGauge(m, "nomad.runtime.sys_bytes"))["Value"].get<double>(), 0);
  EXPECT_NE(FindGauge(m, "nomad.nomad.broker.total_ready"), nullptr);
  EXPECT_EQ((*FindGauge(m, "drover.client.supervisor.connected"))["Value"], 1.0);
  bool scheduled = false;
  for (const codec::Json& s : m["Samples"]) {
    if (s["Name"] == "nomad.nomad.worker.invoke_scheduler.service") {
      scheduled = true;
      for (const char* field : {"Count", "Rate", "Sum", "Min", "Max", "Mean", "Stddev", "Labels"})
        EXPECT_TRUE(s.contains(field)) << field;
    }
  }
  EXPECT_TRUE(scheduled) << m["Samples"].dump();

  // The same through Prometheus, checked by its own parser; totals, not intervals.
  auto text = agent_.http().Do("GET", "/v1/metrics?format=prometheus");
  ASSERT_TRUE(text.ok()) << text.status();
  const std::string prom_file = agent_.WriteFile("metrics.prom", text->body);
  const codec::Json families = ParsePrometheus(prom_file);
  ASSERT_TRUE(families.contains("nomad_client_allocations_running")) << text->body;
  EXPECT_EQ(families["nomad_client_allocations_running"]["type"], "gauge");
  ASSERT_TRUE(families.contains("drover_client_supervisor_spawns")) << text->body;
  EXPECT_EQ(families["drover_client_supervisor_spawns"]["type"], "counter");
  EXPECT_GE(families["drover_client_supervisor_spawns"]["samples"][0][2].get<double>(), 1);
  ASSERT_TRUE(families.contains("drover_client_state_db_commits")) << text->body;
  EXPECT_GE(families["drover_client_state_db_commits"]["samples"][0][2].get<double>(), 1);
  ASSERT_TRUE(families.contains("drover_http_requests"));
  EXPECT_EQ(families["drover_http_request_seconds"]["type"], "summary");
  ASSERT_TRUE(families.contains("nomad_client_allocs_memory_rss"));
  bool labelled = false;
  for (const auto& s : families["nomad_client_allocs_memory_rss"]["samples"])
    labelled = labelled || s[1]["alloc_id"] == alloc_id;
  EXPECT_TRUE(labelled);

  // A format Drover does not serve is refused by name.
  auto bogus = agent_.http().Do("GET", "/v1/metrics?format=statsd");
  ASSERT_FALSE(bogus.ok());
  EXPECT_NE(bogus.status().message().find("Unsupported metrics format \"statsd\""),
            std::string::npos)
      << bogus.status();
}

// Without telemetry.prometheus_metrics, Nomad's answer: JSON only.
TEST(MetricsDefaultsTest, PrometheusIsRefusedUnlessEnabled) {
  AgentProcess agent;
  ASSERT_TRUE(agent.ok()) << agent.log();
  auto prom = agent.http().Do("GET", "/v1/metrics?format=prometheus");
  ASSERT_FALSE(prom.ok());
  EXPECT_NE(prom.status().message().find("Prometheus is not enabled"), std::string::npos)
      << prom.status();
  const codec::Json m = agent.Get("/v1/metrics");
  EXPECT_NE(FindGauge(m, "nomad.runtime.alloc_bytes"), nullptr);
  // Node and allocation metrics are off by default, as in Nomad.
  EXPECT_EQ(FindGauge(m, "nomad.client.host.memory.total"), nullptr);
  EXPECT_NE(FindGauge(m, "nomad.client.allocations.running"), nullptr);
}

}  // namespace
}  // namespace drover::integration
