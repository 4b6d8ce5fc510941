// A fake NVML for the nvidia plugin's tests: a shared library exporting the NVML symbols
// the plugin resolves, serving GPUs described by a script. A test dlopens the same
// library (so both share one copy of its state) and calls the C API at the bottom:
//
//   fake_nvml_set_script(
//       "driver|550.54.15\n"
//       "gpu|uuid=GPU-0|name=Tesla T4|minor=0|bus=00000000:17:00.0|memory_mib=15360\n"
//       "gpu|uuid=GPU-1|name=NVIDIA A100|mig=1\n"
//       "mig|parent=GPU-1|slot=2|uuid=MIG-1a|name=NVIDIA A100 MIG 1g.5gb|memory_mib=4864\n"
//       "init_error|9\n");
//
// gpu fields (defaults in `kGpuDefaults`): uuid, name, minor, bus, memory_mib, used_mib, bar1_mib,
// default_power_mw, power_limit_mw, power_mw, util_gpu, util_mem, temp, pcie_gen,
// pcie_width, sm_clock, mem_clock, cc ("7.5"), mig (1: MIG mode on), lost (1: every
// query but name and UUID fails with "GPU is lost"), no_temp (1: temperature not
// supported). mig fields: parent, slot, uuid, name, memory_mib, used_mib, gi and ci
// (its GPU and compute instance IDs), mem_denied (1: memory needs a privilege the caller
// lacks, as for non-root on real MIG devices); MIG devices support only name, UUID,
// memory and the instance IDs, as on real hardware.
//
// Like NVML, nvmlInit_v2 and nvmlShutdown count references, and every other call fails
// with NVML_ERROR_UNINITIALIZED while the count is zero.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "devices/nvidia/nvml_loader.h"

using namespace drover::devices::nvml;  // NOLINT(google-build-using-namespace): C ABI types

namespace {

// A GPU or a MIG device: its script fields over the defaults below. Handles are
// pointers to these.
struct Device {
  std::map<std::string, std::string> fields;
  Device* parent = nullptr;  // set for a MIG device
  std::vector<std::unique_ptr<Device>> migs;

  const std::string& Get(const std::string& key) const { return fields.at(key); }
  unsigned int Num(const std::string& key) const { return std::stoul(Get(key)); }
  unsigned long long Bytes(const std::string& mib_key) const {
    return std::stoull(Get(mib_key)) << 20;
  }
  bool Flag(const std::string& key) const { return Get(key) == "1"; }
};

const std::map<std::string, std::string> kGpuDefaults = {
    {"uuid", ""},
    {"name", "Tesla T4"},
    {"minor", "0"},
    {"bus", "00000000:00:00.0"},
    {"memory_mib", "15360"},
    {"used_mib", "0"},
    {"bar1_mib", "256"},
    {"default_power_mw", "70000"},
    {"power_limit_mw", "70000"},
    {"power_mw", "0"},
    {"util_gpu", "0"},
    {"util_mem", "0"},
    {"temp", "40"},
    {"pcie_gen", "3"},
    {"pcie_width", "16"},
    {"sm_clock", "1590"},
    {"mem_clock", "5001"},
    {"cc", "7.5"},
    {"mig", "0"},
    {"lost", "0"},
    {"no_temp", "0"},
};
const std::map<std::string, std::string> kMigDefaults = {
    {"parent", ""},    {"slot", "0"}, {"uuid", ""}, {"name", "MIG 1g.5gb"}, {"memory_mib", "4864"},
    {"used_mib", "0"}, {"gi", "0"},   {"ci", "0"},  {"mem_denied", "0"},
};

struct State {
  std::mutex mu;
  std::string driver;
  nvmlReturn_t init_error = NVML_SUCCESS;
  std::vector<std::unique_ptr<Device>> gpus;
  int refs = 0;
  int inits = 0;
  int shutdowns = 0;
};

State& S() {
  static State state;
  return state;
}

nvmlDevice_t ToHandle(Device* device) {
  return reinterpret_cast<nvmlDevice_t>(device);
}
Device* FromHandle(nvmlDevice_t device) {
  return reinterpret_cast<Device*>(device);
}

// Parses "kind|key=value|key=value" fields over `defaults`.
std::unique_ptr<Device> ParseDevice(const std::vector<std::string>& parts,
                                    const std::map<std::string, std::string>& defaults) {
  auto device = std::make_unique<Device>();
  device->fields = defaults;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq);
    if (eq == std::string::npos || !defaults.contains(key)) {
      std::fprintf(stderr, "fake_nvml: bad field '%s'\n", parts[i].c_str());
      std::abort();  // a broken test script
    }
    device->fields[key] = parts[i].substr(eq + 1);
  }
  return device;
}

