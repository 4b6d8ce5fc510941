// The agent's plugin "docker" settings: Nomad's names carried out, and every setting
// Drover does not carry out refused by name.
#include "drivers/docker/plugin_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::drivers::docker {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(PluginConfigTest, DefaultsAreNomads) {
  absl::StatusOr<PluginConfig> c = ParsePluginConfig(Json::object());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint, "unix:///var/run/docker.sock");
  EXPECT_FALSE(c->allow_privileged);
  EXPECT_FALSE(c->volumes_enabled);
  EXPECT_TRUE(c->gc_image);
  EXPECT_EQ(c->gc_image_delay, std::chrono::minutes(3));
  EXPECT_TRUE(c->gc_container);
  EXPECT_TRUE(c->gc_dangling);
  EXPECT_THAT(c->allow_caps, ::testing::Contains("net_bind_service"));
  EXPECT_THAT(c->allow_caps, ::testing::Not(::testing::Contains("net_raw")));
}

TEST(PluginConfigTest, ReadsBlocksAsObjectsOrOneElementLists) {
  const Json config = Json::parse(R"({
    "endpoint": "unix:///run/other.sock",
    "allow_privileged": true,
    "allow_caps": ["CAP_NET_ADMIN", "chown"],
    "volumes": [{"enabled": true}],
    "gc": {"image": false, "image_delay": "10m", "container": false,
           "dangling_containers": [{"enabled": false}]},
    "pids_limit": 100,
    "extra_labels": ["job_id", "com.hashicorp.nomad.node_name", "task_*"]
  })");
  absl::StatusOr<PluginConfig> c = ParsePluginConfig(config);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint, "unix:///run/other.sock");
  EXPECT_TRUE(c->allow_privileged);
  EXPECT_EQ(c->allow_caps, (std::vector<std::string>{"net_admin", "chown"}));
  EXPECT_TRUE(c->volumes_enabled);
  EXPECT_FALSE(c->gc_image);
  EXPECT_EQ(c->gc_image_delay, std::chrono::minutes(10));
  EXPECT_FALSE(c->gc_container);
  EXPECT_FALSE(c->gc_dangling);
  EXPECT_EQ(c->pids_limit, 100);
  EXPECT_EQ(c->extra_labels, (std::vector<std::string>{"job_id", "node_name", "task_*"}));
  EXPECT_TRUE(ExtraLabelMatches("task_*", "task_group_name"));
  EXPECT_FALSE(ExtraLabelMatches("task_*", "job_id"));
}

TEST(PluginConfigTest, RefusesWhatDroverDoesNotCarryOutByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"endpoint": "tcp://127.0.0.1:2375"})", "endpoint"},
      {R"({"tls": {"cert": "x"}})", "tls: is not carried out by Drover"},
      {R"({"infra_image": "pause"})", "infra_image: is not carried out"},
      {R"({"pull_activity_timeout": "2m"})", "pull_activity_timeout"},
      {R"({"allow_runtimes": ["runc"]})", "allow_runtimes"},
      {R"({"volumes": {"enabled": true, "selinuxlabel": "z"}})", "volumes.selinuxlabel"},
      {R"({"gc": {"image_delay": "soon"}})", "gc.image_delay"},
      {R"({"gc": {"dangling_containers": {"dry_run": true}}})", "gc.dangling_containers.dry_run"},
      {R"({"allow_privileged": "yes"})", "allow_privileged: must be true or false"},
      {R"({"extra_labels": ["secret*"]})", "extra_labels: \"secret*\" matches none of"},
      {R"({"pids_limit": -1})", "pids_limit"},
      {R"({"no_such_thing": 1})", "no_such_thing: unknown setting"},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<PluginConfig> c = ParsePluginConfig(Json::parse(text));
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(want)) << text;
  }
}

}  // namespace
}  // namespace drover::drivers::docker
