// The client endpoints (/v1/client/...) against a fake ClientApi: what each request
// asks of the client, and how its answers and errors are encoded. The files are real
// (an alloc dir in a temp dir); everything else is the fake's.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/api_test_util.h"
#include "codec/json.h"

namespace drover::api {
namespace {

namespace fs = std::filesystem;

class FakeClient final : public ClientApi {
 public:
  explicit FakeClient(fs::path root) : root_(std::move(root)) {}

  const std::string& node_id() const override { return node_id_; }
  size_t num_allocs() const override { return allocs.size(); }
  bool HasAlloc(const std::string& id) const override { return allocs.contains(id); }

  absl::StatusOr<AllocStats> AllocStatsOf(const std::string& id) const override {
    if (!allocs.contains(id))
      return UnknownAllocation(id);
    return stats;
  }
  std::function<model::HostStats()> HostStatsCollector() override {
    return [this] { return host; };
  }
  std::string DeviceStatsJson() const override { return R"([{"Vendor":"v"}])"; }

  absl::Status Restart(const std::string& id, RestartScope scope,
                       const std::string& task) override {
    calls.push_back("restart " + id + " " + std::to_string(static_cast<int>(scope)) + " " + task);
    return allocs.contains(id) ? answer : UnknownAllocation(id);
  }
  absl::Status Signal(const std::string& id, const std::string& task,
                      const std::string& signal) override {
    calls.push_back("signal " + id + " " + task + " " + signal);
    return allocs.contains(id) ? answer : UnknownAllocation(id);
  }
  asio::awaitable<absl::Status> CollectAllocation(std::string id) override {
    calls.push_back("gc " + id);
    co_return allocs.contains(id) ? answer : UnknownAllocation(id);
  }
  asio::awaitable<void> CollectAll() override {
    calls.push_back("gc all");
    co_return;
  }

  absl::StatusOr<allocdir::AllocDirLocation> AllocDirOf(const std::string& id) const override {
    if (!allocs.contains(id))
      return UnknownAllocation(id);
    return allocdir::AllocDirLocation{root_, id};
  }
  bool MayGrow(const std::string& id, const std::string&) const override {
    return allocs.contains(id) && alive;
  }
  absl::StatusOr<SnapshotSource> SnapshotOf(const std::string& id,
                                            const std::string& token) const override {
    if (!allocs.contains(id))
      return UnknownAllocation(id);
    if (token != "the-token")
      return absl::PermissionDeniedError("Permission denied: no token");
    return SnapshotSource{.dir = {root_, id}, .tasks = {"web"}, .max_data_bytes = 1 << 20};
  }

  std::set<std::string> allocs;
  AllocStats stats;
  model::HostStats host;
  absl::Status answer;
  bool alive = true;
  std::vector<std::string> calls;

 private:
  fs::path root_;
  std::string node_id_ = "node-1";
};

class ClientEndpointsTest : public ::testing::Test {
 protected:
  ClientEndpointsTest() {
    ctx_.client = &client_;
    ctx_.pool = &pool_;
    ctx_.clock = &clock_;
    RegisterRoutes(router_, ctx_);
    client_.allocs.insert("a1");
    const fs::path alloc = dir_.path() / "a1";
    fs::create_directories(alloc / "alloc" / "logs");
    fs::create_directories(alloc / "alloc" / "data");
    fs::create_directories(alloc / "web" / "local");
    fs::create_directories(alloc / "web" / "secrets");
    std::ofstream(alloc / "alloc" / "logs" / "web.stdout.0") << "hello ";
    std::ofstream(alloc / "alloc" / "logs" / "web.stdout.1") << "world";
    std::ofstream(alloc / "alloc" / "data" / "kept.txt") << "data";
    std::ofstream(alloc / "web" / "secrets" / "token") << "s3cret";
  }
  ~ClientEndpointsTest() override { pool_.join(); }