void ParseScript(State& s, const std::string& script) {
  s.driver = "550.54.15";
  s.init_error = NVML_SUCCESS;
  s.gpus.clear();
  std::istringstream lines(script);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> parts;
    std::istringstream in(line);
    for (std::string part; std::getline(in, part, '|');) {
      parts.push_back(part);
    }
    if (parts.empty()) {
      continue;
    }
    if (parts[0] == "driver" && parts.size() == 2) {
      s.driver = parts[1];
    } else if (parts[0] == "init_error" && parts.size() == 2) {
      s.init_error = std::stoi(parts[1]);
    } else if (parts[0] == "gpu") {
      s.gpus.push_back(ParseDevice(parts, kGpuDefaults));
    } else if (parts[0] == "mig") {
      std::unique_ptr<Device> mig = ParseDevice(parts, kMigDefaults);
      for (auto& gpu : s.gpus) {
        if (gpu->Get("uuid") == mig->Get("parent")) {
          mig->parent = gpu.get();
          gpu->migs.push_back(std::move(mig));
          break;
        }
      }
    } else {
      std::fprintf(stderr, "fake_nvml: bad line '%s'\n", line.c_str());
      std::abort();
    }
  }
}

void CopyOut(const std::string& value, char* buf, unsigned int length) {
  std::snprintf(buf, length, "%s", value.c_str());
}

