// Validation of a group's policies: restart, reschedule, migrate and update (Nomad's
// RestartPolicy, ReschedulePolicy, MigrateStrategy and UpdateStrategy Validate).
#include "codec/internal/validate_policies.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "common/go_strings.h"
#include "model/task_state.h"

namespace drover::codec::internal {

namespace {

using Errors = std::vector<std::string>;
using model::Duration;
using model::FormatGoDuration;

constexpr Duration kRestartMinInterval = std::chrono::seconds(5);
constexpr Duration kRescheduleMinInterval = std::chrono::seconds(15);
constexpr Duration kRescheduleMinDelay = std::chrono::seconds(5);
constexpr const char* kDelayFunctions[] = {"constant", "exponential", "fibonacci"};

// a * b, saturating instead of overflowing.
Duration Mul(int64_t n, Duration d) {
  int64_t out = 0;
  if (__builtin_mul_overflow(n, d.count(), &out)) {
    return (n < 0) != (d.count() < 0) ? Duration::min() : Duration::max();
  }
  return Duration(out);
}

// a + b, saturating instead of overflowing.
Duration Add(Duration a, Duration b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a.count(), b.count(), &out))
    return b.count() < 0 ? Duration::min() : Duration::max();
  return Duration(out);
}

// Go's time.Duration.Round: to the nearest multiple, halfway away from zero.
Duration Round(Duration d, Duration m) {
  int64_t r = d.count() % m.count();
  if (d.count() < 0) {
    r = -r;
    return r + r < m.count() ? d + Duration(r) : Add(d + Duration(r), -m);
  }
  return r + r < m.count() ? d - Duration(r) : Add(d, m - Duration(r));
}

}  // namespace

void CheckRestartPolicy(const model::RestartPolicy& p, Errors& errs) {
  if (p.mode != model::kRestartModeDelay && p.mode != model::kRestartModeFail) {
    errs.push_back(absl::StrCat("Unsupported restart mode: ", common::GoQuote(p.mode)));
  }
  if (p.attempts < 0) {
    errs.push_back(absl::StrCat("Restart policy ", common::GoQuote(p.mode), " with ", p.attempts,
                                " attempts is invalid (attempts must be >= 0)"));
  } else if (p.attempts == 0 && p.mode != model::kRestartModeFail) {
    errs.push_back(absl::StrCat("Restart policy ", common::GoQuote(p.mode), " with ", p.attempts,
                                " attempts is ambiguous"));
  }
  if (p.interval < kRestartMinInterval) {
    errs.push_back(absl::StrCat("Interval can not be less than ",
                                FormatGoDuration(kRestartMinInterval), " (got ",
                                FormatGoDuration(p.interval), ")"));
  }
  if (Mul(p.attempts, p.delay) > p.interval) {
    errs.push_back(absl::StrCat("Nomad can't restart the TaskGroup ", p.attempts,
                                " times in an interval of ", FormatGoDuration(p.interval),
                                " with a delay of ", FormatGoDuration(p.delay)));
  }
}

namespace {

bool IsDelayFunction(const std::string& f) {
  for (const char* known : kDelayFunctions) {
    if (f == known) {
      return true;
    }
  }
  return false;
}

// ReschedulePolicy.viableAttempts: whether `attempts` reschedules fit in the interval,
// how many do, and the interval that would fit them all. Attempts are at most
// JobLimits::kMaxAttempts here (CheckJobLimits ran first) and sums saturate.
bool ViableAttempts(const model::ReschedulePolicy& p, int& possible, Duration& recommended) {
  possible = 0;
  recommended = Duration::zero();
  bool valid = true;
  if (p.delay_function == "constant") {
    recommended = Mul(p.attempts, p.delay);
    if (p.interval < recommended) {
      possible = static_cast<int>(p.interval / p.delay);
      valid = false;
    }
  } else if (p.delay_function == "exponential") {
    for (int i = 0; i < p.attempts; ++i) {
      Duration next = Mul(static_cast<int64_t>(std::pow(2.0, std::min(i, 62))), p.delay);
      if (next > p.max_delay) {
        next = p.max_delay;
        recommended = Add(recommended, next);
      } else {
        recommended = next;
      }
      if (recommended < p.interval) {
        ++possible;
      }
    }
    valid = possible >= p.attempts;
  } else {  // fibonacci
    std::vector<Duration> slots = {p.delay, p.delay};
    bool reached_ceiling = false;
    for (int i = 2; i < p.attempts; ++i) {
      Duration next;
      if (reached_ceiling) {
        next = Add(slots[i - 1], p.max_delay);
      } else {
        next = Add(slots[i - 1], slots[i - 2]);
        if (next > p.max_delay) {
          next = p.max_delay;
          reached_ceiling = true;
        }
      }
      slots.push_back(next);
    }
    recommended = slots.back();
    if (p.interval < recommended) {
      valid = false;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (slots[i] > p.interval) {
          possible = static_cast<int>(i);
          break;
        }
      }
    }
  }
  possible = std::max(possible, 0);
  return valid;
}

