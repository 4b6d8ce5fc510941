// Shared by the scenario benchmarks: a real `drover agent -dev` on a data dir, found
// through its ready-file, and the JSON result line.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace drover::bench {

// Starts `drover agent -dev` on `dir` (its log in dir/agent.err, appended) and waits
// for its HTTP address. Returns the pid, or -1 (with a message) when it did not start.
inline pid_t StartAgent(const std::string& drover, const std::filesystem::path& dir,
                        std::string& addr, const std::vector<std::string>& extra_args = {}) {
  std::error_code ec;
  std::filesystem::remove(dir / "http.addr", ec);
  std::vector<std::string> args = {drover,      "agent",      "-dev",       "-http-port", "0",
                                   "-data-dir", dir.string(), "-log-level", "warn"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> cargs;
  for (auto& a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir / "agent.out").c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (dir / "agent.err").c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t agent = 0;
  const int rc = posix_spawn(&agent, drover.c_str(), &fa, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::fprintf(stderr, "failed to start %s\n", drover.c_str());
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(dir / "http.addr")) {
    if (std::chrono::steady_clock::now() > deadline || waitpid(agent, nullptr, WNOHANG) == agent) {
      std::fprintf(stderr, "agent did not start (log: %s)\n", (dir / "agent.err").c_str());
      kill(agent, SIGKILL);
      waitpid(agent, nullptr, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream(dir / "http.addr") >> addr;
  return agent;
}

// A service job of `count` single-task raw_exec allocations running `sleep`, each
// asking little (CPU 1, 10 MB, a 10 MB disk its one-file log fits in): the body of
// PUT /v1/jobs.
inline nlohmann::json SleepJob(const std::string& id, int count) {
  return {{"Job",
           {{"ID", id},
            {"Type", "service"},
            {"Datacenters", {"dc1"}},
            {"TaskGroups",
             {{{"Name", "g"},
               {"Count", count},
               {"EphemeralDisk", {{"SizeMB", 10}}},
               {"Tasks",
                {{{"Name", "t"},
                  {"Driver", "raw_exec"},
                  {"Config", {{"command", "/bin/sleep"}, {"args", {"100000"}}}},
                  {"LogConfig", {{"MaxFiles", 1}, {"MaxFileSizeMB", 1}}},
                  {"Resources", {{"CPU", 1}, {"MemoryMB", 10}}}}}}}}}}}};
}

inline void Emit(nlohmann::ordered_json j) {
  if (j.contains("baseline") && j["baseline"].get<double>() > 0)
    j["ratio"] = j["value"].get<double>() / j["baseline"].get<double>();
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// Starts `args` (args[0] a path) with stdout and stderr appended to `out` and `err`;
// the pid, or -1.
inline pid_t Spawn(const std::vector<std::string>& args, const std::filesystem::path& out,
                   const std::filesystem::path& err) {
  std::vector<char*> cargs;
  std::vector<std::string> copy = args;
  for (auto& a : copy)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0].c_str(), &fa, nullptr, cargs.data(), environ) != 0)
    pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// SIGTERM, then SIGKILL after 10 s; reaped.
inline void Stop(pid_t pid) {
  if (pid <= 0)
    return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 100 && waitpid(pid, nullptr, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Polls `pred` every `every` until it holds or `timeout` passes.
template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::seconds timeout,
               std::chrono::milliseconds every = std::chrono::milliseconds(200)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred())
      return true;
    std::this_thread::sleep_for(every);
  }
  return pred();
}

}  // namespace drover::bench
