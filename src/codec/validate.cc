// Job validation after Nomad's structs.Job.Validate, TaskGroup.Validate and
// Task.Validate. Group and task problems nest as Nomad nests them ("Task group web
// validation failed: 1 error occurred: ..."); the parts of a group or task (restart
// policy, resources, constraints, ports) are listed one message per problem.
#include "codec/validate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "codec/limits.h"
#include "common/go_strings.h"
#include "common/signals.h"
#include "model/task_state.h"

namespace drover::codec {

namespace {

using Errors = std::vector<std::string>;
using model::Duration;
using model::FormatGoDuration;

constexpr int kMinPriority = 1;
constexpr int kMaxPriority = 100;
constexpr int kMaxPort = 65535;
constexpr Duration kRestartMinInterval = std::chrono::seconds(5);
constexpr Duration kRescheduleMinInterval = std::chrono::seconds(15);
constexpr Duration kRescheduleMinDelay = std::chrono::seconds(5);
constexpr const char* kDelayFunctions[] = {"constant", "exponential", "fibonacci"};

bool ContainsNull(const std::string& s) {
  return s.find('\0') != std::string::npos;
}

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

Errors ConstraintErrors(const model::Constraint& c) {
  Errors errs;
  const std::string& op = c.operand;
  bool require_ltarget = true;
  if (op.empty()) {
    errs.push_back("Missing constraint operand");
  } else if (op == "distinct_hosts") {
    require_ltarget = false;
  } else if (op == "set_contains" || op == "set_contains_any" || op == "set_contains_all") {
    if (c.rtarget.empty()) {
      errs.push_back("Set contains constraint requires an RTarget");
    }
  } else if (op == "regexp") {
    // The pattern is RE2 syntax; the scheduler reports patterns it cannot compile.
  } else if (op == "version" || op == "semver") {
    if (c.rtarget.empty()) {
      errs.push_back("Version constraint is invalid: Malformed constraint: \"\"");
    }
  } else if (op == "distinct_property") {
    if (!c.rtarget.empty()) {
      int64_t count = 0;
      if (!absl::SimpleAtoi(c.rtarget, &count) || c.rtarget.front() == '+') {
        errs.push_back(absl::StrCat("Failed to convert RTarget ", common::GoQuote(c.rtarget),
                                    " to uint64: invalid syntax"));
      } else if (count < 1) {
        errs.push_back(absl::StrCat(
            "Distinct Property must have an allowed count of 1 or greater: ", count, " < 1"));
      }
    }
  } else if (op == "is_set" || op == "is_not_set") {
    if (!c.rtarget.empty()) {
      errs.push_back(
          absl::StrCat("Operator ", common::GoQuote(op), " does not support an RTarget"));
    }
  } else if (op == "=" || op == "==" || op == "is" || op == "!=" || op == "not" || op == "<" ||
             op == "<=" || op == ">" || op == ">=") {
    if (c.rtarget.empty()) {
      errs.push_back(absl::StrCat("Operator ", common::GoQuote(op), " requires an RTarget"));
    }
  } else {
    errs.push_back(absl::StrCat("Unknown constraint type ", common::GoQuote(op)));
  }
  if (require_ltarget && c.ltarget.empty()) {
    errs.push_back("No LTarget provided but is required by constraint");
  }
  return errs;
}

// Appends "Constraint N validation failed: ..." for each problem of each constraint.
void CheckConstraints(const std::vector<model::Constraint>& constraints, Errors& errs) {
  for (size_t i = 0; i < constraints.size(); ++i) {
    for (const std::string& e : ConstraintErrors(constraints[i])) {
      errs.push_back(absl::StrCat("Constraint ", i + 1, " validation failed: ", e));
    }
  }
}

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

// A valid name, and a namespace that exists.
void CheckNamespace(const model::Job& job, Errors& errs) {
  if (job.namespace_.empty()) {
    errs.push_back("Job must be in a namespace");
  } else if (!ValidNamespaceName(job.namespace_)) {
    errs.push_back(absl::StrCat("invalid namespace ", common::GoQuote(job.namespace_),
                                ": names are 1-128 letters, digits and dashes"));
  } else if (job.namespace_ != kDefaultNamespace) {
    // Drover has one namespace until namespaces can be created.
    errs.push_back(absl::StrCat("job ", common::GoQuote(job.id), " is in nonexistent namespace ",
                                common::GoQuote(job.namespace_)));
  }
}

// Modes Drover carries out: the host's network (the default), or "none" (an empty
// network namespace, which only the exec driver makes). Anything else is refused by
// name rather than run on the host network.
void CheckNetworkModes(const model::TaskGroup& group, Errors& errs) {
  for (const model::NetworkResource& net : group.networks) {
    if (net.mode.empty() || net.mode == "host")
      continue;
    if (net.mode != "none") {
      errs.push_back(absl::StrCat("network mode ", common::GoQuote(net.mode),
                                  " is not supported by Drover yet (use \"host\" or \"none\")"));
      continue;
    }
    for (const model::Task& task : group.tasks) {
      if (task.driver != "exec") {
        errs.push_back(absl::StrCat("network mode \"none\" needs the exec driver; task ",
                                    common::GoQuote(task.name), " uses ",
                                    common::GoQuote(task.driver)));
      }
    }
  }
  for (const model::Task& task : group.tasks) {
    for (const model::NetworkResource& net : task.resources.networks) {
      if (!net.mode.empty() && net.mode != "host") {
        errs.push_back(absl::StrCat("task ", common::GoQuote(task.name), " network mode ",
                                    common::GoQuote(net.mode),
                                    " is not supported: set the mode on the group's network"));
      }
    }
  }
}

// Port labels and static ports must be unique across the group's and its tasks'
// networks (static ports per host network).
void CheckNetworks(const model::TaskGroup& group, Errors& errs) {
  if (group.networks.size() > 1) {
    errs.push_back("Only one network resource is allowed");
  }
  CheckNetworkModes(group, errs);
  std::map<std::string, std::string> labels;
  std::map<std::pair<std::string, int>, std::string> static_ports;
  auto check_port = [&](const model::Port& port, const std::string& owner, bool is_group) {
    if (auto it = labels.find(port.label); it != labels.end()) {
      errs.push_back(absl::StrCat("Port label ", port.label, " already in use by ", it->second));
    } else if (is_group) {
      labels[port.label] = "taskgroup network";
    }
    if (port.value != 0) {
      const std::pair<std::string, int> key(
          port.host_network.empty() ? "default" : port.host_network, port.value);
      if (auto it = static_ports.find(key); it != static_ports.end()) {
        errs.push_back(
            absl::StrCat("Static port ", port.value, " already reserved by ", it->second));
      } else if (port.value > kMaxPort || port.value < 0) {
        errs.push_back(absl::StrCat("Port ", port.label, " (", port.value,
                                    ") cannot be greater than ", kMaxPort));
      } else {
        static_ports[key] = absl::StrCat(owner, ":", port.label);
      }
    }
    if (port.to < -1) {
      errs.push_back(absl::StrCat("Port ", common::GoQuote(port.label),
                                  " cannot be mapped to negative value ", port.to));
    } else if (port.to > kMaxPort) {
      errs.push_back(absl::StrCat("Port ", common::GoQuote(port.label),
                                  " cannot be mapped to a port (", port.to, ") greater than ",
                                  kMaxPort));
    }
  };
  for (const model::NetworkResource& net : group.networks) {
    for (const model::Port& p : net.reserved_ports) {
      check_port(p, "taskgroup network", true);
    }
    for (const model::Port& p : net.dynamic_ports) {
      check_port(p, "taskgroup network", true);
    }
  }
  for (const model::Task& task : group.tasks) {
    for (const model::NetworkResource& net : task.resources.networks) {
      for (const model::Port& p : net.reserved_ports) {
        check_port(p, task.name, false);
      }
      for (const model::Port& p : net.dynamic_ports) {
        check_port(p, task.name, false);
      }
    }
  }
}

void CheckResources(const model::Resources& r, Errors& errs) {
  if (r.cores > 0 && r.cpu > 0) {
    errs.push_back("Task can only ask for 'cpu' or 'cores' resource, not both.");
  }
  if (r.cpu < 1 && r.cores == 0) {
    errs.push_back(absl::StrCat("minimum CPU value is 1; got ", r.cpu));
  }
  if (r.cores > 0 && r.cpu <= 0) {
    // The scheduler reserves cpu shares, not whole cores: a task asking for cores would
    // be placed with no cpu reserved at all.
    errs.push_back("resources.cores is not supported by Drover yet: ask for cpu instead");
  }
  if (r.cores < 0) {
    errs.push_back(absl::StrCat("minimum Cores value is 0; got ", r.cores));
  }
  if (r.memory_mb < 10) {
    errs.push_back(absl::StrCat("minimum MemoryMB value is 10; got ", r.memory_mb));
  }
  if (r.disk_mb > 0) {
    errs.push_back(
        "Task can't ask for disk resources, they have to be specified at the task group level.");
  }
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const model::RequestedDevice& d = r.devices[i];
    const std::string prefix = absl::StrCat("device ", i + 1, " failed validation: ");
    if (d.name.empty()) {
      errs.push_back(absl::StrCat(prefix,
                                  "device name must be given as one of the following: type, "
                                  "vendor/type, or vendor/type/name"));
    }
    for (size_t c = 0; c < d.constraints.size(); ++c) {
      const std::string& op = d.constraints[c].operand;
      if (op == "distinct_hosts" || op == "distinct_property") {
        errs.push_back(absl::StrCat(prefix, "Constraint ", c + 1,
                                    " validation failed: using unsupported operand ",
                                    common::GoQuote(op)));
        continue;
      }
      for (const std::string& e : ConstraintErrors(d.constraints[c])) {
        errs.push_back(absl::StrCat(prefix, "Constraint ", c + 1, " validation failed: ", e));
      }
    }
    if (d.count < 1) {
      errs.push_back(absl::StrCat(prefix, "device count must be at least 1"));
    }
    for (size_t a = 0; a < d.affinities.size(); ++a) {
      const model::Affinity& aff = d.affinities[a];
      const std::string where = absl::StrCat(prefix, "Affinity ", a + 1, " validation failed: ");
      if (aff.weight == 0) {
        errs.push_back(where + "Affinity weight cannot be zero");
      } else if (aff.weight < -100 || aff.weight > 100) {
        errs.push_back(where + "Affinity weight must be within the range [-100,100]");
      }
      for (const std::string& e : ConstraintErrors({aff.ltarget, aff.rtarget, aff.operand}))
        errs.push_back(where + e);
    }
  }
  if (r.memory_max_mb != 0 && r.memory_max_mb < r.memory_mb) {
    errs.push_back(absl::StrCat("MemoryMaxMB value (", r.memory_max_mb,
                                ") should be larger than MemoryMB value (", r.memory_mb, ")"));
  }
}

// Whether "task/local/<file>" leaves the allocation directory (lexically, as Go's
// filepath.Join then a relative-path check).
bool EscapesAllocDir(const std::string& file) {
  std::vector<std::string> parts = {"task", "local"};
  size_t start = 0;
  while (start <= file.size()) {
    size_t end = file.find('/', start);
    if (end == std::string::npos) {
      end = file.size();
    }
    const std::string part = file.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") {
      continue;
    }
    if (part == "..") {
      if (parts.empty()) {
        return true;
      }
      parts.pop_back();
    } else {
      parts.push_back(part);
    }
  }
  return false;
}

