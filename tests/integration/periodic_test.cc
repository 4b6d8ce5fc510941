// Periodic and parameterized jobs against a real agent, through the CLI and the API:
// children launched every second with prohibit_overlap holding the next launch while
// one runs, forced launches, dispatches whose payload and meta reach the task, and
// Nomad's refusals for bad crons, zones, payloads and meta.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

std::string Escaped(const std::string& id) {
  std::string out;
  for (char c : id)
    out += c == '/' ? std::string("%2F") : std::string(1, c);
  return out;
}

std::vector<std::string> Children(AgentProcess& agent, const std::string& parent,
                                  const std::string& kind) {
  std::vector<std::string> ids;
  for (const auto& j : agent.Get("/v1/jobs?prefix=" + Escaped(parent + "/" + kind))) {
    if (j["ParentID"] == parent)
      ids.push_back(j["ID"]);
  }
  return ids;
}

// Each child appends "start <ns>" and "end <ns>" to `log` and runs for 2 s.
std::string TickJob(const std::string& log) {
  return R"(job "tick" {
  type = "batch"
  datacenters = ["dc1"]
  periodic {
    crons            = ["* * * * * * *"]
    prohibit_overlap = true
    time_zone        = "Europe/Paris"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo start $(date +%s%N) >> )" +
         log + R"(; sleep 2; echo end $(date +%s%N) >> )" + log + R"("]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
)";
}

// (start, end) pairs in the order written.
std::vector<std::pair<int64_t, int64_t>> Runs(const std::string& log) {
  std::ifstream in(log);
  std::vector<std::pair<int64_t, int64_t>> runs;
  std::string word;
  int64_t t = 0;
  while (in >> word >> t) {
    if (word == "start")
      runs.push_back({t, 0});
    else if (!runs.empty())
      runs.back().second = t;
  }
  return runs;
}

