// ExternalPlugin against real processes: drover-test-device-plugin (misbehaving on
// request) and the example bash plugin. Every failure must name what happened, leave
// no child process or zombie behind, and let the next call start a fresh plugin. The
// process lifecycle (Reset, destruction, reaping) is in external_plugin_process_test.cc.
#include "devices/external/external_plugin.h"

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "devices/external/external_plugin_test_util.h"
#include "testing/test_util.h"

namespace drover::devices {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::SizeIs;

TEST_F(ExternalPluginTest, SendsConfigureWithTheConfigFirst) {
  auto plugin = Make();
  EXPECT_EQ(plugin->Name(), "fpga");
  EXPECT_TRUE(LogLines().empty()) << "the process starts lazily";
  auto devices = plugin->Fingerprint();
  ASSERT_TRUE(devices.ok()) << devices.status();
  const auto lines = LogLines();
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr("start "));
  EXPECT_EQ(lines[1],
            R"(configure {"config":{"model":"Stratix 10","verbose":true},"protocol_version":1})");
  EXPECT_EQ(lines[2], "fingerprint {}");
  // The plugin named the group after the configured model.
  EXPECT_EQ(devices->at(0).name, "Stratix 10");
}

TEST_F(ExternalPluginTest, FingerprintDecodesDevicesAttributesAndUnits) {
  auto plugin = Make();
  auto devices = plugin->Fingerprint();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_THAT(*devices, SizeIs(1));
  const model::NodeDeviceResource& group = devices->at(0);
  EXPECT_EQ(group.IdString(), "acme/fpga/Stratix 10");
  EXPECT_EQ(group.attributes.at("memory"), model::Attribute::Int(16, "GiB"));
  EXPECT_EQ(group.attributes.at("cores"), model::Attribute::Int(2560));
  EXPECT_EQ(group.attributes.at("clock"), model::Attribute::Float(1.5, "GHz"));
  EXPECT_EQ(group.attributes.at("ecc"), model::Attribute::Bool(true));
  EXPECT_EQ(group.attributes.at("family"), model::Attribute::String("arria"));
  ASSERT_THAT(group.instances, SizeIs(2));
  EXPECT_EQ(group.instances[0].id, "fpga-0");
  EXPECT_TRUE(group.instances[0].healthy);
  ASSERT_TRUE(group.instances[0].locality.has_value());
  EXPECT_EQ(group.instances[0].locality->pci_bus_id, "0000:3b:00.0");
  EXPECT_FALSE(group.instances[1].healthy);
  EXPECT_EQ(group.instances[1].health_description, "overheated");
  EXPECT_FALSE(group.instances[1].locality.has_value());
  // One process serves every call.
  ASSERT_TRUE(plugin->Fingerprint().ok());
  EXPECT_EQ(Starts(), 1);
  EXPECT_THAT(Children(), SizeIs(1));
}

TEST_F(ExternalPluginTest, ReserveReturnsEnvsMountsAndDevices) {
  auto plugin = Make();
  auto res = plugin->Reserve({"fpga-0", "fpga-1"});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_THAT(res->envs, ElementsAre(Pair("FPGA_VISIBLE_DEVICES", "fpga-0,fpga-1")));
  EXPECT_THAT(res->mounts, ElementsAre(Mount{"/opt/fpga", "/usr/share/fpga", true}));
  EXPECT_THAT(res->devices, ElementsAre(DeviceSpec{"/dev/fpga0", "/dev/fpga0", "rw"},
                                        DeviceSpec{"/dev/fpga1", "/dev/fpga1", "rw"}));
  EXPECT_EQ(LogLines().back(), R"(reserve {"ids":["fpga-0","fpga-1"]})");
}

TEST_F(ExternalPluginTest, ReserveOfNoIdsFailsWithoutAskingThePlugin) {
  auto plugin = Make();
  auto res = plugin->Reserve({});
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(LogLines().empty());
}

