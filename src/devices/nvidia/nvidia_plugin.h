// The nvidia device plugin: NVIDIA GPUs through NVML, loaded with dlopen at run time
// (no build-time dependency on the CUDA toolkit or the driver). See docs/devices.md.
#pragma once

#include <string>
#include <vector>

#include "devices/device_plugin.h"

namespace drover::devices {

struct NvidiaPluginConfig {
  // `plugin "nvidia" { config { enabled = false } }` turns the plugin off.
  bool enabled = true;
  // GPU UUIDs (or MIG UUIDs) never reported.
  std::vector<std::string> ignored_gpu_ids;
  // What dlopen loads; tests point it at a fake NVML library.
  std::string nvml_library = "libnvidia-ml.so.1";
  // Where the device nodes are (/dev/nvidia0, /dev/nvidiactl, ...); tests change it.
  std::string dev_dir = "/dev";
  // The driver's /proc directory, where a MIG device's capability files say which
  // /dev/nvidia-caps nodes it needs; tests change it.
  std::string proc_dir = "/proc/driver/nvidia";
};

// Never fails: a host without NVML gets a plugin whose Fingerprint returns
// FailedPrecondition (the manager then treats the plugin as having no devices).
DevicePluginPtr MakeNvidiaPlugin(NvidiaPluginConfig config);

}  // namespace drover::devices
