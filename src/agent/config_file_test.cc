#include "agent/config_file.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::agent {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  ConfigFileTest()
      : dir_(fs::temp_directory_path() /
             ("agent_config_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(dir_);
  }
  ~ConfigFileTest() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string Error(const std::vector<std::string>& paths) {
    AgentConfig config;
    absl::Status s = ApplyConfigFiles(paths, config);
    EXPECT_FALSE(s.ok());
    return std::string(s.message());
  }

  fs::path dir_;
};

constexpr char kFullConfig[] = R"(# A Nomad-style agent configuration.
name       = "node-a"
region     = "eu"
datacenter = "dc2"
data_dir   = "/var/lib/drover"
bind_addr  = "0.0.0.0"
log_level  = "DEBUG"

ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}

server {
  enabled          = true
  bootstrap_expect = 1
}

client {
  enabled    = true
  node_class = "compute"
  node_pool  = "batch"
  meta {
    rack = "r1"
    zone = 3
  }
  options = {
    "driver.raw_exec.enable" = "1"
    "driver.denylist"        = "exec"
  }
  reserved {
    cpu            = 500
    memory         = "1GiB"
    disk           = 1024
    reserved_ports = "22,80"
  }
  chroot_env {
    "/bin" = "/bin"
    "/etc" = "/etc"
  }
  gc_interval              = "30s"
  gc_disk_usage_threshold  = 90
  gc_inode_usage_threshold = 85.5
  gc_max_allocs            = 20
}

telemetry {
  collection_interval = "5s"
}
)";

TEST_F(ConfigFileTest, AppliesEverySetting) {
  AgentConfig config;
  ASSERT_TRUE(ApplyConfigFiles({Write("agent.hcl", kFullConfig)}, config).ok());
  EXPECT_EQ(config.node_name, "node-a");
  EXPECT_EQ(config.region, "eu");
  EXPECT_EQ(config.datacenter, "dc2");
  EXPECT_EQ(config.data_dir, "/var/lib/drover");
  EXPECT_EQ(config.bind_addr, "0.0.0.0");
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.http_port, 5646);
  EXPECT_EQ(config.node_class, "compute");
  EXPECT_EQ(config.node_pool, "batch");
  EXPECT_EQ(config.meta, (std::map<std::string, std::string>{{"rack", "r1"}, {"zone", "3"}}));
  EXPECT_EQ(config.raw_exec_enabled, true);
  EXPECT_EQ(config.driver_denylist, std::set<std::string>{"exec"});
  EXPECT_EQ(config.reserved.cpu_shares, 500);
  EXPECT_EQ(config.reserved.memory_mb, 1024);
  EXPECT_EQ(config.reserved.disk_mb, 1024);
  EXPECT_EQ(config.reserved.reserved_host_ports, "22,80");
  ASSERT_TRUE(config.chroot_env.has_value());
  EXPECT_EQ(config.chroot_env->size(), 2u);
  EXPECT_EQ(config.gc.interval, std::chrono::seconds(30));
  EXPECT_EQ(config.gc.disk_usage_threshold, 90);
  EXPECT_EQ(config.gc.inode_usage_threshold, 85.5);
  EXPECT_EQ(config.gc.max_allocs, 20);
  EXPECT_EQ(config.stats_interval, std::chrono::seconds(5));
}