// MigrateStrategy.Validate.
void CheckMigrate(const model::MigrateStrategy& m, Errors& errs) {
  if (m.max_parallel < 0)
    errs.push_back(absl::StrCat("MaxParallel must be >= 0 but found ", m.max_parallel));
  if (m.health_check.empty()) {
    if (m.max_parallel > 0)
      errs.push_back("Missing HealthCheck");
  } else if (m.health_check != model::kMigrateHealthChecks &&
             m.health_check != model::kMigrateHealthTaskStates) {
    errs.push_back(absl::StrCat("Invalid HealthCheck: \"", m.health_check, "\""));
  }
  if (m.min_healthy_time < Duration::zero())
    errs.push_back(absl::StrCat("MinHealthyTime is ", FormatGoDuration(m.min_healthy_time),
                                " and must be >= 0"));
  if (m.healthy_deadline < Duration::zero())
    errs.push_back(absl::StrCat("HealthyDeadline is ", FormatGoDuration(m.healthy_deadline),
                                " and must be >= 0"));
  if (m.min_healthy_time > m.healthy_deadline)
    errs.push_back("MinHealthyTime must be less than HealthyDeadline");
}

// UpdateStrategy.Validate, and what Drover cannot carry out yet.
void CheckUpdate(const model::UpdateStrategy& u, const model::Job& job, Errors& errs) {
  const std::string& hc = u.health_check;
  if (hc == model::kUpdateHealthChecks) {
    errs.push_back(
        "Update health_check \"checks\" is not supported by Drover yet: it has no service "
        "checks; use \"task_states\" or \"manual\"");
  } else if (hc != model::kUpdateHealthTaskStates && hc != model::kUpdateHealthManual) {
    errs.push_back(absl::StrCat("Invalid health check given: ", common::GoQuote(hc)));
  }
  if (u.max_parallel < 0)
    errs.push_back(
        absl::StrCat("Max parallel can not be less than zero: ", u.max_parallel, " < 0"));
  if (u.canary < 0)
    errs.push_back(absl::StrCat("Canary count can not be less than zero: ", u.canary, " < 0"));
  if (u.canary == 0 && u.auto_promote)
    errs.push_back("Auto Promote requires a Canary count greater than zero");
  if (u.canary > 0 && job.type == model::kJobTypeSystem)
    errs.push_back("System jobs may not have canaries: canary must be 0");
  if (u.auto_revert && job.type == model::kJobTypeSystem)
    errs.push_back(
        "System jobs do not auto-revert: their updates roll out by max_parallel and stagger, "
        "without a deployment to revert");
  if (u.min_healthy_time < Duration::zero())
    errs.push_back(absl::StrCat("Minimum healthy time may not be less than zero: ",
                                FormatGoDuration(u.min_healthy_time)));
  if (u.healthy_deadline <= Duration::zero())
    errs.push_back(absl::StrCat("Healthy deadline must be greater than zero: ",
                                FormatGoDuration(u.healthy_deadline)));
  if (u.progress_deadline < Duration::zero())
    errs.push_back(absl::StrCat("Progress deadline must be zero or greater: ",
                                FormatGoDuration(u.progress_deadline)));
  if (u.min_healthy_time >= u.healthy_deadline)
    errs.push_back(absl::StrCat("Minimum healthy time must be less than healthy deadline: ",
                                FormatGoDuration(u.min_healthy_time), " > ",
                                FormatGoDuration(u.healthy_deadline)));
  if (u.progress_deadline != Duration::zero() && u.healthy_deadline >= u.progress_deadline)
    errs.push_back(absl::StrCat("Healthy deadline must be less than progress deadline: ",
                                FormatGoDuration(u.healthy_deadline), " > ",
                                FormatGoDuration(u.progress_deadline)));
  if (u.stagger <= Duration::zero())
    errs.push_back(
        absl::StrCat("Stagger must be greater than zero: ", FormatGoDuration(u.stagger)));
}

