// Flag parsing and dispatch of Run, with a fake agent API and agent runner.
#include "cli/cli.h"

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/fake_http_client.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "state/state_db.h"
#include "testing/test_util.h"

namespace drover::cli {
namespace {

class CliTest : public ::testing::Test {
 protected:
  CliTest() {
    deps_.new_client = [this](Address address, std::string token) {
      addresses_.push_back(address.ToString());
      tokens_.push_back(token);
      auto client = std::make_unique<FakeHttpClient>();
      client->AddJson("GET", "/v1/jobs", "[]");
      client->AddJson("PUT", "/v1/jobs", R"({"EvalID":"ev1"})");
      return client;
    };
    deps_.run_agent = [this](const agent::AgentConfig& config) {
      agent_config_ = config;
      return 0;
    };
    deps_.getenv = [this](const std::string& name) {
      auto it = env_.find(name);
      return it == env_.end() ? std::string() : it->second;
    };
  }

  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "drover");
    return cli::Run(args, in_, out_, err_, deps_);
  }

  Dependencies deps_;
  std::map<std::string, std::string> env_;
  std::vector<std::string> addresses_;
  std::vector<std::string> tokens_;
  std::optional<agent::AgentConfig> agent_config_;
  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(CliTest, OperatorClientStateDumpsTheStateDb) {
  testing::TempDir dir;
  ASSERT_TRUE(state::OpenStateDb(dir.path()).ok());
  EXPECT_EQ(Run({"operator", "client-state", "-data-dir", dir.path().string()}), 0) << err_.str();
  auto dump = codec::ParseJson(out_.str());
  ASSERT_TRUE(dump.ok()) << out_.str();
  EXPECT_EQ((*dump)["meta"]["version"], "1");
  EXPECT_EQ(Run({"operator", "client-state", "-data-dir", (dir.path() / "nope").string()}), 1);
  EXPECT_NE(err_.str().find("no client state DB"), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"operator", "client-state"}), 1);
  EXPECT_NE(err_.str().find("-data-dir is required"), std::string::npos) << err_.str();
}

TEST_F(CliTest, Version) {
  EXPECT_EQ(Run({"version"}), 0);
  EXPECT_EQ(out_.str(), "Drover v0.1.0\n");
  out_.str("");
  EXPECT_EQ(Run({"-version"}), 0);
  EXPECT_EQ(out_.str(), "Drover v0.1.0\n");
}

TEST_F(CliTest, UnknownOrMissingCommandPrintsUsage) {
  EXPECT_EQ(Run({"frobnicate"}), 1);
  EXPECT_NE(err_.str().find("Usage: drover"), std::string::npos);
  err_.str("");
  EXPECT_EQ(Run({}), 1);
  EXPECT_NE(err_.str().find("Usage: drover"), std::string::npos);
  err_.str("");
  EXPECT_EQ(Run({"job"}), 1);
  EXPECT_NE(err_.str().find("status"), std::string::npos);
  err_.str("");
  EXPECT_EQ(Run({"job", "status", "-bogus"}), 1);
}

TEST_F(CliTest, HelpExitsZero) {
  EXPECT_EQ(Run({"job", "run", "-help"}), 0);
  EXPECT_NE(out_.str().find("--detach"), std::string::npos);
}

TEST_F(CliTest, AgentFlagsInNomadStyle) {
  EXPECT_EQ(Run({"agent", "-dev", "-http-port=0", "-bind", "0.0.0.0", "-node=n1", "-dc", "dc9",
                 "-region=eu", "-log-level", "debug", "-data-dir=/tmp/d"}),
            0);
  ASSERT_TRUE(agent_config_.has_value());
  EXPECT_TRUE(agent_config_->dev_mode);
  EXPECT_EQ(agent_config_->http_port, 0);
  EXPECT_EQ(agent_config_->bind_addr, "0.0.0.0");
  EXPECT_EQ(agent_config_->node_name, "n1");
  EXPECT_EQ(agent_config_->datacenter, "dc9");
  EXPECT_EQ(agent_config_->region, "eu");
  EXPECT_EQ(agent_config_->log_level, "debug");
  EXPECT_EQ(agent_config_->data_dir, "/tmp/d");
}

// The issue's own command line for a server of a cluster.
TEST_F(CliTest, AServerAgentTakesBootstrapExpectAsNomadsDoes) {
  EXPECT_EQ(Run({"agent", "-server", "-data-dir", "/tmp/d", "-bootstrap-expect", "1"}), 0);
  ASSERT_TRUE(agent_config_.has_value());
  EXPECT_TRUE(agent_config_->server_enabled);
  EXPECT_FALSE(agent_config_->client_enabled);
  agent_config_.reset();
  EXPECT_EQ(Run({"agent", "-server", "-data-dir", "/tmp/d", "-bootstrap-expect=3"}), 1);
  EXPECT_NE(err_.str().find("several servers share their state in etcd"), std::string::npos)
      << err_.str();
  EXPECT_FALSE(agent_config_.has_value());
  EXPECT_EQ(Run({"agent", "-server", "-data-dir", "/tmp/d", "-bootstrap-expect=3",
                 "-etcd-endpoints", "127.0.0.1:2379"}),
            0)
      << err_.str();
  ASSERT_TRUE(agent_config_.has_value());
  EXPECT_EQ(agent_config_->bootstrap_expect, 3);
}

TEST_F(CliTest, AgentWithoutDevOrDataDirFails) {
  EXPECT_EQ(Run({"agent"}), 1);
  EXPECT_EQ(err_.str(), "Must specify either a data directory or -dev\n");
  EXPECT_FALSE(agent_config_.has_value());
}

TEST_F(CliTest, AddressFromFlagThenEnvThenDefault) {
  EXPECT_EQ(Run({"job", "status"}), 0);
  env_["NOMAD_ADDR"] = "http://env-host:1234";
  env_["NOMAD_TOKEN"] = "secret";
  EXPECT_EQ(Run({"job", "status"}), 0);
  EXPECT_EQ(Run({"job", "status", "-address=http://flag-host:99"}), 0);
  EXPECT_EQ(Run({"job", "status", "-address", "http://flag-host:98", "-token=t2"}), 0);
  EXPECT_EQ(addresses_, (std::vector<std::string>{"http://127.0.0.1:4646", "http://env-host:1234",
                                                  "http://flag-host:99", "http://flag-host:98"}));
  EXPECT_EQ(tokens_, (std::vector<std::string>{"", "secret", "secret", "t2"}));
}

TEST_F(CliTest, BadAddressIsAnError) {
  EXPECT_EQ(Run({"node", "status", "-address=https://x:1"}), 1);
  EXPECT_EQ(err_.str(),
            "Error initializing client: https addresses are not supported yet: "
            "\"https://x:1\"\n");
}

TEST_F(CliTest, JobRunFlagsBeforeAndAfterTheFile) {
  std::string dir = ::testing::TempDir();
  std::string file = dir + "/cli_test_job.json";
  { std::ofstream(file) << R"({"ID":"x"})"; }
  EXPECT_EQ(Run({"job", "run", "-detach", file}), 0);
  EXPECT_EQ(Run({"job", "run", file, "-detach=true"}), 0);
  EXPECT_EQ(out_.str(),
            "Job registration successful\nEvaluation ID: ev1\n"
            "Job registration successful\nEvaluation ID: ev1\n");
}

TEST_F(CliTest, JobRunNeedsAFile) {
  EXPECT_EQ(Run({"job", "run"}), 1);
  EXPECT_NE(err_.str().find("file"), std::string::npos);
}

}  // namespace
}  // namespace drover::cli
