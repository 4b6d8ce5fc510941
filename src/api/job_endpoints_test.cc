// The job endpoints against a fake ServerApi: what reaches the server (only valid,
// canonical jobs), how its answers and errors are encoded, and what blocking queries
// ask of it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/api_test_util.h"
#include "codec/json.h"

namespace drover::api {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

template <typename T>
absl::StatusOr<T> Refused() {
  return absl::UnimplementedError("not in this fake");
}

class FakeServer final : public ServerApi {
 public:
  const std::string& region() const override { return region_; }
  // A follower with a leader elsewhere, when `peers` says so.
  std::vector<ServerPeer> Peers() const override { return peers; }
  bool IsLeader() const override { return leader; }
  std::map<std::string, std::string> ReplicationStats() const override { return {}; }
  std::function<std::vector<model::StateRecord>()> SnapshotState() const override {
    return [] { return std::vector<model::StateRecord>{}; };
  }
  asio::awaitable<absl::Status> RestoreState(std::vector<model::StateRecord>) override {
    co_return absl::UnimplementedError("not in this fake");
  }
  asio::awaitable<absl::Status> CollectGarbage() override {
    co_return absl::UnimplementedError("not in this fake");
  }
  model::SchedulerConfig SchedulerConfiguration() const override { return scheduler; }
  asio::awaitable<absl::StatusOr<std::pair<bool, uint64_t>>> SetSchedulerConfigDurably(
      model::SchedulerConfig config, std::optional<uint64_t> cas) override {
    if (cas && *cas != scheduler.modify_index)
      co_return std::make_pair(false, uint64_t{12});
    scheduler = config;
    scheduler.modify_index = 12;
    co_return std::make_pair(true, uint64_t{12});
  }
  asio::awaitable<absl::StatusOr<uint64_t>> DeleteEvalsDurably(
      std::vector<std::string> ids) override {
    deleted_evals = ids;
    co_return uint64_t{13};
  }

  model::JobPtr GetJob(const std::string& ns, const std::string& id) const override {
    auto it = jobs.find(ns + "/" + id);
    return it == jobs.end() ? nullptr : it->second;
  }
  std::vector<model::JobPtr> ListJobs(const std::string&, const std::string&) const override {
    std::vector<model::JobPtr> out;
    for (const auto& [key, job] : jobs)
      out.push_back(job);
    return out;
  }
  model::JobSummary JobSummary(const model::Job& job) const override {
    return model::JobSummary{.job_id = job.id, .namespace_ = job.namespace_};
  }
  model::EvalPtr GetEval(const std::string&) const override { return nullptr; }
  std::vector<model::EvalPtr> ListEvals(const std::string&, const std::string&) const override {
    return {};
  }
  std::vector<model::EvalPtr> EvalsByJob(const std::string&, const std::string&) const override {
    return {};
  }
  model::AllocPtr GetAlloc(const std::string&) const override { return nullptr; }
  std::vector<model::AllocPtr> ListAllocs(const std::string&, const std::string&) const override {
    return {};
  }
  std::vector<model::AllocPtr> AllocsByJob(const std::string&, const std::string&) const override {
    return {};
  }
  std::vector<model::AllocPtr> AllocsByNode(const std::string&) const override { return {}; }
  std::vector<model::AllocPtr> AllocsByEval(const std::string&) const override { return {}; }
  model::NodePtr GetNode(const std::string&) const override { return nullptr; }
  std::vector<model::NodePtr> ListNodes(const std::string&) const override { return {}; }

  uint64_t LatestIndex() const override { return latest; }
  uint64_t TableIndex(model::Table) const override { return latest; }
  asio::awaitable<uint64_t> BlockUntil(std::vector<model::Table> tables, uint64_t min_index,
                                       common::Duration max_wait) override {
    blocked_on = tables;
    blocked_index = min_index;
    blocked_wait = max_wait;
    co_return latest;
  }

