#include "devices/nvidia/nvidia_plugin.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"

#include "common/logging.h"
#include "common/status_macros.h"
#include "devices/nvidia/nvml_loader.h"

namespace drover::devices {
namespace {

constexpr char kVendor[] = "nvidia";
constexpr char kType[] = "gpu";
constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";
// Nodes every CUDA process needs besides its GPU's /dev/nvidiaN, where the host has them.
constexpr const char* kControlNodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                         "nvidia-modeset"};

using nvml::Nvml;
using nvml::nvmlDevice_t;

// The capability node that a MIG capability file grants: `access` holds
// "DeviceFileMinor: N" for /dev/nvidia-caps/nvidia-capN.
absl::StatusOr<std::string> CapNodeOf(const std::filesystem::path& access) {
  std::FILE* file = std::fopen(access.c_str(), "re");
  if (file == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", access.string(), ": ", std::strerror(errno)));
  }
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), file));
  std::fclose(file);
  constexpr absl::string_view kKey = "DeviceFileMinor:";
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view rest = line;
    unsigned int minor = 0;
    if (absl::ConsumePrefix(&rest, kKey) &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &minor)) {
      return absl::StrCat("nvidia-caps/nvidia-cap", minor);
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(access.string(), " does not name a device minor (DeviceFileMinor)"));
}

// One instance the plugin reports: a whole GPU, or a MIG device of a GPU in MIG mode.
struct Gpu {
  std::string uuid;  // "GPU-…" or "MIG-…"
  std::string name;  // the product ("Tesla T4", "NVIDIA A100-SXM4-40GB MIG 1g.5gb")
  nvmlDevice_t handle = nullptr;
  nvmlDevice_t parent = nullptr;  // the physical GPU: `handle` unless `mig`
  bool mig = false;
  std::string pci_bus_id;  // of the physical GPU; empty if it could not be read
  absl::Status health;     // the first failed query; OK while healthy
};

int64_t ToMiB(uint64_t bytes) {
  return static_cast<int64_t>(bytes >> 20);
}

// Per-lane PCIe throughput in MB/s after encoding overhead, by generation; 0 if unknown.
int64_t PcieLaneMBps(unsigned int generation) {
  switch (generation) {
    case 1:
      return 250;
    case 2:
      return 500;
    case 3:
      return 985;
    case 4:
      return 1969;
    case 5:
      return 3938;
    case 6:
      return 7563;
    default:
      return 0;
  }
}

model::StatValue IntStat(int64_t value, std::string unit, std::string desc) {
  model::StatValue v;
  v.int_numerator = value;
  v.unit = std::move(unit);
  v.desc = std::move(desc);
  return v;
}

model::StatValue IntFraction(int64_t numerator, int64_t denominator, std::string unit,
                             std::string desc) {
  model::StatValue v = IntStat(numerator, std::move(unit), std::move(desc));
  v.int_denominator = denominator;
  return v;
}

class NvidiaPlugin final : public DevicePlugin {
 public:
  explicit NvidiaPlugin(NvidiaPluginConfig config)
      : config_(std::move(config)),
        ignored_(config_.ignored_gpu_ids.begin(), config_.ignored_gpu_ids.end()) {}

  // DevicePlugin
  std::string Name() const override { return "nvidia"; }
  absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() override;
  absl::StatusOr<ContainerReservation> Reserve(const std::vector<std::string>& ids) override;
  absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() override;
  void Reset() override;

