// The Engine API client against a real dockerd (testing/dockerd_process.h): the
// endpoint's form, API version negotiation, the fingerprint, and an unhealthy
// fingerprint while the daemon is down, healthy again once it is back.
#include "drivers/docker/engine.h"

#include <gtest/gtest.h>

#include "testing/await.h"
#include "testing/dockerd_process.h"

namespace drover::drivers::docker {
namespace {

TEST(EngineTest, EndpointsAreLocalUnixSockets) {
  EXPECT_EQ(EndpointAddress("unix:///var/run/docker.sock").value(), "unix:/var/run/docker.sock");
  for (const char* bad : {"tcp://127.0.0.1:2375", "unix://", "unix://relative.sock",
                          "/var/run/docker.sock", "npipe:////./pipe/docker_engine"}) {
    EXPECT_EQ(EndpointAddress(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_LT(CompareApiVersions("1.9", "1.41"), 0);
  EXPECT_EQ(CompareApiVersions("1.41", "1.41"), 0);
  EXPECT_GT(CompareApiVersions("1.43", "1.41"), 0);
}

TEST(EngineTest, NegotiatesAndFingerprintsARealDaemonAndNoticesItGoingAndComingBack) {
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
  EXPECT_NE(fp.health_description.find("Docker daemon unavailable"), std::string::npos)
      << fp.health_description;
  EXPECT_FALSE(testing::Await(io, engine.Ping()).ok());
  ASSERT_TRUE(dockerd.Start()) << dockerd.Log();
  fp = testing::Await(io, FingerprintEngine(engine));
  EXPECT_TRUE(fp.healthy) << fp.health_description;
}

}  // namespace
}  // namespace drover::drivers::docker