void CheckReschedulePolicy(const model::ReschedulePolicy& p, Errors& errs) {
  if (p.attempts <= 0 && !p.unlimited) {
    return;  // rescheduling disabled
  }
  if (p.attempts > 0) {
    if (p.interval <= Duration::zero()) {
      errs.push_back("Interval must be a non zero value if Attempts > 0");
    }
    if (p.unlimited) {
      errs.push_back(absl::StrCat("Reschedule Policy with Attempts = ", p.attempts,
                                  ", Interval = ", FormatGoDuration(p.interval),
                                  ", and Unlimited = true is ambiguous"));
      errs.push_back("If Attempts >0, Unlimited cannot also be set to true");
    }
  }
  bool delay_ok = true;
  if (p.delay < kRescheduleMinDelay) {
    errs.push_back(absl::StrCat("Delay cannot be less than ", FormatGoDuration(kRescheduleMinDelay),
                                " (got ", FormatGoDuration(p.delay), ")"));
    delay_ok = false;
  }
  if (!IsDelayFunction(p.delay_function)) {
    errs.push_back(absl::StrCat("Invalid delay function ", common::GoQuote(p.delay_function),
                                ", must be one of [\"constant\" \"exponential\" \"fibonacci\"]"));
    delay_ok = false;
  }
  if (p.delay_function != "constant") {
    if (p.max_delay < kRescheduleMinDelay) {
      errs.push_back(absl::StrCat("Max Delay cannot be less than ",
                                  FormatGoDuration(kRescheduleMinDelay), " (got ",
                                  FormatGoDuration(p.max_delay), ")"));
      delay_ok = false;
    }
    if (p.max_delay < p.delay) {
      errs.push_back(absl::StrCat("Max Delay cannot be less than Delay ", FormatGoDuration(p.delay),
                                  " (got ", FormatGoDuration(p.max_delay), ")"));
      delay_ok = false;
    }
  }
  if (p.unlimited) {
    return;
  }
  if (p.interval < kRescheduleMinInterval) {
    errs.push_back(absl::StrCat("Interval cannot be less than ",
                                FormatGoDuration(kRescheduleMinInterval), " (got ",
                                FormatGoDuration(p.interval), ")"));
  }
  if (!delay_ok) {
    return;
  }
  int possible = 0;
  Duration recommended{0};
  if (ViableAttempts(p, possible, recommended)) {
    return;
  }
  if (p.delay_function == "constant") {
    errs.push_back(absl::StrCat("Nomad can only make ", possible, " attempts in ",
                                FormatGoDuration(p.interval), " with initial delay ",
                                FormatGoDuration(p.delay), " and delay function ",
                                common::GoQuote(p.delay_function)));
  } else {
    errs.push_back(absl::StrCat(
        "Nomad can only make ", possible, " attempts in ", FormatGoDuration(p.interval),
        " with initial delay ", FormatGoDuration(p.delay), ", delay function ",
        common::GoQuote(p.delay_function), ", and delay ceiling ", FormatGoDuration(p.max_delay)));
  }
  errs.push_back(absl::StrCat("Set the interval to at least ",
                              FormatGoDuration(Round(recommended, std::chrono::seconds(1))),
                              " to accommodate ", p.attempts, " attempts"));
}

}  // namespace

// The group's restart, reschedule, migrate and update policies, as the job's type allows them.
void CheckGroupPolicies(const model::TaskGroup& group, const model::Job& job, Errors& errs) {
  if (group.restart_policy) {
    CheckRestartPolicy(*group.restart_policy, errs);
  } else {
    errs.push_back(absl::StrCat("Task Group ", group.name, " should have a restart policy"));
  }

  const bool system = job.type == model::kJobTypeSystem || job.type == model::kJobTypeSysbatch;
  if (system) {
    if (group.reschedule_policy) {
      errs.push_back("System jobs should not have a reschedule policy");
    }
  } else if (group.reschedule_policy) {
    CheckReschedulePolicy(*group.reschedule_policy, errs);
  } else {
    errs.push_back(absl::StrCat("Task Group ", group.name, " should have a reschedule policy"));
  }

  if (group.migrate) {
    // An unknown job type is reported once, as such.
    if (job.type == model::kJobTypeBatch || system) {
      errs.push_back(absl::StrCat("Job type \"", job.type, "\" does not allow migrate block"));
    } else {
      CheckMigrate(*group.migrate, errs);
    }
  }

  if (group.update) {
    if (job.type == model::kJobTypeService || job.type == model::kJobTypeSystem)
      CheckUpdate(*group.update, job, errs);
    else if (job.type == model::kJobTypeBatch || job.type == model::kJobTypeSysbatch)
      errs.push_back(absl::StrCat("Job type \"", job.type, "\" does not allow update block"));
  }
}

}  // namespace drover::codec::internal
