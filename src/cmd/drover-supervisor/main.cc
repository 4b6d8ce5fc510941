// drover-supervisor: the per-node process that holds every task (see
// src/supervisor/server.h and docs/supervisor.md). Started by the agent; survives it.
//
//   drover-supervisor -socket PATH -state-dir DIR [-journal PATH] [-log-level LEVEL]
//
// The agent runs it under drover-reaper, which passes -journal (see server.h).
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <boost/asio/signal_set.hpp>

#include "common/logging.h"
#include "supervisor/server.h"

int main(int argc, char** argv) {
  drover::supervisor::ServerConfig config;
  std::string level = "info";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "drover-supervisor: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "-socket" || arg == "--socket") {
      config.socket_path = value("-socket");
    } else if (arg == "-state-dir" || arg == "--state-dir") {
      config.state_dir = value("-state-dir");
    } else if (arg == "-journal" || arg == "--journal") {
      config.journal = value("-journal");
    } else if (arg == "-log-level" || arg == "--log-level") {
      level = value("-log-level");
    } else {
      std::fprintf(stderr,
                   "usage: drover-supervisor -socket PATH -state-dir DIR [-journal PATH] "
                   "[-log-level LEVEL]\n");
      return 2;
    }
  }
  if (config.socket_path.empty() || config.state_dir.empty()) {
    std::fprintf(stderr, "drover-supervisor: -socket and -state-dir are required\n");
    return 2;
  }
  drover::common::InitLogging(level);
  // Without a reaper, tasks are our children: what they orphan is re-parented here and
  // reaped, not left as zombies of init. (Under drover-reaper, it does that.)
  if (config.journal.empty() && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    DROVER_LOG_WARN("supervisor: PR_SET_CHILD_SUBREAPER: {}", std::strerror(errno));
  }
  // When memory runs out the kernel should kill tasks, not the process that holds them.
  if (std::FILE* f = std::fopen("/proc/self/oom_score_adj", "we")) {
    const bool wrote = std::fputs("-1000", f) >= 0;
    if (std::fclose(f) != 0 || !wrote)
      DROVER_LOG_WARN("supervisor: oom_score_adj: {}", std::strerror(errno));
  }
  // A reader going away must never kill us.
  signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io;
  drover::supervisor::Server server(io, config);
  server.on_exit_requested = [&io] { io.stop(); };
  if (absl::Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "drover-supervisor: %s\n", s.ToString().c_str());
    return 1;
  }
  DROVER_LOG_INFO("supervisor: listening on {} ({} tasks held)", config.socket_path.string(),
                  server.num_tasks());
  boost::asio::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&](const boost::system::error_code&, int sig) {
    DROVER_LOG_INFO("supervisor: signal {}; exiting, tasks keep running", sig);
    server.Stop();
    io.stop();
  });
  io.run();
  return 0;
}
