// A real `drover agent -dev` process for integration tests: own temp data dir, an
// ephemeral loopback port (read from the agent's <data_dir>/http.addr ready-file), an
// HTTP client, and a runner for CLI commands against it. The destructor stops the agent
// and kills any process it left behind (the test process is a child subreaper, so task
// processes orphaned by a crashed agent are re-parented to it and reaped here).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/http_client.h"

#include "testing/test_util.h"

namespace drover::integration {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class AgentProcess {
 public:
  // What the agent runs as: -dev, -server -client (one process, no -dev), or one role
  // (a client-only agent needs -servers in the extra arguments).
  enum class Role { kDev, kServerAndClient, kServer, kClient };

  // Starts the agent; check ok() before use. `before_start`, when given, runs with the
  // data dir first (to mount something there).
  explicit AgentProcess(std::vector<std::string> extra_args = {}, Role role = Role::kDev,
                        const std::function<void(const std::filesystem::path&)>& before_start = {});
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  bool ok() const { return !address_.empty(); }
  const std::string& address() const { return address_; }  // "127.0.0.1:NNNNN"
  // A server's RPC address (from <data_dir>/rpc.addr); empty for other roles.
  const std::string& rpc_address() const { return rpc_address_; }
  const std::filesystem::path& data_dir() const { return dir_.path(); }
  std::string log() const;  // the agent's stderr so far
  int pid() const { return pid_; }
  cli::HttpClient& http() { return *http_; }
  // GET /v1/client/allocation/<id>/snapshot with the migrate token a server would hand
  // a replacement's node (derived from this agent's node secret).
  absl::StatusOr<cli::HttpResponse> GetSnapshot(const std::string& alloc_id);

  // GET returning parsed JSON (fails the calling test on error).
  codec::Json Get(const std::string& path);
  // Runs `drover <args...>` with NOMAD_ADDR pointing at this agent.
  CliResult Cli(const std::vector<std::string>& args);
  // Writes `content` to a file in the temp dir and returns its path.
  std::string WriteFile(const std::string& name, const std::string& content);
  // Sends SIGTERM and waits (up to `timeout`) for exit; returns the exit status.
  int Stop(std::chrono::seconds timeout = std::chrono::seconds(30));
  // SIGKILL: the agent gets no chance to clean up (its tasks and supervisor live on).
  void Kill();
  // Sets `flag` to `value` for later restarts (replacing the value it had).
  void SetFlag(const std::string& flag, const std::string& value);
  // Starts the agent again on the same data dir (after Stop or Kill), with
  // `extra_args` added this time only; check ok().
  void Restart(const std::vector<std::string>& extra_args = {});
  // The exit status of an agent that exited by itself (e.g. refused to start), or -1.
  int exit_status() const { return exit_status_; }

 private:
  void Start(const std::vector<std::string>& extra_args);

  testing::TempDir dir_;
  std::vector<std::string> args_;
  int pid_ = -1;
  int exit_status_ = -1;
  std::string address_;
  std::string rpc_address_;
  std::unique_ptr<cli::HttpClient> http_;
};

// Runs `argv` to completion, capturing stdout and stderr.
CliResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Makes this process a child subreaper and kills every direct child still alive
// (used at teardown).
void BecomeSubreaper();
void KillRemainingChildren();

}  // namespace drover::integration
