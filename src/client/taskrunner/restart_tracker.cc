#include "client/taskrunner/restart_tracker.h"

#include "common/ids.h"
#include "model/task_state.h"

namespace drover::taskrunner {

RestartTracker::RestartTracker(const model::RestartPolicy& policy, const std::string& job_type,
                               const model::Task& task, common::Clock& clock,
                               std::function<double()> jitter)
    : policy_(policy), clock_(clock), jitter_(std::move(jitter)), window_start_(clock.Now()) {
  if (job_type == model::kJobTypeBatch || job_type == model::kJobTypeSysbatch) {
    on_success_ = false;
  }
  if (task.IsPrestart() || task.IsPoststart()) {
    on_success_ = task.lifecycle->sidecar;
  } else if (task.IsPoststop()) {
    on_success_ = false;
  }
  if (!jitter_)
    jitter_ = common::RandomUnit;  // (one generator per thread, not 2.5 KB per task)
}

void RestartTracker::SetStartError(const absl::Status& err) {
  start_err_ = err;
  failure_ = true;
}

void RestartTracker::SetExitResult(const drivers::ExitResult& result) {
  exit_ = result;
  failure_ = true;
}

void RestartTracker::SetRestartTriggered(bool failure) {
  if (failure) {
    failure_ = true;
  } else {
    restart_requested_ = true;
  }
}

void RestartTracker::SetKilled() {
  killed_ = true;
}

RestartTracker::State RestartTracker::GetState() {
  State st;
  // Clear the inputs whatever we decide.
  const auto start_err = std::move(start_err_);
  const auto exit = std::move(exit_);
  const bool failure = failure_;
  const bool requested = restart_requested_;
  const bool killed = killed_;
  start_err_.reset();
  exit_.reset();
  failure_ = restart_requested_ = killed_ = false;

  if (killed) {
    st.decision = RestartDecision::kKilled;
    return st;
  }
  if (requested) {
    st.decision = RestartDecision::kRestarting;
    return st;
  }
  const bool success_exit = exit && exit->Successful() && !start_err;
  if (policy_.attempts == 0) {
    st.reason = kReasonNoRestartsAllowed;
    st.decision = (!on_success_ && success_exit) ? RestartDecision::kTerminated
                                                 : RestartDecision::kNotRestarting;
    return st;
  }
  const common::Time now = clock_.Now();
  if (now > window_start_ + policy_.interval) {
    count_ = 0;
    window_start_ = now;
  }
  ++count_;
  if (!failure) {
    return st;  // kNone: the runner restarts at once
  }
  if (start_err && !drivers::IsRecoverable(*start_err)) {
    st.decision = RestartDecision::kNotRestarting;
    st.reason = kReasonUnrecoverable;
    return st;
  }
  if (success_exit && !on_success_) {
    st.decision = RestartDecision::kTerminated;
    st.reason = kReasonSuccess;
    return st;
  }
  if (count_ > policy_.attempts) {
    if (policy_.mode == model::kRestartModeFail) {
      st.decision = RestartDecision::kNotRestarting;
      st.reason = "Exceeded allowed attempts " + std::to_string(policy_.attempts) +
                  " in interval " + model::FormatGoDuration(policy_.interval) +
                  " and mode is \"fail\"";
      return st;
    }
    st.decision = RestartDecision::kRestarting;
    st.reason = kReasonDelay;
    st.delay = (window_start_ + policy_.interval) - now;
    return st;
  }
  st.decision = RestartDecision::kRestarting;
  st.reason = kReasonWithinPolicy;
  const common::Duration base = policy_.delay.count() > 0 ? policy_.delay : common::Duration(1);
  st.delay = base + common::Duration(
                        static_cast<int64_t>(static_cast<double>(base.count()) * 0.25 * jitter_()));
  return st;
}

}  // namespace drover::taskrunner
