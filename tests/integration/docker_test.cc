// Docker tasks through a real agent (`drover agent -dev` with plugin "docker") and a real
// dockerd of the test's own (with its own bridge): a batch hello world with its logs
// through the fs API and the example device plugin's reservation in its environment; a
// service with a port published on 127.0.0.1, its stats, an agent SIGKILLed and
// restarted without the container restarting or its output repeating, and a stop with
// the task's kill_signal; a missing image failing clearly.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_split.h"
#include <gtest/gtest.h>

#include "drivers/docker/docker_test_util.h"
#include "drivers/docker/engine.h"
#include "rpc/http_call.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"
#include "testing/registry_process.h"
#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;
using drivers::docker::Engine;

constexpr char kHello[] = R"(job "hello" {
  datacenters = ["dc1"]
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "docker"
      config {
        image   = "drover-test/busybox:1"
        command = "/bin/sh"
        args    = ["-c", "echo hello from $NOMAD_TASK_NAME in $NOMAD_ALLOC_DIR; echo $NVIDIA_VISIBLE_DEVICES > /alloc/gpu"]
      }
      resources {
        cpu    = 50
        memory = 32
        device "gpu" {}
      }
    }
  }
}
)";

constexpr char kWeb[] = R"(job "web" {
  datacenters = ["dc1"]
  group "g" {
    network {
      port "http" {
        to = 8080
      }
    }
    task "t" {
      driver      = "docker"
      kill_signal = "SIGUSR1"
      config {
        image   = "drover-test/busybox:1"
        command = "/bin/sh"
        args    = ["-c", "echo hi > /local/index.html; /bin/busybox httpd -p 8080 -h /local; trap 'exit 7' USR1; i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done"]
        ports   = ["http"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
)";

constexpr char kImageUser[] = R"(job "user" {
  datacenters = ["dc1"]
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "docker"
      user   = "4321"
      config {
        image   = "drover-test/busybox:1"
        command = "/bin/sh"
        args    = ["-c", "echo l > /local/f && echo s > /secrets/s && cat /local/f /secrets/s"]
      }
    }
  }
}
)";

constexpr char kMissing[] = R"(job "missing" {
  datacenters = ["dc1"]
  type = "batch"
  reschedule {
    attempts  = 0
    unlimited = false
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "docker"
      config {
        image = "REGISTRY/drover/none:1"
      }
    }
  }
}
)";

class DockerTest : public ::testing::Test {
 protected:
  static std::vector<std::string> Setup(const fs::path& dir, const std::string& endpoint) {
    fs::create_directories(dir / "gpus");
    std::ofstream(dir / "gpus" / "GPU-0")
        << "vendor = nvidia\ntype = gpu\nname = Fake T4\nattr.memory = 16 GiB\nhealthy = true\n";
    std::ofstream(dir / "agent.hcl")
        << "plugin \"docker\" {\n  config {\n    endpoint = \"" << endpoint
        << "\"\n    fingerprint_period = \"500ms\"\n    gc {\n      image = false\n    }\n"
           "  }\n}\n"
           "plugin \"example\" {\n  config {\n    dir = \""
        << (dir / "gpus").string()
        << "\"\n    env_var = \"NVIDIA_VISIBLE_DEVICES\"\n    fingerprint_period = \"1s\"\n  "
           "}\n}\n"
           // Heartbeats every second: driver health reaches the server within about one.
           "server {\n  min_heartbeat_ttl = \"1s\"\n}\n";
    return {"-config", (dir / "agent.hcl").string()};
  }

  DockerTest()
      : dockerd_({.bridge = true}),
        engine_(drivers::docker::EndpointAddress(dockerd_.endpoint()).value_or("")),
        imported_(Import()),
        agent_(Setup(files_.path(), dockerd_.endpoint())) {}

  bool Import() {
    if (!dockerd_.ok() || !testing::Await(io_, engine_.Negotiate()).ok())
      return false;
    return drivers::docker::test::ImportBusybox(io_, engine_, files_).ok();
  }

  void SetUp() override {
    DROVER_SKIP_WITHOUT_DOCKERD();
    ASSERT_TRUE(dockerd_.ok()) << dockerd_.Log();
    ASSERT_TRUE(imported_);
    ASSERT_TRUE(agent_.ok()) << agent_.log();
  }
  void TearDown() override {
    if (HasFailure())
      std::cerr << "---- agent log ----\n" << agent_.log();
  }

