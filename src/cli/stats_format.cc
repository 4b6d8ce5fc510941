#include "cli/stats_format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

double JsonDouble(const codec::Json& j, const char* key) {
  const codec::Json* v = JsonMember(j, key);
  return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
}

std::string Percent(double v) {
  return absl::StrFormat("%.2f%%", v);
}

// A table of the measured fields, in name order, each formatted by `cell`.
template <typename Cell>
std::string MeasuredTable(const codec::Json& stats, const std::map<std::string, Cell>& cells) {
  std::vector<std::string> measured = JsonStrings(stats, "Measured");
  std::sort(measured.begin(), measured.end());
  std::string header;
  std::string row;
  for (const std::string& name : measured) {
    auto it = cells.find(name);
    if (it == cells.end())
      continue;
    absl::StrAppend(&header, header.empty() ? "" : "|", name);
    absl::StrAppend(&row, row.empty() ? "" : "|", it->second(stats));
  }
  if (header.empty())
    return "";
  return FormatList({header, row});
}

using CellFn = std::string (*)(const codec::Json&);

}  // namespace

std::string FormatStatValue(const codec::Json& value) {
  auto number = [&](const char* int_key, const char* float_key) -> std::string {
    if (const codec::Json* i = JsonMember(value, int_key); i != nullptr && i->is_number())
      return absl::StrCat(i->get<int64_t>());
    if (const codec::Json* f = JsonMember(value, float_key); f != nullptr && f->is_number())
      return absl::StrFormat("%.2f", f->get<double>());
    return "";
  };
  std::string out = number("IntNumeratorVal", "FloatNumeratorVal");
  if (out.empty()) {
    if (const codec::Json* b = JsonMember(value, "BoolVal"); b != nullptr && b->is_boolean())
      out = b->get<bool>() ? "true" : "false";
    else
      out = JsonString(value, "StringVal");
  } else if (std::string den = number("IntDenominatorVal", "FloatDenominatorVal"); !den.empty()) {
    absl::StrAppend(&out, " / ", den);
  }
  if (std::string unit = JsonString(value, "Unit"); !unit.empty() && !out.empty())
    absl::StrAppend(&out, " ", unit);
  return out;
}

