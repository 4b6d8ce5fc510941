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
#include "absl/strings/str_split.h"

#include "codec/docker_config.h"
#include "codec/internal/validate_policies.h"
#include "codec/limits.h"
#include "common/go_strings.h"
#include "common/signals.h"
#include "model/task_state.h"

namespace drover::codec {

namespace {

using internal::CheckGroupPolicies;
using internal::CheckRestartPolicy;
using Errors = std::vector<std::string>;
using model::Duration;
using model::FormatGoDuration;

constexpr int kMinPriority = 1;
constexpr int kMaxPriority = 100;
constexpr int kMaxPort = 65535;

bool ContainsNull(const std::string& s) {
  return s.find('\0') != std::string::npos;
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
  if (task.driver == "docker") {
    // The docker driver's options, checked here: none is ignored (docker_config.h).
    if (absl::StatusOr<DockerTaskConfig> docker = ParseDockerConfig(task, group); !docker.ok()) {
      for (absl::string_view line : absl::StrSplit(docker.status().message(), '\n'))
        errs.push_back(std::string(line));
    }
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
  internal::CheckPeriodicAndParameterized(job, errs);

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
