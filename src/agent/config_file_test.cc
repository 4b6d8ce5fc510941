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

advertise {
  http = "10.0.0.5"
  rpc  = "10.0.0.5:5647"
}

ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}

server {
  enabled                   = true
  bootstrap_expect          = 3
  heartbeat_grace           = "3s"
  min_heartbeat_ttl         = "2s"
  max_heartbeats_per_second = 20.5
  eval_gc_threshold         = "10m"
  batch_eval_gc_threshold   = "2h"
  job_gc_threshold          = "30m"
  node_gc_threshold         = "48h"
  job_gc_interval           = "1m"
  job_tracked_versions      = 10
  event_buffer_size         = 250
  etcd {
    endpoints    = ["127.0.0.1:2379", "http://10.0.0.5:2379"]
    prefix       = "/prod"
    dial_timeout = "2s"
    lease_ttl    = "6s"
  }
}

client {
  enabled    = true
  servers    = ["10.0.0.1:4647", "10.0.0.2"]
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
  collection_interval        = "5s"
  prometheus_metrics         = true
  disable_hostname           = true
  publish_allocation_metrics = true
  publish_node_metrics       = true
}

limits {
  rpc_max_conns_per_client = 0
  rpc_max_conns            = 20000
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
  EXPECT_EQ(config.rpc_port, 5647);
  EXPECT_TRUE(config.server_enabled);
  EXPECT_TRUE(config.client_enabled);
  EXPECT_EQ(config.servers, (std::vector<std::string>{"10.0.0.1:4647", "10.0.0.2"}));
  EXPECT_EQ(config.heartbeat_grace, std::chrono::seconds(3));
  EXPECT_EQ(config.min_heartbeat_ttl, std::chrono::seconds(2));
  EXPECT_EQ(config.max_heartbeats_per_second, 20.5);
  EXPECT_EQ(config.eval_gc_threshold, std::chrono::minutes(10));
  EXPECT_EQ(config.batch_eval_gc_threshold, std::chrono::hours(2));
  EXPECT_EQ(config.job_gc_threshold, std::chrono::minutes(30));
  EXPECT_EQ(config.node_gc_threshold, std::chrono::hours(48));
  EXPECT_EQ(config.job_gc_interval, std::chrono::minutes(1));
  EXPECT_EQ(config.job_tracked_versions, 10u);
  EXPECT_EQ(config.event_buffer_size, 250u);
  EXPECT_EQ(config.bootstrap_expect, 3);
  EXPECT_EQ(config.advertise_http, "10.0.0.5");
  EXPECT_EQ(config.advertise_rpc, "10.0.0.5:5647");
  EXPECT_EQ(config.etcd.endpoints,
            (std::vector<std::string>{"127.0.0.1:2379", "http://10.0.0.5:2379"}));
  EXPECT_EQ(config.etcd.prefix, "/prod");
  EXPECT_EQ(config.etcd.dial_timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.etcd.lease_ttl, std::chrono::seconds(6));
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
  EXPECT_TRUE(config.prometheus_metrics);
  EXPECT_TRUE(config.disable_hostname);
  EXPECT_TRUE(config.publish_allocation_metrics);
  EXPECT_TRUE(config.publish_node_metrics);
  EXPECT_EQ(config.rpc_max_conns_per_client, 0u);
  EXPECT_EQ(config.rpc_max_conns, 20000u);
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
  EXPECT_THAT(Error({Write("a.hcl", "server {\n  min_heartbeat_ttl = \"1ms\"\n}\n")}),
              HasSubstr("server.min_heartbeat_ttl: must be at least 100ms"));
  EXPECT_THAT(Error({Write("b.hcl", "server {\n  max_heartbeats_per_second = 0\n}\n")}),
              HasSubstr("server.max_heartbeats_per_second: must be above 0"));
  EXPECT_THAT(Error({Write("c.hcl",
                           "client {\n  host_volume \"data\" {\n    path = \"/d\"\n"
                           "  }\n}\n")}),
              HasSubstr("client.host_volume"));
  EXPECT_THAT(Error({Write("d.hcl", "plugin \"lxc\" {\n}\n")}),
              HasSubstr("plugin \"lxc\": Drover has no plugin of that name"));
  EXPECT_THAT(Error({Write("d2.hcl",
                           "plugin \"docker\" {\n  config {\n    infra_image = \"p\"\n"
                           "  }\n}\n")}),
              HasSubstr("plugin \"docker\" config infra_image: is not carried out by Drover"));
  EXPECT_THAT(Error({Write("e.hcl", "client {\n  options = { \"x.y\" = \"1\" }\n}\n")}),
              HasSubstr("unknown client option"));
  EXPECT_THAT(Error({Write("f.hcl", "telemetry {\n  statsd_address = \"127.0.0.1:8125\"\n}\n")}),
              HasSubstr("statsd_address"));
  EXPECT_THAT(Error({Write("g.hcl", "server {\n  bootstrap_expect = 0\n}\n")}),
              HasSubstr("server.bootstrap_expect: must be at least 1"));
  EXPECT_THAT(Error({Write("g2.hcl",
                           "server {\n  etcd {\n    endpoints = [\"https://e:2379\"]\n"
                           "  }\n}\n")}),
              HasSubstr("TLS to etcd is not supported"));
  EXPECT_THAT(Error({Write("g3.hcl", "server {\n  etcd {\n    prefix = \"drover\"\n  }\n}\n")}),
              HasSubstr("server.etcd.prefix"));
  EXPECT_THAT(Error({Write("g4.hcl", "server {\n  etcd {\n    lease_ttl = \"1s\"\n  }\n}\n")}),
              HasSubstr("at least 2s"));
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

namespace drover::agent {
namespace {

TEST_F(ConfigFileTest, DevicePluginBlocksConfigureExampleNvidiaAndExternalPlugins) {
  const std::string plugin = Write("bin/fpga-plugin", "#!/bin/sh\nexit 0\n");
  fs::permissions(plugin, fs::perms::owner_all);
  AgentConfig config;
  absl::Status s = ApplyConfigFiles({Write("devices.hcl", R"(plugin "example" {
  config {
    dir                = "/var/lib/fake-gpus"
    env_var            = "NVIDIA_VISIBLE_DEVICES"
    fingerprint_period = "2s"
  }
}
plugin "nvidia" {
  config {
    enabled         = false
    ignored_gpu_ids = ["GPU-1"]
  }
}
plugin "fpga" {
  command = ")" + plugin + R"("
  args    = ["-v"]
  config {
    boards = 2
  }
}
)")},
                                    config);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(config.device_plugins.size(), 3u);
  std::map<std::string, const DevicePluginConfig*> by_name;
  for (const auto& p : config.device_plugins)
    by_name[p.name] = &p;
  const DevicePluginConfig& example = *by_name.at("example");
  EXPECT_EQ(example.kind, DevicePluginConfig::Kind::kExample);
  EXPECT_EQ(example.example.dir, "/var/lib/fake-gpus");
  EXPECT_EQ(example.example.env_var, "NVIDIA_VISIBLE_DEVICES");
  EXPECT_EQ(example.fingerprint_period, std::chrono::seconds(2));
  const DevicePluginConfig& nvidia = *by_name.at("nvidia");
  EXPECT_FALSE(nvidia.nvidia.enabled);
  EXPECT_EQ(nvidia.nvidia.ignored_gpu_ids, std::vector<std::string>{"GPU-1"});
  const DevicePluginConfig& fpga = *by_name.at("fpga");
  EXPECT_EQ(fpga.kind, DevicePluginConfig::Kind::kExternal);
  EXPECT_EQ(fpga.external.command, plugin);
  EXPECT_EQ(fpga.external.args, std::vector<std::string>{"-v"});
  EXPECT_EQ(nlohmann::json::parse(fpga.external.config_json), nlohmann::json({{"boards", 2}}));
}

TEST_F(ConfigFileTest, DockerPluginBlockWithNestedBlocks) {
  AgentConfig config;
  absl::Status s = ApplyConfigFiles({Write("docker.hcl", R"(plugin "docker" {
  config {
    endpoint         = "unix:///run/d.sock"
    allow_privileged = true
    volumes {
      enabled = true
    }
    gc {
      image_delay = "1m"
      container   = false
    }
    extra_labels = ["job_*"]
  }
}
)")},
                                    config);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(config.docker.endpoint, "unix:///run/d.sock");
  EXPECT_TRUE(config.docker.allow_privileged);
  EXPECT_TRUE(config.docker.volumes_enabled);
  EXPECT_EQ(config.docker.gc_image_delay, std::chrono::minutes(1));
  EXPECT_FALSE(config.docker.gc_container);
  EXPECT_TRUE(config.docker.gc_image);
  EXPECT_EQ(config.docker.extra_labels, std::vector<std::string>{"job_*"});
}

TEST_F(ConfigFileTest, BadDevicePluginSettingsAreRefusedByName) {
  EXPECT_THAT(Error({Write("a.hcl", "plugin \"example\" {\n  config {\n  }\n}\n")}),
              HasSubstr("plugin \"example\" config dir: is required"));
  EXPECT_THAT(Error({Write("b.hcl",
                           "plugin \"example\" {\n  config {\n    dir = \"/d\"\n    colour = 1\n"
                           "  }\n}\n")}),
              HasSubstr("plugin \"example\" config colour: unknown setting"));
  EXPECT_THAT(Error({Write("c.hcl",
                           "plugin \"nvidia\" {\n  config {\n    fingerprint_period = \"soon\"\n"
                           "  }\n}\n")}),
              HasSubstr("\"soon\" is not a positive duration"));
  EXPECT_THAT(Error({Write("d.hcl", "plugin \"fpga\" {\n  command = \"/no/such/plugin\"\n}\n")}),
              HasSubstr("plugin \"fpga\" command: \"/no/such/plugin\" is not an executable file"));
  EXPECT_THAT(Error({Write("e.hcl", "plugin \"fpga\" {\n  command = \"fpga-plugin\"\n}\n")}),
              HasSubstr("must be an absolute path"));
  EXPECT_THAT(Error({Write("f.hcl", "plugin \"nvidia\" {\n  args = [\"-x\"]\n}\n")}),
              HasSubstr("only external plugins (with a command) take args"));
}

TEST_F(ConfigFileTest, BadServerGcSettingsAreRefusedByName) {
  EXPECT_THAT(Error({Write("g.hcl", "server {\n  job_gc_threshold = \"-1s\"\n}\n")}),
              HasSubstr("server.job_gc_threshold"));
  EXPECT_THAT(Error({Write("h.hcl", "server {\n  job_gc_interval = \"10ms\"\n}\n")}),
              HasSubstr("server.job_gc_interval"));
  EXPECT_THAT(Error({Write("i.hcl", "server {\n  job_tracked_versions = 0\n}\n")}),
              HasSubstr("server.job_tracked_versions"));
  EXPECT_THAT(Error({Write("e.hcl", "server {\n  event_buffer_size = 0\n}\n")}),
              HasSubstr("server.event_buffer_size"));
}

TEST(ServerAddressesTest, BareHostsGetTheRpcPortAndBadOnesAreNamed) {
  std::vector<std::string> servers = {"10.0.0.1", "srv.example:5647", "[::1]:4647", "[fe80::1]"};
  ASSERT_TRUE(NormalizeServerAddresses(servers).ok());
  EXPECT_EQ(servers, (std::vector<std::string>{"10.0.0.1:4647", "srv.example:5647", "[::1]:4647",
                                               "[fe80::1]:4647"}));
  for (const char* bad : {"", "h:0", "h:70000", "h:x", "::1", "[::1", ":4647"}) {
    std::vector<std::string> one = {bad};
    const absl::Status s = NormalizeServerAddresses(one);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("Invalid server address")) << bad;
  }
}

}  // namespace
}  // namespace drover::agent
