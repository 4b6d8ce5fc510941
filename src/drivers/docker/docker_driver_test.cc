// The docker driver against a real dockerd (testing/dockerd_process.h) with a busybox
// image built here: a task's exit code, output, environment, mounts, labels and
// devices; stops with the task's signal and after the timeout; OOM; images loaded and
// missing; the plugin's refusals; stats; fingerprints following the daemon.
#include "drivers/docker/docker_driver.h"

#include <sys/stat.h>

#include <csignal>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codec/json.h"
#include "drivers/docker/docker_driver_test_util.h"
#include "drivers/docker/docker_test_util.h"

namespace drover::drivers::docker {
namespace {

using test::DockerDriverTest;
using ::testing::HasSubstr;

TEST_F(DockerDriverTest, RunsACommandWithNomadsDirectoriesEnvironmentAndLabels) {
  TaskConfig task = Task("hello", {{"image", test::kBusybox},
                                   {"command", "/bin/sh"},
                                   {"args",
                                    {"-c",
                                     "echo hello $GREETING; echo oops >&2; echo shared > "
                                     "/alloc/out; cat /local/in; test -c /dev/fake0 && echo "
                                     "device; exit 3"}}});
  task.env["GREETING"] = "from drover";
  task.devices = {{.task_path = "/dev/fake0", .host_path = "/dev/null", .permissions = "rw"}};
  test::WriteFile(std::filesystem::path(task.task_dir) / "local" / "in", "from local\n");
  absl::StatusOr<TaskHandle> handle = Start(task);
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(handle->driver, "docker");
  EXPECT_TRUE(IsContainerId(handle->driver_ref));
  absl::StatusOr<ExitResult> result = Wait(task.id);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_FALSE(result->oom_killed);
  EXPECT_EQ(Stdout(task), "hello from drover\nfrom local\ndevice\n");
  EXPECT_EQ(Stderr(task), "oops\n");
  EXPECT_EQ(testing::ReadFile(std::filesystem::path(task.alloc_dir) / "alloc" / "out"), "shared\n");

  absl::StatusOr<Engine::Reply> inspect =
      testing::Await(io_, engine_->Call("GET", "/containers/" + handle->driver_ref + "/json"));
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  const codec::Json& labels = inspect->body["Config"]["Labels"];
  EXPECT_EQ(labels["com.hashicorp.nomad.alloc_id"], task.alloc_id);
  EXPECT_EQ(labels["com.hashicorp.nomad.task_name"], "hello");
  EXPECT_EQ(labels["com.drover.task_id"], task.id);
  EXPECT_EQ(inspect->body["Name"], "/" + ContainerName(task.id));
  absl::StatusOr<TaskStatus> status = driver_->InspectTask(task.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->state, TaskRunState::kExited);

  // Destroyed: the container is removed.
  ASSERT_TRUE(driver_->DestroyTask(task.id, false).ok());
  EXPECT_TRUE(testing::RunUntil(
      io_, [&] { return !ContainerExists(handle->driver_ref); }, std::chrono::seconds(20)));
  EXPECT_EQ(driver_->InspectTask(task.id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DockerDriverTest, TheImagesEntrypointTakesTheArgsUnlessTheTaskSetsItsOwn) {
  testing::TempDir context;
  absl::Status built = test::BuildEntrypointImage(io_, *engine_, context);
  ASSERT_TRUE(built.ok()) << built;
  absl::StatusOr<Engine::Reply> image = testing::Await(
      io_, engine_->Call("GET", std::string("/images/") + test::kEntrypoint + "/json"));
  ASSERT_TRUE(image.ok() && image->status == 200);
  EXPECT_TRUE(image->body["Config"]["ExposedPorts"].contains("8080/tcp"));
  TaskConfig own = Task("own", {{"image", test::kEntrypoint}, {"args", {"a", "b"}}});
  ASSERT_TRUE(Start(own).ok());
  EXPECT_EQ(Wait(own.id)->exit_code, 0);
  EXPECT_EQ(Stdout(own), "entry a b\n");
  TaskConfig over =
      Task("over",
           {{"image", test::kEntrypoint}, {"entrypoint", {"/bin/echo", "over"}}, {"args", {"a"}}});
  ASSERT_TRUE(Start(over).ok());
  EXPECT_EQ(Wait(over.id)->exit_code, 0);
  EXPECT_EQ(Stdout(over), "over a\n");
}

// The options that shape the container, each seen from inside it.
TEST_F(DockerDriverTest, ContainerOptionsTakeEffectInside) {
  const std::string script =
      "pwd; /bin/busybox hostname; "
      "(echo x > /probe) 2>/dev/null && echo rw || echo ro; "
      "/bin/busybox grep -c 'db' /etc/hosts; "
      "/bin/busybox grep nameserver /etc/resolv.conf; "
      "/bin/busybox grep NoNewPrivs /proc/self/status; "
      "/bin/busybox grep CapEff /proc/self/status; "
      "cat /proc/1/comm; "
      "/bin/busybox df -k /dev/shm | /bin/busybox tail -1 | /bin/busybox awk '{print $2}'; "
      "ulimit -n";
  TaskConfig task = Task("opts", {{"image", test::kBusybox},
                                  {"command", "/bin/sh"},
                                  {"args", {"-c", script}},
                                  {"work_dir", "/local"},
                                  {"hostname", "drover-host"},
                                  {"readonly_rootfs", true},
                                  {"extra_hosts", {"db:10.1.2.3"}},
                                  {"dns_servers", {"10.9.9.9"}},
                                  {"security_opt", {"no-new-privileges"}},
                                  {"cap_drop", {"all"}},
                                  {"init", true},
                                  {"shm_size", 8 << 20},
                                  {"ulimit", {{"nofile", "512:1024"}}}});
  ASSERT_TRUE(Start(task).ok());
  EXPECT_EQ(Wait(task.id)->exit_code, 0);
  EXPECT_EQ(Stdout(task),
            "/local\n"
            "drover-host\n"
            "ro\n"
            "1\n"
            "nameserver 10.9.9.9\n"
            "NoNewPrivs:\t1\n"
            "CapEff:\t0000000000000000\n"
            "docker-init\n"
            "8192\n"
            "512\n")
      << Stderr(task);
}

TEST_F(DockerDriverTest, ContainersStayWhenTheAgentKeepsThemAndCarryExtraLabels) {
  plugin_.gc_container = false;
  plugin_.extra_labels = {"job_*", "node_id"};
  RestartDriver();
  TaskConfig task = Task("kept", {{"image", test::kBusybox}, {"command", "/bin/echo"}});
  absl::StatusOr<TaskHandle> handle = Start(task);
  ASSERT_TRUE(handle.ok()) << handle.status();
  absl::StatusOr<Engine::Reply> inspect =
      testing::Await(io_, engine_->Call("GET", "/containers/" + handle->driver_ref + "/json"));
  ASSERT_TRUE(inspect.ok());
  const codec::Json& labels = inspect->body["Config"]["Labels"];
  EXPECT_EQ(labels["com.hashicorp.nomad.job_id"], "job");
  EXPECT_EQ(labels["com.hashicorp.nomad.job_name"], "job");
  EXPECT_EQ(labels["com.hashicorp.nomad.node_id"], "node-1");
  EXPECT_FALSE(labels.contains("com.hashicorp.nomad.task_group_name"));
  ASSERT_TRUE(Wait(task.id).ok());
  ASSERT_TRUE(driver_->DestroyTask(task.id, false).ok());
  // The state file goes last in the removal: once it is gone, so would the container.
  const std::filesystem::path state = dir_.path() / "state" / (ContainerName(task.id) + ".json");
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return !std::filesystem::exists(state); }, std::chrono::seconds(20)));
  EXPECT_TRUE(ContainerExists(handle->driver_ref));
  // Nor is an exited one dangling.
  EXPECT_EQ(testing::Await(io_, driver_->RemoveDangling("node-1")), 0);
  EXPECT_TRUE(ContainerExists(handle->driver_ref));
}

// A bind source in the shared alloc dir, which the group's other tasks write while this
// one starts, reaches the daemon pinned: a path only the agent controls, mounted from
// the directory checked. It goes with the task.
TEST_F(DockerDriverTest, SharedBindSourcesArePinnedForTheDaemon) {
  TaskConfig task = Task(
      "shared",
      {{"image", test::kBusybox},
       {"command", "/bin/cat"},
       {"args", {"/d/file"}},
       {"mount",
        {{{"type", "bind"}, {"source", "../alloc/data"}, {"target", "/d"}, {"readonly", true}}}}});
  test::WriteFile(std::filesystem::path(task.alloc_dir) / "alloc" / "data" / "file", "shared\n");
  absl::StatusOr<TaskHandle> handle = Start(task);
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(Wait(task.id)->exit_code, 0);
  EXPECT_EQ(Stdout(task), "shared\n");
  absl::StatusOr<Engine::Reply> inspect =
      testing::Await(io_, engine_->Call("GET", "/containers/" + handle->driver_ref + "/json"));
  ASSERT_TRUE(inspect.ok());
  const std::string pins = task.task_dir + "/private/binds/" + ContainerName(task.id);
  EXPECT_EQ(inspect->body["HostConfig"]["Mounts"][0]["Source"], pins + "/0");
  // A symlink put in its place now does not move the pinned mount.
  std::filesystem::rename(std::filesystem::path(task.alloc_dir) / "alloc" / "data",
                          std::filesystem::path(task.alloc_dir) / "alloc" / "old");
  std::filesystem::create_symlink("/etc", std::filesystem::path(task.alloc_dir) / "alloc" / "data");
  EXPECT_EQ(testing::ReadFile(pins + "/0/file"), "shared\n");
  ASSERT_TRUE(driver_->DestroyTask(task.id, false).ok());
  EXPECT_TRUE(testing::RunUntil(
      io_, [&] { return !std::filesystem::exists(pins); }, std::chrono::seconds(20)));
  // And a later start checks the path again: the symlink is refused.
  TaskConfig again = task;
  again.id = task.alloc_id + "/shared/00000009";
  EXPECT_EQ(Start(again).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(DockerDriverTest, StopsWithTheTasksSignalAndKillsAfterTheTimeout) {
  TaskConfig polite = Task("polite", {{"image", test::kBusybox},
                                      {"command", "/bin/sh"},
                                      {"args",
                                       {"-c",
                                        "trap 'echo got USR1; exit 7' USR1; echo ready; "
                                        "while true; do sleep 0.1; done"}}});
  ASSERT_TRUE(Start(polite).ok());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return Stdout(polite) == "ready\n"; }, std::chrono::seconds(20)));
  absl::Status stopped =
      testing::Await(io_, driver_->StopTask(polite.id, std::chrono::seconds(20), "SIGUSR1"));
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_EQ(Wait(polite.id)->exit_code, 7);
  EXPECT_EQ(Stdout(polite), "ready\ngot USR1\n");

