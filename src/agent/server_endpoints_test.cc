// Handlers against a real embedded server, dispatched through the router (no socket).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/server_adapter.h"
#include "api/api_context.h"
#include "api/api_test_util.h"
#include "api/query.h"
#include "server/server.h"
#include "testing/test_util.h"

namespace drover::agent {
namespace {

using api::ApiContext;
using api::Request;
using api::Response;
using api::Router;

constexpr char kJob[] = R"({"Job": {"ID": "web", "Name": "web", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock_driver",
  "Config": {"run_for": "1h"}}]}]}})";

class EndpointsTest : public ::testing::Test {
 protected:
  EndpointsTest() {
    server_.Start();
    ctx_.server = &server_api_;
    ctx_.pool = &pool_;
    ctx_.clock = &clock_;
    ctx_.info.name = "test";
    ctx_.info.version = "0.1.0";
    api::RegisterRoutes(router_, ctx_);
    model::Node node;
    node.id = "node-1";
    node.secret_id = "secret-1";
    node.name = "n1";
    node.datacenter = "dc1";
    node.node_resources.cpu_shares = 4000;
    node.node_resources.memory_mb = 4096;
    node.node_resources.disk_mb = 10000;
    node.drivers["mock_driver"] = model::DriverInfo{.detected = true, .healthy = true};
    EXPECT_TRUE(server_.RegisterNode(node).ok());
  }
  ~EndpointsTest() override {
    server_.Stop();
    io_.restart();
    io_.poll();
    pool_.join();
  }
  Response Call(std::string method, const std::string& target, std::string body = "") {
    return api::test::Dispatch(io_, router_,
                               api::test::MakeRequest(std::move(method), target, std::move(body)));
  }
  codec::Json Body(const Response& r) { return *codec::ParseJson(r.body); }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  server::Server server_{io_.get_executor(), pool_, clock_, server::ServerConfig{}};
  ServerAdapter server_api_{server_};
  ApiContext ctx_;
  Router router_;
};

