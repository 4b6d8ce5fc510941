#include "devices/nvidia/nvidia_plugin.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "devices/nvidia/fake_nvml.h"
#include "testing/test_util.h"

namespace drover::devices {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kT4[] = "Tesla T4";
constexpr char kA100[] = "NVIDIA A100-SXM4-40GB";
constexpr char kMig3g[] = "NVIDIA A100-SXM4-40GB MIG 3g.20gb";
constexpr char kMig1g[] = "NVIDIA A100-SXM4-40GB MIG 1g.5gb";

// Two identical T4s and an A100.
constexpr char kThreeGpus[] =
    "driver|550.54.15\n"
    "gpu|uuid=GPU-t4-0|name=Tesla T4|minor=0|bus=00000000:17:00.0\n"
    "gpu|uuid=GPU-t4-1|name=Tesla T4|minor=1|bus=00000000:65:00.0\n"
    "gpu|uuid=GPU-a100|name=NVIDIA A100-SXM4-40GB|minor=2|bus=00000000:CA:00.0|memory_mib=40960"
    "|bar1_mib=65536|default_power_mw=400000|power_limit_mw=400000|pcie_gen=4|cc=8.0"
    "|sm_clock=1410|mem_clock=1215\n";

// A T4, an A100 in MIG mode with three MIG devices in sparse slots, and a GPU in MIG mode
// with no MIG devices yet.
constexpr char kMigGpus[] =
    "gpu|uuid=GPU-plain|name=Tesla T4|minor=0|bus=00000000:17:00.0\n"
    "gpu|uuid=GPU-mig|name=NVIDIA A100-SXM4-40GB|minor=1|bus=00000000:CA:00.0|mig=1"
    "|memory_mib=40960|cc=8.0\n"
    "mig|parent=GPU-mig|slot=0|uuid=MIG-a|name=NVIDIA A100-SXM4-40GB MIG 3g.20gb"
    "|memory_mib=19968|used_mib=100\n"
    "mig|parent=GPU-mig|slot=3|uuid=MIG-b|name=NVIDIA A100-SXM4-40GB MIG 1g.5gb|memory_mib=4864"
    "|gi=9|ci=0\n"
    "mig|parent=GPU-mig|slot=5|uuid=MIG-c|name=NVIDIA A100-SXM4-40GB MIG 1g.5gb|memory_mib=4864"
    "|gi=13|ci=0\n"
    "gpu|uuid=GPU-empty-mig|name=NVIDIA A100-SXM4-40GB|minor=2|mig=1\n";

const model::NodeDeviceResource* FindGroup(const std::vector<model::NodeDeviceResource>& groups,
                                           const std::string& name) {
  for (const auto& group : groups) {
    if (group.name == name) {
      return &group;
    }
  }
  return nullptr;
}

std::vector<std::string> AllIds(const std::vector<model::NodeDeviceResource>& groups) {
  std::vector<std::string> ids;
  for (const auto& group : groups) {
    for (const auto& instance : group.instances) {
      ids.push_back(instance.id);
    }
  }
  return ids;
}

std::vector<std::string> Ids(const model::NodeDeviceResource& group) {
  return AllIds({group});
}

// "42 %" or, for a fraction, "1024/15360 MiB".
std::string Brief(const model::StatValue& v) {
  std::string out = std::to_string(v.int_numerator.value_or(-1));
  if (v.int_denominator) {
    out += "/" + std::to_string(*v.int_denominator);
  }
  return out + " " + v.unit;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class NvidiaPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.loaded()) << "cannot load " << DROVER_FAKE_NVML_PATH;
    fake_.SetScript(kThreeGpus);
  }

  NvidiaPluginConfig Config() const {
    NvidiaPluginConfig config;
    config.nvml_library = DROVER_FAKE_NVML_PATH;
    config.dev_dir = dev_.path().string();
    config.proc_dir = proc_.path().string();
    return config;
  }

  void Touch(const std::string& name) { std::ofstream(dev_.path() / name) << ""; }
  // The driver's capability file of a MIG GPU instance (ci < 0) or compute instance,
  // and (unless `node` is false) the /dev/nvidia-caps node it names.
  void CapFile(int gpu_minor, int gi, int ci, int device_minor, bool node = true) {
    if (node) {
      std::filesystem::create_directories(dev_.path() / "nvidia-caps");
      Touch("nvidia-caps/nvidia-cap" + std::to_string(device_minor));
    }
    std::filesystem::path dir = proc_.path() / "capabilities" /
                                ("gpu" + std::to_string(gpu_minor)) / "mig" /
                                ("gi" + std::to_string(gi));
    if (ci >= 0)
      dir /= "ci" + std::to_string(ci);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "access") << "DeviceFileMinor: " << device_minor
                                  << "\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
  }

  FakeNvml fake_{DROVER_FAKE_NVML_PATH};  // first: outlives the plugins a test makes
  testing::TempDir dev_;
  testing::TempDir proc_;
};