 private:
  // The NVML session, opened on first use and after a Reset. FailedPrecondition when
  // the library cannot be loaded or initialized (retried on the next call).
  absl::StatusOr<Nvml*> NvmlLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the session if a Reset asked for it.
  void ApplyResetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Every instance to report, in NVML index order, ignored IDs left out. Fails only when
  // the GPUs cannot be counted; a GPU whose UUID or name cannot be read is logged and
  // skipped (it cannot be named), other failed queries go into `Gpu::health`.
  absl::StatusOr<std::vector<Gpu>> EnumerateLocked(Nvml& lib) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends the MIG devices of `parent` (a GPU in MIG mode) to `out`.
  void EnumerateMigLocked(Nvml& lib, const Gpu& parent, std::vector<Gpu>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The /dev/nvidia-caps nodes (relative to /dev) that MIG device `mig` of the GPU with
  // minor number `gpu_minor` needs: its GPU instance's and its compute instance's, as
  // the driver's capability files under `proc_dir` name them.
  absl::StatusOr<std::vector<std::string>> MigCapNodesLocked(Nvml& lib, const Gpu& mig,
                                                             unsigned int gpu_minor)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The group attributes of `gpu`; a failed query (other than "not supported") leaves
  // its attribute out and marks `gpu` unhealthy.
  std::map<std::string, model::Attribute> AttributesLocked(Nvml& lib, Gpu& gpu,
                                                           const std::string& driver_version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One sample of `gpu`; nullopt when its memory cannot be read (the summary).
  std::optional<model::DeviceStats> SampleLocked(Nvml& lib, const Gpu& gpu, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  bool Ignored(const std::string& uuid) const { return ignored_.contains(uuid); }

  // Immutable after construction.
  const NvidiaPluginConfig config_;
  const std::set<std::string> ignored_;

  absl::Mutex mu_;
  std::unique_ptr<Nvml> nvml_ ABSL_GUARDED_BY(mu_);
  // Set by Reset, which must not block behind a call stuck in NVML: the next holder of
  // `mu_` closes the session. Atomic because Reset sets it without the lock.
  std::atomic<bool> reset_pending_{false};
};

void NvidiaPlugin::Reset() {
  reset_pending_.store(true);
  if (mu_.TryLock()) {
    ApplyResetLocked();
    mu_.Unlock();
  }
}

void NvidiaPlugin::ApplyResetLocked() {
  if (reset_pending_.exchange(false)) {
    nvml_.reset();  // nvmlShutdown and dlclose
  }
}

absl::StatusOr<Nvml*> NvidiaPlugin::NvmlLocked() {
  ApplyResetLocked();
  if (nvml_ == nullptr) {
    DROVER_ASSIGN_OR_RETURN(nvml_, Nvml::Open(config_.nvml_library));
  }
  return nvml_.get();
}

absl::StatusOr<std::vector<Gpu>> NvidiaPlugin::EnumerateLocked(Nvml& lib) {
  absl::StatusOr<unsigned int> count = lib.DeviceCount();
  if (!count.ok()) {
    return common::Annotate(count.status(), "failed to count NVIDIA GPUs");
  }
  std::vector<Gpu> gpus;
  for (unsigned int i = 0; i < *count; ++i) {
    Gpu gpu;
    absl::StatusOr<nvmlDevice_t> handle = lib.HandleByIndex(i);
    absl::StatusOr<std::string> uuid =
        handle.ok() ? lib.Uuid(*handle) : absl::StatusOr<std::string>(handle.status());
    if (!uuid.ok()) {
      DROVER_LOG_WARN("nvidia: skipping GPU {}: {}", i, uuid.status().ToString());
      continue;
    }
    if (Ignored(*uuid)) {
      continue;  // and, in MIG mode, all its MIG devices
    }
    absl::StatusOr<std::string> name = lib.Name(*handle);
    if (!name.ok()) {
      DROVER_LOG_WARN("nvidia: skipping GPU '{}': {}", *uuid, name.status().ToString());
      continue;
    }
    gpu.uuid = *std::move(uuid);
    gpu.name = *std::move(name);
    gpu.handle = gpu.parent = *handle;
    const std::string context = absl::StrCat("failed to query GPU '", gpu.uuid, "'");
    absl::StatusOr<std::string> bus_id = lib.PciBusId(gpu.handle);
    if (bus_id.ok()) {
      gpu.pci_bus_id = *std::move(bus_id);
    } else {
      gpu.health = common::Annotate(bus_id.status(), context);
    }
    absl::StatusOr<bool> mig = lib.MigEnabled(gpu.handle);
    if (mig.ok() && *mig) {
      EnumerateMigLocked(lib, gpu, gpus);
      continue;
    }
    if (!mig.ok() && gpu.health.ok()) {
      gpu.health = common::Annotate(mig.status(), context);
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

void NvidiaPlugin::EnumerateMigLocked(Nvml& lib, const Gpu& parent, std::vector<Gpu>& out) {
  absl::StatusOr<unsigned int> slots = lib.MaxMigDeviceCount(parent.handle);
  if (!slots.ok()) {
    // The GPU cannot run whole-GPU work in MIG mode, so it is not offered as such: report
    // it unhealthy, which keeps it visible to operators.
    Gpu broken = parent;
    broken.health = common::Annotate(
        slots.status(), absl::StrCat("failed to list MIG devices of GPU '", parent.uuid, "'"));
    out.push_back(std::move(broken));
    return;
  }
  for (unsigned int slot = 0; slot < *slots; ++slot) {
    absl::StatusOr<nvmlDevice_t> handle = lib.MigDeviceByIndex(parent.handle, slot);
    if (absl::IsNotFound(handle.status())) {
      continue;  // an unused slot
    }
    absl::StatusOr<std::string> uuid =
        handle.ok() ? lib.Uuid(*handle) : absl::StatusOr<std::string>(handle.status());
    absl::StatusOr<std::string> name =
        uuid.ok() ? lib.Name(*handle) : absl::StatusOr<std::string>(uuid.status());
    if (!name.ok()) {
      DROVER_LOG_WARN("nvidia: skipping MIG device {} of GPU '{}': {}", slot, parent.uuid,
                      name.status().ToString());
      continue;
    }
    if (Ignored(*uuid)) {
      continue;
    }
    Gpu mig;
    mig.uuid = *std::move(uuid);
    mig.name = *std::move(name);
    mig.handle = *handle;
    mig.parent = parent.handle;
    mig.mig = true;
    mig.pci_bus_id = parent.pci_bus_id;
    mig.health = parent.health;
    out.push_back(std::move(mig));
  }
}

absl::StatusOr<std::vector<std::string>> NvidiaPlugin::MigCapNodesLocked(Nvml& lib, const Gpu& mig,
                                                                         unsigned int gpu_minor) {
  DROVER_ASSIGN_OR_RETURN(unsigned int gi, lib.GpuInstanceId(mig.handle));
  DROVER_ASSIGN_OR_RETURN(unsigned int ci, lib.ComputeInstanceId(mig.handle));
  const std::filesystem::path gi_dir = std::filesystem::path(config_.proc_dir) / "capabilities" /
                                       absl::StrCat("gpu", gpu_minor) / "mig" /
                                       absl::StrCat("gi", gi);
  DROVER_ASSIGN_OR_RETURN(std::string gi_node, CapNodeOf(gi_dir / "access"));
  DROVER_ASSIGN_OR_RETURN(std::string ci_node,
                          CapNodeOf(gi_dir / absl::StrCat("ci", ci) / "access"));
  std::vector<std::string> nodes = {std::move(gi_node), std::move(ci_node)};
  for (const std::string& node : nodes) {
    // The driver creates these on demand (nvidia-modprobe -f); a task without them
    // would fail later with a far less clear error.
    const std::filesystem::path path = std::filesystem::path(config_.dev_dir) / node;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "capability node ", path.string(), " does not exist (nvidia-modprobe -f creates it)"));
    }
  }
  return nodes;
}

std::map<std::string, model::Attribute> NvidiaPlugin::AttributesLocked(
    Nvml& lib, Gpu& gpu, const std::string& driver_version) {
  std::map<std::string, model::Attribute> attrs;
  attrs["driver_version"] = model::Attribute::String(driver_version);
  const std::string context = absl::StrCat("failed to query GPU '", gpu.uuid, "'");
  // Records the first real failure; "not supported" only means "no such attribute". So
  // does "no permission" for a MIG device: NVML answers its memory only to root or a
  // holder of the MIG monitor capability.
  auto usable = [&](const absl::Status& status) {
    const bool absent =
        absl::IsUnimplemented(status) || (gpu.mig && absl::IsPermissionDenied(status));
    if (!status.ok() && !absent && gpu.health.ok()) {
      gpu.health = common::Annotate(status, context);
    }
    return status.ok();
  };

  if (auto mem = lib.Memory(gpu.handle); usable(mem.status())) {
    attrs["memory"] = model::Attribute::Int(ToMiB(mem->total), "MiB");
  }
  // Compute capability is the physical GPU's; MIG devices share it.
  if (auto cc = lib.CudaComputeCapability(gpu.parent); usable(cc.status())) {
    attrs["cuda_compute_capability"] = model::Attribute::String(*cc);
  }
  if (gpu.mig) {
    return attrs;  // power, BAR1, PCIe and clocks belong to the whole GPU
  }
  // The default limit, not the one in force: an administrator's `nvidia-smi -pl` must
  // not split identical GPUs into different groups.
  if (auto power = lib.DefaultPowerLimit(gpu.handle); usable(power.status())) {
    attrs["power"] = model::Attribute::Int(*power / 1000, "W");
  }
  if (auto bar1 = lib.Bar1Memory(gpu.handle); usable(bar1.status())) {
    attrs["bar1"] = model::Attribute::Int(ToMiB(bar1->total), "MiB");
  }
  auto generation = lib.MaxPcieGeneration(gpu.handle);
  auto width = lib.MaxPcieWidth(gpu.handle);
  if (usable(generation.status()) && usable(width.status()) && PcieLaneMBps(*generation) > 0) {
    attrs["pci_bandwidth"] = model::Attribute::Int(PcieLaneMBps(*generation) * *width, "MB/s");
  }
  if (auto clock = lib.MaxClock(gpu.handle, nvml::NVML_CLOCK_SM); usable(clock.status())) {
    attrs["cores_clock"] = model::Attribute::Int(*clock, "MHz");
  }
  if (auto clock = lib.MaxClock(gpu.handle, nvml::NVML_CLOCK_MEM); usable(clock.status())) {
    attrs["memory_clock"] = model::Attribute::Int(*clock, "MHz");
  }
  return attrs;
}

absl::StatusOr<std::vector<model::NodeDeviceResource>> NvidiaPlugin::Fingerprint() {
  if (!config_.enabled) {
    return std::vector<model::NodeDeviceResource>{};
  }
  absl::MutexLock lock(&mu_);
  DROVER_ASSIGN_OR_RETURN(Nvml * lib, NvmlLocked());
  absl::StatusOr<std::string> driver = lib->DriverVersion();
  if (!driver.ok()) {
    return common::Annotate(driver.status(), "failed to read the NVIDIA driver version");
  }
  DROVER_ASSIGN_OR_RETURN(std::vector<Gpu> gpus, EnumerateLocked(*lib));

  std::vector<model::NodeDeviceResource> groups;
  std::vector<std::pair<Gpu*, std::map<std::string, model::Attribute>>> unhealthy;
  auto add = [&](model::NodeDeviceResource* group, const Gpu& gpu,
                 std::map<std::string, model::Attribute> attrs) {
    if (group == nullptr) {
      group = &groups.emplace_back();
      group->vendor = kVendor;
      group->type = kType;
      group->name = gpu.name;
      group->attributes = std::move(attrs);
    }
    model::DeviceInstance& instance = group->instances.emplace_back();
    instance.id = gpu.uuid;
    instance.healthy = gpu.health.ok();
    instance.health_description = std::string(gpu.health.message());
    if (!gpu.pci_bus_id.empty()) {
      instance.locality = model::DeviceLocality{gpu.pci_bus_id};
    }
  };
  for (Gpu& gpu : gpus) {
    std::map<std::string, model::Attribute> attrs = AttributesLocked(*lib, gpu, *driver);
    if (!gpu.health.ok()) {
      unhealthy.emplace_back(&gpu, std::move(attrs));
      continue;
    }
    model::NodeDeviceResource* same = nullptr;
    for (model::NodeDeviceResource& group : groups) {
      if (group.name == gpu.name && group.attributes == attrs) {
        same = &group;
        break;
      }
    }
    add(same, gpu, std::move(attrs));
  }
  // A failing GPU's attributes are incomplete: it joins a healthy group of its model if
  // there is one, so the scheduler sees one model with an unhealthy instance.
  for (auto& [gpu, attrs] : unhealthy) {
    model::NodeDeviceResource* same = nullptr;
    for (model::NodeDeviceResource& group : groups) {
      if (group.name == gpu->name) {
        same = &group;
        break;
      }
    }
    add(same, *gpu, std::move(attrs));
  }
  return groups;
}

std::optional<model::DeviceStats> NvidiaPlugin::SampleLocked(Nvml& lib, const Gpu& gpu,
                                                             int64_t now_ns) {
  absl::StatusOr<nvml::MemoryInfo> mem = lib.Memory(gpu.handle);
  if (!mem.ok()) {
    DROVER_LOG_DEBUG("nvidia: no stats for '{}': {}", gpu.uuid, mem.status().ToString());
    return std::nullopt;
  }
  // Stats are best effort: a value NVML cannot give (not supported, as most are for MIG
  // devices, or failing) is left out.
  model::DeviceStats out;
  out.timestamp = now_ns;
  out.summary = IntFraction(ToMiB(mem->used), ToMiB(mem->total), "MiB", "UsedMemory");
  auto& attrs = out.stats.attributes;
  attrs["Memory used"] =
      IntFraction(ToMiB(mem->used), ToMiB(mem->total), "MiB", "Used / total device memory");
  if (auto util = lib.Utilization(gpu.handle); util.ok()) {
    attrs["GPU utilization"] =
        IntStat(util->gpu, "%", "Percent of the last sample period a kernel was running");
    attrs["Memory utilization"] =
        IntStat(util->memory, "%", "Percent of the last sample period memory was read or written");
  }
  if (auto celsius = lib.Temperature(gpu.handle); celsius.ok()) {
    attrs["Temperature"] = IntStat(*celsius, "C", "GPU temperature");
  }
  if (auto power = lib.PowerUsage(gpu.handle); power.ok()) {
    model::StatValue v = IntStat(*power / 1000, "W", "Power draw / power limit");
    if (auto limit = lib.PowerLimit(gpu.handle); limit.ok()) {
      v.int_denominator = *limit / 1000;
    }
    attrs["Power usage"] = std::move(v);
  }
  return out;
}

absl::StatusOr<std::vector<model::DeviceGroupStats>> NvidiaPlugin::Stats() {
  if (!config_.enabled) {
    return std::vector<model::DeviceGroupStats>{};
  }
  absl::MutexLock lock(&mu_);
  DROVER_ASSIGN_OR_RETURN(Nvml * lib, NvmlLocked());
  DROVER_ASSIGN_OR_RETURN(std::vector<Gpu> gpus, EnumerateLocked(*lib));
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  // DeviceGroupStats is keyed by name only, so same-named Fingerprint groups share one.
  std::map<std::string, model::DeviceGroupStats> by_name;
  for (const Gpu& gpu : gpus) {
    std::optional<model::DeviceStats> sample = SampleLocked(*lib, gpu, now_ns);
    if (!sample) {
      continue;
    }
    model::DeviceGroupStats& group = by_name[gpu.name];
    group.vendor = kVendor;
    group.type = kType;
    group.name = gpu.name;
    group.instance_stats[gpu.uuid] = *std::move(sample);
  }
  std::vector<model::DeviceGroupStats> out;
  for (auto& [name, group] : by_name) {
    out.push_back(std::move(group));
  }
  return out;
}

absl::StatusOr<ContainerReservation> NvidiaPlugin::Reserve(const std::vector<std::string>& ids) {
  if (ids.empty()) {
    return absl::InvalidArgumentError("no nvidia device IDs to reserve");
  }
  if (!config_.enabled) {
    return absl::NotFoundError(
        absl::StrCat("unknown nvidia device '", ids.front(), "': the nvidia plugin is disabled"));
  }
  absl::MutexLock lock(&mu_);
  DROVER_ASSIGN_OR_RETURN(Nvml * lib, NvmlLocked());
  DROVER_ASSIGN_OR_RETURN(std::vector<Gpu> gpus, EnumerateLocked(*lib));

  const std::filesystem::path dev_dir(config_.dev_dir);
  ContainerReservation out;
  auto add_node = [&](const std::string& basename, const char* permissions = "rwm") {
    DeviceSpec spec{"/dev/" + basename, (dev_dir / basename).string(), permissions};
    for (const DeviceSpec& existing : out.devices) {
      if (existing == spec) {
        return;  // several MIG devices of one GPU, or a repeated ID
      }
    }
    out.devices.push_back(std::move(spec));
  };
  for (const std::string& id : ids) {
    const Gpu* found = nullptr;
    for (const Gpu& gpu : gpus) {
      if (gpu.uuid == id) {
        found = &gpu;
        break;
      }
    }
    if (found == nullptr) {
      return absl::NotFoundError(absl::StrCat("unknown nvidia device '", id, "'"));
    }
    // A MIG device is used through its GPU's node plus the capability nodes of its GPU
    // instance and compute instance.
    absl::StatusOr<unsigned int> minor = lib->MinorNumber(found->parent);
    if (!minor.ok()) {
      return common::Annotate(minor.status(), absl::StrCat("failed to query GPU '", id, "'"));
    }
    add_node(absl::StrCat("nvidia", *minor));
    if (found->mig) {
      absl::StatusOr<std::vector<std::string>> caps = MigCapNodesLocked(*lib, *found, *minor);
      if (!caps.ok()) {
        return common::Annotate(caps.status(),
                                absl::StrCat("failed to find the capability nodes of '", id, "'"));
      }
      for (const std::string& cap : *caps) {
        add_node(cap, "r");  // the driver checks that the task can open them; 0444 on the host
      }
    }
  }
  for (const char* node : kControlNodes) {
    std::error_code ec;
    if (std::filesystem::exists(dev_dir / node, ec)) {
      add_node(node);
    }
  }
  out.envs[kVisibleDevicesEnv] = absl::StrJoin(ids, ",");
  return out;
}

}  // namespace

DevicePluginPtr MakeNvidiaPlugin(NvidiaPluginConfig config) {
  return std::make_shared<NvidiaPlugin>(std::move(config));
}

}  // namespace drover::devices
