// NVML (the NVIDIA Management Library) loaded with dlopen at run time, so Drover has no
// build-time dependency on nvml.h or libnvidia-ml. This header declares the small part of
// the NVML C ABI the nvidia plugin uses (types and versioned symbol names exactly as in
// nvml.h) and `Nvml`, an initialized session that wraps those calls into absl::Status.
//
// Private to the nvidia plugin (src/devices/nvidia); the fake NVML used by the tests
// (fake_nvml.cc) includes it too, so both sides share one declaration of the ABI.
//
// Thread-safety: an `Nvml` is not synchronized; its owner (the plugin) serializes calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::devices::nvml {

// ---- The NVML ABI (names as in nvml.h, hence not Google style). ----
// NOLINTBEGIN(readability-identifier-naming)

// nvmlReturn_t is a C enum: an int on every ABI NVML ships for.
using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// Opaque device handle (MIG devices have handles of the same type).
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};

struct nvmlBAR1Memory_t {
  unsigned long long bar1Total;  // bytes
  unsigned long long bar1Free;
  unsigned long long bar1Used;
};

struct nvmlUtilization_t {
  unsigned int gpu;     // percent of time a kernel ran over the last sample period
  unsigned int memory;  // percent of time device memory was read or written
};

inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;

// The nvmlDeviceGetPciInfo_v3 layout.
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:17:00.0"
};

// nvmlTemperatureSensors_t and nvmlClockType_t are C enums.
inline constexpr int NVML_TEMPERATURE_GPU = 0;
inline constexpr int NVML_CLOCK_SM = 1;
inline constexpr int NVML_CLOCK_MEM = 2;

inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;

// Signatures of the symbols the plugin resolves.
using nvmlInit_v2_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlSystemGetDriverVersion_fn = nvmlReturn_t (*)(char*, unsigned int);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetName_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetUUID_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetBAR1MemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlBAR1Memory_t*);
using nvmlDeviceGetPciInfo_v3_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using nvmlDeviceGetMinorNumber_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using nvmlDeviceGetTemperature_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetPowerUsage_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetPowerManagementLimit_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetPowerManagementDefaultLimit_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMaxClockInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetMaxPcieLinkGeneration_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMaxPcieLinkWidth_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetCudaComputeCapability_fn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using nvmlDeviceGetMaxMigDeviceCount_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMigDeviceHandleByIndex_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                nvmlDevice_t*);
using nvmlDeviceGetGpuInstanceId_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetComputeInstanceId_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);

// NOLINTEND(readability-identifier-naming)

// ---- The session. ----

// Both from nvmlDeviceGetMemoryInfo / nvmlDeviceGetBAR1MemoryInfo, in bytes.
struct MemoryInfo {
  uint64_t total = 0;
  uint64_t used = 0;
};

// An NVML library loaded and initialized: Open() dlopens, resolves the symbols and calls
// nvmlInit_v2; the destructor calls nvmlShutdown and dlcloses. Handles obtained from a
// session are valid only while it lives.
//
// Each query returns the value or a Status carrying the NVML error string, coded so
// callers branch on the code: NVML_ERROR_NOT_SUPPORTED (and a symbol this driver lacks)
// → Unimplemented, NOT_FOUND → NotFound, NO_PERMISSION → PermissionDenied, TIMEOUT →
// DeadlineExceeded, anything else → Unavailable. Messages name the NVML call.
class Nvml {
 public:
  // FailedPrecondition naming `library` when it cannot be loaded, lacks a required
  // symbol, or nvmlInit_v2 fails.
  static absl::StatusOr<std::unique_ptr<Nvml>> Open(const std::string& library);

  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  absl::StatusOr<std::string> DriverVersion();
  absl::StatusOr<unsigned int> DeviceCount();
  absl::StatusOr<nvmlDevice_t> HandleByIndex(unsigned int index);
  absl::StatusOr<std::string> Name(nvmlDevice_t device);
  absl::StatusOr<std::string> Uuid(nvmlDevice_t device);
  absl::StatusOr<MemoryInfo> Memory(nvmlDevice_t device);
  absl::StatusOr<MemoryInfo> Bar1Memory(nvmlDevice_t device);
  // The PCI bus id ("00000000:17:00.0").
  absl::StatusOr<std::string> PciBusId(nvmlDevice_t device);
  absl::StatusOr<unsigned int> MinorNumber(nvmlDevice_t device);
  absl::StatusOr<nvmlUtilization_t> Utilization(nvmlDevice_t device);
  // Degrees Celsius of the GPU die.
  absl::StatusOr<unsigned int> Temperature(nvmlDevice_t device);
  // Milliwatts: the current draw, the power limit in force (an administrator may change
  // it), and the board's default limit (fixed for a model).
  absl::StatusOr<unsigned int> PowerUsage(nvmlDevice_t device);
  absl::StatusOr<unsigned int> PowerLimit(nvmlDevice_t device);
  absl::StatusOr<unsigned int> DefaultPowerLimit(nvmlDevice_t device);
  // MHz; `clock` is NVML_CLOCK_SM or NVML_CLOCK_MEM.
  absl::StatusOr<unsigned int> MaxClock(nvmlDevice_t device, int clock);
  absl::StatusOr<unsigned int> MaxPcieGeneration(nvmlDevice_t device);
  absl::StatusOr<unsigned int> MaxPcieWidth(nvmlDevice_t device);
  // "9.0".
  absl::StatusOr<std::string> CudaComputeCapability(nvmlDevice_t device);
  // Whether MIG mode is currently enabled; false where the GPU cannot do MIG.
  absl::StatusOr<bool> MigEnabled(nvmlDevice_t device);
  absl::StatusOr<unsigned int> MaxMigDeviceCount(nvmlDevice_t device);
  // NotFound when no MIG device exists at `index` (the slots are sparse).
  absl::StatusOr<nvmlDevice_t> MigDeviceByIndex(nvmlDevice_t device, unsigned int index);
  // The GPU instance and compute instance a MIG device is (they name its capability
  // files under /proc/driver/nvidia/capabilities).
  absl::StatusOr<unsigned int> GpuInstanceId(nvmlDevice_t mig);
  absl::StatusOr<unsigned int> ComputeInstanceId(nvmlDevice_t mig);

 private:
  struct Symbols;
  Nvml(void* handle, std::unique_ptr<Symbols> symbols);

  // A Status for `ret` from `call` (not NVML_SUCCESS).
  absl::Status Error(nvmlReturn_t ret, const char* call) const;
  // Calls `fn` (a resolved symbol; null: the driver lacks it) with `args` and a last
  // `unsigned int*` output, which it returns.
  template <typename Fn, typename... Args>
  absl::StatusOr<unsigned int> QueryUint(Fn fn, const char* call, Args... args) const;

  void* handle_;  // from dlopen
  std::unique_ptr<Symbols> sym_;
};

}  // namespace drover::devices::nvml