std::vector<std::string> DeviceStatRows(const codec::Json& device_stats) {
  std::vector<std::string> rows;
  if (!device_stats.is_array())
    return rows;
  for (const codec::Json& g : device_stats) {
    const codec::Json* instances = JsonMember(g, "InstanceStats");
    if (instances == nullptr || !instances->is_object())
      continue;
    const std::string group = absl::StrCat(JsonString(g, "Vendor"), "/", JsonString(g, "Type"), "/",
                                           JsonString(g, "Name"));
    for (auto it = instances->begin(); it != instances->end(); ++it) {
      const codec::Json* summary = JsonMember(*it, "Summary");
      rows.push_back(absl::StrCat(group, "[", it.key(), "]|",
                                  summary == nullptr ? "" : FormatStatValue(*summary)));
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::string FormatTaskUsage(const codec::Json& alloc_stats, const std::string& task) {
  const codec::Json* tasks = JsonMember(alloc_stats, "Tasks");
  const codec::Json* t = tasks != nullptr ? JsonMember(*tasks, task) : nullptr;
  const codec::Json* ru = t != nullptr ? JsonMember(*t, "ResourceUsage") : nullptr;
  if (ru == nullptr)
    return "";
  static const std::map<std::string, CellFn> kMemory = {
      {"RSS", [](const codec::Json& m) { return HumanizeIBytes(JsonUint(m, "RSS")); }},
      {"Cache", [](const codec::Json& m) { return HumanizeIBytes(JsonUint(m, "Cache")); }},
      {"Swap", [](const codec::Json& m) { return HumanizeIBytes(JsonUint(m, "Swap")); }},
      {"Usage", [](const codec::Json& m) { return HumanizeIBytes(JsonUint(m, "Usage")); }},
      {"Max Usage", [](const codec::Json& m) { return HumanizeIBytes(JsonUint(m, "MaxUsage")); }},
  };
  static const std::map<std::string, CellFn> kCpu = {
      {"Percent", [](const codec::Json& c) { return Percent(JsonDouble(c, "Percent")); }},
      {"System Mode", [](const codec::Json& c) { return Percent(JsonDouble(c, "SystemMode")); }},
      {"User Mode", [](const codec::Json& c) { return Percent(JsonDouble(c, "UserMode")); }},
      {"Throttled Periods",
       [](const codec::Json& c) { return absl::StrCat(JsonUint(c, "ThrottledPeriods")); }},
      {"Throttled Time",
       [](const codec::Json& c) { return absl::StrCat(JsonUint(c, "ThrottledTime")); }},
  };
  std::string out;
  if (const codec::Json* mem = JsonMember(*ru, "MemoryStats"); mem != nullptr) {
    if (std::string table = MeasuredTable(*mem, kMemory); !table.empty())
      absl::StrAppend(&out, "Memory Stats\n", table, "\n");
  }
  if (const codec::Json* cpu = JsonMember(*ru, "CpuStats"); cpu != nullptr) {
    if (std::string table = MeasuredTable(*cpu, kCpu); !table.empty())
      absl::StrAppend(&out, out.empty() ? "" : "\n", "CPU Stats\n", table, "\n");
  }
  if (const codec::Json* devices = JsonMember(*ru, "DeviceStats"); devices != nullptr) {
    if (std::vector<std::string> rows = DeviceStatRows(*devices); !rows.empty()) {
      rows.insert(rows.begin(), "Device|Summary");
      absl::StrAppend(&out, out.empty() ? "" : "\n", "Device Stats\n", FormatList(rows), "\n");
    }
  }
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

std::string FormatHostUtilization(const codec::Json& host_stats, uint64_t total_mhz) {
  const auto used_mhz =
      static_cast<uint64_t>(std::floor(JsonDouble(host_stats, "CPUTicksConsumed")));
  std::string memory;
  if (const codec::Json* m = JsonMember(host_stats, "Memory"); m != nullptr) {
    memory = absl::StrCat(HumanizeIBytes(JsonUint(*m, "Used")), "/",
                          HumanizeIBytes(JsonUint(*m, "Total")));
  }
  std::string disk;
  if (const codec::Json* d = JsonMember(host_stats, "AllocDirStats"); d != nullptr) {
    disk = absl::StrCat(HumanizeIBytes(JsonUint(*d, "Used")), "/",
                        HumanizeIBytes(JsonUint(*d, "Size")));
  }
  return FormatList(
      {"CPU|Memory|Disk", absl::StrCat(used_mhz, "/", total_mhz, " MHz|", memory, "|", disk)});
}

std::string FormatHostStats(const codec::Json& host_stats) {
  std::string out;
  if (const codec::Json* cpus = JsonMember(host_stats, "CPU");
      cpus != nullptr && cpus->is_array()) {
    out += "CPU Stats\n";
    bool first = true;
    for (const codec::Json& c : *cpus) {
      absl::StrAppend(&out, first ? "" : "\n",
                      FormatKV({absl::StrCat("CPU|", JsonString(c, "CPU")),
                                absl::StrCat("User|", Percent(JsonDouble(c, "User"))),
                                absl::StrCat("System|", Percent(JsonDouble(c, "System"))),
                                absl::StrCat("Idle|", Percent(JsonDouble(c, "Idle")))}),
                      "\n");
      first = false;
    }
  }
  if (const codec::Json* m = JsonMember(host_stats, "Memory"); m != nullptr) {
    absl::StrAppend(&out, "\nMemory Stats\n",
                    FormatKV({absl::StrCat("Total|", HumanizeIBytes(JsonUint(*m, "Total"))),
                              absl::StrCat("Available|", HumanizeIBytes(JsonUint(*m, "Available"))),
                              absl::StrCat("Used|", HumanizeIBytes(JsonUint(*m, "Used"))),
                              absl::StrCat("Free|", HumanizeIBytes(JsonUint(*m, "Free")))}),
                    "\n");
  }
  if (const codec::Json* disks = JsonMember(host_stats, "DiskStats");
      disks != nullptr && disks->is_array()) {
    out += "\nDisk Stats\n";
    bool first = true;
    for (const codec::Json& d : *disks) {
      absl::StrAppend(
          &out, first ? "" : "\n",
          FormatKV({absl::StrCat("Device|", JsonString(d, "Device")),
                    absl::StrCat("MountPoint|", JsonString(d, "Mountpoint")),
                    absl::StrCat("Size|", HumanizeIBytes(JsonUint(d, "Size"))),
                    absl::StrCat("Used|", HumanizeIBytes(JsonUint(d, "Used"))),
                    absl::StrCat("Available|", HumanizeIBytes(JsonUint(d, "Available"))),
                    absl::StrCat("Used Percent|", Percent(JsonDouble(d, "UsedPercent"))),
                    absl::StrCat("Inodes Percent|", Percent(JsonDouble(d, "InodesUsedPercent")))}),
          "\n");
      first = false;
    }
  }
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

}  // namespace drover::cli