TEST_F(NvidiaPluginTest, FingerprintGroupsIdenticalGpus) {
  auto plugin = MakeNvidiaPlugin(Config());
  EXPECT_EQ(plugin->Name(), "nvidia");
  auto groups = plugin->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  const auto* t4 = FindGroup(*groups, kT4);
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->vendor, "nvidia");
  EXPECT_EQ(t4->type, "gpu");
  EXPECT_EQ(t4->IdString(), "nvidia/gpu/Tesla T4");
  EXPECT_THAT(Ids(*t4), ElementsAre("GPU-t4-0", "GPU-t4-1"));
  for (const auto& instance : t4->instances) {
    EXPECT_TRUE(instance.healthy);
    EXPECT_EQ(instance.health_description, "");
  }
  EXPECT_EQ(t4->instances[0].locality, model::DeviceLocality{"00000000:17:00.0"});
  EXPECT_EQ(t4->instances[1].locality, model::DeviceLocality{"00000000:65:00.0"});
  const auto* a100 = FindGroup(*groups, kA100);
  ASSERT_NE(a100, nullptr);
  EXPECT_THAT(Ids(*a100), ElementsAre("GPU-a100"));
}

TEST_F(NvidiaPluginTest, FingerprintAttributesHaveUnits) {
  auto groups = MakeNvidiaPlugin(Config())->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  const auto* t4 = FindGroup(*groups, kT4);
  ASSERT_NE(t4, nullptr);
  using model::Attribute;
  const std::map<std::string, Attribute> want_t4 = {
      {"memory", Attribute::Int(15360, "MiB")},
      {"driver_version", Attribute::String("550.54.15")},
      {"cuda_compute_capability", Attribute::String("7.5")},
      {"power", Attribute::Int(70, "W")},
      {"bar1", Attribute::Int(256, "MiB")},
      {"pci_bandwidth", Attribute::Int(985 * 16, "MB/s")},
      {"cores_clock", Attribute::Int(1590, "MHz")},
      {"memory_clock", Attribute::Int(5001, "MHz")},
  };
  EXPECT_EQ(t4->attributes, want_t4);
  const auto* a100 = FindGroup(*groups, kA100);
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->attributes.at("memory"), Attribute::Int(40960, "MiB"));
  EXPECT_EQ(a100->attributes.at("power"), Attribute::Int(400, "W"));
  EXPECT_EQ(a100->attributes.at("pci_bandwidth"), Attribute::Int(1969 * 16, "MB/s"));
  EXPECT_EQ(a100->attributes.at("cuda_compute_capability"), Attribute::String("8.0"));
}

TEST_F(NvidiaPluginTest, SameNameWithDifferentAttributesMakesTwoGroups) {
  fake_.SetScript(
      "gpu|uuid=GPU-16|name=Tesla V100|memory_mib=16384\n"
      "gpu|uuid=GPU-32|name=Tesla V100|memory_mib=32768\n"
      // The power limit in force is not an attribute: it does not split the group.
      "gpu|uuid=GPU-16b|name=Tesla V100|memory_mib=16384|power_limit_mw=50000\n");
  auto groups = MakeNvidiaPlugin(Config())->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_THAT(Ids((*groups)[0]), ElementsAre("GPU-16", "GPU-16b"));
  EXPECT_THAT(Ids((*groups)[1]), ElementsAre("GPU-32"));
  EXPECT_EQ((*groups)[1].attributes.at("memory"), model::Attribute::Int(32768, "MiB"));
}