  // One that ignores SIGTERM: killed once the timeout passes.
  TaskConfig stubborn = Task("stubborn", {{"image", test::kBusybox},
                                          {"command", "/bin/sh"},
                                          {"args",
                                           {"-c",
                                            "trap '' TERM; echo ready; "
                                            "while true; do sleep 0.1; done"}}});
  ASSERT_TRUE(Start(stubborn).ok());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return Stdout(stubborn) == "ready\n"; }, std::chrono::seconds(20)));
  EXPECT_TRUE(driver_->SignalTask(stubborn.id, "SIGTERM").ok());
  EXPECT_FALSE(driver_->SignalTask(stubborn.id, "SIGNOPE").ok());
  stopped = testing::Await(io_, driver_->StopTask(stubborn.id, std::chrono::milliseconds(500), ""));
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_EQ(Wait(stubborn.id)->exit_code, 128 + SIGKILL);
}

TEST_F(DockerDriverTest, AMemoryHogIsReportedOomKilled) {
  TaskConfig task = Task("hog", {{"image", test::kBusybox},
                                 {"command", "/bin/sh"},
                                 {"args", {"-c", "x=aaaaaaaa; while true; do x=$x$x; done"}}});
  task.memory_mb = 16;
  ASSERT_TRUE(Start(task).ok());
  absl::StatusOr<ExitResult> result = Wait(task.id, std::chrono::seconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->oom_killed);
  EXPECT_EQ(result->err, "OOM Killed");
  EXPECT_FALSE(result->Successful());
}

