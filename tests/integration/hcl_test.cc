// End-to-end: HCL job files through `drover job run`, and agent configuration files
// through `drover agent -config`.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

constexpr char kHclJob[] = R"(variable "greeting" {
  type = string
}

locals {
  message = "${upper(var.greeting)} from HCL"
}

job "hcl" {
  datacenters = ["dc1"]
  type        = "batch"

  constraint {
    attribute = "${node.class}"
    value     = "compute"
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        # NOMAD_ALLOC_ID stays for the client to fill in; local.message is the file's.
        args = ["-c", <<-EOT
          echo "${local.message} in $NOMAD_ALLOC_ID rack=$RACK"
          EOT
        ]
      }
      env {
        RACK = "${meta.rack}"
      }
      resources {
        cpu    = 50
        memory = "32MB"
      }
    }
  }
}
)";

// An agent without -dev whose configuration file enables raw_exec and describes the
// node; the job file's constraint and ${meta.rack} need both.
class HclTest : public ::testing::Test {
 protected:
  static std::string WriteConfig() {
    const auto path = std::filesystem::temp_directory_path() /
                      ("drover_hcl_test_" + std::to_string(::getpid()) + ".hcl");
    std::ofstream(path) << R"(# agent configuration
client {
  node_class = "compute"
  meta {
    rack = "r7"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
)";
    return path.string();
  }
  HclTest()
      : config_(WriteConfig()),
        agent_({"-config", config_}, AgentProcess::Role::kServerAndClient) {}
  ~HclTest() override { std::filesystem::remove(config_); }

  std::string config_;
  AgentProcess agent_;
};

TEST_F(HclTest, AnHclJobRunsWithVariablesAndRuntimeInterpolation) {
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  codec::Json nodes = agent_.Get("/v1/nodes");
  ASSERT_EQ(nodes.size(), 1u);
  codec::Json node = agent_.Get("/v1/node/" + nodes[0]["ID"].get<std::string>());
  EXPECT_EQ(node["NodeClass"], "compute");
  EXPECT_EQ(node["Meta"]["rack"], "r7");
  EXPECT_TRUE(node["Drivers"].contains("raw_exec")) << node["Drivers"].dump();

  const std::string file = agent_.WriteFile("hcl.nomad.hcl", kHclJob);
  CliResult missing = agent_.Cli({"job", "run", file});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("Unset variable \"greeting\""), std::string::npos) << missing.err;

  CliResult validate = agent_.Cli({"job", "validate", "-var", "greeting=hi", file});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;
  EXPECT_NE(validate.out.find("Job validation successful"), std::string::npos);

  CliResult run = agent_.Cli({"job", "run", "-var", "greeting=hello", file});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("finished with status \"complete\""), std::string::npos) << run.out;
  codec::Json allocs = agent_.Get("/v1/job/hcl/allocations");
  ASSERT_EQ(allocs.size(), 1u);
  const std::string id = allocs[0]["ID"];
  const auto log = agent_.data_dir() / "alloc" / id / "alloc" / "logs" / "t.stdout.0";
  EXPECT_TRUE(testing::WaitFor([&] {
    return testing::ReadFile(log) == "HELLO from HCL in " + id + " rack=r7\n";
  })) << testing::ReadFile(log);

  CliResult inspect = agent_.Cli({"job", "inspect", "hcl"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  codec::Json job = *codec::ParseJson(inspect.out);
  EXPECT_EQ(job["Job"]["TaskGroups"][0]["Tasks"][0]["Resources"]["MemoryMB"], 32);
  EXPECT_EQ(job["Job"]["Constraints"][0]["LTarget"], "${node.class}");
}

TEST_F(HclTest, ParseEndpointAndUnsupportedFeatures) {
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  codec::Json request = {{"JobHCL", kHclJob}, {"Variables", "greeting = \"x\"\n"}};
  absl::StatusOr<cli::HttpResponse> parsed =
      agent_.http().Do("POST", "/v1/jobs/parse", request.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(codec::ParseJson(parsed->body)->at("ID"), "hcl");

  const std::string spread = agent_.WriteFile("p.nomad.hcl", R"(job "p" {
  type = "batch"
  spread {
    attribute = "${node.datacenter}"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
    }
  }
}
)");
  CliResult run = agent_.Cli({"job", "run", spread});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("Job.Spreads: spread blocks are not supported by Drover yet"),
            std::string::npos)
      << run.err;
}

TEST(AgentConfigTest, ABadConfigurationFileStopsTheAgentWithItsPosition) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("drover_bad_config_" + std::to_string(::getpid()) + ".hcl");
  std::ofstream(path) << "client {\n  node_klass = \"x\"\n}\n";
  CliResult r = RunProcess(
      {testing::BinaryPath("drover").string(), "agent", "-dev", "-config", path.string()}, {});
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path.string() + ":2,3-13: Unsupported argument"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace drover::integration
