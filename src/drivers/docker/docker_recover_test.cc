// The docker driver across restarts of the agent (a new driver instance) and of the
// daemon, with a real dockerd: recovery by container ID with the output continuing
// exactly where it stopped, an exit while no driver watched, unrecorded and dangling
// containers; pulls from a local registry with auth and progress events; a port
// published on 127.0.0.1.
#include <filesystem>

#include "absl/strings/str_split.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drivers/docker/docker_driver.h"
#include "drivers/docker/docker_driver_test_util.h"
#include "rpc/http_call.h"
#include "testing/registry_process.h"

namespace drover::drivers::docker {
namespace {

using test::DockerDriverTest;
using ::testing::HasSubstr;

// "line 0\nline 1\n..." with no number missing or repeated.
bool Consecutive(const std::string& out, int* count) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (line != "line " + std::to_string(n))
      return false;
    ++n;
  }
  *count = n;
  return true;
}

TEST_F(DockerDriverTest, RecoversByContainerIdAndTheOutputContinuesWithoutGapsOrRepeats) {
  TaskConfig task = Task("counter", {{"image", test::kBusybox},
                                     {"command", "/bin/sh"},
                                     {"args",
                                      {"-c",
                                       "i=0; while true; do echo line $i; i=$((i+1)); "
                                       "sleep 0.05; done"}}});
  absl::StatusOr<TaskHandle> handle = Start(task);
  ASSERT_TRUE(handle.ok()) << handle.status();
  int before = 0;
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return Consecutive(Stdout(task), &before) && before >= 5; },
      std::chrono::seconds(20)));

  // The agent goes away for a while; the container keeps writing.
  StopDriver();
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<Engine::Reply> tail = testing::Await(
            io_,
            engine_->Call("GET", "/containers/" + handle->driver_ref + "/logs?stdout=1&tail=1"));
        const size_t at = tail.ok() ? tail->raw.rfind("line ") : std::string::npos;
        return at != std::string::npos && std::atoi(tail->raw.c_str() + at + 5) >= before + 10;
      },
      std::chrono::seconds(20)));
  StartDriver();
  // Not yet re-attached: found as unrecorded for its allocation, and not as one that
  // ended before a later run's end.
  std::optional<TaskHandle> unrecorded = driver_->FindUnrecorded(task.alloc_id + "/", 0);
  ASSERT_TRUE(unrecorded.has_value());
  EXPECT_EQ(unrecorded->driver_ref, handle->driver_ref);
  ASSERT_TRUE(driver_->RecoverTask(*handle).ok());
  EXPECT_FALSE(driver_->FindUnrecorded(task.alloc_id + "/", 0).has_value());
  int after = 0;
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return Consecutive(Stdout(task), &after) && after >= before + 20; },
      std::chrono::seconds(30)))
      << Stdout(task);
  absl::Status stopped =
      testing::Await(io_, driver_->StopTask(task.id, std::chrono::seconds(5), "SIGKILL"));
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_TRUE(Consecutive(Stdout(task), &after));

  // A handle whose container is gone is lost.
  TaskHandle gone = *handle;
  gone.task_id = task.alloc_id + "/other/00000000";
  gone.driver_ref = std::string(64, 'a');
  EXPECT_EQ(driver_->RecoverTask(gone).code(), absl::StatusCode::kNotFound);
}

TEST_F(DockerDriverTest, AnExitWhileNoDriverWatchedIsReportedWithItsExitCode) {
  TaskConfig task = Task("short", {{"image", test::kBusybox},
                                   {"command", "/bin/sh"},
                                   {"args", {"-c", "read x < /local/go; echo done; exit 5"}}});
  const std::filesystem::path go = std::filesystem::path(task.task_dir) / "local" / "go";
  ASSERT_EQ(mkfifo(go.c_str(), 0600), 0);
  absl::StatusOr<TaskHandle> handle = Start(task);
  ASSERT_TRUE(handle.ok()) << handle.status();
  StopDriver();
  test::WriteFile(go, "go\n");  // the task exits now, with nobody watching
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::StatusOr<Engine::ContainerState> s =
            testing::Await(io_, engine_->InspectContainer(handle->driver_ref));
        return s.ok() && !s->running;
      },
      std::chrono::seconds(20)));
  StartDriver();
  ASSERT_TRUE(driver_->RecoverTask(*handle).ok());
  absl::StatusOr<ExitResult> result = Wait(task.id);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 5);
  EXPECT_EQ(Stdout(task), "done\n");
}

TEST_F(DockerDriverTest, RemovesThisNodesDanglingContainersOnly) {
  TaskConfig mine =
      Task("mine", {{"image", test::kBusybox}, {"command", "/bin/sleep"}, {"args", {"600"}}});
  TaskConfig kept =
      Task("kept", {{"image", test::kBusybox}, {"command", "/bin/sleep"}, {"args", {"600"}}});
  TaskConfig other =
      Task("other", {{"image", test::kBusybox}, {"command", "/bin/sleep"}, {"args", {"600"}}});
  other.node_id = "node-2";
  absl::StatusOr<TaskHandle> a = Start(mine), b = Start(kept), c = Start(other);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  RestartDriver();
  ASSERT_TRUE(driver_->RecoverTask(*b).ok());
  EXPECT_EQ(testing::Await(io_, driver_->RemoveDangling("node-1")), 1);
  EXPECT_FALSE(ContainerExists(a->driver_ref));
  EXPECT_TRUE(ContainerExists(b->driver_ref));
  EXPECT_TRUE(ContainerExists(c->driver_ref));
}

