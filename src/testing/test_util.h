// Shared test support: temp dirs, condition waits with deadlines, and helpers to drive
// an io_context deterministically from a test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/clock.h"

namespace drover::testing {

// A fresh directory under $TMPDIR removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Polls `pred` (every few ms, real time) until true or `timeout` passes. For waits on
// other processes or threads; never a substitute for a fake clock.
bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Runs ready handlers of `io` until `pred` holds or `timeout` (real time) passes. Real
// timers and I/O make progress too (run_for in small slices).
bool RunUntil(asio::io_context& io, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Like RunUntil, but when nothing is runnable and no Offload work is in flight, advances
// `clock` to the next sleeper's deadline, so fake-clock code runs to completion
// without real waiting and deterministically.
bool RunWithFakeClock(asio::io_context& io, common::FakeClock& clock,
                      const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Reads a whole file ("" if missing).
std::string ReadFile(const std::filesystem::path& p);

// Path of a built executable next to the test binaries (set by CMake as
// DROVER_BINARY_DIR, or by the environment variable of that name, e.g. to run a long
// torture against a copy while the build goes on), e.g. BinaryPath("drover").
std::filesystem::path BinaryPath(const std::string& name);

// A server process for a test fixture (etcd, dockerd, a registry): `args` (args[0] the
// binary's path) with stdout and stderr appended to `log`, sent `death_signal` when the
// test process dies, so a test that crashes leaves nothing behind (fork/exec rather than
// posix_spawn for that). The pid, or -1.
pid_t SpawnServer(std::vector<std::string> args, const std::string& log, int death_signal);
// Waits until `ready()` holds, or the process exits (then reaped, `*exited` set), or
// `timeout` passes. True only when ready.
bool WaitServerReady(pid_t pid, const std::function<bool()>& ready,
                     std::chrono::milliseconds timeout, bool* exited);

}  // namespace drover::testing