TEST_F(AgentTest, APeriodicJobLaunchesEverySecondWithoutOverlap) {
  const std::string log = agent_.WriteFile("runs.log", "");
  CliResult run = agent_.Cli({"job", "run", agent_.WriteFile("tick.nomad.hcl", TickJob(log))});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("Job registration successful"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Approximate next launch time: "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("+01:00 (1s from now)"), std::string::npos) << run.out;

  // Three children that ran to completion, one after another: every launch while one
  // ran was skipped.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const auto runs = Runs(log);
        return runs.size() >= 3 && runs[2].second != 0;
      },
      60s))
      << testing::ReadFile(log);
  const auto runs = Runs(log);
  for (size_t i = 1; i < runs.size(); ++i) {
    ASSERT_NE(runs[i - 1].second, 0) << "child " << i << " started before the last ended";
    EXPECT_GE(runs[i].first, runs[i - 1].second) << testing::ReadFile(log);
  }
  CliResult status = agent_.Cli({"job", "status", "tick"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("Next Periodic Launch = "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("Previously Launched Jobs"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("tick/periodic-"), std::string::npos) << status.out;
  codec::Json summary = agent_.Get("/v1/job/tick/summary");
  EXPECT_GE(summary["Children"]["Dead"].get<int>(), 2) << summary.dump();

  // Stopped, it launches no more; a forced launch is refused by name.
  CliResult stop = agent_.Cli({"job", "stop", "tick"});
  EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  CliResult force = agent_.Cli({"job", "periodic", "force", "-detach", "tick"});
  EXPECT_EQ(force.exit_code, 1);
  EXPECT_NE(force.err.find("can't force run non-tracked job tick (default)"), std::string::npos)
      << force.err;
}

TEST_F(AgentTest, AForcedLaunchRunsNowAndBadSchedulesAreRefused) {
  const std::string job = R"(job "nightly" {
  type = "batch"
  datacenters = ["dc1"]
  periodic {
    cron = "0 3 * * *"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
)";
  ASSERT_EQ(agent_.Cli({"job", "run", agent_.WriteFile("n.nomad.hcl", job)}).exit_code, 0);
  absl::StatusOr<cli::HttpResponse> planned = agent_.http().Do(
      "PUT", "/v1/job/nightly/plan", codec::Dump({{"Job", agent_.Get("/v1/job/nightly")}}));
  ASSERT_TRUE(planned.ok()) << planned.status();
  const codec::Json plan = codec::ParseJson(planned->body).value();
  EXPECT_NE(plan["NextPeriodicLaunch"], "0001-01-01T00:00:00Z") << plan.dump();
  EXPECT_TRUE(Children(agent_, "nightly", "periodic-").empty());
  CliResult force = agent_.Cli({"job", "periodic", "force", "nightly"});
  EXPECT_EQ(force.exit_code, 0) << force.out << force.err;
  std::vector<std::string> children = Children(agent_, "nightly", "periodic-");
  ASSERT_EQ(children.size(), 1u);
  EXPECT_TRUE(testing::WaitFor(
      [&] { return agent_.Get("/v1/job/" + Escaped(children[0]))["Status"] == "dead"; }, 30s));
  codec::Json allocs = agent_.Get("/v1/job/" + Escaped(children[0]) + "/allocations");
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]["ClientStatus"], "complete");
  CliResult plain = agent_.Cli({"job", "periodic", "force", "-detach", "nightly/periodic"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("can't force launch non-periodic job"), std::string::npos) << plain.err;

  // Nomad's errors, and nothing registered.
  for (const auto& [spec, error] :
       {std::pair{R"(cron = "61 * * * *")",
                  R"(Invalid cron spec "61 * * * *": syntax error in minute field: '61')"},
        std::pair{R"(cron = "@daily"
    time_zone = "Mars/Olympus")",
                  R"(Invalid time zone "Mars/Olympus": unknown time zone Mars/Olympus)"}}) {
    std::string bad = job;
    bad.replace(bad.find("job \"nightly\""), 13, "job \"bad\"");
    bad.replace(bad.find(R"(cron = "0 3 * * *")"), 18, spec);
    CliResult r = agent_.Cli({"job", "run", agent_.WriteFile("bad.nomad.hcl", bad)});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(error), std::string::npos) << r.err;
    EXPECT_EQ(agent_.http().Do("GET", "/v1/job/bad", "").status().code(),
              absl::StatusCode::kNotFound);
  }
}

