#include "cli/monitor.h"

#include <sstream>
#include <string>
#include <vector>

#include "cli/fake_http_client.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/clock.h"
#include "model/evaluation.h"

namespace drover::cli {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1796007212 * kSecond;  // 2026-11-30T02:53:32Z

MonitoredAlloc Alloc(const std::string& id, const std::string& client, uint64_t create_index) {
  return MonitoredAlloc{id, "web", "12345678-aaaa", "run", client, "", create_index};
}

TEST(EvalStateChangesTest, NewEvaluationWithPlacement) {
  EvalState before;  // the monitor's initial "pending" state
  EvalState after;
  after.status = "complete";
  after.job = "hello";
  after.create_index = 10;
  after.allocs["a1b2c3d4-0000"] = Alloc("a1b2c3d4-0000", "pending", 11);
  EXPECT_EQ(EvalStateChanges(before, after, 8),
            (std::vector<std::string>{
                "Evaluation triggered by job \"hello\"",
                "Allocation \"a1b2c3d4\" created: node \"12345678\", group \"web\"",
                "Evaluation status changed: \"pending\" -> \"complete\"",
            }));
}

TEST(EvalStateChangesTest, ModifiedAndStatusChangedAllocs) {
  EvalState before;
  before.job = "hello";
  before.create_index = 10;
  before.allocs["aaaa"] = Alloc("aaaa", "pending", 11);
  EvalState after = before;
  after.allocs["aaaa"].client = "failed";
  after.allocs["aaaa"].client_description = "Failed tasks";
  after.allocs["old1"] = Alloc("old1", "running", 3);
  EXPECT_EQ(EvalStateChanges(before, after, 8),
            (std::vector<std::string>{
                "Allocation \"aaaa\" status changed: \"pending\" -> \"failed\" (Failed tasks)",
                "Allocation \"old1\" modified: node \"12345678\", group \"web\"",
            }));
}

TEST(EvalStateChangesTest, NothingChangedPrintsNothing) {
  EvalState s;
  s.job = "j";
  s.status = "pending";
  EXPECT_TRUE(EvalStateChanges(s, s, 8).empty());
  EvalState blocked = s;
  blocked.status = "blocked";
  EvalState back_to_pending = blocked;
  back_to_pending.status = "pending";
  EXPECT_TRUE(EvalStateChanges(blocked, back_to_pending, 8).empty());
}

TEST(FormatPlacementFailuresTest, OneBlockPerGroup) {
  model::AllocMetric m;
  m.nodes_evaluated = 1;
  m.nodes_filtered = 1;
  m.constraint_filtered = {{"${attr.kernel.name} = windows", 1}};
  model::AllocMetric two;
  two.nodes_evaluated = 1;
  two.nodes_exhausted = 1;
  two.dimension_exhausted = {{"memory", 1}};
  two.coalesced_failures = 2;
  EXPECT_EQ(FormatPlacementFailures({{"web", m}, {"db", two}}, "T"),
            (std::vector<std::string>{
                "T: Task Group \"db\" (failed to place 3 allocations):",
                "  * Resources exhausted on 1 nodes",
                "  * Dimension \"memory\" exhausted on 1 nodes",
                "T: Task Group \"web\" (failed to place 1 allocation):",
                "  * Constraint \"${attr.kernel.name} = windows\": 1 nodes excluded by filter",
            }));
}

class EvalMonitorTest : public ::testing::Test {
 protected:
  EvalMonitorTest() : ui_(in_, out_, err_, [] { return common::FromUnixNanos(kT0); }) {}