  std::string Run(const std::string& name, const std::string& hcl) {
    CliResult run = agent_.Cli({"job", "run", "-detach", agent_.WriteFile(name + ".hcl", hcl)});
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    std::string alloc_id;
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          codec::Json allocs = agent_.Get("/v1/job/" + name + "/allocations");
          if (allocs.empty())
            return false;
          alloc_id = allocs[0]["ID"];
          return true;
        },
        std::chrono::seconds(30)));
    return alloc_id;
  }

  codec::Json WaitStatus(const std::string& alloc_id, const std::string& status) {
    codec::Json alloc;
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          alloc = agent_.Get("/v1/allocation/" + alloc_id);
          return alloc["ClientStatus"] == status;
        },
        std::chrono::seconds(60)))
        << alloc.dump();
    return alloc;
  }

  std::vector<std::string> Containers(const std::string& alloc_id) {
    std::vector<std::string> ids;
    auto listed =
        testing::Await(io_, engine_.ListContainers("com.hashicorp.nomad.alloc_id=" + alloc_id, 10));
    if (listed.ok()) {
      for (const Engine::ContainerSummary& c : *listed)
        ids.push_back(c.id);
    }
    return ids;
  }

  std::string Logs(const std::string& alloc_id) {
    absl::StatusOr<cli::HttpResponse> r = agent_.http().Do(
        "GET", "/v1/client/fs/logs/" + alloc_id + "?task=t&type=stdout&plain=true&origin=start");
    return r.ok() ? r->body : "";
  }

  asio::io_context io_;
  testing::TempDir files_;
  testing::DockerdProcess dockerd_;
  Engine engine_;
  bool imported_ = false;
  AgentProcess agent_;
};

// "line 0\nline 1\n..." with no number missing or repeated; how many.
int ConsecutiveLines(const std::string& out) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (line != "line " + std::to_string(n))
      return -1;
    ++n;
  }
  return n;
}

TEST_F(DockerTest, HelloWorldBatchWithLogsAndADeviceReservation) {
  codec::Json node = agent_.Get("/v1/node/" + agent_.Get("/v1/nodes")[0]["ID"].get<std::string>());
  EXPECT_EQ(node["Drivers"]["docker"]["Healthy"], true) << node["Drivers"].dump();
  EXPECT_EQ(node["Attributes"]["driver.docker"], "1");
  EXPECT_FALSE(node["Attributes"]["driver.docker.version"].get<std::string>().empty());

  const std::string alloc_id = Run("hello", kHello);
  codec::Json alloc = WaitStatus(alloc_id, "complete");
  EXPECT_EQ(Logs(alloc_id), "hello from t in /alloc\n");
  const std::string gpu =
      testing::ReadFile(agent_.data_dir() / "alloc" / alloc_id / "alloc" / "gpu");
  EXPECT_EQ(gpu, "GPU-0\n");
  // Collected with its allocation's task: no container is left.
  EXPECT_TRUE(
      testing::WaitFor([&] { return Containers(alloc_id).empty(); }, std::chrono::seconds(20)));
}

TEST_F(DockerTest, AServiceSurvivesAnAgentCrashAndStopsWithItsSignal) {
  const std::string alloc_id = Run("web", kWeb);
  codec::Json alloc = WaitStatus(alloc_id, "running");
  const int port = alloc["AllocatedResources"]["Shared"]["Ports"][0]["Value"];
  const std::string address = "127.0.0.1:" + std::to_string(port);
  absl::StatusOr<rpc::HttpReply> reply;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        reply = testing::Await(io_, rpc::SendHttp(address, rpc::HttpCall{.target = "/index.html"},
                                                  std::chrono::seconds(2)));
        return reply.ok() && reply->status == 200;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(reply->body, "hi\n");
  codec::Json stats;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        stats = agent_.Get("/v1/client/allocation/" + alloc_id + "/stats");
        return stats["ResourceUsage"]["MemoryStats"]["Usage"].get<uint64_t>() > 0;
      },
      std::chrono::seconds(20)))
      << stats.dump();
  const std::vector<std::string> containers = Containers(alloc_id);
  ASSERT_EQ(containers.size(), 1u);

  // The agent dies; the container goes on, and the restarted agent re-attaches it.
  int before = 0;
  ASSERT_TRUE(testing::WaitFor([&] { return (before = ConsecutiveLines(Logs(alloc_id))) >= 5; },
                               std::chrono::seconds(20)));
  agent_.Kill();
  agent_.Restart();
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  int after = 0;
  ASSERT_TRUE(
      testing::WaitFor([&] { return (after = ConsecutiveLines(Logs(alloc_id))) >= before + 30; },
                       std::chrono::seconds(30)))
      << "lines before " << before << ", after " << after;
  EXPECT_EQ(Containers(alloc_id), containers);
  // Followed (alloc logs -f): what the container writes next arrives on the stream.
  const std::string want = "line " + std::to_string(after + 20) + "\n";
  std::string followed;
  (void)agent_.http().Stream(
      "/v1/client/fs/logs/" + alloc_id + "?task=t&type=stdout&plain=true&follow=true",
      [&](std::string_view data) {
        followed += data;
        return followed.find(want) == std::string::npos;  // false: enough
      });
  EXPECT_NE(followed.find(want), std::string::npos);
  EXPECT_GE(ConsecutiveLines(followed), after + 20);
  alloc = agent_.Get("/v1/allocation/" + alloc_id);
  EXPECT_EQ(alloc["ClientStatus"], "running");
  EXPECT_EQ(alloc["TaskStates"]["t"]["Restarts"], 0);

  CliResult stop = agent_.Cli({"job", "stop", "-detach", "web"});
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  alloc = WaitStatus(alloc_id, "complete");
  bool exited_7 = false;
  for (const codec::Json& e : alloc["TaskStates"]["t"]["Events"]) {
    if (e["Type"] == "Terminated")
      exited_7 = e["ExitCode"] == 7;
  }
  EXPECT_TRUE(exited_7) << alloc["TaskStates"]["t"].dump();
  EXPECT_GE(ConsecutiveLines(Logs(alloc_id)), after);
  EXPECT_TRUE(
      testing::WaitFor([&] { return Containers(alloc_id).empty(); }, std::chrono::seconds(20)));
}

