// Attacks through the HTTP API (issue 16, defects 4, 5, 7, 8, 10, 11, 12, 16), each as a
// hostile client would make it, then a check that it was refused or had no effect and
// that the agent still serves.
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"
#include "tests/integration/raw_http.h"
#include "tests/integration/security/attack_util.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

class HttpAttackTest : public AgentTest {
 protected:
  RawResponse Send(const std::string& method, const std::string& target, const std::string& body,
                   const std::map<std::string, std::string>& headers = {
                       {"Content-Type", "application/json"}}) {
    return RawExchange(agent_.address(),
                       HttpRequest(method, target, agent_.address(), body, headers));
  }
  // A raw_exec job body whose task config nests `depth` arrays.
  static std::string DeepJob(int depth) {
    std::string args = std::string(static_cast<size_t>(depth), '[') + "0" +
                       std::string(static_cast<size_t>(depth), ']');
    return R"({"Job":{"ID":"deep","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[
      {"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/true","args":)" +
           args + "}}]}]}}";
  }
};

// Defect 4: 30,000 nested brackets in a task config crashed the agent (recursive
// decoding) on PUT /v1/jobs and PUT /v1/validate/job.
TEST_F(HttpAttackTest, Defect04_DeeplyNestedJsonIsRefusedNotRecursedInto) {
  for (const char* path : {"/v1/jobs", "/v1/validate/job"}) {
    RawResponse r = Send("PUT", path, DeepJob(30'000));
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_NE(r.body.find("nested deeper than"), std::string::npos) << r.body;
  }
  // Deep, but within the parser's limit: refused by the job's own limit on config.
  RawResponse r = Send("PUT", "/v1/jobs", DeepJob(100));
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("nested deeper than 64 levels"), std::string::npos) << r.body;
  ExpectServing(agent_);
}

// Defect 5: ReschedulePolicy.Attempts = 2e9 froze the control loop for 29 s per
// request; Count = 2e8 held the scheduler for 68 s; Count -1 silently became 1.
TEST_F(HttpAttackTest, Defect05_NumbersAreBoundedAndNeverSilentlyChanged) {
  const std::string base = RawExecJob("bomb", "service", "sleep 1");
  struct Case {
    std::string body;
    std::string message;
  };
  const Case cases[] = {
      {WithGroupField(base, "ReschedulePolicy",
                      {{"Attempts", 2'000'000'000},
                       {"Interval", 3'600'000'000'000},
                       {"Delay", 5'000'000'000},
                       {"DelayFunction", "exponential"},
                       {"MaxDelay", 3'600'000'000'000}}),
       "reschedule attempts 2000000000 is above the limit"},
      {WithGroupField(base, "ReschedulePolicy",
                      {{"Attempts", 2'000'000'000},
                       {"Interval", 3'600'000'000'000},
                       {"Delay", 5'000'000'000},
                       {"DelayFunction", "fibonacci"},
                       {"MaxDelay", 3'600'000'000'000}}),
       "reschedule attempts 2000000000 is above the limit"},
      {WithGroupField(base, "Count", 200'000'000), "count 200000000 is above the limit"},
      {WithGroupField(base, "Count", -1), "Task group count can't be negative"},
  };
  for (const Case& c : cases) {
    RawResponse r = Send("PUT", "/v1/jobs", c.body);
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos) << r.body;
    ExpectServing(agent_);
  }
  EXPECT_EQ(agent_.Get("/v1/jobs").size(), 0u);
}

// Defect 7: any web page could POST a job with Content-Type text/plain (a "simple"
// cross-site request) and run a raw_exec task as root on a developer's machine.
TEST_F(HttpAttackTest, Defect07_BrowsersCannotWriteFromOtherSites) {
  const std::string job = RawExecJob("csrf", "batch", "touch /tmp/pwned");
  RawResponse r =
      Send("POST", "/v1/jobs", job,
           {{"Content-Type", "text/plain;charset=UTF-8"}, {"Origin", "https://evil.example"}});
  EXPECT_EQ(r.status, 403) << r.body;
  r = Send("POST", "/v1/jobs", job, {{"Content-Type", "text/plain"}});
  EXPECT_EQ(r.status, 415) << r.body;
  r = Send("POST", "/v1/jobs", job, {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(r.status, 415) << r.body;
  // DNS rebinding: the page's own origin, a Host that is not the agent's.
  r = Send("POST", "/v1/jobs", job,
           {{"Host", "evil.example:4646"},
            {"Origin", "http://evil.example:4646"},
            {"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 403) << r.body;
  // ... and its same-origin reads of logs and files.
  r = Send("GET", "/v1/jobs", "",
           {{"Host", "evil.example:4646"}, {"Sec-Fetch-Site", "same-origin"}});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(agent_.Get("/v1/jobs").size(), 0u);
  // The agent's own origin, the CLI, and Nomad's Go client (no Content-Type) still work.
  r = Send("POST", "/v1/jobs", job,
           {{"Origin", "http://" + agent_.address()}, {"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 200) << r.body;
  r = Send("GET", "/v1/jobs", "", {});
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectServing(agent_);
}

// Defect 12: job IDs with '/' were accepted and run, and then no route could read,
// stop or purge them.
TEST_F(HttpAttackTest, Defect12_JobIdsWithSlashesCanBeReadStoppedAndPurged) {
  for (const std::string& id : {std::string("a/b"), std::string("../../x")}) {
    auto body = codec::ParseJson(RawExecJob("x", "service", "sleep 60"));
    (*body)["Job"]["ID"] = id;
    RawResponse r = Send("PUT", "/v1/jobs", codec::Dump(*body));
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string escaped = cli::PathEscape(id);
    EXPECT_EQ(agent_.Get("/v1/job/" + escaped)["ID"], id);
    EXPECT_EQ(Send("DELETE", "/v1/job/" + escaped + "?purge=true", "").status, 200);
    EXPECT_EQ(Send("GET", "/v1/job/" + escaped, "", {}).status, 404);
  }
  ExpectServing(agent_);
}

// Defect 16: namespaces with NUL bytes, and namespaces that do not exist, were accepted
// (and the server's DB keys use NUL as a separator).
TEST_F(HttpAttackTest, Defect16_NamespacesMustBeValidAndExist) {
  EXPECT_EQ(Send("GET", "/v1/jobs?namespace=a%00b", "", {}).status, 400);
  for (const std::string& ns : {std::string("a\0b", 3), std::string("prod")}) {
    auto body = codec::ParseJson(RawExecJob("nsjob", "service", "sleep 60"));
    (*body)["Job"]["Namespace"] = ns;
    RawResponse r = Send("PUT", "/v1/jobs", codec::Dump(*body));
    EXPECT_EQ(r.status, 500) << r.body;
  }
  EXPECT_EQ(agent_.Get("/v1/jobs?namespace=*").size(), 0u);
  ExpectServing(agent_);
}

// Defect 10: any exec job could raise its own memory limit to 2 PB with MemoryMaxMB;
// Nomad only honours it with memory oversubscription enabled.
TEST_F(HttpAttackTest, Defect10_MemoryMaxNeedsOversubscriptionEnabled) {
  const std::string body =
      WithTaskField(RawExecJob("mem", "service", "sleep 60"), "Resources",
                    {{"CPU", 100}, {"MemoryMB", 32}, {"MemoryMaxMB", 2'000'000}});
  RawResponse r = Send("PUT", "/v1/jobs", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("Memory oversubscription is not enabled"), std::string::npos) << r.body;
  const codec::Json alloc = WaitAlloc("mem", "running");
  EXPECT_EQ(alloc["AllocatedResources"]["Tasks"]["t"]["Memory"]["MemoryMaxMB"], 0);
  // Beyond any machine: refused outright.
  r = Send("PUT", "/v1/jobs",
           WithTaskField(RawExecJob("mem2", "service", "sleep 60"), "Resources",
                         {{"CPU", 100}, {"MemoryMB", 32}, {"MemoryMaxMB", 2'000'000'000}}));
  EXPECT_EQ(r.status, 500) << r.body;
  ExpectServing(agent_);
}

// Defect 11: 64 MiB bodies with no limit on how many at once (12 requests held 2.2 GB).
TEST(HttpLimitsTest, Defect11_BodiesAreBoundedPerRequestAndInTotal) {
  testing::TempDir conf;
  std::ofstream(conf.path() / "limits.hcl")
      << "limits {\n  http_max_body_bytes = 1048576\n  http_max_inflight_body_bytes = 2097152\n}\n";
  AgentProcess agent({"-config", (conf.path() / "limits.hcl").string()});
  ASSERT_TRUE(agent.ok()) << agent.log();
  // A GET takes no body.
  EXPECT_EQ(
      RawExchange(agent.address(), HttpRequest("GET", "/v1/jobs", agent.address(), "{}")).status,
      400);
  // Too large for one request: refused from its Content-Length, before the body.
  RawResponse r =
      RawExchange(agent.address(),
                  "PUT /v1/jobs HTTP/1.1\r\nHost: " + agent.address() +
                      "\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\n\r\n");
  EXPECT_EQ(r.status, 413) << r.body;
  // Two requests send all but the last byte of 1 MiB bodies and stall: what they hold
  // counts, and a third body that would pass the budget is turned away.
  std::vector<int> slow;
  const std::string head = "PUT /v1/jobs HTTP/1.1\r\nHost: " + agent.address() +
                           "\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n";
  const std::string almost(1048575, ' ');
  for (int i = 0; i < 2; ++i) {
    const int fd = ConnectTo(agent.address());
    ASSERT_GE(fd, 0);
    const std::string bytes = head + almost;
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      sent += static_cast<size_t>(n);
    }
    slow.push_back(fd);
  }
  ASSERT_TRUE(testing::WaitFor([&] {
    RawResponse third = RawExchange(agent.address(), head + almost + " ", std::chrono::seconds(5));
    return third.status == 503;
  }));
  for (int fd : slow)
    close(fd);
  ExpectServing(agent);
}

// Defect 8: with no connection cap, at the descriptor limit the accept loop spun at
// 93% CPU and logged 27 MB/s, and every request timed out.
TEST(HttpLimitsTest, Defect08_ConnectionsAreCappedAndAcceptingNeverSpins) {
  testing::TempDir conf;
  std::ofstream(conf.path() / "limits.hcl") << "limits {\n  http_max_conns_per_client = 8\n}\n";
  // The agent inherits a low descriptor limit, so connections can exhaust it.
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  rlimit low = saved;
  low.rlim_cur = 256;
  setrlimit(RLIMIT_NOFILE, &low);
  AgentProcess agent({"-config", (conf.path() / "limits.hcl").string()});
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(agent.ok()) << agent.log();
  std::vector<int> held;
  for (int i = 0; i < 8; ++i)
    held.push_back(ConnectTo(agent.address()));
  // One more from the same client: answered 429 at once.
  RawResponse r = RawExchange(agent.address(), HttpRequest("GET", "/v1/jobs", agent.address()),
                              std::chrono::seconds(5));
  EXPECT_EQ(r.status, 429) << r.body;
  // Far more connections than the agent has descriptors: it neither spins nor floods
  // its log while they wait.
  for (int i = 0; i < 400; ++i) {
    const int fd = ConnectTo(agent.address());
    if (fd >= 0)
      held.push_back(fd);
  }
  // Spinning shows as CPU time and log growth: watch both for 2 s and fail as soon as
  // either passes what a waiting agent would use.
  const size_t log_before = agent.log().size();
  const long cpu_before = CpuTicks(agent.pid());
  const long half_core = sysconf(_SC_CLK_TCK);  // over 2 s
  const bool busy = testing::WaitFor(
      [&] {
        return CpuTicks(agent.pid()) - cpu_before > half_core ||
               agent.log().size() - log_before > 64u * 1024;
      },
      std::chrono::seconds(2));
  EXPECT_FALSE(busy) << "the agent spun: " << CpuTicks(agent.pid()) - cpu_before << " ticks, "
                     << agent.log().size() - log_before << " log bytes";
  for (int fd : held)
    close(fd);
  EXPECT_TRUE(testing::WaitFor([&] {
    auto h = agent.http().Do("GET", "/v1/agent/health", {}, std::chrono::seconds(2));
    return h.ok();
  }));
}

}  // namespace
}  // namespace drover::integration