TEST_F(NvidiaPluginTest, MigModeReportsMigDevicesInsteadOfTheGpu) {
  fake_.SetScript(kMigGpus);
  auto groups = MakeNvidiaPlugin(Config())->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  // Neither GPU in MIG mode is offered whole; the one without MIG devices offers nothing.
  EXPECT_THAT(AllIds(*groups), UnorderedElementsAre("GPU-plain", "MIG-a", "MIG-b", "MIG-c"));
  const auto* big = FindGroup(*groups, kMig3g);
  ASSERT_NE(big, nullptr);
  EXPECT_THAT(Ids(*big), ElementsAre("MIG-a"));
  const auto* small = FindGroup(*groups, kMig1g);
  ASSERT_NE(small, nullptr);
  EXPECT_THAT(Ids(*small), ElementsAre("MIG-b", "MIG-c"));
  EXPECT_TRUE(small->instances[0].healthy);
  // Locality is the parent GPU's.
  EXPECT_EQ(small->instances[0].locality, model::DeviceLocality{"00000000:CA:00.0"});
  using model::Attribute;
  const std::map<std::string, Attribute> want = {
      {"memory", Attribute::Int(4864, "MiB")},
      {"driver_version", Attribute::String("550.54.15")},
      {"cuda_compute_capability", Attribute::String("8.0")},
  };
  EXPECT_EQ(small->attributes, want);
}

TEST_F(NvidiaPluginTest, IgnoredGpuIdsAreNotReported) {
  auto config = Config();
  config.ignored_gpu_ids = {"GPU-t4-1", "GPU-a100"};
  auto groups = MakeNvidiaPlugin(config)->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_THAT(AllIds(*groups), ElementsAre("GPU-t4-0"));

  fake_.SetScript(kMigGpus);
  config.ignored_gpu_ids = {"MIG-b"};
  groups = MakeNvidiaPlugin(config)->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_THAT(AllIds(*groups), UnorderedElementsAre("GPU-plain", "MIG-a", "MIG-c"));
  // Ignoring a GPU in MIG mode ignores its MIG devices.
  config.ignored_gpu_ids = {"GPU-mig"};
  groups = MakeNvidiaPlugin(config)->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_THAT(AllIds(*groups), ElementsAre("GPU-plain"));
}

TEST_F(NvidiaPluginTest, DisabledReportsNothingAndNeverLoadsNvml) {
  auto config = Config();
  config.enabled = false;
  const int inits = fake_.inits();
  auto plugin = MakeNvidiaPlugin(config);
  auto groups = plugin->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_THAT(*groups, IsEmpty());
  auto stats = plugin->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(*stats, IsEmpty());
  EXPECT_TRUE(absl::IsNotFound(plugin->Reserve({"GPU-t4-0"}).status()));
  EXPECT_EQ(fake_.inits(), inits);
}

