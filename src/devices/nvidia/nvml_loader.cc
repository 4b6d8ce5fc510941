#include "devices/nvidia/nvml_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace drover::devices::nvml {

struct Nvml::Symbols {
  // Required: a library without one of these is not a usable NVML.
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle_by_index = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci_info = nullptr;
  nvmlDeviceGetMinorNumber_fn minor_number = nullptr;
  // Optional: older drivers lack some (MIG arrived with R450); a missing one reads as
  // "not supported".
  nvmlDeviceGetBAR1MemoryInfo_fn bar1_memory = nullptr;
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetTemperature_fn temperature = nullptr;
  nvmlDeviceGetPowerUsage_fn power_usage = nullptr;
  nvmlDeviceGetPowerManagementLimit_fn power_limit = nullptr;
  nvmlDeviceGetPowerManagementDefaultLimit_fn default_power_limit = nullptr;
  nvmlDeviceGetMaxClockInfo_fn max_clock = nullptr;
  nvmlDeviceGetMaxPcieLinkGeneration_fn pcie_generation = nullptr;
  nvmlDeviceGetMaxPcieLinkWidth_fn pcie_width = nullptr;
  nvmlDeviceGetCudaComputeCapability_fn compute_capability = nullptr;
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig_count = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_by_index = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gpu_instance_id = nullptr;
  nvmlDeviceGetComputeInstanceId_fn compute_instance_id = nullptr;
};

namespace {

template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn& out) {
  // POSIX guarantees a data pointer from dlsym converts to a function pointer.
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

// A C string from a fixed buffer NVML filled (terminated, but be safe).
std::string FromBuffer(const char* buf, size_t size) {
  return std::string(buf, strnlen(buf, size));
}

absl::Status NotSupported(const char* call) {
  return absl::UnimplementedError(absl::StrCat(call, ": symbol not in this NVML"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  // RTLD_LOCAL: NVML's symbols must not satisfy other libraries' lookups.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return absl::FailedPreconditionError(absl::StrCat("failed to load NVML library '", library,
                                                      "': ", err != nullptr ? err : "unknown"));
  }
  auto sym = std::make_unique<Symbols>();
  Resolve(handle, "nvmlInit_v2", sym->init);
  Resolve(handle, "nvmlShutdown", sym->shutdown);
  Resolve(handle, "nvmlErrorString", sym->error_string);
  Resolve(handle, "nvmlSystemGetDriverVersion", sym->driver_version);
  Resolve(handle, "nvmlDeviceGetCount_v2", sym->count);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", sym->handle_by_index);
  Resolve(handle, "nvmlDeviceGetName", sym->name);
  Resolve(handle, "nvmlDeviceGetUUID", sym->uuid);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", sym->memory);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", sym->pci_info);
  Resolve(handle, "nvmlDeviceGetMinorNumber", sym->minor_number);
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", sym->init != nullptr},
      {"nvmlShutdown", sym->shutdown != nullptr},
      {"nvmlErrorString", sym->error_string != nullptr},
      {"nvmlSystemGetDriverVersion", sym->driver_version != nullptr},
      {"nvmlDeviceGetCount_v2", sym->count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", sym->handle_by_index != nullptr},
      {"nvmlDeviceGetName", sym->name != nullptr},
      {"nvmlDeviceGetUUID", sym->uuid != nullptr},
      {"nvmlDeviceGetMemoryInfo", sym->memory != nullptr},
      {"nvmlDeviceGetPciInfo_v3", sym->pci_info != nullptr},
      {"nvmlDeviceGetMinorNumber", sym->minor_number != nullptr},
  };
  for (const auto& [name, found] : required) {
    if (!found) {
      dlclose(handle);
      return absl::FailedPreconditionError(
          absl::StrCat("NVML library '", library, "' lacks symbol '", name, "'"));
    }
  }
  Resolve(handle, "nvmlDeviceGetBAR1MemoryInfo", sym->bar1_memory);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", sym->utilization);
  Resolve(handle, "nvmlDeviceGetTemperature", sym->temperature);
  Resolve(handle, "nvmlDeviceGetPowerUsage", sym->power_usage);
  Resolve(handle, "nvmlDeviceGetPowerManagementLimit", sym->power_limit);
  Resolve(handle, "nvmlDeviceGetPowerManagementDefaultLimit", sym->default_power_limit);
  Resolve(handle, "nvmlDeviceGetMaxClockInfo", sym->max_clock);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", sym->pcie_generation);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", sym->pcie_width);
  Resolve(handle, "nvmlDeviceGetCudaComputeCapability", sym->compute_capability);
  Resolve(handle, "nvmlDeviceGetMigMode", sym->mig_mode);
  Resolve(handle, "nvmlDeviceGetMaxMigDeviceCount", sym->max_mig_count);
  Resolve(handle, "nvmlDeviceGetMigDeviceHandleByIndex", sym->mig_by_index);
  Resolve(handle, "nvmlDeviceGetGpuInstanceId", sym->gpu_instance_id);
  Resolve(handle, "nvmlDeviceGetComputeInstanceId", sym->compute_instance_id);

  const nvmlReturn_t ret = sym->init();
  if (ret != NVML_SUCCESS) {
    const char* text = sym->error_string(ret);
    auto status = absl::FailedPreconditionError(
        absl::StrCat("failed to initialize NVML from '", library,
                     "': nvmlInit_v2: ", text != nullptr ? text : "unknown error"));
    dlclose(handle);
    return status;
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, std::move(sym)));
}