TEST_F(ConfigFileTest, LaterFilesOverrideAndDirectoriesAreReadInOrder) {
  Write("conf.d/10-base.hcl", "region = \"eu\"\nclient {\n  meta {\n    a = \"1\"\n  }\n}\n");
  Write(
      "conf.d/20-override.json",
      R"({"region": "us", "client": {"meta": {"b": "2"}}, "plugin": {"raw_exec": {"config": {"enabled": false}}}})");
  Write("conf.d/notes.txt", "not a config file");
  const std::string last = Write("last.hcl", "datacenter = \"dc9\"\n");
  AgentConfig config;
  config.dev_mode = true;
  ASSERT_TRUE(ApplyConfigFiles({(dir_ / "conf.d").string(), last}, config).ok());
  EXPECT_EQ(config.region, "us");
  EXPECT_EQ(config.datacenter, "dc9");
  EXPECT_EQ(config.meta, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(config.raw_exec_enabled, false);  // a file can turn off what -dev turns on
}

TEST_F(ConfigFileTest, UnknownKeysAreErrorsNamingFileAndLine) {
  const std::string f = Write("bad.hcl", "region = \"eu\"\nclient {\n  node_klass = \"x\"\n}\n");
  EXPECT_EQ(Error({f}), absl::StrCat("Error loading configuration from ", f, ": ", f,
                                     ":3,3-13: Unsupported argument; An argument named "
                                     "\"node_klass\" is not expected here."));
  const std::string g = Write("bad2.hcl", "vault {\n}\n");
  EXPECT_THAT(Error({g}), HasSubstr(":1,1-6: Unsupported block type"));
  const std::string j = Write("bad.json", R"({"client": {"bogus": 1}})");
  EXPECT_THAT(Error({j}), HasSubstr("An argument named \"bogus\" is not expected here."));
  const std::string t = Write("type.hcl", "ports {\n  http = \"web\"\n}\n");
  EXPECT_THAT(Error({t}), HasSubstr(":2,10-15: Incorrect attribute value type"));
}

TEST_F(ConfigFileTest, SettingsDroverCannotHonourAreRefused) {
  EXPECT_THAT(Error({Write("a.hcl", "server {\n  enabled = false\n}\n")}),
              HasSubstr("server.enabled = false: a client-only agent is not supported"));
  EXPECT_THAT(Error({Write("b.hcl", "client {\n  servers = [\"10.0.0.1\"]\n}\n")}),
              HasSubstr("client.servers: joining remote servers is not supported"));
  EXPECT_THAT(Error({Write("c.hcl",
                           "client {\n  host_volume \"data\" {\n    path = \"/d\"\n"
                           "  }\n}\n")}),
              HasSubstr("client.host_volume"));
  EXPECT_THAT(Error({Write("d.hcl", "plugin \"docker\" {\n}\n")}),
              HasSubstr("plugin \"docker\": Drover has no plugin of that name"));
  EXPECT_THAT(Error({Write("e.hcl", "client {\n  options = { \"x.y\" = \"1\" }\n}\n")}),
              HasSubstr("unknown client option"));
  EXPECT_THAT(Error({Write("f.hcl", "telemetry {\n  prometheus_metrics = true\n}\n")}),
              HasSubstr("metrics publishing is not supported"));
  EXPECT_THAT(Error({Write("g.hcl", "server {\n  bootstrap_expect = 3\n}\n")}),
              HasSubstr("clusters of several servers"));
  EXPECT_THAT(Error({Write("h.hcl", "ports {\n  http = 70000\n}\n")}), HasSubstr("0-65535"));
  EXPECT_THAT(Error({(dir_ / "missing.hcl").string()}), HasSubstr("no such file or directory"));
}

}  // namespace
}  // namespace drover::agent

namespace drover::agent {
namespace {

TEST_F(ConfigFileTest, PortsAndReservedPortsAreChecked) {
  EXPECT_THAT(Error({Write("p.hcl", "ports {\n  http = 4294971942\n}\n")}), HasSubstr("0-65535"));
  EXPECT_THAT(Error({Write("r.hcl",
                           "client {\n  reserved {\n    reserved_ports = \"22,90-80\"\n"
                           "  }\n}\n")}),
              HasSubstr("is not a list of ports"));
  AgentConfig config;
  ASSERT_TRUE(ApplyConfigFiles({Write("ok.hcl",
                                      "client {\n  reserved {\n    reserved_ports = "
                                      "\"22, 8000-8100\"\n  }\n}\n")},
                               config)
                  .ok());
}

}  // namespace
}  // namespace drover::agent