  asio::awaitable<absl::StatusOr<model::EvalResponse>> RegisterJobDurably(
      codec::PreparedJob job, std::optional<uint64_t> enforce_index) override {
    registered.push_back(job.job());
    enforced = enforce_index;
    if (!answer.ok())
      co_return answer;
    co_return model::EvalResponse{.eval_id = "e1",
                                  .eval_ids = {"e1"},
                                  .eval_create_index = 7,
                                  .job_modify_index = 7,
                                  .warnings = {"from the server"},
                                  .index = 7};
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> DeregisterJobDurably(std::string ns,
                                                                            std::string id,
                                                                            bool purge,
                                                                            bool) override {
    deregistered.push_back(ns + "/" + id + (purge ? " purge" : ""));
    if (!answer.ok())
      co_return answer;
    co_return model::EvalResponse{.eval_id = "e2", .index = 8};
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> StopAllocDurably(std::string,
                                                                        bool) override {
    co_return Refused<model::EvalResponse>();
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> SetNodeEligibilityDurably(
      std::string, std::string) override {
    co_return Refused<model::EvalResponse>();
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> UpdateNodeDrainDurably(
      std::string, std::optional<model::DrainSpec>, bool,
      std::map<std::string, std::string>) override {
    co_return Refused<model::EvalResponse>();
  }

  std::vector<model::JobPtr> JobVersions(const std::string&, const std::string&) const override {
    return {};
  }
  asio::awaitable<absl::StatusOr<uint64_t>> SetJobStabilityDurably(std::string, std::string id,
                                                                   uint64_t version,
                                                                   bool stable) override {
    version_calls.push_back("stable " + id + " " + std::to_string(version) +
                            (stable ? " true" : " false"));
    co_return uint64_t{9};
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> RevertJobDurably(
      std::string, std::string id, uint64_t version, std::optional<uint64_t> enforce) override {
    version_calls.push_back("revert " + id + " " + std::to_string(version) +
                            (enforce ? " enforce " + std::to_string(*enforce) : ""));
    co_return model::EvalResponse{.eval_id = "e3", .index = 10};
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> EvaluateJobDurably(std::string,
                                                                          std::string id,
                                                                          bool force) override {
    version_calls.push_back("evaluate " + id + (force ? " force" : ""));
    co_return model::EvalResponse{.eval_id = "e4", .index = 11};
  }
  asio::awaitable<absl::StatusOr<model::JobPlan>> PlanJob(codec::PreparedJob, bool) override {
    co_return Refused<model::JobPlan>();
  }

  absl::StatusOr<std::vector<model::StateEventPtr>> EventsFrom(uint64_t, size_t) const override {
    return std::vector<model::StateEventPtr>{};
  }
  uint64_t EventSeqAtIndex(uint64_t) const override { return 1; }
  asio::awaitable<absl::Status> WaitDurable() override { co_return absl::OkStatus(); }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> ForcePeriodicDurably(std::string,
                                                                            std::string) override {
    co_return Refused<model::EvalResponse>();
  }
  asio::awaitable<absl::StatusOr<model::DispatchResponse>> DispatchJobDurably(
      model::DispatchRequest) override {
    co_return Refused<model::DispatchResponse>();
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> ScaleJobDurably(ScaleRequest) override {
    co_return Refused<model::EvalResponse>();
  }
  std::shared_ptr<const model::JobScalingEvents> ScalingEvents(const std::string&,
                                                               const std::string&) const override {
    return nullptr;
  }
  model::DeploymentPtr GetDeployment(const std::string&) const override { return nullptr; }
  std::vector<model::DeploymentPtr> ListDeployments(const std::string&,
                                                    const std::string&) const override {
    return {};
  }
  std::vector<model::DeploymentPtr> DeploymentsByJob(const std::string&,
                                                     const std::string&) const override {
    return {};
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PromoteDeploymentDurably(
      std::string, bool, std::vector<std::string>) override {
    co_return Refused<model::DeploymentUpdateResponse>();
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> FailDeploymentDurably(
      std::string) override {
    co_return Refused<model::DeploymentUpdateResponse>();
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PauseDeploymentDurably(
      std::string, bool) override {
    co_return Refused<model::DeploymentUpdateResponse>();
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> SetAllocHealthDurably(
      std::string, std::vector<std::string>, std::vector<std::string>) override {
    co_return Refused<model::DeploymentUpdateResponse>();
  }

  absl::StatusOr<common::Duration> RegisterNode(model::Node) override {
    return Refused<common::Duration>();
  }
  absl::StatusOr<common::Duration> Heartbeat(const std::string&) override {
    return Refused<common::Duration>();
  }
  absl::Status AuthenticateNode(const std::string&, const std::string&) const override {
    return absl::UnimplementedError("not in this fake");
  }
  asio::awaitable<absl::Status> UpdateAllocsDurably(
      std::string, std::vector<model::AllocClientUpdate>) override {
    co_return absl::UnimplementedError("not in this fake");
  }
  absl::Status EmitNodeEvents(const std::string&, std::vector<model::NodeEvent>) override {
    return absl::UnimplementedError("not in this fake");
  }
  asio::awaitable<absl::StatusOr<model::NodeAllocs>> WatchNodeAllocs(std::string, uint64_t,
                                                                     common::Duration) override {
    co_return Refused<model::NodeAllocs>();
  }
  asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> WatchPreviousAlloc(
      std::string, std::string, uint64_t, common::Duration) override {
    co_return Refused<model::PrevAllocInfo>();
  }

  std::map<std::string, model::JobPtr> jobs;  // "<ns>/<id>"
  uint64_t latest = 3;
  absl::Status answer;
  std::vector<model::Job> registered;
  std::optional<uint64_t> enforced;
  std::vector<std::string> deregistered;
  std::vector<std::string> version_calls;  // stability, revert and evaluate, as made
  model::SchedulerConfig scheduler;
  std::vector<std::string> deleted_evals;
  std::vector<model::Table> blocked_on;
  uint64_t blocked_index = 0;
  common::Duration blocked_wait{0};

  std::vector<ServerPeer> peers;
  bool leader = true;

 private:
  std::string region_ = "global";
};

constexpr char kJob[] = R"({"Job": {"ID": "web", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
  "Config": {"command": "/bin/true"}}]}]}})";

class JobEndpointsTest : public ::testing::Test {
 protected:
  JobEndpointsTest() {
    ctx_.server = &server_;
    ctx_.pool = &pool_;
    ctx_.clock = &clock_;
    RegisterRoutes(router_, ctx_);
  }
  ~JobEndpointsTest() override { pool_.join(); }

  Response Call(std::string method, const std::string& target, std::string body = "") {
    return test::Dispatch(io_, router_,
                          test::MakeRequest(std::move(method), target, std::move(body)));
  }
  static codec::Json Json(const std::string& text) { return *codec::ParseJson(text); }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  FakeServer server_;
  ApiContext ctx_;
  Router router_;
};

TEST_F(JobEndpointsTest, TheServerGetsTheJobCanonicalAndAnswersWithItsEvaluation) {
  Response r = Call("PUT", "/v1/jobs", kJob);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(server_.registered.size(), 1u);
  const model::Job& job = server_.registered[0];
  EXPECT_EQ(job.namespace_, "default");
  EXPECT_EQ(job.region, "global");
  EXPECT_EQ(job.name, "web");
  EXPECT_EQ(job.priority, 50);
  EXPECT_FALSE(server_.enforced.has_value());
  const codec::Json body = Json(r.body);
  EXPECT_EQ(body["EvalID"], "e1");
  EXPECT_EQ(body["Warnings"], "from the server");
  EXPECT_EQ(r.headers.at("X-Nomad-Index"), "7");

  codec::Json enforced = Json(kJob);
  enforced["EnforceIndex"] = true;
  enforced["JobModifyIndex"] = 3;
  ASSERT_EQ(Call("PUT", "/v1/job/web", codec::Dump(enforced)).status, 200);
  EXPECT_EQ(server_.enforced, std::optional<uint64_t>(3));
}

TEST_F(JobEndpointsTest, OnlyValidJobsReachTheServerAndItsRefusalsComeBack) {
  EXPECT_EQ(Call("PUT", "/v1/jobs", "{").status, 400);
  EXPECT_EQ(Call("PUT", "/v1/job/other", kJob).status, 400);  // the ID does not match
  Response r = Call("PUT", "/v1/jobs", R"({"Job": {"ID": "x", "Datacenters": ["dc1"]}})");
  EXPECT_EQ(r.status, 500);  // invalid: Nomad's 500, and the server never sees it
  r = Call("PUT", "/v1/jobs?region=elsewhere", kJob);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "No path to region \"elsewhere\"");
  EXPECT_TRUE(server_.registered.empty());

  server_.answer = absl::UnavailableError("state DB: no space left on device");
  r = Call("PUT", "/v1/jobs", kJob);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "state DB: no space left on device");
  server_.answer = absl::NotFoundError("job not found");
  r = Call("DELETE", "/v1/job/web?purge=true");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(server_.deregistered, std::vector<std::string>{"default/web purge"});
}

TEST_F(JobEndpointsTest, ReadsComeFromTheServerAndBlockingQueriesAskItToWait) {
  EXPECT_EQ(Call("GET", "/v1/job/web").status, 404);
  auto job = std::make_shared<model::Job>();
  job->id = "web";
  job->namespace_ = "default";
  job->modify_index = 2;
  server_.jobs["default/web"] = job;
  Response r = Call("GET", "/v1/job/web");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body)["ID"], "web");
  EXPECT_EQ(r.headers.at("X-Nomad-Index"), "2");

