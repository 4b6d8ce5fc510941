// GET /v1/event/stream against a real agent: a job's lifecycle in index order, resuming
// from an index, heartbeats, unknown topics refused, and `drover event stream`.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

// Reads the stream at `path` line by line until `done` says so (it sees each line).
void ReadLines(AgentProcess& agent, const std::string& path,
               const std::function<bool(const std::string&)>& done) {
  std::string buffer;
  absl::Status s = agent.http().Stream(path, [&](std::string_view data) {
    buffer.append(data);
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      const std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (done(line))
        return false;
    }
    return true;
  });
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(AgentTest, TheEventStreamTellsAJobsLifecycleInOrderAndResumes) {
  ASSERT_EQ(agent_.http().Do("PUT", "/v1/jobs", RawExecJob("ev", "batch", "sleep 1")).status(),
            absl::OkStatus());
  WaitAlloc("ev", "complete");

  // From the start of the feed: the registration, its evaluation, the allocation as it
  // goes pending, running and complete; indexes never go back.
  std::vector<std::string> seen;
  uint64_t last_index = 0;
  ReadLines(agent_, "/v1/event/stream?topic=Job:ev&topic=Evaluation:ev&topic=Allocation:ev",
            [&](const std::string& line) {
              codec::Json batch = codec::ParseJson(line).value();
              if (batch.empty())
                return false;  // a heartbeat: all told
              EXPECT_GE(batch["Index"].get<uint64_t>(), last_index);
              last_index = batch["Index"];
              for (const auto& e : batch["Events"]) {
                EXPECT_EQ(e["Index"], batch["Index"]);
                std::string what =
                    e["Topic"].get<std::string>() + ":" + e["Type"].get<std::string>();
                if (e["Topic"] == "Allocation") {
                  EXPECT_TRUE(e["Payload"]["Allocation"]["Job"].is_null());
                  what += ":" + e["Payload"]["Allocation"]["ClientStatus"].get<std::string>();
                }
                if (e["Topic"] == "Job") {
                  EXPECT_EQ(e["Payload"]["Job"]["ID"], "ev");
                }
                if (seen.empty() || seen.back() != what)
                  seen.push_back(what);
                if (what == "Allocation:AllocationUpdated:complete")
                  return true;
              }
              return false;
            });
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "Job:JobRegistered");
  auto pos = [&](const std::string& what) {
    return std::find(seen.begin(), seen.end(), what) - seen.begin();
  };
  EXPECT_LT(pos("Job:JobRegistered"), pos("Evaluation:EvaluationUpdated"));
  EXPECT_LT(pos("Evaluation:EvaluationUpdated"), pos("Allocation:AllocationUpdated:pending"));
  EXPECT_LT(pos("Allocation:AllocationUpdated:pending"),
            pos("Allocation:AllocationUpdated:running"));
  EXPECT_LT(pos("Allocation:AllocationUpdated:running"),
            pos("Allocation:AllocationUpdated:complete"));
  EXPECT_EQ(seen.back(), "Allocation:AllocationUpdated:complete");

  // Resumed after what was read: only what came later, the stop first.
  ASSERT_EQ(agent_.Cli({"job", "stop", "-detach", "ev"}).exit_code, 0);
  const std::string from = std::to_string(agent_.Get("/v1/job/ev")["ModifyIndex"].get<uint64_t>());
  ReadLines(agent_, "/v1/event/stream?topic=Job&index=" + from, [&](const std::string& line) {
    codec::Json batch = codec::ParseJson(line).value();
    EXPECT_FALSE(batch.empty()) << "a heartbeat before the stop";
    EXPECT_GE(batch["Index"].get<uint64_t>(), std::stoull(from));
    EXPECT_EQ(batch["Events"][0]["Type"], "JobDeregistered") << line;
    return true;
  });

  // Nothing to tell: a heartbeat within 10 s.
  const std::string now = std::to_string(agent_.Get("/v1/jobs").size() + 1'000'000);
  bool heartbeat = false;
  ReadLines(agent_, "/v1/event/stream?topic=Node:none&index=" + now, [&](const std::string& line) {
    heartbeat = line == "{}";
    return true;
  });
  EXPECT_TRUE(heartbeat);

  // The CLI follows the same stream until it is interrupted (here after 2 s, when what
  // it was to print is long there).
  CliResult cli = RunProcess(
      {"/usr/bin/timeout", "-s", "INT", "2", testing::BinaryPath("drover").string(), "event",
       "stream", "-address", "http://" + agent_.address(), "-topic", "Job:ev", "-index", "0"},
      {});
  EXPECT_NE(cli.out.find(R"("Type":"JobRegistered")"), std::string::npos) << cli.out << cli.err;
  EXPECT_NE(cli.out.find(R"("Type":"JobDeregistered")"), std::string::npos) << cli.out;
  EXPECT_EQ(cli.out.find("{}\n"), std::string::npos) << cli.out;
  CliResult refused = agent_.Cli({"event", "stream", "-topic", "Nope"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("unknown topic"), std::string::npos) << refused.err;

  // Topics that do not exist, and bad indexes, are 400s.
  auto bad = agent_.http().Do("GET", "/v1/event/stream?topic=Jobs:x");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("Invalid topic query: unknown topic \"Jobs\""),
            std::string::npos)
      << bad.status();
  bad = agent_.http().Do("GET", "/v1/event/stream?topic=Job:a:b");
  EXPECT_NE(bad.status().message().find("Invalid key value pair for topic, topic: Job:a:b"),
            std::string::npos)
      << bad.status();
  bad = agent_.http().Do("GET", "/v1/event/stream?index=x");
  EXPECT_NE(bad.status().message().find("Unable to parse index"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace drover::integration