TEST_F(DockerDriverTest, StatsOfARunningContainer) {
  TaskConfig task = Task("busy", {{"image", test::kBusybox},
                                  {"command", "/bin/sh"},
                                  {"args", {"-c", "while true; do :; done"}}});
  ASSERT_TRUE(Start(task).ok());
  absl::StatusOr<TaskResourceUsage> usage;
  ASSERT_TRUE(testing::RunUntil(
      io_,
      [&] {
        usage = driver_->TaskStats(task.id);
        return usage.ok() && usage->cpu.percent > 0;
      },
      std::chrono::seconds(30)))
      << usage.status();
  EXPECT_GT(usage->memory.usage, 0u);
  EXPECT_FALSE(usage->memory.measured.empty());
  EXPECT_TRUE(testing::Await(io_, driver_->StopTask(task.id, std::chrono::seconds(1), "")).ok());
}

TEST_F(DockerDriverTest, LoadsTheTasksImageArchive) {
  // An archive of an image tagged only there.
  ASSERT_TRUE(testing::Await(io_, engine_->TagImage(test::kBusybox, "drover-test/loaded:1")).ok());
  absl::StatusOr<std::string> archive =
      testing::Await(io_, engine_->SaveImage("drover-test/loaded:1", 64 << 20));
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_TRUE(testing::Await(io_, engine_->RemoveImage("drover-test/loaded:1", false)).ok());
  TaskConfig task = Task("loaded", {{"image", "drover-test/loaded:1"},
                                    {"load", "image.tar"},
                                    {"command", "/bin/echo"},
                                    {"args", {"loaded"}}});
  test::WriteFile(std::filesystem::path(task.task_dir) / "local" / "image.tar", *archive);
  ASSERT_TRUE(Start(task).ok());
  EXPECT_EQ(Wait(task.id)->exit_code, 0);
  EXPECT_EQ(Stdout(task), "loaded\n");

  // A link out of local/ is not followed.
  TaskConfig linked = Task("linked", {{"image", "drover-test/loaded:1"}, {"load", "link.tar"}});
  std::filesystem::create_symlink("/etc/passwd",
                                  std::filesystem::path(linked.task_dir) / "local" / "link.tar");
  absl::StatusOr<TaskHandle> refused = Start(linked);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("beneath local/"));
  // Nor does a FIFO the task left there block the start.
  TaskConfig fifo = Task("fifo", {{"image", "drover-test/loaded:1"}, {"load", "fifo.tar"}});
  const std::filesystem::path fifo_path =
      std::filesystem::path(fifo.task_dir) / "local" / "fifo.tar";
  ASSERT_EQ(mkfifo(fifo_path.c_str(), 0600), 0);
  refused = Start(fifo);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("not a regular file"));
}