  r = Call("GET", "/v1/jobs?index=5&wait=2s");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body)[0]["ID"], "web");
  EXPECT_EQ(server_.blocked_index, 5u);
  EXPECT_GE(server_.blocked_wait, 2s);
  EXPECT_LE(server_.blocked_wait, 2000ms + 2000ms / 16);
  EXPECT_EQ(server_.blocked_on,
            (std::vector<model::Table>{model::Table::kJobs, model::Table::kAllocs,
                                       model::Table::kEvals}));
  EXPECT_EQ(Call("GET", "/v1/jobs?index=x").status, 400);
}

// Stability, revert and evaluate bodies: Nomad's 400s for what cannot be read or names
// another job, before anything reaches the server.
TEST_F(JobEndpointsTest, VersionWritesDecodeTheirBodiesAndRefuseBadOnes) {
  EXPECT_EQ(
      Call("PUT", "/v1/job/web/stable", R"({"JobID":"web","JobVersion":2,"Stable":true})").status,
      200);
  Response r = Call("PUT", "/v1/job/web/revert",
                    R"({"JobID":"web","JobVersion":1,"EnforcePriorVersion":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body)["EvalID"], "e3");
  EXPECT_EQ(Call("PUT", "/v1/job/web/evaluate", "").status, 200);
  EXPECT_EQ(
      Call("POST", "/v1/job/web/evaluate", R"({"EvalOptions":{"ForceReschedule":true}})").status,
      200);
  EXPECT_EQ(server_.version_calls,
            (std::vector<std::string>{"stable web 2 true", "revert web 1 enforce 2", "evaluate web",
                                      "evaluate web force"}));
  server_.version_calls.clear();

  struct Bad {
    const char* path;
    std::string body;
    const char* message;
  };
  const Bad bad[] = {
      {"/v1/job/web/stable", "", "Request body is empty"},
      {"/v1/job/web/stable", R"({"JobVersion":1})", "JobID must be specified"},
      {"/v1/job/web/stable", R"({"JobID":"db"})", "Job ID does not match"},
      {"/v1/job/web/stable", R"({"JobID":"web","Stable":"yes"})", "Stable: expected a boolean"},
      {"/v1/job/web/revert", R"({"JobID":"web","JobVersion":-1})",
       "JobVersion: expected a non-negative integer"},
      {"/v1/job/web/revert", "[1]", "Failed to decode request body: expected an object"},
      {"/v1/job/web/evaluate", R"({"JobID":"db"})", "Job ID does not match"},
      {"/v1/job/web/evaluate", R"({"EvalOptions":{"ForceReschedule":1}})",
       "ForceReschedule: expected a boolean"},
      {"/v1/job/web/evaluate", std::string(70'000, ' '),
       "Request body too large: at most 65536 bytes here"},
  };
  for (const Bad& b : bad) {
    r = Call("PUT", b.path, b.body);
    EXPECT_EQ(r.status, 400) << b.path << " " << b.body.substr(0, 80);
    EXPECT_EQ(r.body, b.message) << b.path;
  }
  EXPECT_TRUE(server_.version_calls.empty());
  EXPECT_EQ(Call("GET", "/v1/job/web/versions?diff_tag=prod").status, 400);
  EXPECT_EQ(Call("GET", "/v1/job/web/versions?diff_version=x").status, 400);
  EXPECT_EQ(Call("GET", "/v1/job/web/versions").status, 404);
}

TEST_F(JobEndpointsTest, SchedulerConfigurationAndEvalDeleteAsNomadsApi) {
  Response r = Call("GET", "/v1/operator/scheduler/configuration");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body)["SchedulerConfig"]["SchedulerAlgorithm"], "binpack");
  EXPECT_EQ(Json(r.body)["SchedulerConfig"]["PreemptionConfig"]["SystemSchedulerEnabled"], false);
  // The body is the whole configuration: what it leaves out is zero.
  server_.scheduler.memory_oversubscription = true;
  r = Call("PUT", "/v1/operator/scheduler/configuration", R"({"PauseEvalBroker": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body), (codec::Json{{"Updated", true}, {"Index", 12}}));
  EXPECT_TRUE(server_.scheduler.pause_eval_broker);
  EXPECT_FALSE(server_.scheduler.memory_oversubscription);
  r = Call("PUT", "/v1/operator/scheduler/configuration?cas=3", "{}");
  EXPECT_EQ(Json(r.body)["Updated"], false);
  EXPECT_EQ(Call("PUT", "/v1/operator/scheduler/configuration?cas=x", "{}").status, 400);
  r = Call("PUT", "/v1/operator/scheduler/configuration", R"({"SchedulerAlgorithm": "spread"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body,
            "Invalid scheduler configuration: SchedulerAlgorithm: \"spread\" is not supported by "
            "Drover yet (only \"binpack\")");
  EXPECT_EQ(Call("PUT", "/v1/operator/scheduler/configuration", R"({"PauseEvalBroker": 1})").status,
            400);

  r = Call("DELETE", "/v1/evaluations", R"({"EvalIDs": ["a", "b"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.headers.at("X-Nomad-Index"), "13");
  EXPECT_EQ(server_.deleted_evals, (std::vector<std::string>{"a", "b"}));
  const std::pair<std::string, const char*> bad[] = {
      {"{}", "evals must be deleted by either ID or filter"},
      {R"({"EvalIDs": ["a"], "Filter": "x"})", "evals cannot be deleted by both ID and filter"},
      {R"({"Filter": "ID == \"a\""})",
       "Filter: filter expressions are not supported by Drover yet"},
      {R"({"EvalIDs": [1]})", "EvalIDs: expected a list of strings"},
  };
  for (const auto& [body, message] : bad) {
    r = Call("DELETE", "/v1/evaluations", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.body, message);
  }
  codec::Json many = {{"EvalIDs", codec::Json::array()}};
  for (int i = 0; i < 7282; ++i)
    many["EvalIDs"].push_back("e");
  r = Call("DELETE", "/v1/evaluations", codec::Dump(many));
  EXPECT_EQ(r.body, "request includes 7282 evaluation IDs, must be 7281 or fewer");
}

TEST_F(JobEndpointsTest, ScaleRequestsAreBoundedAndNameTheirGroup) {
  const std::pair<std::string, const char*> bad[] = {
      {R"({"Count": 2})", "missing task group name for scaling action"},
      {R"({"Count": 2, "Target": {"Job": "db", "Group": "g"}})",
       "job ID in payload did not match URL"},
      {R"({"Count": "2", "Target": {"Group": "g"}})", "Count: expected an integer"},
      {R"({"Target": {"Group": "g"}, "Message": ")" + std::string(2000, 'm') + R"("})",
       "Message: at most 1024 bytes"},
      {R"({"Target": {"Group": "g"}, "Meta": {"k": ")" + std::string(5000, 'v') + R"("}})",
       "Meta: at most 4096 bytes encoded"},
  };
  for (const auto& [body, message] : bad) {
    Response r = Call("PUT", "/v1/job/web/scale", body);
    EXPECT_EQ(r.status, 400) << body.substr(0, 80);
    EXPECT_EQ(r.body, message);
  }
}

}  // namespace
}  // namespace drover::api