// The daemon stops: the node's docker driver turns unhealthy, with a node event saying
// why, and healthy again once it is back; a job runs then.
TEST_F(DockerTest, TheNodeFollowsTheDaemonsHealth) {
  const std::string node_id = agent_.Get("/v1/nodes")[0]["ID"];
  const auto driver = [&] { return agent_.Get("/v1/node/" + node_id)["Drivers"]["docker"]; };
  ASSERT_EQ(driver()["Healthy"], true);
  dockerd_.Stop();
  codec::Json info;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        info = driver();
        return info["Healthy"] == false;
      },
      std::chrono::seconds(40)))
      << info.dump();
  EXPECT_NE(info["HealthDescription"].get<std::string>().find("Failed to connect to docker daemon"),
            std::string::npos)
      << info.dump();
  // The node event follows the re-registration.
  const auto event = [&] {
    const codec::Json node = agent_.Get("/v1/node/" + node_id);
    for (const codec::Json& e : node["Events"]) {
      if (e["Subsystem"] == "Driver" && e["Details"]["driver"] == "docker" &&
          e["Message"].get<std::string>().find("Failed to connect to docker daemon") !=
              std::string::npos)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(testing::WaitFor(event, std::chrono::seconds(20)))
      << agent_.Get("/v1/node/" + node_id)["Events"].dump();
  ASSERT_TRUE(dockerd_.Start()) << dockerd_.Log();
  ASSERT_TRUE(
      testing::WaitFor([&] { return driver()["Healthy"] == true; }, std::chrono::seconds(40)));
  const std::string alloc_id = Run("hello", kHello);
  EXPECT_EQ(WaitStatus(alloc_id, "complete")["ClientStatus"], "complete");
}

// `user` names a user of the image (here a bare uid the host does not have): it is not
// looked up on the host, and the task can still write /local and /secrets.
TEST_F(DockerTest, AnImageUserWritesItsDirectories) {
  const std::string alloc_id = Run("user", kImageUser);
  codec::Json alloc = WaitStatus(alloc_id, "complete");
  EXPECT_EQ(Logs(alloc_id), "l\ns\n") << alloc["TaskStates"]["t"].dump();
  EXPECT_EQ(testing::ReadFile(agent_.data_dir() / "alloc" / alloc_id / "t" / "local" / "f"), "l\n");
}

TEST_F(DockerTest, AMissingImageIsADownloadThenADriverFailure) {
  testing::RegistryProcess registry("tester", "s3cret");
  ASSERT_TRUE(registry.ok()) << registry.Log();
  std::string job = kMissing;
  job.replace(job.find("REGISTRY"), 8, registry.address());
  const std::string alloc_id = Run("missing", job);
  codec::Json alloc = WaitStatus(alloc_id, "failed");
  std::string failure, downloading;
  for (const codec::Json& e : alloc["TaskStates"]["t"]["Events"]) {
    if (e["Type"] == "Driver Failure")
      failure = e["DisplayMessage"];
    if (e["Type"] == "Driver")
      downloading = e["DriverMessage"];
  }
  EXPECT_EQ(downloading, "Downloading image") << alloc["TaskStates"]["t"].dump();
  EXPECT_NE(failure.find("Failed to pull `" + registry.address() + "/drover/none:1`"),
            std::string::npos)
      << alloc["TaskStates"]["t"].dump();
  EXPECT_TRUE(Containers(alloc_id).empty());
}

}  // namespace
}  // namespace drover::integration