TEST_F(DockerDriverTest, CollectsAnImageNoTaskUsesAfterTheDelay) {
  // An image of its own (one more file than the test image, so another ID).
  testing::TempDir other;
  ASSERT_FALSE(test::BusyboxTar(other).empty());
  test::WriteFile(other.path() / "rootfs" / "marker", "gc\n");
  const std::string append = "tar -C " + (other.path() / "rootfs").string() + " -rf " +
                             (other.path() / "rootfs.tar").string() + " ./marker";
  ASSERT_EQ(std::system(append.c_str()), 0);
  ASSERT_TRUE(
      testing::Await(io_, engine_->ImportImage(testing::ReadFile(other.path() / "rootfs.tar"),
                                               "drover-test/gc", "1"))
          .ok());
  plugin_.gc_image = true;
  plugin_.gc_image_delay = std::chrono::milliseconds(0);
  RestartDriver();
  TaskConfig first = Task("first", {{"image", "drover-test/gc:1"}, {"command", "/bin/echo"}});
  TaskConfig second = Task("second", {{"image", "drover-test/gc:1"}, {"command", "/bin/echo"}});
  ASSERT_TRUE(Start(first).ok());
  ASSERT_TRUE(Start(second).ok());
  ASSERT_TRUE(Wait(first.id).ok());
  ASSERT_TRUE(Wait(second.id).ok());
  // One task still holds it: it stays once the first is removed (its state file goes
  // last, just before the image is released).
  ASSERT_TRUE(driver_->DestroyTask(first.id, false).ok());
  const std::filesystem::path state = dir_.path() / "state" / (ContainerName(first.id) + ".json");
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return !std::filesystem::exists(state); }, std::chrono::seconds(20)));
  EXPECT_TRUE(testing::Await(io_, engine_->InspectImage("drover-test/gc:1")).ok());
  ASSERT_TRUE(driver_->DestroyTask(second.id, false).ok());
  EXPECT_TRUE(testing::RunUntil(
      io_, [&] { return !testing::Await(io_, engine_->InspectImage("drover-test/gc:1")).ok(); },
      std::chrono::seconds(20)));
  EXPECT_TRUE(testing::Await(io_, engine_->InspectImage(test::kBusybox)).ok());
}

