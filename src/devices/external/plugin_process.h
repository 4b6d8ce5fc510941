// One running external device plugin process: started with posix_spawn in its own
// process group, with pipes on its stdin and stdout and its stderr forwarded line by
// line to the agent log (a thread per process). Moves protocol lines with deadlines;
// external_plugin.cc decides what they mean.
//
// Thread-safety: WriteLine and ReadLine are for one thread at a time (the plugin
// serializes its requests). Kill() and Reap() may be called from any thread, also while
// another thread is blocked in ReadLine or WriteLine, which Kill() wakes. Kill() never
// waits; Reap() waits only as long as it is told to; the destructor waits until the
// killed process is gone (which is only long for one stuck in the kernel).
//
// SIGPIPE: a write to a plugin that died fails with Unavailable instead of killing the
// agent, whatever the process-wide disposition (the agent ignores SIGPIPE anyway):
// WriteLine blocks SIGPIPE on its thread around the write and discards one it raised.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::devices::external {

class PluginProcess {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Longest line (without its newline) ReadLine accepts.
  static constexpr size_t kMaxLineBytes = size_t{16} << 20;
  // For Reap(): wait as long as it takes.
  static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();

  // Starts `command` (a path; no PATH lookup) with `args` after argv[0] = `command`,
  // the agent's environment and working directory, default signal dispositions and an
  // empty signal mask. `name` labels forwarded stderr lines. Errors: NotFound,
  // PermissionDenied or Unavailable (with the errno text) when it cannot be started.
  static absl::StatusOr<std::unique_ptr<PluginProcess>> Start(const std::string& name,
                                                              const std::string& command,
                                                              const std::vector<std::string>& args);

  // Kills the process group unless already reaped, reaps the process (waiting as long
  // as that takes), stops the stderr forwarding (logging what was still buffered) and
  // closes the pipes.
  ~PluginProcess();

  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Writes `line` and a newline to the plugin's stdin by `deadline`. Errors:
  // DeadlineExceeded (the plugin did not read its stdin), Unavailable (it closed its
  // stdin, usually by exiting), Aborted (Kill() was called).
  absl::Status WriteLine(std::string_view line, Deadline deadline);

  // The next line of the plugin's stdout, without the newline (and a trailing '\r').
  // Errors: DeadlineExceeded (no complete line in time), Unavailable (end of file:
  // the plugin closed its stdout, usually by exiting), ResourceExhausted (a line longer
  // than kMaxLineBytes), Aborted (Kill() was called).
  absl::StatusOr<std::string> ReadLine(Deadline deadline);

  // Sends SIGKILL to the process group and makes every current and later
  // WriteLine/ReadLine fail with Aborted. Idempotent; never blocks for long.
  void Kill();
  bool killed() const;

  // Waits up to `exit_grace` for the process to exit by itself, then kills the group and
  // waits up to `kill_grace` (or kForever) for it to die; once it has, reaps it (killing
  // what is left of its group first) and returns how it ended: "status 3", "signal 9",
  // the same text on later calls. nullopt when it is still not gone (stuck in
  // uninterruptible sleep, or held by a tracer): call again later.
  std::optional<std::string> Reap(std::chrono::milliseconds exit_grace,
                                  std::chrono::milliseconds kill_grace);

 private:
  PluginProcess(std::string name, pid_t pid, int stdin_fd, int stdout_fd, int stderr_fd,
                int wake_read_fd, int wake_write_fd);

  // The stderr thread: logs whole lines until end of file or Kill().
  void ForwardStderr();

  // Whether the process has exited (or cannot be waited for: reaped elsewhere), waiting
  // up to `grace` for that, without reaping it. REQUIRES: reap_mu_ held.
  bool WaitExit(std::chrono::milliseconds grace);

  // Immutable after construction.
  const std::string name_;
  const pid_t pid_;
  const int stdin_fd_;   // write end, non-blocking
  const int stdout_fd_;  // read end, non-blocking
  const int stderr_fd_;  // read end, non-blocking; used by stderr_thread_ only
  // A pipe that becomes (and stays) readable on Kill(): wakes every poll() on it.
  const int wake_read_fd_;
  const int wake_write_fd_;

  // Bytes read from stdout past the last returned line. Used by ReadLine only.
  std::string stdout_buf_;

  // Guards the pid against reuse: nothing signals the group once it is reaped.
  mutable std::mutex mu_;
  bool killed_ = false;  // guarded by mu_
  bool reaped_ = false;  // guarded by mu_

  // Serializes Reap() callers; the second returns the first's result.
  std::mutex reap_mu_;
  std::optional<std::string> exit_description_;  // guarded by reap_mu_; set once reaped

  std::thread stderr_thread_;
};

}  // namespace drover::devices::external
