// The test's handle on the fake NVML library (fake_nvml.cc): dlopens it beside the
// plugin, so the plugin's dlclose never unloads it and both see one copy of its state,
// and calls its scripting API.
#pragma once

#include <dlfcn.h>

#include <string>

namespace drover::devices {

class FakeNvml {
 public:
  // `path` is the built fake library (the test gets it from CMake).
  explicit FakeNvml(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW)) {
    if (handle_ != nullptr) {
      Resolve("fake_nvml_set_script", set_script_);
      Resolve("fake_nvml_inits", inits_);
      Resolve("fake_nvml_shutdowns", shutdowns_);
      Resolve("fake_nvml_refs", refs_);
    }
  }
  ~FakeNvml() {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  bool loaded() const { return set_script_ && inits_ && shutdowns_ && refs_; }
  // Replaces the GPUs (the format is described at the top of fake_nvml.cc).
  void SetScript(const std::string& script) { set_script_(script.c_str()); }
  // Successful nvmlInit_v2 and nvmlShutdown calls so far, and the reference count now.
  int inits() const { return inits_(); }
  int shutdowns() const { return shutdowns_(); }
  int refs() const { return refs_(); }

 private:
  template <typename Fn>
  void Resolve(const char* symbol, Fn& out) {
    out = reinterpret_cast<Fn>(dlsym(handle_, symbol));
  }

  void* handle_;
  void (*set_script_)(const char*) = nullptr;
  int (*inits_)() = nullptr;
  int (*shutdowns_)() = nullptr;
  int (*refs_)() = nullptr;
};

}  // namespace drover::devices