Nvml::Nvml(void* handle, std::unique_ptr<Symbols> symbols)
    : handle_(handle), sym_(std::move(symbols)) {}

Nvml::~Nvml() {
  // A failing shutdown leaves nothing to do differently: the library goes away anyway.
  sym_->shutdown();
  dlclose(handle_);
}

absl::Status Nvml::Error(nvmlReturn_t ret, const char* call) const {
  const char* text = sym_->error_string(ret);
  std::string message = absl::StrCat(call, ": ", text != nullptr ? text : "unknown error");
  switch (ret) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return absl::UnimplementedError(message);
    case NVML_ERROR_NOT_FOUND:
      return absl::NotFoundError(message);
    case NVML_ERROR_NO_PERMISSION:
      return absl::PermissionDeniedError(message);
    case NVML_ERROR_TIMEOUT:
      return absl::DeadlineExceededError(message);
    default:
      return absl::UnavailableError(message);
  }
}

// Calls `fn(args...)` when resolved; a Status for its failure otherwise.
#define DROVER_NVML_CALL(fn, name, ...)       \
  do {                                        \
    if (sym_->fn == nullptr)                  \
      return NotSupported(name);              \
    nvmlReturn_t ret = sym_->fn(__VA_ARGS__); \
    if (ret != NVML_SUCCESS)                  \
      return Error(ret, name);                \
  } while (false)

template <typename Fn, typename... Args>
absl::StatusOr<unsigned int> Nvml::QueryUint(Fn fn, const char* call, Args... args) const {
  if (fn == nullptr)
    return NotSupported(call);
  unsigned int out = 0;
  if (nvmlReturn_t ret = fn(args..., &out); ret != NVML_SUCCESS)
    return Error(ret, call);
  return out;
}

absl::StatusOr<std::string> Nvml::DriverVersion() {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  DROVER_NVML_CALL(driver_version, "nvmlSystemGetDriverVersion", buf, sizeof buf);
  return FromBuffer(buf, sizeof buf);
}

absl::StatusOr<unsigned int> Nvml::DeviceCount() {
  unsigned int count = 0;
  DROVER_NVML_CALL(count, "nvmlDeviceGetCount_v2", &count);
  return count;
}

absl::StatusOr<nvmlDevice_t> Nvml::HandleByIndex(unsigned int index) {
  nvmlDevice_t device = nullptr;
  DROVER_NVML_CALL(handle_by_index, "nvmlDeviceGetHandleByIndex_v2", index, &device);
  return device;
}

absl::StatusOr<std::string> Nvml::Name(nvmlDevice_t device) {
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  DROVER_NVML_CALL(name, "nvmlDeviceGetName", device, buf, sizeof buf);
  return FromBuffer(buf, sizeof buf);
}

absl::StatusOr<std::string> Nvml::Uuid(nvmlDevice_t device) {
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  DROVER_NVML_CALL(uuid, "nvmlDeviceGetUUID", device, buf, sizeof buf);
  return FromBuffer(buf, sizeof buf);
}

absl::StatusOr<MemoryInfo> Nvml::Memory(nvmlDevice_t device) {
  nvmlMemory_t mem = {};
  DROVER_NVML_CALL(memory, "nvmlDeviceGetMemoryInfo", device, &mem);
  return MemoryInfo{mem.total, mem.used};
}

absl::StatusOr<MemoryInfo> Nvml::Bar1Memory(nvmlDevice_t device) {
  nvmlBAR1Memory_t mem = {};
  DROVER_NVML_CALL(bar1_memory, "nvmlDeviceGetBAR1MemoryInfo", device, &mem);
  return MemoryInfo{mem.bar1Total, mem.bar1Used};
}

