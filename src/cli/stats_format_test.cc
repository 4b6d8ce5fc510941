#include "cli/stats_format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

TEST(StatsFormatTest, TaskUsageShowsOnlyMeasuredFieldsInNameOrder) {
  const codec::Json stats = codec::Json::parse(R"({"Tasks": {"web": {"ResourceUsage": {
      "MemoryStats": {"RSS": 3145728, "Cache": 1024, "Measured": ["RSS", "Cache"]},
      "CpuStats": {"Percent": 12.5, "UserMode": 10, "SystemMode": 2.5, "ThrottledPeriods": 7,
                   "Measured": ["User Mode", "Percent", "Throttled Periods"]}}}}})");
  EXPECT_EQ(FormatTaskUsage(stats, "web"),
            "Memory Stats\n"
            "Cache    RSS\n"
            "1.0 KiB  3.0 MiB\n"
            "\n"
            "CPU Stats\n"
            "Percent  Throttled Periods  User Mode\n"
            "12.50%   7                  10.00%");
  EXPECT_EQ(FormatTaskUsage(stats, "db"), "");
}

TEST(StatsFormatTest, TaskUsageListsItsDevicesBySummary) {
  const codec::Json stats = codec::Json::parse(R"({"Tasks": {"train": {"ResourceUsage": {
      "DeviceStats": [{"Vendor": "nvidia", "Type": "gpu", "Name": "T4", "InstanceStats": {
        "GPU-1": {"Summary": {"IntNumeratorVal": 1200, "IntDenominatorVal": 16384, "Unit": "MiB"}},
        "GPU-0": {"Summary": {"FloatNumeratorVal": 35.5, "Unit": "%"}}}}]}}}})");
  EXPECT_EQ(FormatTaskUsage(stats, "train"),
            "Device Stats\n"
            "Device                Summary\n"
            "nvidia/gpu/T4[GPU-0]  35.50 %\n"
            "nvidia/gpu/T4[GPU-1]  1200 / 16384 MiB");
  EXPECT_EQ(FormatStatValue(codec::Json::parse(R"({"StringVal": "P0"})")), "P0");
  EXPECT_EQ(FormatStatValue(codec::Json::parse(R"({"BoolVal": true})")), "true");
  EXPECT_TRUE(DeviceStatRows(codec::Json::array()).empty());
}

TEST(StatsFormatTest, HostUtilizationIsUsedOfTotal) {
  const codec::Json host = codec::Json::parse(R"({"CPUTicksConsumed": 1234.9,
      "Memory": {"Used": 1073741824, "Total": 4294967296},
      "AllocDirStats": {"Used": 2147483648, "Size": 8589934592}})");
  EXPECT_EQ(FormatHostUtilization(host, 4000),
            "CPU            Memory           Disk\n"
            "1234/4000 MHz  1.0 GiB/4.0 GiB  2.0 GiB/8.0 GiB");
}

}  // namespace
}  // namespace drover::cli