// A migrate block is taken as it is, with no warning, and comes back filled in.
TEST_F(EndpointsTest, AMigrateBlockIsCarriedOut) {
  Response reg = Call("PUT", "/v1/jobs", R"({"Job": {"ID": "mig", "Datacenters": ["dc1"],
    "TaskGroups": [{"Name": "g", "Migrate": {"MaxParallel": 2}, "Tasks": [{"Name": "t",
    "Driver": "mock_driver", "Config": {"run_for": "1h"}}]}]}})");
  ASSERT_EQ(reg.status, 200) << reg.body;
  EXPECT_EQ(Body(reg)["Warnings"], "");
  EXPECT_EQ(Body(Call("GET", "/v1/job/mig"))["TaskGroups"][0]["Migrate"],
            codec::Json({{"MaxParallel", 2},
                         {"HealthCheck", "checks"},
                         {"MinHealthyTime", 10'000'000'000},
                         {"HealthyDeadline", 300'000'000'000}}));
}

TEST_F(EndpointsTest, DrainStartsAndStopsAsNomadsApi) {
  // An allocation that never reports healthy keeps the drain going.
  ASSERT_EQ(Call("PUT", "/v1/jobs", kJob).status, 200);
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return server_.state().AllocsByJob("default", "web").size() == 1; }));
  Response r = Call("PUT", "/v1/node/node-1/drain",
                    R"({"DrainSpec": {"Deadline": 3600000000000, "IgnoreSystemJobs": true},
                        "Meta": {"message": "kernel"}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Body(r).contains("EvalIDs"));
  EXPECT_EQ(r.headers.at("X-Nomad-Index"), std::to_string(Body(r)["NodeModifyIndex"].get<int>()));
  codec::Json node = Body(Call("GET", "/v1/node/node-1"));
  EXPECT_EQ(node["Drain"], true);
  EXPECT_EQ(node["SchedulingEligibility"], "ineligible");
  EXPECT_EQ(node["DrainStrategy"]["Deadline"], 3'600'000'000'000);
  EXPECT_EQ(node["DrainStrategy"]["IgnoreSystemJobs"], true);
  EXPECT_EQ(node["LastDrain"]["Status"], "draining");
  EXPECT_EQ(node["LastDrain"]["Meta"]["message"], "kernel");
  EXPECT_EQ(Body(Call("GET", "/v1/nodes"))[0]["Drain"], true);
  // Eligible while draining is refused.
  r = Call("PUT", "/v1/node/node-1/eligibility", R"({"Eligibility": "eligible"})");
  EXPECT_EQ(r.status, 400) << r.body;

  r = Call("POST", "/v1/node/node-1/drain", R"({"DrainSpec": null, "MarkEligible": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  node = Body(Call("GET", "/v1/node/node-1"));
  EXPECT_EQ(node["Drain"], false);
  EXPECT_TRUE(node["DrainStrategy"].is_null());
  EXPECT_EQ(node["SchedulingEligibility"], "eligible");
  EXPECT_EQ(node["LastDrain"]["Status"], "canceled");
}

TEST_F(EndpointsTest, BadDrainRequestsChangeNothing) {
  const std::string before = Call("GET", "/v1/node/node-1").body;
  Response r = Call("PUT", "/v1/node/nope/drain", R"({"DrainSpec": {}})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "node not found");
  for (const char* body : {"", "[]", R"({"DrainSpec": 5})", R"({"DrainSpec": {"Deadline": "1h"}})",
                           R"({"DrainSpec": {"Deadline": 1.5}})",
                           R"({"DrainSpec": {"Deadline": 9223372036854775808}})",
                           R"({"DrainSpec": {"IgnoreSystemJobs": 1}})",
                           R"({"MarkEligible": "yes"})", R"({"Meta": {"a": 1}})"}) {
    r = Call("PUT", "/v1/node/node-1/drain", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find("Failed to decode request body"), std::string::npos) << r.body;
  }
  r = Call("PUT", "/v1/node/node-1/drain",
           R"({"Meta": {"m": ")" + std::string(20000, 'x') + R"("}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Call("GET", "/v1/node/node-1").body, before);
}

TEST_F(EndpointsTest, RegisterReadListAndDeregister) {
  Response reg = Call("PUT", "/v1/jobs", kJob);
  ASSERT_EQ(reg.status, 200) << reg.body;
  const std::string eval_id = Body(reg)["EvalID"];
  EXPECT_FALSE(reg.headers.at("X-Nomad-Index").empty());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return Body(Call("GET", "/v1/evaluation/" + eval_id))["Status"] == "complete"; }));
  Response job = Call("GET", "/v1/job/web");
  ASSERT_EQ(job.status, 200);
  EXPECT_EQ(Body(job)["Status"], "running");
  EXPECT_EQ(Body(job)["Priority"], 50);
  EXPECT_EQ(Body(job)["TaskGroups"][0]["Tasks"][0]["KillTimeout"], 5000000000LL);
  Response list = Call("GET", "/v1/jobs?prefix=w");
  ASSERT_EQ(Body(list).size(), 1u);
  EXPECT_EQ(Body(list)[0]["ID"], "web");
  EXPECT_EQ(Body(Call("GET", "/v1/jobs?prefix=x")), codec::Json::array());
  auto allocs = Body(Call("GET", "/v1/job/web/allocations"));
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]["Name"], "web.g[0]");
  const std::string alloc_id = allocs[0]["ID"];
  EXPECT_EQ(Call("GET", "/v1/allocation/" + alloc_id).status, 200);
  EXPECT_EQ(Body(Call("GET", "/v1/allocations?prefix=" + alloc_id.substr(0, 4))).size(), 1u);
  EXPECT_EQ(Body(Call("GET", "/v1/evaluation/" + eval_id + "/allocations")).size(), 1u);
  EXPECT_EQ(Body(Call("GET", "/v1/node/node-1/allocations")).size(), 1u);
  EXPECT_EQ(Body(Call("GET", "/v1/job/web/summary"))["Summary"]["g"]["Starting"], 1);
  Response stop = Call("DELETE", "/v1/job/web?purge=true");
  ASSERT_EQ(stop.status, 200);
  EXPECT_EQ(Call("GET", "/v1/job/web").status, 404);
}