TEST_F(NvidiaPluginTest, MissingLibraryIsFailedPrecondition) {
  auto config = Config();
  config.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto plugin = MakeNvidiaPlugin(config);
  auto groups = plugin->Fingerprint();
  EXPECT_TRUE(absl::IsFailedPrecondition(groups.status())) << groups.status();
  EXPECT_THAT(groups.status().message(), HasSubstr("'/nonexistent/libnvidia-ml.so.1'"));
  EXPECT_TRUE(absl::IsFailedPrecondition(plugin->Stats().status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(plugin->Reserve({"GPU-t4-0"}).status()));
}

TEST_F(NvidiaPluginTest, LibraryWithoutNvmlSymbolsIsFailedPrecondition) {
  auto config = Config();
  config.nvml_library = "libm.so.6";
  auto groups = MakeNvidiaPlugin(config)->Fingerprint();
  EXPECT_TRUE(absl::IsFailedPrecondition(groups.status())) << groups.status();
  EXPECT_THAT(groups.status().message(), HasSubstr("nvmlInit_v2"));
}

TEST_F(NvidiaPluginTest, InitFailureIsFailedPreconditionAndRetried) {
  fake_.SetScript(std::string(kThreeGpus) + "init_error|9\n");
  auto plugin = MakeNvidiaPlugin(Config());
  auto groups = plugin->Fingerprint();
  EXPECT_TRUE(absl::IsFailedPrecondition(groups.status())) << groups.status();
  EXPECT_THAT(groups.status().message(), HasSubstr(DROVER_FAKE_NVML_PATH));
  EXPECT_THAT(groups.status().message(), HasSubstr("Driver Not Loaded"));
  // Once the driver is back, the next call initializes.
  fake_.SetScript(kThreeGpus);
  groups = plugin->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_EQ(groups->size(), 2u);
}

TEST_F(NvidiaPluginTest, FailingGpuIsUnhealthyInItsModelsGroup) {
  fake_.SetScript(
      "gpu|uuid=GPU-lost|name=Tesla T4|minor=0|lost=1\n"
      "gpu|uuid=GPU-ok|name=Tesla T4|minor=1\n"
      "gpu|uuid=GPU-lost-alone|name=Tesla P4|minor=2|lost=1\n");
  auto plugin = MakeNvidiaPlugin(Config());
  auto groups = plugin->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  const auto* t4 = FindGroup(*groups, kT4);
  ASSERT_NE(t4, nullptr);
  ASSERT_THAT(Ids(*t4), ElementsAre("GPU-ok", "GPU-lost"));
  EXPECT_TRUE(t4->instances[0].healthy);
  EXPECT_FALSE(t4->instances[1].healthy);
  EXPECT_THAT(t4->instances[1].health_description, HasSubstr("'GPU-lost'"));
  EXPECT_THAT(t4->instances[1].health_description, HasSubstr("GPU is lost"));
  EXPECT_EQ(t4->attributes.at("memory"), model::Attribute::Int(15360, "MiB"));
  const auto* p4 = FindGroup(*groups, "Tesla P4");
  ASSERT_NE(p4, nullptr);
  EXPECT_FALSE(p4->instances[0].healthy);
  EXPECT_EQ(p4->instances[0].locality, std::nullopt);

  // No stats for the failing GPUs; reserving one fails with the reason.
  auto stats = plugin->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].instance_stats.size(), 1u);
  EXPECT_TRUE((*stats)[0].instance_stats.contains("GPU-ok"));
  auto reservation = plugin->Reserve({"GPU-lost"});
  EXPECT_FALSE(reservation.ok());
  EXPECT_THAT(reservation.status().message(), HasSubstr("failed to query GPU 'GPU-lost'"));
}

TEST_F(NvidiaPluginTest, StatsReportMemoryUtilizationTemperatureAndPower) {
  fake_.SetScript(
      "gpu|uuid=GPU-0|name=Tesla T4|used_mib=1024|util_gpu=42|util_mem=13|temp=55"
      "|power_mw=35500|power_limit_mw=60000\n");
  const int64_t before = NowNs();
  auto stats = MakeNvidiaPlugin(Config())->Stats();
  const int64_t after = NowNs();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 1u);
  const model::DeviceGroupStats& group = (*stats)[0];
  EXPECT_EQ(group.vendor, "nvidia");
  EXPECT_EQ(group.type, "gpu");
  EXPECT_EQ(group.name, kT4);
  ASSERT_TRUE(group.instance_stats.contains("GPU-0"));
  const model::DeviceStats& s = group.instance_stats.at("GPU-0");
  EXPECT_GE(s.timestamp, before);
  EXPECT_LE(s.timestamp, after);
  EXPECT_EQ(Brief(s.summary), "1024/15360 MiB");
  EXPECT_EQ(s.summary.desc, "UsedMemory");
  std::map<std::string, std::string> values;
  for (const auto& [key, value] : s.stats.attributes) {
    values[key] = Brief(value);
    EXPECT_FALSE(value.desc.empty()) << key;
  }
  EXPECT_EQ(values, (std::map<std::string, std::string>{{"GPU utilization", "42 %"},
                                                        {"Memory utilization", "13 %"},
                                                        {"Memory used", "1024/15360 MiB"},
                                                        {"Temperature", "55 C"},
                                                        {"Power usage", "35/60 W"}}));
}