TEST_F(DockerDriverTest, PullsWithAuthReportingProgressAndFailsClearly) {
  testing::RegistryProcess registry("tester", "s3cret");
  ASSERT_TRUE(registry.ok()) << registry.Log();
  const std::string ref = registry.address() + "/drover/busybox:1";
  const Engine::RegistryAuth auth{
      .username = "tester", .password = "s3cret", .server_address = registry.address()};
  ASSERT_TRUE(testing::Await(io_, engine_->TagImage(test::kBusybox, ref)).ok());
  ASSERT_TRUE(testing::Await(io_, engine_->PushImage(ref, auth)).ok());
  ASSERT_TRUE(testing::Await(io_, engine_->RemoveImage(ref, false)).ok());

  std::vector<std::string> events;
  const codec::Json good = {
      {"username", "tester"}, {"password", "s3cret"}, {"server_address", registry.address()}};
  TaskConfig bad_auth = Task(
      "bad",
      {{"image", ref},
       {"auth",
        {{"username", "tester"}, {"password", "wrong"}, {"server_address", registry.address()}}}});
  bad_auth.driver_event = [&](const std::string& m) { events.push_back(m); };
  absl::StatusOr<TaskHandle> refused = Start(bad_auth);
  ASSERT_FALSE(refused.ok());
  // As Nomad: retried by the restart policy (the credentials may be fixed).
  EXPECT_TRUE(IsRecoverable(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("Failed to pull `" + ref + "`"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("unauthorized"));
  EXPECT_THAT(events, ::testing::Contains("Downloading image"));

  TaskConfig missing =
      Task("missing", {{"image", registry.address() + "/drover/none:1"}, {"auth", good}});
  refused = Start(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_FALSE(IsRecoverable(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("Failed to pull"));

  TaskConfig pulled = Task(
      "pulled", {{"image", ref}, {"auth", good}, {"command", "/bin/echo"}, {"args", {"pulled"}}});
  ASSERT_TRUE(Start(pulled).ok());
  EXPECT_EQ(Wait(pulled.id)->exit_code, 0);
  EXPECT_EQ(Stdout(pulled), "pulled\n");
  // Present now: found, not pulled, unless force_pull.
  std::vector<std::string> again;
  TaskConfig present = Task("present", {{"image", ref}, {"command", "/bin/echo"}});
  present.driver_event = [&](const std::string& m) { again.push_back(m); };
  ASSERT_TRUE(Start(present).ok());
  EXPECT_TRUE(again.empty());
  TaskConfig forced = Task(
      "forced", {{"image", ref}, {"auth", good}, {"force_pull", true}, {"command", "/bin/echo"}});
  forced.driver_event = [&](const std::string& m) { again.push_back(m); };
  ASSERT_TRUE(Start(forced).ok());
  EXPECT_THAT(again, ::testing::Contains("Downloading image"));
  absl::StatusOr<std::vector<Engine::ContainerSummary>> left =
      testing::Await(io_, engine_->ListContainers("com.drover.task_id", 100));
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 3u);  // only the ones that ran
}

class DockerBridgeTest : public DockerDriverTest {
 protected:
  DockerBridgeTest() : DockerDriverTest({.bridge = true, .live_restore = true}) {}
};

TEST_F(DockerBridgeTest, PublishesPortsOn127001AndKeepsRunningWhileTheDaemonIsDown) {
  // The fixture's bridge is the daemon's default one: its gateway is fingerprinted.
  const std::map<std::string, std::string> attrs = driver_->Fingerprint().attributes;
  ASSERT_TRUE(attrs.contains("driver.docker.bridge_ip"));
  EXPECT_TRUE(attrs.at("driver.docker.bridge_ip").starts_with("10.2"))
      << attrs.at("driver.docker.bridge_ip");
  const int port = testing::FreeLoopbackPort();
  TaskConfig web = Task("web", {{"image", test::kBusybox},
                                {"command", "/bin/busybox"},
                                {"args", {"httpd", "-f", "-p", "8080", "-h", "/local"}},
                                {"ports", {"http"}}});
  web.ports = {
      {.label = "http", .host_port = port, .container_port = 8080, .host_ip = "127.0.0.1"}};
  test::WriteFile(std::filesystem::path(web.task_dir) / "local" / "index.html", "hello web\n");
  absl::StatusOr<TaskHandle> handle = Start(web);
  ASSERT_TRUE(handle.ok()) << handle.status();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto get = [&] {
    return testing::Await(io_, rpc::SendHttp(address, rpc::HttpCall{.target = "/index.html"},
                                             std::chrono::seconds(2)));
  };
  absl::StatusOr<rpc::HttpReply> reply;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        reply = get();
        return reply.ok() && reply->status == 200;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(reply->body, "hello web\n");

  // The daemon stops (live-restore): the driver turns unhealthy, the task keeps
  // running, and its watcher picks up again once the daemon is back.
  dockerd_.StopKeepingContainers();
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return !driver_->Fingerprint().healthy; }, std::chrono::seconds(20)));
  EXPECT_EQ(driver_->InspectTask(web.id)->state, TaskRunState::kRunning);
  ASSERT_TRUE(dockerd_.Start()) << dockerd_.Log();
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return driver_->Fingerprint().healthy; }, std::chrono::seconds(20)));
  EXPECT_EQ(driver_->InspectTask(web.id)->state, TaskRunState::kRunning);
  EXPECT_TRUE(ContainerExists(handle->driver_ref));
  // It answered all along, and still does.
  reply = get();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->body, "hello web\n");
  absl::Status stopped =
      testing::Await(io_, driver_->StopTask(web.id, std::chrono::seconds(5), ""));
  ASSERT_TRUE(stopped.ok()) << stopped;
  EXPECT_FALSE(Wait(web.id)->Successful());
}

}  // namespace
}  // namespace drover::drivers::docker