TEST_F(EndpointsTest, BadInputGetsNomadErrors) {
  Response r = Call("PUT", "/v1/jobs", "");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "Request body is empty");
  r = Call("PUT", "/v1/jobs", "{not json");
  EXPECT_EQ(r.status, 400);
  r = Call("PUT", "/v1/jobs", R"({"Foo": 1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "Job must be specified");
  r = Call("PUT", "/v1/job/other", kJob);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "Job ID does not match name");
  r = Call("PUT", "/v1/jobs", R"({"Job": {"ID": "bad", "TaskGroups": [{"Name": "g",
      "Tasks": [{"Name": "t"}]}]}})");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("error"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("driver"), std::string::npos) << r.body;
  EXPECT_EQ(Call("GET", "/v1/job/nope").body, "job not found");
  EXPECT_EQ(Call("GET", "/v1/allocation/nope").body, "alloc not found");
  EXPECT_EQ(Call("GET", "/v1/evaluation/nope").body, "eval not found");
  EXPECT_EQ(Call("GET", "/v1/node/nope").body, "node not found");
  EXPECT_EQ(Call("DELETE", "/v1/job/nope").status, 404);
  EXPECT_EQ(Call("GET", "/v1/jobs?index=abc").body, "Invalid index");
  EXPECT_EQ(Call("GET", "/v1/jobs?index=1&wait=soon").body, "Invalid wait time");
  EXPECT_EQ(Call("PATCH", "/v1/jobs").status, 405);
}

TEST_F(EndpointsTest, BlockingQueryReturnsWhenTableChanges) {
  const uint64_t index = std::stoull(Call("GET", "/v1/jobs").headers.at("X-Nomad-Index"));
  std::optional<Response> blocked;
  Request req{.method = "GET", .path = "/v1/jobs"};
  req.query = {{"index", std::to_string(index)}, {"wait", "1m"}};
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { blocked = co_await router_.Dispatch(req); },
      asio::detached);
  io_.poll();
  EXPECT_FALSE(blocked.has_value());
  ASSERT_EQ(Call("PUT", "/v1/jobs", kJob).status, 200);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return blocked.has_value(); }));
  EXPECT_GT(std::stoull(blocked->headers.at("X-Nomad-Index")), index);
  EXPECT_EQ(Body(*blocked).size(), 1u);
}

TEST_F(EndpointsTest, StatusAndAgentEndpoints) {
  EXPECT_EQ(Body(Call("GET", "/v1/status/leader")), "127.0.0.1:4647");
  EXPECT_EQ(Body(Call("GET", "/v1/regions"))[0], "global");
  auto self = Body(Call("GET", "/v1/agent/self"));
  EXPECT_EQ(self["config"]["UI"]["ShowCLIHints"], false);
  EXPECT_EQ(self["member"]["Status"], "alive");
  EXPECT_TRUE(Body(Call("GET", "/v1/agent/health"))["server"]["ok"]);
  EXPECT_EQ(Body(Call("GET", "/v1/agent/members"))["Members"].size(), 1u);
  EXPECT_EQ(Body(Call("GET", "/v1/nodes"))[0]["ID"], "node-1");
  EXPECT_EQ(Body(Call("GET", "/v1/node/node-1"))["Name"], "n1");
}

TEST_F(EndpointsTest, BlockingReadOfOneObjectIgnoresChangesToOthers) {
  Response reg = Call("PUT", "/v1/jobs", kJob);
  ASSERT_EQ(reg.status, 200);
  // Let the job settle (its evaluation places an alloc and moves it to "running").
  const std::string eval_id = Body(reg)["EvalID"];
  ASSERT_TRUE(testing::RunUntil(io_, [&] {
    return Body(Call("GET", "/v1/evaluation/" + eval_id))["Status"] == "complete" &&
           Body(Call("GET", "/v1/job/web"))["Status"] == "running";
  }));
  const std::string index = Call("GET", "/v1/job/web").headers.at("X-Nomad-Index");
  std::optional<Response> blocked;
  Request req{.method = "GET", .path = "/v1/job/web"};
  req.query = {{"index", index}, {"wait", "1m"}};
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { blocked = co_await router_.Dispatch(req); },
      asio::detached);
  io_.poll();
  std::string other = kJob;
  other.replace(other.find("\"web\""), 5, "\"api\"");
  other.replace(other.find("\"web\""), 5, "\"api\"");
  ASSERT_EQ(Call("PUT", "/v1/jobs", other).status, 200);
  io_.restart();
  io_.poll();
  EXPECT_FALSE(blocked.has_value()) << "woke for a change to another job";
  std::string updated = kJob;
  updated.replace(updated.find("\"1h\""), 4, "\"2h\"");
  ASSERT_EQ(Call("PUT", "/v1/jobs", updated).status, 200);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return blocked.has_value(); }));
  EXPECT_GT(std::stoull(blocked->headers.at("X-Nomad-Index")), std::stoull(index));
}

