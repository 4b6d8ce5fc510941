// The create body for a task: Nomad's mounts, labels and limits, the plugin's
// refusals; and a container created from it against a real dockerd, which sees its
// alloc dir, local/ and secrets/ and its environment.
#include "drivers/docker/container_spec.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drivers/docker/docker_test_util.h"
#include "drivers/docker/engine.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"

namespace drover::drivers::docker {
namespace {

using ::testing::HasSubstr;

TaskConfig Task(const std::string& alloc_dir) {
  TaskConfig t;
  t.id = "a1/web/0000";
  t.alloc_id = "a1";
  t.job_name = "shop";
  t.name = "web";
  t.alloc_dir = alloc_dir;
  t.task_dir = alloc_dir + "/web";
  t.env = {{"NOMAD_TASK_NAME", "web"}, {"GREETING", "hi there"}};
  t.memory_mb = 64;
  t.cpu_shares = 100;
  return t;
}

TEST(ContainerSpecTest, NvidiaGpusBecomeADeviceRequestWithTheRuntime) {
  codec::DockerTaskConfig cfg;
  cfg.image = "cuda:12";
  TaskConfig task = Task("/allocs/a1");
  task.device_env = {{"NVIDIA_VISIBLE_DEVICES", "GPU-1,GPU-3"}};
  task.env["NVIDIA_VISIBLE_DEVICES"] = "GPU-1,GPU-3";
  absl::StatusOr<codec::Json> spec = ContainerSpec(task, cfg, PluginConfig{}, true);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["HostConfig"]["DeviceRequests"],
            codec::Json::parse(
                R"([{"Driver":"nvidia","DeviceIDs":["GPU-1","GPU-3"],"Capabilities":[["gpu"]]}])"));
  // Without the runtime: the variable only (and the hook's devices and mounts).
  spec = ContainerSpec(task, cfg, PluginConfig{}, false);
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE((*spec)["HostConfig"].contains("DeviceRequests"));
  EXPECT_THAT((*spec)["Env"].get<std::vector<std::string>>(),
              ::testing::Contains("NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-3"));
}

TEST(ContainerSpecTest, MountsLabelsLimitsAndOptions) {
  codec::DockerTaskConfig cfg;
  cfg.image = "busybox:1";
  cfg.command = "/bin/httpd";
  cfg.args = {"-f", "-p", "8080"};
  cfg.ports = {"http"};
  cfg.labels = {{"team", "a"}};
  cfg.ulimit = {{"nofile", "1024:2048"}};
  cfg.mounts = {{.type = "bind", .target = "/data", .source = "local/data", .readonly = true},
                {.type = "tmpfs", .target = "/scratch"}};
  TaskConfig task = Task("/allocs/a1");
  task.memory_max_mb = 128;
  task.devices = {{.task_path = "/dev/fake0", .host_path = "/dev/null", .permissions = "rw"}};
  task.ports = {
      {.label = "http", .host_port = 23456, .container_port = 8080, .host_ip = "127.0.0.1"}};
  absl::StatusOr<codec::Json> spec = ContainerSpec(task, cfg, PluginConfig{});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const codec::Json& s = *spec;
  EXPECT_EQ(s["Image"], "busybox:1");
  EXPECT_EQ(s["Cmd"], codec::Json({"/bin/httpd", "-f", "-p", "8080"}));
  EXPECT_THAT(s["Env"].get<std::vector<std::string>>(),
              ::testing::UnorderedElementsAre("NOMAD_TASK_NAME=web", "GREETING=hi there"));
  EXPECT_EQ(s["Labels"]["com.hashicorp.nomad.alloc_id"], "a1");
  EXPECT_EQ(s["Labels"]["com.hashicorp.nomad.task_name"], "web");
  EXPECT_EQ(s["Labels"]["com.hashicorp.nomad.job_name"], "shop");
  EXPECT_EQ(s["Labels"]["team"], "a");
  const codec::Json& h = s["HostConfig"];
  EXPECT_EQ(h["Binds"], codec::Json({"/allocs/a1/alloc:/alloc", "/allocs/a1/web/local:/local",
                                     "/allocs/a1/web/secrets:/secrets"}));
  EXPECT_EQ(h["Mounts"][0]["Source"], "/allocs/a1/web/local/data");
  EXPECT_EQ(h["Mounts"][0]["ReadOnly"], true);
  EXPECT_EQ(h["Mounts"][1]["Type"], "tmpfs");
  EXPECT_EQ(h["Memory"], 128 << 20);
  EXPECT_EQ(h["MemoryReservation"], 64 << 20);
  EXPECT_EQ(h["CpuShares"], 100);
  EXPECT_EQ(h["NetworkMode"], "bridge");
  EXPECT_EQ(s["ExposedPorts"], codec::Json({{"8080/tcp", codec::Json::object()},
                                            {"8080/udp", codec::Json::object()}}));
  EXPECT_EQ(h["PortBindings"]["8080/udp"][0]["HostPort"], "23456");
  EXPECT_EQ(h["MemorySwap"], 128 << 20);
  EXPECT_EQ(h["CapDrop"], codec::Json({"NET_RAW"}));  // not in Nomad's allow list
  EXPECT_EQ(h["LogConfig"]["Config"]["max-size"], "2m");
  EXPECT_EQ(h["PortBindings"]["8080/tcp"][0]["HostPort"], "23456");
  EXPECT_EQ(h["PortBindings"]["8080/tcp"][0]["HostIp"], "127.0.0.1");
  EXPECT_EQ(h["Ulimits"][0], codec::Json({{"Name", "nofile"}, {"Soft", 1024}, {"Hard", 2048}}));
  EXPECT_EQ(h["Devices"][0]["PathInContainer"], "/dev/fake0");
  EXPECT_EQ(h["Privileged"], false);
}

TEST(ContainerSpecTest, ThePluginsLimitsRefuseByName) {
  const TaskConfig task = Task("/allocs/a1");
  const auto refused = [&](codec::DockerTaskConfig cfg, PluginConfig plugin = {}) {
    cfg.image = "busybox:1";
    absl::StatusOr<codec::Json> spec = ContainerSpec(task, cfg, plugin);
    EXPECT_FALSE(spec.ok());
    return std::string(spec.status().message());
  };
  EXPECT_EQ(refused({.privileged = true}),
            "Docker privileged mode is disabled on this Nomad agent");
  EXPECT_EQ(refused({.cap_add = {"SYS_ADMIN", "net_admin", "chown"}}),
            "Docker driver doesn't have the following caps allowlisted on this Nomad agent: "
            "[SYS_ADMIN NET_ADMIN]");
  EXPECT_THAT(refused({.mounts = {{.type = "bind", .target = "/etc2", .source = "/etc"}}}),
              HasSubstr("volumes are not enabled; cannot mount host paths: \"/etc\""));
  EXPECT_THAT(refused({.mounts = {{.type = "bind", .target = "/x", .source = "../../../etc"}}}),
              HasSubstr("escapes the allocation directory"));
  // Nomad's relative sources: from the task dir, anywhere within the alloc dir.
  codec::DockerTaskConfig shared{.image = "busybox:1"};
  shared.mounts = {{.type = "bind", .target = "/x", .source = "../alloc/data"}};
  absl::StatusOr<codec::Json> shared_spec = ContainerSpec(task, shared, PluginConfig{});
  ASSERT_TRUE(shared_spec.ok()) << shared_spec.status();
  EXPECT_EQ((*shared_spec)["HostConfig"]["Mounts"][0]["Source"], "/allocs/a1/alloc/data");
  EXPECT_THAT(refused({.volumes = {"/var/run/docker.sock:/var/run/docker.sock"}}),
              HasSubstr("volumes are not enabled"));
  EXPECT_THAT(refused({.ports = {"http"}}), HasSubstr("port label \"http\" has no allocated port"));
  EXPECT_THAT(refused({.ulimit = {{"nofile", "lots"}}}), HasSubstr("ulimit nofile"));
  // Allowed by the plugin, they are passed on.
  codec::DockerTaskConfig allowed{
      .image = "busybox:1", .privileged = true, .cap_add = {"SYS_ADMIN"}};
  PluginConfig open{.allow_privileged = true, .allow_caps = {"all"}, .volumes_enabled = true};
  absl::StatusOr<codec::Json> spec = ContainerSpec(task, allowed, open);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["HostConfig"]["Privileged"], true);
  EXPECT_EQ((*spec)["HostConfig"]["CapAdd"], codec::Json({"SYS_ADMIN"}));
}

