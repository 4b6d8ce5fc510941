// The evaluation monitor `job run` and `job stop` end with (Nomad's command/monitor.go):
// polls the evaluation and its allocations until the evaluation is complete, failed or
// canceled, following NextEval, and prints what changed:
//
//   ==> 2026-11-30T02:53:31Z: Monitoring evaluation "5e2c6f8d"
//       2026-11-30T02:53:31Z: Evaluation triggered by job "hello"
//       2026-11-30T02:53:32Z: Allocation "a1b2c3d4" created: node "12345678", group "hello"
//       2026-11-30T02:53:32Z: Evaluation status changed: "pending" -> "complete"
//   ==> 2026-11-30T02:53:32Z: Evaluation "5e2c6f8d" finished with status "complete"
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/exit_codes.h"
#include "cli/http_client.h"
#include "cli/ui.h"

#include "model/allocation.h"
#include "model/evaluation.h"

namespace drover::cli {

// Blocking queries of the monitors: how long the agent may hold one, and how long the
// CLI waits for its answer.
inline constexpr char kBlockingWait[] = "5s";
inline constexpr std::chrono::milliseconds kRequestTimeout{35'000};

// What the monitor remembers of an evaluation between polls.
struct MonitoredAlloc {
  std::string id;
  std::string group;
  std::string node;
  std::string desired;
  std::string client;
  std::string client_description;
  uint64_t create_index = 0;
};

struct EvalState {
  std::string status = "pending";
  std::string node;
  std::string job;
  std::string deployment;
  uint64_t create_index = 0;
  std::map<std::string, MonitoredAlloc> allocs;  // by ID
};

// The messages (without timestamp or prefix) for the change from `before` to `after`:
// "Evaluation triggered by job ...", "Allocation ... created: ...", "Allocation ...
// status changed: ...", "Evaluation status changed: ...". IDs are cut to `id_length`.
std::vector<std::string> EvalStateChanges(const EvalState& before, const EvalState& after,
                                          size_t id_length);

// The per-group placement-failure block printed after "... but failed to place all
// allocations:": for each group (sorted) `<timestamp>: Task Group "g" (failed to place N
// allocation[s]):` followed by its FormatAllocMetrics lines indented by two spaces.
std::vector<std::string> FormatPlacementFailures(
    const std::map<std::string, model::AllocMetric>& failed, std::string_view timestamp);

class EvalMonitor {
 public:
  // Polls are at least this far apart when the agent answers at once (no blocking
  // query support, or a table index that moves for other objects).
  static constexpr std::chrono::milliseconds kMinPollInterval{100};

  // `client` and `ui` must outlive the monitor. IDs are printed cut to `id_length`.
  EvalMonitor(HttpClient& client, Ui& ui, size_t id_length,
              std::chrono::milliseconds min_poll_interval = kMinPollInterval);

  // Monitors `eval_id` to the end, then the deployment it worked for, if any, until that
  // deployment ends (MonitorDeployment). Returns kExitOk when it finished with
  // everything placed (and its deployment successful), kExitPlacementFailure when some
  // allocations could not be placed, kExitError when the API could not be read or the
  // deployment did not succeed.
  int Monitor(const std::string& eval_id);

 private:
  void Info(std::string_view message);
  void Output(std::string_view message);
  static absl::StatusOr<model::Evaluation> EvaluationOf(const HttpResponse& response);
  // The evaluation's state with its allocations, for EvalStateChanges; nothing (the error
  // printed) when they cannot be read.
  std::optional<EvalState> StateOf(const model::Evaluation& eval, const std::string& eval_path);
  // Prints how the evaluation finished; true when it failed to place something.
  bool ReportFinished(const model::Evaluation& eval);
  std::string Timestamp() const;

  HttpClient& client_;
  Ui& ui_;
  const size_t id_length_;
  const std::chrono::milliseconds min_poll_interval_;
  EvalState state_;
};

// Follows a deployment until it is successful (kExitOk) or failed, cancelled or blocked
// (kExitError), printing its status block (FormatDeploymentStatus) whenever it changes.
// A deployment that failed and rolled back is followed by the one of the version rolled
// back to (the exit code stays kExitError, as Nomad's).
int MonitorDeployment(HttpClient& client, Ui& ui, const std::string& id, size_t id_length);

}  // namespace drover::cli