Errors TaskErrors(const model::Task& task, const model::TaskGroup& group) {
  Errors errs;
  if (task.name.empty()) {
    errs.push_back("Missing task name");
  }
  if (task.name.find_first_of("/\\") != std::string::npos) {
    errs.push_back("Task name cannot include slashes");
  } else if (ContainsNull(task.name)) {
    errs.push_back("Task name cannot include null characters");
  }
  if (task.driver.empty()) {
    errs.push_back("Missing task driver");
  }
  if (task.kill_timeout < Duration::zero()) {
    errs.push_back("KillTimeout must be a positive value");
  }
  if (task.shutdown_delay < Duration::zero()) {
    errs.push_back("ShutdownDelay must be a positive value");
  }
  if (!task.kill_signal.empty() && !common::ParseSignal(task.kill_signal).ok()) {
    errs.push_back("Unknown kill signal \"" + task.kill_signal + "\"");
  }
  CheckResources(task.resources, errs);

  const model::LogConfig& log = task.log_config;
  if (log.max_files < 1) {
    errs.push_back(absl::StrCat("minimum number of files is 1; got ", log.max_files));
  }
  if (log.max_file_size_mb < 1) {
    errs.push_back(absl::StrCat("minimum file size is 1MB; got ", log.max_file_size_mb));
  }
  if (group.ephemeral_disk) {
    const int64_t usage = static_cast<int64_t>(log.max_files) * log.max_file_size_mb;
    if (group.ephemeral_disk->size_mb <= usage) {
      errs.push_back(absl::StrCat("log storage (", usage,
                                  " MB) must be less than requested disk capacity (",
                                  group.ephemeral_disk->size_mb, " MB)"));
    }
  }

  CheckConstraints(task.constraints, errs);
  for (size_t i = 0; i < task.constraints.size(); ++i) {
    const std::string& op = task.constraints[i].operand;
    if (op == "distinct_hosts" || op == "distinct_property") {
      errs.push_back(
          absl::StrCat("Constraint ", i + 1, " has disallowed Operand at task level: ", op));
    }
  }

  // A policy copied from the group was checked there.
  if (task.restart_policy && task.restart_policy != group.restart_policy) {
    CheckRestartPolicy(*task.restart_policy, errs);
  }
  if (task.dispatch_payload && EscapesAllocDir(task.dispatch_payload->file)) {
    errs.push_back(
        "Dispatch Payload validation failed: dispatch payload file escapes allocation "
        "directory");
  }
  if (task.lifecycle) {
    const std::string& hook = task.lifecycle->hook;
    if (hook.empty()) {
      errs.push_back("Lifecycle validation failed: no lifecycle hook provided");
    } else if (hook != model::kLifecyclePrestart && hook != model::kLifecyclePoststart &&
               hook != model::kLifecyclePoststop) {
      errs.push_back(absl::StrCat("Lifecycle validation failed: invalid hook: ", hook));
    }
  }
  return errs;
}