TEST(ContainerSpecTest, BindSourcesMayNotGoThroughASymlinkTheTaskPlanted) {
  testing::TempDir dir;
  const std::string task_dir = (dir.path() / "web").string();
  std::filesystem::create_directories(task_dir + "/local/data");
  std::filesystem::create_symlink("/", task_dir + "/local/host");
  TaskConfig task = Task(dir.path().string());
  codec::DockerTaskConfig cfg{.image = "busybox:1"};
  cfg.mounts = {{.type = "bind", .target = "/d", .source = "local/data"}};
  EXPECT_TRUE(CheckBindSourcesBeneath(task, cfg).ok());
  cfg.mounts = {{.type = "bind", .target = "/h", .source = "local/host/etc"}};
  EXPECT_EQ(CheckBindSourcesBeneath(task, cfg).code(), absl::StatusCode::kPermissionDenied);
  cfg.mounts = {};
  cfg.volumes = {"local/host:/h"};
  EXPECT_EQ(CheckBindSourcesBeneath(task, cfg).code(), absl::StatusCode::kPermissionDenied);
  cfg.volumes = {"local/missing:/m"};
  EXPECT_EQ(CheckBindSourcesBeneath(task, cfg).code(), absl::StatusCode::kPermissionDenied);
  // Within the alloc dir, as Nomad allows; not beyond it.
  std::filesystem::create_directories(dir.path() / "alloc" / "data");
  cfg.volumes = {"../alloc/data:/shared"};
  EXPECT_TRUE(CheckBindSourcesBeneath(task, cfg).ok());
  cfg.volumes = {"../../etc:/e"};
  EXPECT_EQ(CheckBindSourcesBeneath(task, cfg).code(), absl::StatusCode::kPermissionDenied);
}

