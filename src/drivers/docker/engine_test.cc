// The Engine API client against a real dockerd (testing/dockerd_process.h): the
// endpoint's form, API version negotiation, the fingerprint, and an unhealthy
// fingerprint while the daemon is down, healthy again once it is back.
#include "drivers/docker/engine.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "drivers/docker/docker_test_util.h"
#include "rpc/http_call.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"
#include "testing/registry_process.h"

namespace drover::drivers::docker {
namespace {

TEST(EngineTest, EndpointsAreLocalUnixSockets) {
  EXPECT_EQ(EndpointAddress("unix:///var/run/docker.sock").value(), "unix:/var/run/docker.sock");
  for (const char* bad : {"tcp://127.0.0.1:2375", "unix://", "unix://relative.sock",
                          "/var/run/docker.sock", "npipe:////./pipe/docker_engine"}) {
    EXPECT_EQ(EndpointAddress(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // Only the engine's own calls may reach a unix socket: an address a peer reported
  // (a node's HTTP address) cannot.
  asio::io_context io;
  auto refused =
      testing::Await(io, rpc::SendHttp("unix:/var/run/docker.sock",
                                       rpc::HttpCall{.target = "/_ping"}, std::chrono::seconds(1)));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_LT(CompareApiVersions("1.9", "1.41"), 0);
  EXPECT_EQ(CompareApiVersions("1.41", "1.41"), 0);
  EXPECT_GT(CompareApiVersions("1.43", "1.41"), 0);
}

TEST(EngineTest, NegotiatesAndFingerprintsARealDaemonAndNoticesItGoingAndComingBack) {
  DROVER_SKIP_WITHOUT_DOCKERD();
  testing::DockerdProcess dockerd;
  ASSERT_TRUE(dockerd.ok()) << dockerd.Log();
  asio::io_context io;
  Engine engine(EndpointAddress(dockerd.endpoint()).value());
  EXPECT_TRUE(testing::Await(io, engine.Ping()).ok());
  absl::StatusOr<EngineVersion> version = testing::Await(io, engine.Negotiate());
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->os, "linux");
  EXPECT_LE(CompareApiVersions(engine.api_version(), kMaxApiVersion), 0);
  EXPECT_GE(CompareApiVersions(engine.api_version(), kMinApiVersion), 0);

  Fingerprint fp = testing::Await(io, FingerprintEngine(engine));
  ASSERT_TRUE(fp.healthy) << fp.health_description;
  EXPECT_EQ(fp.attributes.at("driver.docker"), "1");
  EXPECT_EQ(fp.attributes.at("driver.docker.version"), version->version);
  EXPECT_EQ(fp.attributes.at("driver.docker.os_type"), "linux");
  EXPECT_NE(fp.attributes.at("driver.docker.runtimes").find("runc"), std::string::npos);
  EXPECT_FALSE(fp.attributes.contains("driver.docker.bridge_ip"));  // --bridge=none

  // A call the daemon refuses comes back with its status and message.
  absl::StatusOr<Engine::Reply> missing =
      testing::Await(io, engine.Call("GET", "/containers/nope/json"));
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(missing->body.contains("message"));

  dockerd.Stop();
  fp = testing::Await(io, FingerprintEngine(engine));
  EXPECT_FALSE(fp.healthy);
  EXPECT_NE(fp.health_description.find("Failed to connect to docker daemon"), std::string::npos)
      << fp.health_description;
  EXPECT_FALSE(testing::Await(io, engine.Ping()).ok());
  ASSERT_TRUE(dockerd.Start()) << dockerd.Log();
  fp = testing::Await(io, FingerprintEngine(engine));
  EXPECT_TRUE(fp.healthy) << fp.health_description;
}

TEST(EngineTest, RunsAContainerFromAnImportedImageToItsExitCode) {
  DROVER_SKIP_WITHOUT_DOCKERD();
  testing::DockerdProcess dockerd;
  ASSERT_TRUE(dockerd.ok()) << dockerd.Log();
  asio::io_context io;
  Engine engine(EndpointAddress(dockerd.endpoint()).value());
  ASSERT_TRUE(testing::Await(io, engine.Negotiate()).ok());
  testing::TempDir dir;
  ASSERT_TRUE(
      testing::Await(io, engine.ImportImage(test::BusyboxTar(dir), "drover-test/busybox", "1"))
          .ok());
  absl::StatusOr<std::string> image =
      testing::Await(io, engine.InspectImage("drover-test/busybox:1"));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(testing::Await(io, engine.InspectImage("drover-test/none:1")).status().code(),
            absl::StatusCode::kNotFound);

  const codec::Json config = {{"Image", "drover-test/busybox:1"},
                              {"Cmd", {"/bin/sh", "-c", "echo hi; exit 3"}},
                              {"Labels", {{"com.hashicorp.nomad.alloc_id", "a1"}}},
                              {"HostConfig", {{"NetworkMode", "none"}}}};
  absl::StatusOr<std::string> id = testing::Await(io, engine.CreateContainer("t-a1", config));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(testing::Await(io, engine.CreateContainer("t-a1", config)).status().code(),
            absl::StatusCode::kFailedPrecondition);  // the name is taken
  EXPECT_EQ(testing::Await(io, engine.CreateContainer("bad/name", config)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(testing::Await(io, engine.StartContainer(*id)).ok());
  absl::StatusOr<int> exit_code = testing::Await(io, engine.WaitContainer(*id));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 3);
  absl::StatusOr<Engine::ContainerState> state = testing::Await(io, engine.InspectContainer(*id));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->status, "exited");
  EXPECT_EQ(state->exit_code, 3);
  EXPECT_FALSE(state->oom_killed);
  absl::StatusOr<std::vector<Engine::ContainerSummary>> labeled =
      testing::Await(io, engine.ListContainers("com.hashicorp.nomad.alloc_id=a1", 10));
  ASSERT_TRUE(labeled.ok()) << labeled.status();
  ASSERT_EQ(labeled->size(), 1u);
  EXPECT_EQ((*labeled)[0].id, *id);
  EXPECT_EQ((*labeled)[0].state, "exited");
  EXPECT_EQ((*labeled)[0].labels.at("com.hashicorp.nomad.alloc_id"), "a1");
  EXPECT_GT((*labeled)[0].created, 0);

  // A container that runs until signalled.
  codec::Json sleeper = config;
  sleeper["Cmd"] = {"/bin/sleep", "600"};
  absl::StatusOr<std::string> s = testing::Await(io, engine.CreateContainer("t-a2", sleeper));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(testing::Await(io, engine.StartContainer(*s)).ok());
  EXPECT_TRUE(testing::Await(io, engine.InspectContainer(*s))->running);
  ASSERT_TRUE(testing::Await(io, engine.SignalContainer(*s, "SIGKILL")).ok());
  EXPECT_EQ(testing::Await(io, engine.WaitContainer(*s)).value_or(-1), 137);

  for (const std::string& c : {*id, *s})
    EXPECT_TRUE(testing::Await(io, engine.RemoveContainer(c, /*force=*/true)).ok());
  EXPECT_EQ(testing::Await(io, engine.InspectContainer(*id)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(testing::Await(io, engine.StartContainer("../../etc")).code(),
            absl::StatusCode::kInvalidArgument);

  // An image archive (a task's `load`): saved, removed, loaded back.
  absl::StatusOr<std::string> archive =
      testing::Await(io, engine.SaveImage("drover-test/busybox:1", 64 << 20));
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_TRUE(testing::Await(io, engine.RemoveImage("drover-test/busybox:1", true)).ok());
  EXPECT_FALSE(testing::Await(io, engine.InspectImage("drover-test/busybox:1")).ok());
  absl::Status loaded = testing::Await(io, engine.LoadImage(*archive));
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_TRUE(testing::Await(io, engine.InspectImage("drover-test/busybox:1")).ok());
  EXPECT_FALSE(testing::Await(io, engine.LoadImage("not a tar archive")).ok());
}

TEST(EngineTest, PullsFromARegistryWithAuthAndRefusesWrongCredentials) {
  DROVER_SKIP_WITHOUT_DOCKERD();
  testing::DockerdProcess dockerd;
  ASSERT_TRUE(dockerd.ok()) << dockerd.Log();
  testing::RegistryProcess registry("tester", "s3cret");
  ASSERT_TRUE(registry.ok()) << registry.Log();
  asio::io_context io;
  Engine engine(EndpointAddress(dockerd.endpoint()).value());
  ASSERT_TRUE(testing::Await(io, engine.Negotiate()).ok());
  testing::TempDir dir;
  ASSERT_TRUE(
      testing::Await(io, engine.ImportImage(test::BusyboxTar(dir), "drover-test/busybox", "1"))
          .ok());
  const std::string ref = registry.address() + "/drover/busybox:1";
  const Engine::RegistryAuth good{
      .username = "tester", .password = "s3cret", .server_address = registry.address()};
  ASSERT_TRUE(testing::Await(io, engine.TagImage("drover-test/busybox:1", ref)).ok());
  absl::Status pushed = testing::Await(io, engine.PushImage(ref, good));
  ASSERT_TRUE(pushed.ok()) << pushed << registry.Log();
  ASSERT_TRUE(testing::Await(io, engine.RemoveImage(ref, true)).ok());
  EXPECT_EQ(testing::Await(io, engine.InspectImage(ref)).status().code(),
            absl::StatusCode::kNotFound);

  // Wrong credentials, and none: the registry's refusal, clearly.
  Engine::RegistryAuth bad = good;
  bad.password = "wrong";
  absl::Status refused =
      testing::Await(io, engine.PullImage(ref, bad, std::chrono::minutes(1), nullptr));
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("unauthorized"), std::string::npos) << refused;
  refused =
      testing::Await(io, engine.PullImage(ref, std::nullopt, std::chrono::minutes(1), nullptr));
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(testing::Await(io, engine.InspectImage(ref)).status().code(),
            absl::StatusCode::kNotFound);

  std::vector<std::string> statuses;
  absl::Status pulled = testing::Await(
      io, engine.PullImage(ref, good, std::chrono::minutes(1),
                           [&](const std::string& status) { statuses.push_back(status); }));
  ASSERT_TRUE(pulled.ok()) << pulled;
  EXPECT_FALSE(statuses.empty());
  EXPECT_TRUE(testing::Await(io, engine.InspectImage(ref)).ok());
  absl::Status missing =
      testing::Await(io, engine.PullImage(registry.address() + "/drover/none:1", good,
                                          std::chrono::minutes(1), nullptr));
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace drover::drivers::docker