TEST_F(DockerDriverTest, RefusesWhatThePluginDoesNotAllowAndLeavesNoContainer) {
  TaskConfig privileged =
      Task("priv", {{"image", test::kBusybox}, {"command", "/bin/echo"}, {"privileged", true}});
  absl::StatusOr<TaskHandle> refused = Start(privileged);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("Docker privileged mode is disabled on this Nomad agent"));
  TaskConfig host_path = Task("vol", {{"image", test::kBusybox}, {"volumes", {"/etc:/host-etc"}}});
  refused = Start(host_path);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("volumes are not enabled"));
  TaskConfig caps = Task("caps", {{"image", test::kBusybox}, {"cap_add", {"SYS_ADMIN"}}});
  refused = Start(caps);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("SYS_ADMIN"));
  absl::StatusOr<std::vector<Engine::ContainerSummary>> left =
      testing::Await(io_, engine_->ListContainers("com.drover.task_id", 100));
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());

  // Allowed by the plugin: privileged runs.
  plugin_.allow_privileged = true;
  RestartDriver();
  EXPECT_EQ(driver_->Fingerprint().attributes.at("driver.docker.privileged.enabled"), "true");
  absl::StatusOr<TaskHandle> allowed = Start(privileged);
  if (allowed.ok()) {
    EXPECT_EQ(Wait(privileged.id)->exit_code, 0);
  } else {
    // The plugin allowed it; a host that cannot grant every capability (a sandbox
    // without CAP_SYS_RESOURCE in its bounding set) fails the start, and the container
    // it created goes with it.
    EXPECT_THAT(std::string(allowed.status().message()), HasSubstr("failed to start container"));
    left = testing::Await(io_, engine_->ListContainers("com.drover.task_id", 100));
    ASSERT_TRUE(left.ok());
    EXPECT_TRUE(left->empty());
  }
}

TEST_F(DockerDriverTest, FingerprintFollowsTheDaemon) {
  DriverFingerprint fp = driver_->Fingerprint();
  EXPECT_TRUE(fp.detected);
  EXPECT_TRUE(fp.healthy) << fp.health_description;
  EXPECT_FALSE(fp.attributes.at("driver.docker.version").empty());
  dockerd_.Stop();
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return !driver_->Fingerprint().healthy; }, std::chrono::seconds(20)));
  fp = driver_->Fingerprint();
  EXPECT_TRUE(fp.detected);
  EXPECT_THAT(fp.health_description, HasSubstr("Failed to connect to docker daemon"));
  absl::StatusOr<TaskHandle> refused = Start(Task("down", {{"image", test::kBusybox}}));
  EXPECT_TRUE(IsRecoverable(refused.status())) << refused.status();
  ASSERT_TRUE(dockerd_.Start()) << dockerd_.Log();
  EXPECT_TRUE(testing::RunUntil(
      io_, [&] { return driver_->Fingerprint().healthy; }, std::chrono::seconds(20)));
}

}  // namespace
}  // namespace drover::drivers::docker