  Response Call(std::string method, const std::string& target, std::string body = "",
                std::map<std::string, std::string> headers = {}) {
    return test::Dispatch(io_, router_,
                          test::MakeRequest(std::move(method), target, std::move(body), headers));
  }
  std::string Read(const Response& r) { return test::Drain(io_, r); }
  static codec::Json Json(const std::string& text) { return *codec::ParseJson(text); }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  drover::testing::TempDir dir_;
  FakeClient client_{dir_.path()};
  ApiContext ctx_;
  Router router_;
};

TEST_F(ClientEndpointsTest, AllocationStatsEncodeWhatTheClientSummed) {
  model::TaskResourceUsage web;
  web.memory.rss = 100;
  web.cpu.percent = 50;
  web.cpu.total_ticks = 1000;
  web.timestamp = 7;
  web.pids["42"].cpu.total_ticks = 400;
  client_.stats.usage.tasks["web"] = web;
  client_.stats.usage.memory.rss = 100;
  client_.stats.usage.cpu.total_ticks = 1000;
  client_.stats.usage.timestamp = 7;
  client_.stats.task_devices["web"] = R"([{"Name":"gpu"}])";
  client_.stats.devices = R"([{"Name":"gpu"}])";

  Response r = Call("GET", "/v1/client/allocation/a1/stats");
  ASSERT_EQ(r.status, 200) << r.body;
  const codec::Json body = Json(r.body);
  EXPECT_EQ(body["ResourceUsage"]["MemoryStats"]["RSS"], 100);
  EXPECT_EQ(body["ResourceUsage"]["CpuStats"]["TotalTicks"], 1000);
  EXPECT_EQ(body["ResourceUsage"]["DeviceStats"][0]["Name"], "gpu");
  EXPECT_EQ(body["Tasks"]["web"]["ResourceUsage"]["CpuStats"]["Percent"], 50);
  EXPECT_EQ(body["Tasks"]["web"]["ResourceUsage"]["DeviceStats"][0]["Name"], "gpu");
  EXPECT_EQ(body["Tasks"]["web"]["Pids"]["42"]["CpuStats"]["TotalTicks"], 400);
  EXPECT_EQ(body["Timestamp"], 7);

  r = Call("GET", "/v1/client/allocation/nope/stats");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "Unknown allocation \"nope\"");
}

TEST_F(ClientEndpointsTest, HostStatsComeFromTheClientsCollector) {
  client_.host.memory_total = 4096;
  client_.host.cpus.push_back({.cpu = "cpu0", .user = 12.5});
  client_.host.alloc_dir.mountpoint = "/var/lib/drover";
  Response r = Call("GET", "/v1/client/stats");
  ASSERT_EQ(r.status, 200) << r.body;
  const codec::Json body = Json(r.body);
  EXPECT_EQ(body["Memory"]["Total"], 4096);
  EXPECT_EQ(body["CPU"][0]["CPU"], "cpu0");
  EXPECT_EQ(body["AllocDirStats"]["Mountpoint"], "/var/lib/drover");
  EXPECT_EQ(body["DeviceStats"][0]["Vendor"], "v");
  EXPECT_EQ(Call("GET", "/v1/client/stats?node_id=node-1").status, 200);
  EXPECT_EQ(Call("GET", "/v1/client/stats?node_id=other").status, 404);
}

TEST_F(ClientEndpointsTest, RestartAndSignalAskTheClientOnlyForValidRequests) {
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/restart").status, 200);
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/restart", R"({"AllTasks": true})").status, 200);
  EXPECT_EQ(Call("POST", "/v1/client/allocation/a1/restart", R"({"TaskName": "web"})").status, 200);
  Response r = Call("PUT", "/v1/client/allocation/a1/restart", R"({"TaskName": "web",
    "AllTasks": true})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/signal").status, 200);
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/signal", R"({"Signal": "SIGHUP", "Task": "web"})")
                .status,
            200);
  r = Call("PUT", "/v1/client/allocation/a1/signal", R"({"Signal": "SIGNOPE"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "invalid signal: SIGNOPE");
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/signal", "[1]").status, 400);
  EXPECT_EQ(client_.calls,
            (std::vector<std::string>{"restart a1 0 ", "restart a1 1 ", "restart a1 2 web",
                                      "signal a1  SIGKILL", "signal a1 web SIGHUP"}));
  // The client's refusals come back as they are.
  client_.answer = absl::NotFoundError("Task \"db\" not found in allocation");
  r = Call("PUT", "/v1/client/allocation/a1/restart", R"({"TaskName": "db"})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "Task \"db\" not found in allocation");
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/nope/signal").status, 404);
}