  static std::string EvalJson(const std::string& id, const std::string& status,
                              const std::string& next = "") {
    model::Evaluation e;
    e.id = id;
    e.job_id = "hello";
    e.status = status;
    e.next_eval = next;
    e.create_index = 5;
    return codec::Dump(codec::ToJson(e));
  }

  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
  Ui ui_;
  FakeHttpClient client_;
};

TEST_F(EvalMonitorTest, PollsUntilCompleteAndPrintsNomadLines) {
  const std::string id = "5e2c6f8d-0000-0000-0000-000000000000";
  client_.AddJson("GET", "/v1/evaluation/" + id, EvalJson(id, "pending"), 7);
  client_.AddJson("GET", "/v1/evaluation/" + id + "?index=7&wait=5s", EvalJson(id, "complete"), 9);
  client_.AddJson("GET", "/v1/evaluation/" + id + "/allocations", "[]");
  client_.AddJson("GET", "/v1/evaluation/" + id + "/allocations",
                  R"([{"ID":"a1b2c3d4-1111","NodeID":"12345678-2222","TaskGroup":"hello",
                       "DesiredStatus":"run","ClientStatus":"pending","CreateIndex":6}])");
  EvalMonitor monitor(client_, ui_, 8, std::chrono::milliseconds(0));
  EXPECT_EQ(monitor.Monitor(id), kExitOk);
  EXPECT_EQ(out_.str(),
            "==> 2026-11-30T02:53:32Z: Monitoring evaluation \"5e2c6f8d\"\n"
            "    2026-11-30T02:53:32Z: Evaluation triggered by job \"hello\"\n"
            "    2026-11-30T02:53:32Z: Allocation \"a1b2c3d4\" created: node \"12345678\", group "
            "\"hello\"\n"
            "    2026-11-30T02:53:32Z: Evaluation status changed: \"pending\" -> \"complete\"\n"
            "==> 2026-11-30T02:53:32Z: Evaluation \"5e2c6f8d\" finished with status "
            "\"complete\"\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(EvalMonitorTest, PlacementFailuresExitTwo) {
  model::Evaluation e;
  e.id = "eval1";
  e.job_id = "hello";
  e.status = "complete";
  e.blocked_eval = "blocked1";
  model::AllocMetric m;
  m.nodes_evaluated = 1;
  m.constraint_filtered = {{"${attr.kernel.name} = windows", 1}};
  e.failed_tg_allocs["hello"] = m;
  client_.AddJson("GET", "/v1/evaluation/eval1", codec::Dump(codec::ToJson(e)));
  client_.AddJson("GET", "/v1/evaluation/eval1/allocations", "[]");
  EvalMonitor monitor(client_, ui_, 8, std::chrono::milliseconds(0));
  EXPECT_EQ(monitor.Monitor("eval1"), kExitPlacementFailure);
  EXPECT_EQ(out_.str(),
            "==> 2026-11-30T02:53:32Z: Monitoring evaluation \"eval1\"\n"
            "    2026-11-30T02:53:32Z: Evaluation triggered by job \"hello\"\n"
            "    2026-11-30T02:53:32Z: Evaluation status changed: \"pending\" -> \"complete\"\n"
            "==> 2026-11-30T02:53:32Z: Evaluation \"eval1\" finished with status \"complete\" but "
            "failed to place all allocations:\n"
            "    2026-11-30T02:53:32Z: Task Group \"hello\" (failed to place 1 allocation):\n"
            "      * Constraint \"${attr.kernel.name} = windows\": 1 nodes excluded by filter\n"
            "    2026-11-30T02:53:32Z: Evaluation \"blocked1\" waiting for additional capacity to "
            "place remainder\n");
}

TEST_F(EvalMonitorTest, FollowsNextEval) {
  client_.AddJson("GET", "/v1/evaluation/first", EvalJson("first", "complete", "second"));
  client_.AddJson("GET", "/v1/evaluation/first/allocations", "[]");
  client_.AddJson("GET", "/v1/evaluation/second", EvalJson("second", "failed"));
  client_.AddJson("GET", "/v1/evaluation/second/allocations", "[]");
  EvalMonitor monitor(client_, ui_, 8, std::chrono::milliseconds(0));
  EXPECT_EQ(monitor.Monitor("first"), kExitOk);
  EXPECT_NE(out_.str().find("Monitoring evaluation \"second\""), std::string::npos);
  EXPECT_NE(out_.str().find("Evaluation \"second\" finished with status \"failed\""),
            std::string::npos);
}

TEST_F(EvalMonitorTest, UnknownEvaluationIsAnError) {
  EvalMonitor monitor(client_, ui_, 8, std::chrono::milliseconds(0));
  EXPECT_EQ(monitor.Monitor("nope"), kExitError);
  EXPECT_EQ(err_.str(),
            "==> Error reading evaluation: Unexpected response code: 404 (not found)\n");
}

}  // namespace
}  // namespace drover::cli