constexpr char kRender[] = R"(job "render" {
  type = "batch"
  datacenters = ["dc1"]
  meta {
    owner = "ops"
  }
  parameterized {
    payload       = "required"
    meta_required = ["who"]
    meta_optional = ["color"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      dispatch_payload {
        file = "in/payload.txt"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "cat ${NOMAD_TASK_DIR}/in/payload.txt; echo \" who=${NOMAD_META_who} owner=${NOMAD_META_owner}\""]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
)";

TEST_F(AgentTest, DispatchedChildrenGetThePayloadAndMetaAndBadDispatchesAreRefused) {
  CliResult run = agent_.Cli({"job", "run", agent_.WriteFile("render.nomad.hcl", kRender)});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string input = agent_.WriteFile("input.txt", "hello payload");
  CliResult dispatch = agent_.Cli({"job", "dispatch", "-meta", "who=alice", "render", input});
  ASSERT_EQ(dispatch.exit_code, 0) << dispatch.out << dispatch.err;
  EXPECT_NE(dispatch.out.find("Dispatched Job ID = render/dispatch-"), std::string::npos)
      << dispatch.out;
  EXPECT_NE(dispatch.out.find("Evaluation ID     = "), std::string::npos) << dispatch.out;
  std::vector<std::string> children = Children(agent_, "render", "dispatch-");
  ASSERT_EQ(children.size(), 1u);
  codec::Json alloc = WaitAlloc(Escaped(children[0]), "complete");
  auto logs = agent_.http().Do(
      "GET",
      "/v1/client/fs/logs/" + alloc["ID"].get<std::string>() + "?task=t&type=stdout&plain=true",
      "");
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(logs->body, "hello payload who=alice owner=ops\n");
  codec::Json child = agent_.Get("/v1/job/" + Escaped(children[0]));
  EXPECT_EQ(child["Dispatched"], true);
  EXPECT_EQ(child["ParentID"], "render");

  // The same token twice: one child.
  CliResult first = agent_.Cli({"job", "dispatch", "-detach", "-idempotency-token", "t1", "-meta",
                                "who=bob", "render", input});
  CliResult again = agent_.Cli({"job", "dispatch", "-detach", "-idempotency-token", "t1", "-meta",
                                "who=bob", "render", input});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(first.out.substr(0, first.out.find('\n')), again.out.substr(0, again.out.find('\n')));
  EXPECT_EQ(Children(agent_, "render", "dispatch-").size(), 2u);

  // Nomad's refusals; nothing dispatched.
  const std::string big = agent_.WriteFile("big.bin", std::string(16 * 1024 + 1, 'x'));
  ASSERT_EQ(agent_
                .Cli({"job", "run", agent_.WriteFile("plain.nomad.hcl", R"(job "plain" {
  type = "batch"
  datacenters = ["dc1"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
)")})
                .exit_code,
            0);
  for (const auto& [args, error] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"render", input}, "Dispatch did not provide required meta keys: [who]"},
           {{"-meta", "who=x", "render"},
            "Payload is not provided but required by parameterized job"},
           {{"-meta", "who=x", "-meta", "size=9", "render", input},
            "Dispatch request included unpermitted metadata keys: [size]"},
           {{"-meta", "who=x", "render", big}, "Payload exceeds maximum size; 16385 > 16384"},
           {{"plain"}, "Specified job \"plain\" is not a parameterized job"},
           {{"nope"}, "parameterized job \"nope\" not found"}}) {
    std::vector<std::string> argv = {"job", "dispatch"};
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r = agent_.Cli(argv);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("Failed to dispatch job: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(error), std::string::npos) << r.err;
  }
  EXPECT_EQ(Children(agent_, "render", "dispatch-").size(), 2u);
}

// The examples run as their comments say: the periodic one's HCL forced, the
// parameterized one's JSON twin dispatched with a payload.
TEST_F(AgentTest, ThePeriodicAndParameterizedExamplesRun) {
  const std::string examples = std::string(DROVER_SOURCE_DIR) + "/examples/";
  ASSERT_EQ(agent_.Cli({"job", "run", examples + "periodic.nomad.hcl"}).exit_code, 0);
  ASSERT_EQ(agent_.Cli({"job", "periodic", "force", "report"}).exit_code, 0);
  std::vector<std::string> children = Children(agent_, "report", "periodic-");
  ASSERT_EQ(children.size(), 1u);
  codec::Json alloc = WaitAlloc(Escaped(children[0]), "complete");
  auto report = agent_.http().Do("GET",
                                 "/v1/client/fs/logs/" + alloc["ID"].get<std::string>() +
                                     "?task=report&type=stdout&plain=true",
                                 "");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->body, "report from " + children[0] + "\n");

  std::ifstream twin(examples + "dispatch.json");
  std::stringstream body;
  body << twin.rdbuf();
  ASSERT_TRUE(agent_.http().Do("PUT", "/v1/jobs", body.str()).ok());
  const std::string input = agent_.WriteFile("in.txt", "have a nice day\n");
  CliResult dispatch = agent_.Cli({"job", "dispatch", "-meta", "name=world", "greet", input});
  ASSERT_EQ(dispatch.exit_code, 0) << dispatch.out << dispatch.err;
  children = Children(agent_, "greet", "dispatch-");
  ASSERT_EQ(children.size(), 1u);
  alloc = WaitAlloc(Escaped(children[0]), "complete");
  auto greeting = agent_.http().Do(
      "GET",
      "/v1/client/fs/logs/" + alloc["ID"].get<std::string>() + "?task=greet&type=stdout&plain=true",
      "");
  ASSERT_TRUE(greeting.ok()) << greeting.status();
  EXPECT_EQ(greeting->body, "Hello, world!\nhave a nice day\n");
}

}  // namespace
}  // namespace drover::integration
