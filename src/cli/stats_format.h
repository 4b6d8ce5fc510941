// Resource usage as `drover alloc status -stats` and `drover node status` show it, from
// the JSON of GET /v1/client/allocation/:id/stats and GET /v1/client/stats.
#pragma once

#include <string>
#include <vector>

#include "codec/json.h"

namespace drover::cli {

// "Memory Stats" and "CPU Stats" tables of one task's ResourceUsage: the measured
// fields only, as Nomad shows them. Empty when the task has no usage.
std::string FormatTaskUsage(const codec::Json& alloc_stats, const std::string& task);

// A device statistic as Nomad prints it: "1200 / 16384 MiB", "35 %", "P0".
std::string FormatStatValue(const codec::Json& value);

// One row per instance of a DeviceStats array: "nvidia/gpu/T4[GPU-0]|<summary>",
// sorted; empty when there are none.
std::vector<std::string> DeviceStatRows(const codec::Json& device_stats);

// "CPU / Memory / Disk" used of total for the node (Host Resource Utilization).
// `total_mhz` is the node's cpu.totalcompute.
std::string FormatHostUtilization(const codec::Json& host_stats, uint64_t total_mhz);

// Per-CPU, memory and disk details (node status -stats).
std::string FormatHostStats(const codec::Json& host_stats);

}  // namespace drover::cli