TEST_F(ExternalPluginTest, PluginErrorsKeepTheirCodeAndTheProcess) {
  auto plugin = Make();
  auto res = plugin->Reserve({"fpga-9"});
  EXPECT_EQ(res.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(res.status().message(),
            "device plugin 'fpga' failed 'reserve': unknown device 'fpga-9'");
  ASSERT_TRUE(plugin->Reserve({"fpga-1"}).ok());
  EXPECT_EQ(Starts(), 1);
}

TEST_F(ExternalPluginTest, StatsDecodesIntsFloatsNestingAndTimestamps) {
  auto plugin = Make();
  const auto before = std::chrono::system_clock::now().time_since_epoch();
  auto stats = plugin->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_THAT(*stats, SizeIs(1));
  const model::DeviceGroupStats& group = stats->at(0);
  EXPECT_EQ(group.vendor + "/" + group.type + "/" + group.name, "acme/fpga/Stratix 10");
  ASSERT_THAT(group.instance_stats, SizeIs(2));
  const model::DeviceStats& s0 = group.instance_stats.at("fpga-0");
  EXPECT_EQ(s0.summary.int_numerator, 512);
  EXPECT_EQ(s0.summary.int_denominator, 1024);
  EXPECT_EQ(s0.summary.unit, "MiB");
  EXPECT_EQ(s0.summary.desc, "Memory");
  EXPECT_EQ(s0.timestamp, 1700000000000000000);
  EXPECT_EQ(s0.stats.attributes.at("temperature").float_numerator, 61.5);
  EXPECT_EQ(s0.stats.attributes.at("temperature").unit, "C");
  EXPECT_EQ(s0.stats.attributes.at("state").string_val, "busy");
  EXPECT_EQ(s0.stats.nested.at("power").attributes.at("draw").int_numerator, 25);
  const model::DeviceStats& s1 = group.instance_stats.at("fpga-1");
  EXPECT_EQ(s1.summary.float_numerator, 0.25);
  EXPECT_FALSE(s1.summary.int_numerator.has_value());
  // No timestamp from the plugin: stamped on arrival.
  EXPECT_GE(s1.timestamp, std::chrono::duration_cast<std::chrono::nanoseconds>(before).count());
}

TEST_F(ExternalPluginTest, CrashIsReportedWithItsStatusAndTheNextCallRestarts) {
  auto plugin = Make({"--fail=crash", "--fail-method=stats"});
  auto stats = plugin->Stats();
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(stats.status().message(), "device plugin 'fpga' exited (status 3) during 'stats'");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, CrashDuringConfigureIsReported) {
  auto plugin = Make({"--fail=crash", "--fail-at=1"});
  auto devices = plugin->Fingerprint();
  EXPECT_EQ(devices.status().message(),
            "device plugin 'fpga' exited (status 3) during 'configure'");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, RejectedConfigurationIsReportedAndRetried) {
  auto plugin = Make({"--fail=error", "--fail-method=configure"});
  auto devices = plugin->Fingerprint();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(devices.status().message(), "device plugin 'fpga' rejected its configuration: boom");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, HangIsCutOffAtTheRequestTimeout) {
  auto plugin = Make({"--fail=hang", "--fail-method=stats"}, std::chrono::milliseconds(300));
  ASSERT_TRUE(plugin->Fingerprint().ok());
  const auto start = std::chrono::steady_clock::now();
  auto stats = plugin->Stats();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(stats.status().message(), "device plugin 'fpga' did not answer 'stats' within 300ms");
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, MalformedJsonKillsTheProcess) {
  auto plugin = Make({"--fail=malformed", "--fail-method=fingerprint"});
  auto devices = plugin->Fingerprint();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(devices.status().message(),
              HasSubstr("device plugin 'fpga' sent malformed JSON for 'fingerprint': "));
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, OverlongLineIsMalformed) {
  auto plugin = Make({"--fail=long-line", "--fail-method=stats"});
  auto stats = plugin->Stats();
  EXPECT_EQ(stats.status().message(),
            "device plugin 'fpga' sent malformed JSON for 'stats': a line longer than 16 MiB");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, ResponseWithAnotherIdKillsTheProcess) {
  auto plugin = Make({"--fail=wrong-id", "--fail-method=stats"});
  auto stats = plugin->Stats();
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(stats.status().message(),
            "device plugin 'fpga' sent malformed JSON for 'stats': response id 102 does not "
            "match request id 2");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, InvalidDeviceDataNamesTheJsonPath) {
  auto plugin = Make({"--fail=invalid", "--fail-method=fingerprint"});
  auto devices = plugin->Fingerprint();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(devices.status().message(),
            "device plugin 'fpga' sent an invalid 'fingerprint' result: "
            "devices[0].instances[1].id: missing");
  // Well-formed answers with bad content do not cost a restart.
  ASSERT_TRUE(plugin->Fingerprint().ok());
  EXPECT_EQ(Starts(), 1);
}

TEST_F(ExternalPluginTest, MissingExecutableIsNotFound) {
  ExternalPluginConfig config;
  config.name = "ghost";
  config.command = (dir_.path() / "no-such-plugin").string();
  auto devices = MakeExternalPlugin(config)->Fingerprint();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(devices.status().message(), HasSubstr("device plugin 'ghost' could not be started"));
}

TEST_F(ExternalPluginTest, InvalidConfigFailsWithoutStarting) {
  ExternalPluginConfig config;
  config.name = "fpga";
  config.command = DROVER_TEST_DEVICE_PLUGIN;
  config.args = {"--log=" + LogPath()};
  config.config_json = "[1, 2]";
  auto devices = MakeExternalPlugin(config)->Fingerprint();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(devices.status().message(), HasSubstr("device plugin 'fpga' has an invalid config"));
  EXPECT_TRUE(LogLines().empty());
}

TEST_F(ExternalPluginTest, DeeplyNestedReplyIsMalformed) {
  // 100000 levels: copying or dumping that recursively would overflow the stack.
  auto plugin = Make({"--fail=deep", "--fail-method=stats"});
  auto stats = plugin->Stats();
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(stats.status().message(),
            "device plugin 'fpga' sent malformed JSON for 'stats': nesting deeper than 64");
  ExpectRecovers(*plugin);
}

TEST_F(ExternalPluginTest, ConcurrentCallsAreSerialized) {
  auto plugin = Make();
  auto worker = [&](bool reserve) {
    for (int i = 0; i < 20; ++i) {
      const bool ok = reserve ? plugin->Reserve({"fpga-0"}).ok() : plugin->Stats().ok();
      if (!ok)
        return false;
    }
    return true;
  };
  auto a = std::async(std::launch::async, worker, true);
  auto b = std::async(std::launch::async, worker, false);
  EXPECT_TRUE(a.get());
  EXPECT_TRUE(b.get());
  EXPECT_EQ(Starts(), 1);
  EXPECT_THAT(LogLines(), SizeIs(2 + 40));
}

// The documented example (docs/device-plugin-protocol.md), a bash script.
TEST_F(ExternalPluginTest, ExampleShellScriptPluginWorks) {
  ExternalPluginConfig config;
  config.name = "fake-fpga";
  config.command = "/bin/bash";
  config.args = {DROVER_FAKE_FPGA_SCRIPT};
  config.config_json = R"({"count": 3})";
  auto plugin = MakeExternalPlugin(config);
  auto devices = plugin->Fingerprint();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_THAT(*devices, SizeIs(1));
  EXPECT_EQ(devices->at(0).IdString(), "acme/fpga/Fake FPGA");
  EXPECT_THAT(devices->at(0).instances, SizeIs(3));
  EXPECT_EQ(devices->at(0).attributes.at("memory"), model::Attribute::Int(8, "GiB"));
  EXPECT_EQ(devices->at(0).attributes.at("clock"), model::Attribute::Int(300, "MHz"));
  auto res = plugin->Reserve({"fpga-0", "fpga-2"});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->envs.at("FPGA_VISIBLE_DEVICES"), "fpga-0,fpga-2");
  EXPECT_EQ(plugin->Reserve({"fpga-5"}).status().code(), absl::StatusCode::kNotFound);
  auto stats = plugin->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_THAT(*stats, SizeIs(1));
  EXPECT_THAT(stats->at(0).instance_stats, SizeIs(3));
  EXPECT_EQ(stats->at(0).instance_stats.at("fpga-1").summary.int_denominator, 100);
}

}  // namespace
}  // namespace drover::devices