absl::StatusOr<std::string> Nvml::PciBusId(nvmlDevice_t device) {
  nvmlPciInfo_t pci = {};
  DROVER_NVML_CALL(pci_info, "nvmlDeviceGetPciInfo_v3", device, &pci);
  return FromBuffer(pci.busId, sizeof pci.busId);
}

absl::StatusOr<unsigned int> Nvml::MinorNumber(nvmlDevice_t device) {
  return QueryUint(sym_->minor_number, "nvmlDeviceGetMinorNumber", device);
}

absl::StatusOr<nvmlUtilization_t> Nvml::Utilization(nvmlDevice_t device) {
  nvmlUtilization_t util = {};
  DROVER_NVML_CALL(utilization, "nvmlDeviceGetUtilizationRates", device, &util);
  return util;
}

absl::StatusOr<unsigned int> Nvml::Temperature(nvmlDevice_t device) {
  return QueryUint(sym_->temperature, "nvmlDeviceGetTemperature", device, NVML_TEMPERATURE_GPU);
}

absl::StatusOr<unsigned int> Nvml::PowerUsage(nvmlDevice_t device) {
  return QueryUint(sym_->power_usage, "nvmlDeviceGetPowerUsage", device);
}

absl::StatusOr<unsigned int> Nvml::PowerLimit(nvmlDevice_t device) {
  return QueryUint(sym_->power_limit, "nvmlDeviceGetPowerManagementLimit", device);
}

absl::StatusOr<unsigned int> Nvml::DefaultPowerLimit(nvmlDevice_t device) {
  return QueryUint(sym_->default_power_limit, "nvmlDeviceGetPowerManagementDefaultLimit", device);
}

absl::StatusOr<unsigned int> Nvml::MaxClock(nvmlDevice_t device, int clock) {
  return QueryUint(sym_->max_clock, "nvmlDeviceGetMaxClockInfo", device, clock);
}

absl::StatusOr<unsigned int> Nvml::MaxPcieGeneration(nvmlDevice_t device) {
  return QueryUint(sym_->pcie_generation, "nvmlDeviceGetMaxPcieLinkGeneration", device);
}

absl::StatusOr<unsigned int> Nvml::MaxPcieWidth(nvmlDevice_t device) {
  return QueryUint(sym_->pcie_width, "nvmlDeviceGetMaxPcieLinkWidth", device);
}

absl::StatusOr<std::string> Nvml::CudaComputeCapability(nvmlDevice_t device) {
  int major = 0;
  int minor = 0;
  DROVER_NVML_CALL(compute_capability, "nvmlDeviceGetCudaComputeCapability", device, &major,
                   &minor);
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<bool> Nvml::MigEnabled(nvmlDevice_t device) {
  if (sym_->mig_mode == nullptr) {
    return false;  // a driver without MIG support
  }
  unsigned int current = 0;
  unsigned int pending = 0;
  const nvmlReturn_t ret = sym_->mig_mode(device, &current, &pending);
  if (ret == NVML_ERROR_NOT_SUPPORTED) {
    return false;  // a GPU that cannot do MIG
  }
  if (ret != NVML_SUCCESS) {
    return Error(ret, "nvmlDeviceGetMigMode");
  }
  // A pending change takes effect only after a GPU reset: what runs now is `current`.
  return current == NVML_DEVICE_MIG_ENABLE;
}

absl::StatusOr<unsigned int> Nvml::MaxMigDeviceCount(nvmlDevice_t device) {
  return QueryUint(sym_->max_mig_count, "nvmlDeviceGetMaxMigDeviceCount", device);
}

absl::StatusOr<nvmlDevice_t> Nvml::MigDeviceByIndex(nvmlDevice_t device, unsigned int index) {
  nvmlDevice_t mig = nullptr;
  DROVER_NVML_CALL(mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex", device, index, &mig);
  return mig;
}

absl::StatusOr<unsigned int> Nvml::GpuInstanceId(nvmlDevice_t mig) {
  return QueryUint(sym_->gpu_instance_id, "nvmlDeviceGetGpuInstanceId", mig);
}

absl::StatusOr<unsigned int> Nvml::ComputeInstanceId(nvmlDevice_t mig) {
  return QueryUint(sym_->compute_instance_id, "nvmlDeviceGetComputeInstanceId", mig);
}

#undef DROVER_NVML_CALL

}  // namespace drover::devices::nvml
