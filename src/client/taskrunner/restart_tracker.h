// The restart-policy decision function (reference §6.2). The TaskRunner records what
// happened (start error, exit result, kill, user restart) and asks GetState() what to
// do next; every input is cleared by GetState().
//
// Pure logic over an injected clock and random source: not thread-safe, no I/O.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"

#include "common/clock.h"
#include "drivers/driver.h"
#include "model/job.h"

namespace drover::taskrunner {

enum class RestartDecision { kRestarting, kNotRestarting, kTerminated, kKilled, kNone };

class RestartTracker {
 public:
  // `jitter` returns a value in [0, 1); defaults to a seeded generator.
  RestartTracker(const model::RestartPolicy& policy, const std::string& job_type,
                 const model::Task& task, common::Clock& clock,
                 std::function<double()> jitter = nullptr);

  void SetStartError(const absl::Status& err);
  void SetExitResult(const drivers::ExitResult& result);
  // failure=true counts against the policy; false is a user-requested restart.
  void SetRestartTriggered(bool failure);
  void SetKilled();

  struct State {
    RestartDecision decision = RestartDecision::kNone;
    common::Duration delay{0};
    std::string reason;
  };
  State GetState();

  bool restart_on_success() const { return on_success_; }

  // The current window (for persisting), and one persisted before an agent restart.
  struct Window {
    common::Time start;
    int count = 0;
  };
  Window window() const { return {window_start_, count_}; }
  void RestoreWindow(Window w) {
    window_start_ = w.start;
    count_ = w.count;
  }

 private:
  model::RestartPolicy policy_;
  bool on_success_ = true;
  common::Clock& clock_;
  std::function<double()> jitter_;
  common::Time window_start_;
  int count_ = 0;

  std::optional<absl::Status> start_err_;
  std::optional<drivers::ExitResult> exit_;
  bool failure_ = false;
  bool restart_requested_ = false;
  bool killed_ = false;
};

inline constexpr char kReasonWithinPolicy[] = "Restart within policy";
inline constexpr char kReasonNoRestartsAllowed[] = "Policy allows no restarts";
inline constexpr char kReasonUnrecoverable[] = "Error was unrecoverable";
inline constexpr char kReasonDelay[] = "Exceeded allowed attempts, applying a delay";
inline constexpr char kReasonSuccess[] = "Restart unnecessary as task terminated successfully";

}  // namespace drover::taskrunner