TEST_F(EndpointsTest, ParseReturnsTheBareJobOrA400) {
  codec::Json request = {{"JobHCL",
                          "variable \"n\" {\n  default = 1\n}\njob \"web\" {\n"
                          "  group \"g\" {\n    count = var.n\n    task \"t\" {\n"
                          "      driver = \"raw_exec\"\n    }\n  }\n  update {\n"
                          "    max_parallel = 2\n  }\n}\n"},
                         {"Variables", "n = 3\n"}};
  Response parsed = Call("POST", "/v1/jobs/parse", request.dump());
  ASSERT_EQ(parsed.status, 200) << parsed.body;
  codec::Json job = Body(parsed);
  EXPECT_EQ(job["ID"], "web");
  EXPECT_EQ(job["TaskGroups"][0]["Count"], 3);
  EXPECT_FALSE(job.contains("Job"));   // bare, as Nomad returns it
  EXPECT_FALSE(job.contains("Type"));  // not canonicalized

  request["Canonicalize"] = true;
  codec::Json canonical = Body(Call("POST", "/v1/jobs/parse", request.dump()));
  EXPECT_EQ(canonical["Type"], "service");
  EXPECT_EQ(canonical["Priority"], 50);
  EXPECT_EQ(canonical["TaskGroups"][0]["Tasks"][0]["Resources"]["CPU"], 100);
  EXPECT_EQ(canonical["Update"]["MaxParallel"], 2);  // kept though the model has no Update

  Response bad = Call("POST", "/v1/jobs/parse", R"({"JobHCL": "job \"x\" {\n  bogus = 1\n}\n"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body,
            "Failed to parse job: input.hcl:2,3-8: Unsupported argument; An argument named "
            "\"bogus\" is not expected here.");
  EXPECT_EQ(Call("POST", "/v1/jobs/parse", R"({"JobHCL": ""})").body, "Job spec is empty");
  Response fs = Call("POST", "/v1/jobs/parse",
                     R"({"JobHCL": "job \"x\" {\n  region = file(\"/etc/hostname\")\n}\n"})");
  EXPECT_EQ(fs.status, 400);
  EXPECT_NE(fs.body.find("file() is not available here"), std::string::npos) << fs.body;
}

TEST_F(EndpointsTest, RegisterRefusesFeaturesDroverDoesNotRunYet) {
  Response reg = Call("PUT", "/v1/jobs",
                      R"({"Job": {"ID": "p", "Spreads": [{"Attribute": "x"}], "TaskGroups": []}})");
  EXPECT_EQ(reg.status, 400);
  EXPECT_EQ(reg.body, "Job.Spreads: spread blocks are not supported by Drover yet");
}

TEST_F(EndpointsTest, ForceAndDispatchRefuseWhatTheyCannotRead) {
  Response force = Call("PUT", "/v1/job/nope/periodic/force", "");
  EXPECT_EQ(force.status, 404);
  EXPECT_EQ(force.body, "job not found");
  const std::pair<const char*, const char*> bad[] = {
      {R"({"Payload": "not base64!"})", "Payload: invalid base64"},
      {R"({"JobID": "other"})", "Job ID does not match"},
      {R"({"Meta": {"k": 1}})", "Meta.k: expected a string"},
      {R"({"Meta": ["k"]})", "Meta: expected an object of strings"},
      {R"({"IdempotencyToken": 5})", "IdempotencyToken: expected a string"},
      {R"([1])", "Failed to decode request body: expected an object"}};
  for (const auto& [body, error] : bad) {
    Response r = Call("PUT", "/v1/job/render/dispatch", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.body, error) << body;
  }
  Response missing = Call("PUT", "/v1/job/render/dispatch", "{}");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "parameterized job \"render\" not found");
}

TEST_F(EndpointsTest, ValidateReportsErrorsInTheBody) {
  codec::Json ok = Body(Call("PUT", "/v1/validate/job", kJob));
  EXPECT_EQ(ok["Error"], "");
  EXPECT_TRUE(ok["ValidationErrors"].empty());
  codec::Json bad =
      Body(Call("PUT", "/v1/validate/job", R"({"Job": {"ID": "x", "TaskGroups": []}})"));
  EXPECT_NE(bad["Error"].get<std::string>().find("Missing job task groups"), std::string::npos)
      << bad.dump();
  EXPECT_EQ(bad["ValidationErrors"].size(), 1u);
}

