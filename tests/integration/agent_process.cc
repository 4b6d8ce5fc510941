#include "tests/integration/agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/derived_token.h"
#include "testing/fixture_servers.h"

extern char** environ;

namespace drover::integration {
namespace fs = std::filesystem;

namespace {

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> CurrentEnv() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    env.emplace_back(*e);
  return env;
}

}  // namespace

void BecomeSubreaper() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

void KillRemainingChildren() {
  const std::string me = std::to_string(getpid());
  for (int round = 0; round < 3; ++round) {
    bool any = false;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos)
        continue;
      std::ifstream status(entry.path() / "status");
      std::string line;
      while (std::getline(status, line)) {
        if (line.rfind("PPid:", 0) == 0) {
          std::string ppid = line.substr(5);
          ppid.erase(0, ppid.find_first_not_of(" \t"));
          // A fixture's server (dockerd, etcd, a registry) is its fixture's to stop.
          if (ppid == me && !testing::IsFixtureServer(std::stoi(name))) {
            kill(std::stoi(name), SIGKILL);
            any = true;
          }
          break;
        }
      }
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (!any)
      break;
  }
}

CliResult RunProcess(const std::vector<std::string>& argv_in,
                     const std::vector<std::string>& env_in) {
  testing::TempDir tmp;
  const fs::path out = tmp.path() / "out";
  const fs::path err = tmp.path() / "err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = argv_in;
  std::vector<std::string> env_s = env_in;
  auto argv = CStrings(argv_s);
  auto envp = CStrings(env_s);
  pid_t pid = 0;
  CliResult r;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    r.err = "failed to spawn " + argv_in[0];
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = testing::ReadFile(out);
  r.err = testing::ReadFile(err);
  return r;
}

AgentProcess::AgentProcess(std::vector<std::string> extra_args, Role role,
                           const std::function<void(const fs::path&)>& before_start) {
  BecomeSubreaper();
  args_ = {testing::BinaryPath("drover").string(),
           "agent",
           "-http-port",
           "0",
           "-data-dir",
           dir_.path().string(),
           "-log-level",
           "debug"};
  if (std::find(extra_args.begin(), extra_args.end(), "-node") == extra_args.end())
    args_.insert(args_.end(), {"-node", "itest-node"});
  switch (role) {
    case Role::kDev:
      args_.insert(args_.begin() + 2, "-dev");
      break;
    case Role::kServerAndClient:
      args_.insert(args_.begin() + 2, {"-server", "-client", "-rpc-port", "0"});
      break;
    case Role::kServer:
      args_.insert(args_.begin() + 2, {"-server", "-bootstrap-expect", "1", "-rpc-port", "0"});
      break;
    case Role::kClient:
      args_.insert(args_.begin() + 2, "-client");
      break;
  }
  for (auto& a : extra_args)
    args_.push_back(std::move(a));
  if (before_start)
    before_start(dir_.path());
  Start({});
}

void AgentProcess::SetFlag(const std::string& flag, const std::string& value) {
  auto it = std::find(args_.begin(), args_.end(), flag);
  if (it != args_.end() && it + 1 != args_.end()) {
    *(it + 1) = value;
  } else {
    args_.push_back(flag);
    args_.push_back(value);
  }
}

void AgentProcess::Restart(const std::vector<std::string>& extra_args) {
  Start(extra_args);
}

void AgentProcess::Kill() {
  if (pid_ <= 0)
    return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void AgentProcess::Start(const std::vector<std::string>& extra_args) {
  address_.clear();
  exit_status_ = -1;
  http_.reset();
  const fs::path ready = dir_.path() / "http.addr";
  std::error_code ec;
  fs::remove(ready, ec);  // left by a killed agent
  fs::remove(dir_.path() / "rpc.addr", ec);
  std::vector<std::string> args = args_;
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto argv = CStrings(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, (dir_.path() / "agent.out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Appended: the log of an agent restarted on this dir follows the earlier one's.
  posix_spawn_file_actions_addopen(&fa, 2, (dir_.path() / "agent.err").c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<std::string> env_s = CurrentEnv();
  auto envp = CStrings(env_s);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "failed to start " << args[0];
    return;
  }
  pid_ = pid;
  const bool up = testing::WaitFor(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          return true;
        }
        return fs::exists(ready);
      },
      std::chrono::seconds(30));
  if (!up)
    ADD_FAILURE() << "agent did not start; log:\n" << log();
  if (!up || pid_ < 0)
    return;
  std::string addr = testing::ReadFile(ready);
  addr.erase(addr.find_last_not_of("\n") + 1);
  address_ = addr;
  rpc_address_.clear();
  if (fs::exists(dir_.path() / "rpc.addr")) {
    rpc_address_ = testing::ReadFile(dir_.path() / "rpc.addr");
    rpc_address_.erase(rpc_address_.find_last_not_of("\n") + 1);
  }
  auto parsed = cli::ParseAddress("http://" + address_);
  http_ = cli::NewHttpClient(*parsed);
}

absl::StatusOr<cli::HttpResponse> AgentProcess::GetSnapshot(const std::string& alloc_id) {
  std::string secret = testing::ReadFile(dir_.path() / "client" / "secret-id");
  secret.erase(secret.find_last_not_of("\n") + 1);
  auto parsed = cli::ParseAddress("http://" + address_);
  if (!parsed.ok())
    return parsed.status();
  auto client = cli::NewHttpClient(*parsed, common::MigrateToken(secret, alloc_id));
  return client->Do("GET", "/v1/client/allocation/" + alloc_id + "/snapshot", {},
                    std::chrono::seconds(30));
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0)
    Stop();
  KillRemainingChildren();
}

int AgentProcess::Stop(std::chrono::seconds timeout) {
  if (pid_ <= 0)
    return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  const bool exited =
      testing::WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (!exited) {
    ADD_FAILURE() << "agent did not exit on SIGTERM; killing it";
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string AgentProcess::log() const {
  return testing::ReadFile(dir_.path() / "agent.err");
}

codec::Json AgentProcess::Get(const std::string& path) {
  auto r = http_->Do("GET", path);
  EXPECT_TRUE(r.ok()) << path << ": " << r.status();
  if (!r.ok())
    return codec::Json();
  auto j = codec::ParseJson(r->body);
  EXPECT_TRUE(j.ok()) << path;
  return j.ok() ? *j : codec::Json();
}

CliResult AgentProcess::Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::BinaryPath("drover").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = CurrentEnv();
  env.push_back("NOMAD_ADDR=http://" + address_);
  return RunProcess(argv, env);
}

std::string AgentProcess::WriteFile(const std::string& name, const std::string& content) {
  const fs::path p = dir_.path() / name;
  std::ofstream(p) << content;
  return p.string();
}

}  // namespace drover::integration