// The group's restart, reschedule and migrate policies, as the job's type allows them.
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

// Every task named, no name twice, at most one leader.
void CheckTaskNames(const model::TaskGroup& group, Errors& errs) {
  std::map<std::string, size_t> names;
  int leaders = 0;
  for (size_t i = 0; i < group.tasks.size(); ++i) {
    const model::Task& task = group.tasks[i];
    if (task.name.empty()) {
      errs.push_back(absl::StrCat("Task ", i + 1, " missing name"));
    } else if (auto it = names.find(task.name); it != names.end()) {
      errs.push_back(
          absl::StrCat("Task ", i + 1, " redefines '", task.name, "' from task ", it->second + 1));
    } else {
      names[task.name] = i;
    }
    if (task.leader) {
      ++leaders;
    }
  }
  if (leaders > 1) {
    errs.push_back("Only one task may be marked as leader");
  }
}

Errors GroupErrors(const model::TaskGroup& group, const model::Job& job) {
  Errors errs;
  if (group.name.empty()) {
    errs.push_back("Missing task group name");
  } else if (ContainsNull(group.name)) {
    errs.push_back("Task group name contains null character");
  }
  if (group.count < 0) {
    errs.push_back("Task group count can't be negative");
  }
  if (group.max_client_disconnect && *group.max_client_disconnect < Duration::zero()) {
    errs.push_back("max_client_disconnect cannot be negative");
  }
  if (const auto& s = group.scaling) {
    if (s->type != model::kScalingHorizontal) {
      errs.push_back(absl::StrCat("Scaling policy invalid: type \"", s->type,
                                  "\" is not supported by Drover (only \"horizontal\")"));
    } else if (s->max < 0) {
      errs.push_back("Scaling policy invalid: maximum count must be specified and non-negative");
    } else if (s->min < 0) {
      errs.push_back("Scaling policy invalid: minimum count must be specified and non-negative");
    } else if (s->max < s->min) {
      errs.push_back("Scaling policy invalid: maximum count must not be less than minimum count");
    } else if (group.count < s->min) {
      errs.push_back(
          "Scaling policy invalid: task group count must not be less than minimum count in "
          "scaling policy");
    } else if (s->max < group.count) {
      errs.push_back(
          "Scaling policy invalid: task group count must not be greater than maximum count in "
          "scaling policy");
    }
  }
  if (group.shutdown_delay && *group.shutdown_delay < Duration::zero()) {
    errs.push_back("ShutdownDelay must be a positive value");
  }
  if (group.tasks.empty()) {
    errs.push_back("Missing tasks for task group");
  }
  CheckConstraints(group.constraints, errs);

  CheckGroupPolicies(group, job, errs);
  if (!group.ephemeral_disk) {
    errs.push_back(
        absl::StrCat("Task Group ", group.name, " should have an ephemeral disk object"));
  } else if (group.ephemeral_disk->size_mb < 10) {
    errs.push_back(absl::StrCat("Minimum DiskMB value is 10; got ", group.ephemeral_disk->size_mb));
  }

  CheckTaskNames(group, errs);
  CheckNetworks(group, errs);

  for (const model::Task& task : group.tasks) {
    Errors task_errs = TaskErrors(task, group);
    if (!task_errs.empty()) {
      errs.push_back(
          absl::StrCat("Task ", task.name, " validation failed: ", FormatMultiError(task_errs)));
    }
  }
  return errs;
}

}  // namespace