// Field fidelity: /v1/jobs/parse with Canonicalize gives what Nomad's api Canonicalize
// gives for the same file (each expected value is a documented Nomad default), newer
// blocks parse (and registration refuses them by name), and a registered job carries
// Nomad's zero values and nulls.
constexpr char kFidelityHcl[] = R"(job "fid" {
  type = "batch"
  periodic {
    cron = "@daily"
  }
  affinity {
    attribute = "${node.class}"
    value     = "big"
  }
  group "g" {
    consul {
      namespace = "team"
    }
    task "t" {
      driver = "raw_exec"
      template {
        data        = "x"
        destination = "local/x"
      }
      template {
        data          = "y"
        destination   = "local/y"
        change_mode   = "signal"
      }
      template {
        data          = "z"
        destination   = "local/z"
        change_signal = "sigusr1"
      }
      artifact {
        source = "https://example.com/tool.tgz"
      }
      artifact {
        source = "https://example.com/bin/tool"
        mode   = "file"
      }
      vault {
        policies = ["read"]
      }
      identity {
        env = true
      }
      identity {
        name = "aws"
        aud  = ["sts.amazonaws.com"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
)";

TEST_F(EndpointsTest, ParseCanonicalizeGivesNomadsDefaults) {
  const codec::Json request = {{"JobHCL", kFidelityHcl}, {"Canonicalize", true}};
  Response parsed = Call("POST", "/v1/jobs/parse", request.dump());
  ASSERT_EQ(parsed.status, 200) << parsed.body;
  const codec::Json job = Body(parsed);
  const std::vector<std::pair<std::string, codec::Json>> expected = {
      {"/Region", "global"},
      {"/Namespace", "default"},
      {"/Priority", 50},
      {"/NodePool", "default"},
      {"/Datacenters", codec::Json::array({"*"})},
      {"/Periodic/Enabled", true},
      {"/Periodic/SpecType", "cron"},
      {"/Periodic/TimeZone", "UTC"},
      {"/Periodic/ProhibitOverlap", false},
      {"/Affinities/0/Weight", 50},
      {"/TaskGroups/0/Count", 1},
      {"/TaskGroups/0/RestartPolicy/Attempts", 3},  // batch: 3 in 24h, 15s apart
      {"/TaskGroups/0/RestartPolicy/Interval", 86'400'000'000'000},
      {"/TaskGroups/0/RestartPolicy/Delay", 15'000'000'000},
      {"/TaskGroups/0/RestartPolicy/Mode", "fail"},
      {"/TaskGroups/0/ReschedulePolicy/Attempts", 1},
      {"/TaskGroups/0/ReschedulePolicy/DelayFunction", "constant"},
      {"/TaskGroups/0/EphemeralDisk/SizeMB", 300},
      {"/TaskGroups/0/Consul/Namespace", "team"},
      {"/TaskGroups/0/Tasks/0/Resources/CPU", 100},
      {"/TaskGroups/0/Tasks/0/Resources/MemoryMB", 300},
      {"/TaskGroups/0/Tasks/0/KillTimeout", 5'000'000'000},
      {"/TaskGroups/0/Tasks/0/KillSignal", ""},
      {"/TaskGroups/0/Tasks/0/LogConfig/MaxFiles", 10},
      {"/TaskGroups/0/Tasks/0/LogConfig/MaxFileSizeMB", 10},
      {"/TaskGroups/0/Tasks/0/Templates/0/ChangeMode", "restart"},
      {"/TaskGroups/0/Tasks/0/Templates/0/ChangeSignal", ""},
      {"/TaskGroups/0/Tasks/0/Templates/0/Splay", 5'000'000'000},
      {"/TaskGroups/0/Tasks/0/Templates/0/Perms", "0644"},
      {"/TaskGroups/0/Tasks/0/Templates/0/LeftDelim", "{{"},
      {"/TaskGroups/0/Tasks/0/Templates/0/RightDelim", "}}"},
      {"/TaskGroups/0/Tasks/0/Templates/0/Envvars", false},
      {"/TaskGroups/0/Tasks/0/Templates/0/ErrMissingKey", false},
      {"/TaskGroups/0/Tasks/0/Templates/0/SourcePath", ""},
      {"/TaskGroups/0/Tasks/1/Templates/1/ChangeSignal", nullptr},  // no second task
      {"/TaskGroups/0/Tasks/0/Templates/1/ChangeSignal", "SIGHUP"},
      {"/TaskGroups/0/Tasks/0/Templates/2/ChangeSignal", "SIGUSR1"},
      {"/TaskGroups/0/Tasks/0/Artifacts/0/GetterMode", "any"},
      {"/TaskGroups/0/Tasks/0/Artifacts/0/RelativeDest", "local/"},
      {"/TaskGroups/0/Tasks/0/Artifacts/1/RelativeDest", "local/tool"},
      {"/TaskGroups/0/Tasks/0/Vault/Env", true},
      {"/TaskGroups/0/Tasks/0/Vault/ChangeMode", "restart"},
      {"/TaskGroups/0/Tasks/0/Vault/ChangeSignal", "SIGHUP"},
      {"/TaskGroups/0/Tasks/0/Vault/Cluster", "default"},
      {"/TaskGroups/0/Tasks/0/Identity/Env", true},
      {"/TaskGroups/0/Tasks/0/Identities/0/Name", "aws"},
      {"/TaskGroups/0/Tasks/0/VolumeMounts/0/PropagationMode", "private"},
      {"/TaskGroups/0/Tasks/0/VolumeMounts/0/ReadOnly", false},
  };
  for (const auto& [pointer, value] : expected) {
    const codec::Json::json_pointer p(pointer);
    if (value.is_null()) {
      EXPECT_FALSE(job.contains(p)) << pointer;
      continue;
    }
    ASSERT_TRUE(job.contains(p)) << pointer << " missing in " << job.dump();
    EXPECT_EQ(job[p], value) << pointer;
  }

  // Registration refuses what it cannot carry out, by name.
  codec::Json without_affinity = job;
  without_affinity.erase("Affinities");  // refused first otherwise
  Response reg = Call("PUT", "/v1/jobs", codec::Dump(codec::Json{{"Job", without_affinity}}));
  EXPECT_EQ(reg.status, 400);
  EXPECT_NE(reg.body.find("Job.TaskGroups[0].Consul: consul blocks are not supported"),
            std::string::npos)
      << reg.body;

  // A registered job: Nomad's zero values, and null where Nomad's field is a pointer.
  ASSERT_EQ(Call("PUT", "/v1/jobs", kJob).status, 200);
  const codec::Json web = Body(Call("GET", "/v1/job/web"));
  for (const auto& [pointer, value] : std::vector<std::pair<std::string, codec::Json>>{
           {"/Dispatched", false},
           {"/ParentID", ""},
           {"/Stop", false},
           {"/Periodic", nullptr},
           {"/ParameterizedJob", nullptr},
           {"/Payload", nullptr},
           {"/Affinities", nullptr},
           {"/Spreads", nullptr},
           {"/Multiregion", nullptr},
           {"/DispatchIdempotencyToken", nullptr},
           {"/TaskGroups/0/Tasks/0/KillSignal", ""},
           {"/TaskGroups/0/Tasks/0/Leader", false},
           {"/TaskGroups/0/Tasks/0/Templates", nullptr},
           {"/TaskGroups/0/Tasks/0/Vault", nullptr},
           {"/TaskGroups/0/Tasks/0/DispatchPayload", nullptr},
           {"/TaskGroups/0/Services", nullptr},
       }) {
    const codec::Json::json_pointer p(pointer);
    ASSERT_TRUE(web.contains(p)) << pointer << " missing";
    EXPECT_EQ(web[p], value) << pointer;
  }
  // The list's stubs: Multiregion null, Meta only with ?meta=true.
  std::string with_meta = kJob;
  with_meta.replace(with_meta.find(R"("ID": "web", "Name": "web")"), 26,
                    R"("ID": "m", "Name": "m", "Meta": {"team": "a"})");
  ASSERT_EQ(Call("PUT", "/v1/jobs", with_meta).status, 200);
  const codec::Json plain = Body(Call("GET", "/v1/jobs?prefix=m"));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(plain[0].contains("Multiregion"));
  EXPECT_FALSE(plain[0].contains("Meta"));
  EXPECT_EQ(Body(Call("GET", "/v1/jobs?prefix=m&meta=true"))[0]["Meta"],
            codec::Json({{"team", "a"}}));
}

}  // namespace
}  // namespace drover::agent