TEST_F(ClientEndpointsTest, GarbageCollectionGoesToTheClient) {
  EXPECT_EQ(Call("PUT", "/v1/client/allocation/a1/gc").status, 200);
  client_.answer = absl::FailedPreconditionError("allocation is still running");
  Response r = Call("PUT", "/v1/client/allocation/a1/gc");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "allocation is still running");
  EXPECT_EQ(Call("GET", "/v1/client/gc").status, 200);
  EXPECT_EQ(client_.calls, (std::vector<std::string>{"gc a1", "gc a1", "gc all"}));
}

TEST_F(ClientEndpointsTest, FilesAndLogsAreReadThroughTheClientsHandle) {
  Response r = Call("GET", "/v1/client/fs/ls/a1?path=/alloc/data");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json(r.body)[0]["Name"], "kept.txt");
  EXPECT_EQ(Read(Call("GET", "/v1/client/fs/cat/a1?path=alloc/data/kept.txt")), "data");
  EXPECT_EQ(Call("GET", "/v1/client/fs/cat/a1?path=web/secrets/token").status, 403);
  EXPECT_EQ(Call("GET", "/v1/client/fs/cat/nope?path=x").status, 404);
  // A log without follow: what is there now, across its rotated files.
  EXPECT_EQ(Read(Call("GET", "/v1/client/fs/logs/a1?task=web&type=stdout&plain=true")),
            "hello world");
  EXPECT_EQ(Read(Call("GET",
                      "/v1/client/fs/logs/a1?task=web&type=stdout&plain=true&origin=end&offset=5")),
            "world");
  // Following a log ends once the client says nothing more can come.
  client_.alive = false;
  EXPECT_EQ(Read(Call("GET", "/v1/client/fs/logs/a1?task=web&type=stdout&plain=true&follow=true")),
            "hello world");
}

TEST_F(ClientEndpointsTest, ASnapshotNeedsTheClientsConsentAndIsBounded) {
  Response r = Call("GET", "/v1/client/allocation/a1/snapshot");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "Permission denied: no token");
  r = Call("GET", "/v1/client/allocation/a1/snapshot", "", {{"x-nomad-token", "the-token"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/x-tar");
  const std::string tar = Read(r);
  EXPECT_NE(tar.find("alloc/data/kept.txt"), std::string::npos);
  EXPECT_EQ(tar.find("s3cret"), std::string::npos);
  *ctx_.snapshots_open = 4;  // as many as are sent at once
  r = Call("GET", "/v1/client/allocation/a1/snapshot", "", {{"x-nomad-token", "the-token"}});
  EXPECT_EQ(r.status, 503);
  *ctx_.snapshots_open = 0;
}

// An agent without a client (a server that cannot forward, here) says the allocation
// is unknown rather than failing.
TEST(ClientEndpointsWithoutClientTest, EveryAllocationIsUnknown) {
  asio::io_context io;
  asio::thread_pool pool{1};
  common::FakeClock clock;
  ApiContext ctx{.pool = &pool, .clock = &clock};
  Router router;
  RegisterRoutes(router, ctx);
  for (const char* target : {"/v1/client/allocation/a1/stats", "/v1/client/fs/ls/a1",
                             "/v1/client/allocation/a1/gc", "/v1/client/allocation/a1/snapshot"}) {
    Response r = test::Dispatch(io, router, test::MakeRequest("GET", target));
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body, "Unknown allocation \"a1\"") << target;
  }
  EXPECT_EQ(test::Dispatch(io, router, test::MakeRequest("PUT", "/v1/client/allocation/a1/restart"))
                .status,
            404);
  pool.join();
}

}  // namespace
}  // namespace drover::api