// The checks every device query starts with; sets `d`.
nvmlReturn_t Check(nvmlDevice_t device, const void* out, Device*& d) {
  if (S().refs == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  if (device == nullptr || out == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  d = FromHandle(device);
  return NVML_SUCCESS;
}

// For queries only whole, working GPUs answer; sets `gpu`.
nvmlReturn_t CheckGpu(nvmlDevice_t device, const void* out, Device*& gpu) {
  if (nvmlReturn_t ret = Check(device, out, gpu); ret != NVML_SUCCESS) {
    return ret;
  }
  if (gpu->parent != nullptr) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  return gpu->Flag("lost") ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

}  // namespace

// The body of a query of a whole GPU: `body` runs with `gpu` set.
#define FAKE_GPU_QUERY(out, body)                                         \
  std::lock_guard<std::mutex> lock(S().mu);                               \
  Device* gpu = nullptr;                                                  \
  if (nvmlReturn_t ret = CheckGpu(device, out, gpu); ret != NVML_SUCCESS) \
    return ret;                                                           \
  body;                                                                   \
  return NVML_SUCCESS

// The body of a query any device answers (unless lost): `body` runs with `d` set.
#define FAKE_ANY_QUERY(out, body)                                    \
  std::lock_guard<std::mutex> lock(S().mu);                          \
  Device* d = nullptr;                                               \
  if (nvmlReturn_t ret = Check(device, out, d); ret != NVML_SUCCESS) \
    return ret;                                                      \
  body;                                                              \
  return NVML_SUCCESS

extern "C" {

nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().init_error != NVML_SUCCESS) {
    return S().init_error;
  }
  ++S().refs;
  ++S().inits;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().refs == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  --S().refs;
  ++S().shutdowns;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().refs == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  CopyOut(S().driver, version, length);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().refs == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  *count = static_cast<unsigned int>(S().gpus.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().refs == 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  if (index >= S().gpus.size()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = ToHandle(S().gpus[index].get());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FAKE_ANY_QUERY(name, CopyOut(d->Get("name"), name, length));
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FAKE_ANY_QUERY(uuid, CopyOut(d->Get("uuid"), uuid, length));
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_ANY_QUERY(memory, {
    if (d->parent == nullptr && d->Flag("lost")) {
      return NVML_ERROR_GPU_IS_LOST;
    }
    if (d->parent != nullptr && d->Flag("mem_denied")) {
      return NVML_ERROR_NO_PERMISSION;
    }
    memory->total = d->Bytes("memory_mib");
    memory->used = d->Bytes("used_mib");
    memory->free = memory->total - memory->used;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_GPU_QUERY(pci, {
    std::memset(pci, 0, sizeof *pci);
    CopyOut(gpu->Get("bus"), pci->busId, sizeof pci->busId);
    CopyOut(gpu->Get("bus").substr(4), pci->busIdLegacy, sizeof pci->busIdLegacy);
  });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  FAKE_GPU_QUERY(minor, *minor = gpu->Num("minor"));
}

nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t* bar1) {
  FAKE_GPU_QUERY(bar1, {
    bar1->bar1Total = bar1->bar1Free = gpu->Bytes("bar1_mib");
    bar1->bar1Used = 0;
  });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* util) {
  FAKE_GPU_QUERY(util, {
    util->gpu = gpu->Num("util_gpu");
    util->memory = gpu->Num("util_mem");
  });
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temp) {
  FAKE_GPU_QUERY(temp, {
    if (sensor != NVML_TEMPERATURE_GPU || gpu->Flag("no_temp")) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *temp = gpu->Num("temp");
  });
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  FAKE_GPU_QUERY(power, *power = gpu->Num("power_mw"));
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_GPU_QUERY(limit, *limit = gpu->Num("power_limit_mw"));
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_GPU_QUERY(limit, *limit = gpu->Num("default_power_mw"));
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  FAKE_GPU_QUERY(clock, {
    if (type != NVML_CLOCK_SM && type != NVML_CLOCK_MEM) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *clock = gpu->Num(type == NVML_CLOCK_SM ? "sm_clock" : "mem_clock");
  });
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  FAKE_GPU_QUERY(gen, *gen = gpu->Num("pcie_gen"));
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  FAKE_GPU_QUERY(width, *width = gpu->Num("pcie_width"));
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  FAKE_GPU_QUERY(major, std::sscanf(gpu->Get("cc").c_str(), "%d.%d", major, minor));
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  FAKE_GPU_QUERY(current, *current = *pending = gpu->Flag("mig") ? NVML_DEVICE_MIG_ENABLE : 0);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  FAKE_GPU_QUERY(count, *count = 7);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* mig) {
  FAKE_GPU_QUERY(mig, {
    if (!gpu->Flag("mig")) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (auto& m : gpu->migs) {
      if (m->Num("slot") == index) {
        *mig = ToHandle(m.get());
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_ANY_QUERY(id, {
    if (d->parent == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;  // not a MIG device
    }
    *id = d->Num("gi");
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_ANY_QUERY(id, {
    if (d->parent == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *id = d->Num("ci");
  });
}

// ---- The test API. ----

// Replaces the GPUs and settings (see the top of this file). Handles from before are
// invalid afterwards.
void fake_nvml_set_script(const char* script) {
  std::lock_guard<std::mutex> lock(S().mu);
  ParseScript(S(), script);
}

// nvmlInit_v2 / nvmlShutdown calls that succeeded, and the current reference count.
int fake_nvml_inits() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().inits;
}
int fake_nvml_shutdowns() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().shutdowns;
}
int fake_nvml_refs() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().refs;
}

}  // extern "C"