TEST_F(NvidiaPluginTest, StatsLeaveOutUnsupportedValues) {
  fake_.SetScript(std::string(kMigGpus) + "gpu|uuid=GPU-cold|name=Tesla P4|no_temp=1\n");
  auto stats = MakeNvidiaPlugin(Config())->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::map<std::string, model::DeviceStats> all;
  for (const auto& group : *stats) {
    for (const auto& [id, s] : group.instance_stats) {
      all[id] = s;
    }
  }
  ASSERT_EQ(all.size(), 5u);
  // MIG devices report memory only.
  EXPECT_EQ(Brief(all["MIG-a"].summary), "100/19968 MiB");
  std::vector<std::string> keys;
  for (const auto& [key, value] : all["MIG-a"].stats.attributes) {
    keys.push_back(key);
  }
  EXPECT_THAT(keys, ElementsAre("Memory used"));
  EXPECT_FALSE(all["GPU-cold"].stats.attributes.contains("Temperature"));
  EXPECT_TRUE(all["GPU-cold"].stats.attributes.contains("GPU utilization"));
}

TEST_F(NvidiaPluginTest, ReserveExposesEnvAndDeviceNodes) {
  Touch("nvidia0");
  Touch("nvidia1");
  Touch("nvidiactl");
  Touch("nvidia-uvm");
  auto plugin = MakeNvidiaPlugin(Config());
  auto reservation = plugin->Reserve({"GPU-t4-1", "GPU-t4-0"});
  ASSERT_TRUE(reservation.ok()) << reservation.status();
  const std::string dev = dev_.path().string();
  EXPECT_EQ(reservation->envs,
            (std::map<std::string, std::string>{{"NVIDIA_VISIBLE_DEVICES", "GPU-t4-1,GPU-t4-0"}}));
  EXPECT_THAT(reservation->mounts, IsEmpty());
  EXPECT_THAT(reservation->devices,
              ElementsAre(DeviceSpec{"/dev/nvidia1", dev + "/nvidia1", "rwm"},
                          DeviceSpec{"/dev/nvidia0", dev + "/nvidia0", "rwm"},
                          DeviceSpec{"/dev/nvidiactl", dev + "/nvidiactl", "rwm"},
                          DeviceSpec{"/dev/nvidia-uvm", dev + "/nvidia-uvm", "rwm"}));
  // Idempotent: every start of the task asks again.
  auto again = plugin->Reserve({"GPU-t4-1", "GPU-t4-0"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *reservation);
}

TEST_F(NvidiaPluginTest, ReserveMigDevicesUsesTheParentGpuNodeAndTheirCapabilityNodes) {
  fake_.SetScript(kMigGpus);
  Touch("nvidiactl");
  Touch("nvidia-uvm-tools");
  Touch("nvidia-modeset");
  // GPU minor 1; MIG-b is GPU instance 9, MIG-c 13, each with compute instance 0.
  CapFile(1, 9, -1, 84);
  CapFile(1, 9, 0, 85);
  CapFile(1, 13, -1, 120);
  CapFile(1, 13, 0, 121);
  auto reservation = MakeNvidiaPlugin(Config())->Reserve({"MIG-c", "MIG-b"});
  ASSERT_TRUE(reservation.ok()) << reservation.status();
  const std::string dev = dev_.path().string();
  EXPECT_EQ(reservation->envs.at("NVIDIA_VISIBLE_DEVICES"), "MIG-c,MIG-b");
  auto cap = [&](int n) {
    const std::string node = "nvidia-caps/nvidia-cap" + std::to_string(n);
    return DeviceSpec{"/dev/" + node, dev + "/" + node, "r"};
  };
  EXPECT_THAT(reservation->devices,
              ElementsAre(DeviceSpec{"/dev/nvidia1", dev + "/nvidia1", "rwm"}, cap(120), cap(121),
                          cap(84), cap(85), DeviceSpec{"/dev/nvidiactl", dev + "/nvidiactl", "rwm"},
                          DeviceSpec{"/dev/nvidia-uvm-tools", dev + "/nvidia-uvm-tools", "rwm"},
                          DeviceSpec{"/dev/nvidia-modeset", dev + "/nvidia-modeset", "rwm"}));
}

// Without its capability nodes a MIG device cannot be used: the reservation fails (and
// the task does not start) rather than starting a task that cannot reach its GPU.
TEST_F(NvidiaPluginTest, ReserveMigDeviceWithoutCapabilityFilesOrNodesFails) {
  fake_.SetScript(kMigGpus);
  CapFile(1, 9, -1, 84);  // the GPU instance's, but not the compute instance's
  auto plugin = MakeNvidiaPlugin(Config());
  auto reservation = plugin->Reserve({"MIG-b"});
  ASSERT_FALSE(reservation.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(reservation.status())) << reservation.status();
  EXPECT_THAT(
      std::string(reservation.status().message()),
      ::testing::HasSubstr("failed to find the capability nodes of 'MIG-b': cannot read " +
                           (proc_.path() / "capabilities/gpu1/mig/gi9/ci0/access").string() +
                           ": No such file or directory"));
  // The file is there, but the driver has not created the node it names.
  CapFile(1, 9, 0, 85, /*node=*/false);
  reservation = plugin->Reserve({"MIG-b"});
  ASSERT_FALSE(reservation.ok());
  EXPECT_THAT(std::string(reservation.status().message()),
              ::testing::HasSubstr("capability node " +
                                   (dev_.path() / "nvidia-caps/nvidia-cap85").string() +
                                   " does not exist"));
}

// A non-root agent may not read a MIG device's memory: the device is still healthy.
TEST_F(NvidiaPluginTest, MigMemoryWithoutPermissionLeavesTheAttributeOut) {
  fake_.SetScript(
      "gpu|uuid=GPU-mig|name=NVIDIA A100-SXM4-40GB|minor=1|mig=1\n"
      "mig|parent=GPU-mig|slot=0|uuid=MIG-a|name=NVIDIA A100-SXM4-40GB MIG 1g.5gb|mem_denied=1\n");
  auto groups = MakeNvidiaPlugin(Config())->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_TRUE((*groups)[0].instances[0].healthy) << (*groups)[0].instances[0].health_description;
  EXPECT_FALSE((*groups)[0].attributes.contains("memory"));
}

TEST_F(NvidiaPluginTest, ReserveRejectsEmptyUnknownAndIgnoredIds) {
  auto config = Config();
  config.ignored_gpu_ids = {"GPU-a100"};
  auto plugin = MakeNvidiaPlugin(config);
  EXPECT_TRUE(absl::IsInvalidArgument(plugin->Reserve({}).status()));
  auto unknown = plugin->Reserve({"GPU-t4-0", "GPU-nope"});
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  EXPECT_THAT(unknown.status().message(), HasSubstr("'GPU-nope'"));
  auto ignored = plugin->Reserve({"GPU-a100"});
  EXPECT_TRUE(absl::IsNotFound(ignored.status())) << ignored.status();
}

TEST_F(NvidiaPluginTest, ResetShutsNvmlDownAndTheNextCallReinitializes) {
  const int inits = fake_.inits();
  const int shutdowns = fake_.shutdowns();
  auto plugin = MakeNvidiaPlugin(Config());
  plugin->Reset();  // before any use: nothing to close
  EXPECT_EQ(fake_.shutdowns(), shutdowns);
  ASSERT_TRUE(plugin->Fingerprint().ok());
  ASSERT_TRUE(plugin->Stats().ok());
  EXPECT_EQ(fake_.inits(), inits + 1);  // initialized once, lazily
  EXPECT_EQ(fake_.refs(), 1);

  plugin->Reset();
  EXPECT_EQ(fake_.shutdowns(), shutdowns + 1);
  EXPECT_EQ(fake_.refs(), 0);

  fake_.SetScript("gpu|uuid=GPU-new|name=Tesla T4\n");
  auto groups = plugin->Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_THAT(AllIds(*groups), ElementsAre("GPU-new"));
  EXPECT_EQ(fake_.inits(), inits + 2);
  plugin.reset();
  EXPECT_EQ(fake_.refs(), 0);  // the plugin's destruction shuts NVML down
}

TEST_F(NvidiaPluginTest, ConcurrentCallsAndResetsAreSafe) {
  auto plugin = MakeNvidiaPlugin(Config());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        switch ((t + i) % 4) {
          case 0:
            failures += plugin->Fingerprint().ok() ? 0 : 1;
            break;
          case 1:
            failures += plugin->Stats().ok() ? 0 : 1;
            break;
          case 2:
            failures += plugin->Reserve({"GPU-a100"}).ok() ? 0 : 1;
            break;
          default:
            plugin->Reset();
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  plugin.reset();
  EXPECT_EQ(fake_.refs(), 0);
}

// Needs an NVIDIA driver: runs against the host's real NVML, skipped elsewhere.
TEST(NvidiaPluginRealTest, GPU_RealNvmlFingerprintAndStats) {
  auto plugin = MakeNvidiaPlugin(NvidiaPluginConfig{});
  auto groups = plugin->Fingerprint();
  if (absl::IsFailedPrecondition(groups.status())) {
    GTEST_SKIP() << "no usable NVML on this host: " << groups.status();
  }
  ASSERT_TRUE(groups.ok()) << groups.status();
  if (groups->empty()) {
    GTEST_SKIP() << "NVML loaded but reports no GPUs";
  }
  std::set<std::string> healthy;
  std::set<std::string> without_memory;  // MIG devices a non-root agent may not read
  for (const auto& group : *groups) {
    EXPECT_EQ(group.vendor, "nvidia");
    EXPECT_EQ(group.type, "gpu");
    EXPECT_FALSE(group.name.empty());
    EXPECT_FALSE(group.instances.empty());
    ASSERT_TRUE(group.attributes.contains("driver_version"));
    EXPECT_FALSE(group.attributes.at("driver_version").string_val->empty());
    for (const auto& instance : group.instances) {
      EXPECT_TRUE(instance.id.starts_with("GPU-") || instance.id.starts_with("MIG-"))
          << instance.id;
      EXPECT_TRUE(instance.locality.has_value()) << instance.id;
      if (instance.healthy) {
        healthy.insert(instance.id);
        if (!group.attributes.contains("memory"))
          without_memory.insert(instance.id);
      } else {
        std::cerr << instance.id << " unhealthy: " << instance.health_description << "\n";
      }
    }
    if (group.attributes.contains("memory")) {
      EXPECT_GT(group.attributes.at("memory").int_val.value_or(0), 0);
      EXPECT_EQ(group.attributes.at("memory").unit, "MiB");
    }
    for (const auto& [key, value] : group.attributes) {
      std::cerr << group.IdString() << " " << key << "=" << value.ToString() << "\n";
    }
  }
  auto stats = plugin->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::set<std::string> sampled;
  for (const auto& group : *stats) {
    for (const auto& [id, s] : group.instance_stats) {
      sampled.insert(id);
      ASSERT_TRUE(s.summary.int_denominator.has_value());
      EXPECT_GT(*s.summary.int_denominator, 0);
      EXPECT_LE(*s.summary.int_numerator, *s.summary.int_denominator);
      EXPECT_GT(s.timestamp, 0);
    }
  }
  for (const auto& id : healthy) {
    if (!without_memory.contains(id)) {
      EXPECT_TRUE(sampled.contains(id)) << "no stats for healthy " << id;
    }
  }
  // What a task would get, for every instance (whole GPUs and MIG devices): every node
  // it names exists on this host.
  for (const std::string& id : healthy) {
    auto reservation = plugin->Reserve({id});
    ASSERT_TRUE(reservation.ok()) << id << ": " << reservation.status();
    EXPECT_EQ(reservation->envs.at("NVIDIA_VISIBLE_DEVICES"), id);
    EXPECT_FALSE(reservation->devices.empty());
    for (const DeviceSpec& d : reservation->devices) {
      EXPECT_TRUE(std::filesystem::exists(d.host_path)) << d.host_path;
      std::cerr << "reserve " << id << ": " << d.task_path << " (" << d.permissions << ")\n";
    }
  }
  plugin->Reset();
  EXPECT_TRUE(plugin->Fingerprint().ok());
}

}  // namespace
}  // namespace drover::devices