bool ValidNamespaceName(const std::string& ns) {
  return !ns.empty() && ns.size() <= 128 && std::all_of(ns.begin(), ns.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string FormatMultiError(const std::vector<std::string>& errors) {
  if (errors.empty()) {
    return "";
  }
  if (errors.size() == 1) {
    return absl::StrCat("1 error occurred:\n\t* ", errors[0], "\n\n");
  }
  std::vector<std::string> points;
  points.reserve(errors.size());
  for (const std::string& e : errors) {
    points.push_back(absl::StrCat("* ", e));
  }
  return absl::StrCat(errors.size(), " errors occurred:\n\t", absl::StrJoin(points, "\n\t"),
                      "\n\n");
}

absl::Status ValidateJob(const model::Job& job) {
  Errors errs;
  // Sizes first: what follows may cost as much as the values it checks.
  CheckJobLimits(job, errs);
  if (!errs.empty())
    return absl::InvalidArgumentError(FormatMultiError(errs));
  if (job.region.empty()) {
    errs.push_back("Missing job region");
  }
  if (job.id.empty()) {
    errs.push_back("Missing job ID");
  } else if (job.id.find(' ') != std::string::npos) {
    errs.push_back("Job ID contains a space");
  } else if (ContainsNull(job.id)) {
    errs.push_back("Job ID contains a null character");
  }
  if (job.name.empty()) {
    errs.push_back("Missing job name");
  } else if (ContainsNull(job.name)) {
    errs.push_back("Job Name contains a null character");
  }
  CheckNamespace(job, errs);
  if (job.type.empty()) {
    errs.push_back("Missing job type");
  } else if (job.type != model::kJobTypeService && job.type != model::kJobTypeBatch &&
             job.type != model::kJobTypeSystem && job.type != model::kJobTypeSysbatch) {
    errs.push_back(absl::StrCat("Invalid job type: ", common::GoQuote(job.type)));
  }
  if (job.priority < kMinPriority || job.priority > kMaxPriority) {
    errs.push_back(
        absl::StrCat("job priority must be between [", kMinPriority, ", ", kMaxPriority, "]"));
  }
  if (job.datacenters.empty()) {
    errs.push_back("Missing job datacenters");
  }
  for (const std::string& dc : job.datacenters) {
    if (dc.empty()) {
      errs.push_back("Job datacenter must be non-empty string");
    }
  }
  if (job.task_groups.empty()) {
    errs.push_back("Missing job task groups");
  }
  CheckConstraints(job.constraints, errs);

  std::map<std::string, size_t> names;
  for (size_t i = 0; i < job.task_groups.size(); ++i) {
    const model::TaskGroup& group = job.task_groups[i];
    if (group.name.empty()) {
      errs.push_back(absl::StrCat("Job task group ", i + 1, " missing name"));
    } else if (auto it = names.find(group.name); it != names.end()) {
      errs.push_back(absl::StrCat("Job task group ", i + 1, " redefines '", group.name,
                                  "' from group ", it->second + 1));
    } else {
      names[group.name] = i;
    }
    if (job.type == model::kJobTypeSystem && group.count > 1) {
      errs.push_back(absl::StrCat("Job task group ", group.name, " has count ", group.count,
                                  ". Count cannot exceed 1 with system scheduler"));
    }
  }
  for (const model::TaskGroup& group : job.task_groups) {
    Errors group_errs = GroupErrors(group, job);
    if (!group_errs.empty()) {
      errs.push_back(absl::StrCat("Task group ", group.name,
                                  " validation failed: ", FormatMultiError(group_errs)));
    }
  }
  if (errs.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(FormatMultiError(errs));
}

}  // namespace drover::codec