TEST(ContainerSpecTest, AContainerFromTheSpecSeesItsDirectoriesAndEnvironment) {
  DROVER_SKIP_WITHOUT_DOCKERD();
  testing::DockerdProcess dockerd;
  ASSERT_TRUE(dockerd.ok()) << dockerd.Log();
  asio::io_context io;
  Engine engine(EndpointAddress(dockerd.endpoint()).value());
  ASSERT_TRUE(testing::Await(io, engine.Negotiate()).ok());
  testing::TempDir dir;
  ASSERT_TRUE(test::ImportBusybox(io, engine, dir).ok());

  const std::string alloc = (dir.path() / "a1").string();
  for (const char* sub : {"alloc", "web/local", "web/secrets"})
    std::filesystem::create_directories(alloc + "/" + sub);
  std::ofstream(alloc + "/web/local/in.txt") << "from local";
  std::ofstream(alloc + "/web/secrets/token") << "s3cret";
  codec::DockerTaskConfig cfg{.image = "drover-test/busybox:1",
                              .command = "/bin/sh",
                              .args = {"-c",
                                       "{ cat /local/in.txt; echo; cat /secrets/token; echo; "
                                       "echo \"$GREETING\"; } > /alloc/out"},
                              .network_mode = "none"};
  absl::StatusOr<codec::Json> spec = ContainerSpec(Task(alloc), cfg, PluginConfig{});
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::string> id = testing::Await(io, engine.CreateContainer("web-a1", *spec));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(testing::Await(io, engine.StartContainer(*id)).ok());
  EXPECT_EQ(testing::Await(io, engine.WaitContainer(*id)).value_or(-1), 0);
  EXPECT_EQ(testing::ReadFile(alloc + "/alloc/out"), "from local\ns3cret\nhi there\n");
  EXPECT_TRUE(testing::Await(io, engine.RemoveContainer(*id, true)).ok());
}

}  // namespace
}  // namespace drover::drivers::docker
