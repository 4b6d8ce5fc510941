// Job specification types: Job, TaskGroup, Task and their parts. Plain values with
// Nomad's semantics; field names are snake_case forms of Nomad's API names. Optional
// fields that Nomad distinguishes from zero (null in JSON) are std::optional.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "model/value.h"

namespace drover::model {

using common::Duration;
using common::Time;

inline constexpr char kJobTypeService[] = "service";
inline constexpr char kJobTypeBatch[] = "batch";
inline constexpr char kJobTypeSystem[] = "system";
inline constexpr char kJobTypeSysbatch[] = "sysbatch";

inline constexpr char kJobStatusPending[] = "pending";
inline constexpr char kJobStatusRunning[] = "running";
inline constexpr char kJobStatusDead[] = "dead";

struct Constraint {
  std::string ltarget;
  std::string rtarget;
  std::string operand;  // "=", "!=", ">", ">=", "<", "<=", "regexp", "version", ...
  friend bool operator==(const Constraint&, const Constraint&) = default;
};

struct Port {
  std::string label;
  int value = 0;  // static port, or the assigned dynamic port once allocated
  int to = 0;
  std::string host_network;
  friend bool operator==(const Port&, const Port&) = default;
};

struct NetworkResource {
  std::string mode;
  std::string device;
  std::string cidr;
  std::string ip;
  int mbits = 0;
  std::vector<Port> reserved_ports;
  std::vector<Port> dynamic_ports;
  friend bool operator==(const NetworkResource&, const NetworkResource&) = default;
};

// A placement preference: like a constraint, but a weight in [-100, 100] instead of a
// hard filter. Only device affinities are carried out (job, group and task affinities
// are refused at registration).
struct Affinity {
  std::string ltarget;
  std::string rtarget;
  std::string operand;
  int weight = 50;
  friend bool operator==(const Affinity&, const Affinity&) = default;
};

struct RequestedDevice {
  std::string name;  // "type", "vendor/type" or "vendor/type/name"
  uint64_t count = 1;
  std::vector<Constraint> constraints;
  std::vector<Affinity> affinities;
  friend bool operator==(const RequestedDevice&, const RequestedDevice&) = default;
};

struct Resources {
  int cpu = 0;  // MHz
  int cores = 0;
  int memory_mb = 0;
  int memory_max_mb = 0;
  int disk_mb = 0;
  std::vector<NetworkResource> networks;
  std::vector<RequestedDevice> devices;
  friend bool operator==(const Resources&, const Resources&) = default;
};

inline constexpr char kRestartModeFail[] = "fail";
inline constexpr char kRestartModeDelay[] = "delay";

struct RestartPolicy {
  // A decoded policy that left a field out marks it so; canonicalization replaces the
  // marks with defaults. Never seen after canonicalization.
  static constexpr int kUnsetAttempts = -1;
  static constexpr Duration kUnsetDuration{-1};
  int attempts = 0;
  Duration interval{0};
  Duration delay{0};
  std::string mode;
  bool render_templates = false;
  friend bool operator==(const RestartPolicy&, const RestartPolicy&) = default;
};

struct ReschedulePolicy {
  int attempts = 0;
  Duration interval{0};
  Duration delay{0};
  std::string delay_function;
  Duration max_delay{0};
  bool unlimited = false;
  friend bool operator==(const ReschedulePolicy&, const ReschedulePolicy&) = default;
};

struct EphemeralDisk {
  bool sticky = false;
  bool migrate = false;
  int size_mb = 0;
  friend bool operator==(const EphemeralDisk&, const EphemeralDisk&) = default;
};

inline constexpr char kMigrateHealthChecks[] = "checks";
inline constexpr char kMigrateHealthTaskStates[] = "task_states";

// The group's migrate block: how a node drain moves its allocations. Service jobs
// only; canonicalization fills Nomad's defaults (1, "checks", 10s, 5m) under the job's
// and the group's own fields.
struct MigrateStrategy {
  // Fields a decoded block left out; never seen after canonicalization of a service job.
  static constexpr int kUnsetMaxParallel = std::numeric_limits<int>::min();
  static constexpr Duration kUnsetDuration = Duration::min();
  int max_parallel = kUnsetMaxParallel;
  std::string health_check;
  Duration min_healthy_time = kUnsetDuration;
  Duration healthy_deadline = kUnsetDuration;
  friend bool operator==(const MigrateStrategy&, const MigrateStrategy&) = default;
};

inline constexpr char kUpdateHealthChecks[] = "checks";
inline constexpr char kUpdateHealthTaskStates[] = "task_states";
inline constexpr char kUpdateHealthManual[] = "manual";

// The group's update block (Nomad's UpdateStrategy): how a new version of a service
// job rolls out through a deployment. The job's block applies to every group, under
// the group's own fields. Canonicalization fills Nomad's defaults (stagger 30s,
// max_parallel 1, min_healthy_time 10s, healthy_deadline 5m, progress_deadline 10m,
// canary 0) into a block that is there; health_check defaults to "task_states" while
// Drover has no service checks. A group without a block, or with max_parallel 0, has
// no deployments: its changed allocations are replaced at once.
struct UpdateStrategy {
  static constexpr int kUnsetInt = std::numeric_limits<int>::min();
  static constexpr Duration kUnsetDuration = Duration::min();
  Duration stagger = kUnsetDuration;
  int max_parallel = kUnsetInt;
  std::string health_check;
  Duration min_healthy_time = kUnsetDuration;
  Duration healthy_deadline = kUnsetDuration;
  Duration progress_deadline = kUnsetDuration;
  bool auto_revert = false;
  bool auto_promote = false;
  int canary = kUnsetInt;
  friend bool operator==(const UpdateStrategy&, const UpdateStrategy&) = default;

  // Rolls out through deployments (Nomad's !IsEmpty()).
  bool Rolling() const { return max_parallel > 0; }
};

struct LogConfig {
  int max_files = 0;
  int max_file_size_mb = 0;
  bool disabled = false;
  friend bool operator==(const LogConfig&, const LogConfig&) = default;
};

inline constexpr char kLifecyclePrestart[] = "prestart";
inline constexpr char kLifecyclePoststart[] = "poststart";
inline constexpr char kLifecyclePoststop[] = "poststop";

struct Lifecycle {
  std::string hook;
  bool sidecar = false;
  friend bool operator==(const Lifecycle&, const Lifecycle&) = default;
};

struct DispatchPayloadConfig {
  std::string file;
  friend bool operator==(const DispatchPayloadConfig&, const DispatchPayloadConfig&) = default;
};

struct Task {
  std::string name;
  std::string driver;
  std::string user;
  std::optional<Lifecycle> lifecycle;
  Value config = Value::Object{};
  std::vector<Constraint> constraints;
  std::map<std::string, std::string> env;
  Resources resources;
  std::optional<RestartPolicy> restart_policy;
  std::map<std::string, std::string> meta;
  Duration kill_timeout{0};
  LogConfig log_config;
  std::optional<DispatchPayloadConfig> dispatch_payload;
  bool leader = false;
  Duration shutdown_delay{0};
  std::string kill_signal;
  friend bool operator==(const Task&, const Task&) = default;

  // Lifecycle classification (reference §2.7): a task without a lifecycle hook is main.
  bool IsPrestart() const { return lifecycle && lifecycle->hook == kLifecyclePrestart; }
  bool IsPoststart() const { return lifecycle && lifecycle->hook == kLifecyclePoststart; }
  bool IsPoststop() const { return lifecycle && lifecycle->hook == kLifecyclePoststop; }
  bool IsMain() const { return !lifecycle || lifecycle->hook.empty(); }
  bool IsSidecar() const { return lifecycle && !lifecycle->hook.empty() && lifecycle->sidecar; }
};

inline constexpr char kScalingHorizontal[] = "horizontal";

// A group's `scaling` block (Nomad's ScalingPolicy): the bounds of its count, and a
// policy for an external autoscaler, which Drover stores and serves but does not act
// on. Its ID is the servers': kept across versions of the job while the group stays.
struct ScalingPolicy {
  static constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
  std::string id;
  std::string type = kScalingHorizontal;
  int64_t min = kUnset;  // canonicalization makes it the group's count
  int64_t max = kUnset;  // required
  bool enabled = true;
  Value policy = Value::Object{};
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const ScalingPolicy&, const ScalingPolicy&) = default;
};

struct TaskGroup {
  // A decoded group without a Count has this one; canonicalization makes it 1. Any
  // other negative count is the user's, and validation refuses it.
  static constexpr int kUnsetCount = std::numeric_limits<int>::min();
  std::string name;
  int count = 0;
  std::vector<Constraint> constraints;
  std::vector<Task> tasks;
  std::optional<RestartPolicy> restart_policy;
  std::optional<ReschedulePolicy> reschedule_policy;
  std::optional<EphemeralDisk> ephemeral_disk;
  std::optional<MigrateStrategy> migrate;
  std::optional<UpdateStrategy> update;
  std::vector<NetworkResource> networks;
  std::map<std::string, std::string> meta;
  std::optional<Duration> shutdown_delay;
  // How long the allocations of a node that stops heartbeating stay `unknown` (and keep
  // running if the node comes back) before they are lost; unset: lost at once.
  std::optional<Duration> max_client_disconnect;
  std::optional<ScalingPolicy> scaling;
  friend bool operator==(const TaskGroup&, const TaskGroup&) = default;

  const Task* FindTask(const std::string& task_name) const;
  bool Rolling() const { return update && update->Rolling(); }
};

inline constexpr char kPeriodicSpecCron[] = "cron";
// A periodic launch's child is `<parent>/periodic-<unix seconds>`; a dispatched one
// `<parent>/dispatch-<unix seconds>-<8 hex>`.
inline constexpr char kPeriodicLaunchSuffix[] = "/periodic-";
inline constexpr char kDispatchLaunchSuffix[] = "/dispatch-";

// The job's periodic block (Nomad's PeriodicConfig): a template launched as a child job
// at each time its cron expressions name, in its time zone. Canonicalization fills
// Nomad's defaults (spec type "cron", time zone "UTC"); `enabled` is true unless sent
// false.
struct PeriodicConfig {
  bool enabled = true;
  std::string spec;                // `cron`, one expression (deprecated by `crons`)
  std::vector<std::string> specs;  // `crons`: the launch is the earliest of them
  std::string spec_type;
  bool prohibit_overlap = false;
  std::string time_zone;
  friend bool operator==(const PeriodicConfig&, const PeriodicConfig&) = default;
  // Every expression, `spec` first.
  std::vector<std::string> AllSpecs() const {
    std::vector<std::string> all;
    if (!spec.empty())
      all.push_back(spec);
    all.insert(all.end(), specs.begin(), specs.end());
    return all;
  }
};

inline constexpr char kDispatchPayloadOptional[] = "optional";
inline constexpr char kDispatchPayloadRequired[] = "required";
inline constexpr char kDispatchPayloadForbidden[] = "forbidden";

// The job's parameterized block (Nomad's ParameterizedJobConfig): a template that runs
// only when dispatched, with a payload and metadata.
struct ParameterizedJobConfig {
  std::string payload;  // optional (the default), required or forbidden
  std::vector<std::string> meta_required;
  std::vector<std::string> meta_optional;
  friend bool operator==(const ParameterizedJobConfig&, const ParameterizedJobConfig&) = default;
};

struct Job {
  std::string region;
  std::string namespace_;
  std::string id;
  std::string name;
  std::string type;
  int priority = 0;
  bool all_at_once = false;
  std::vector<std::string> datacenters;
  std::string node_pool;
  std::vector<Constraint> constraints;
  std::vector<TaskGroup> task_groups;
  std::map<std::string, std::string> meta;
  bool stop = false;
  std::optional<PeriodicConfig> periodic;
  std::optional<ParameterizedJobConfig> parameterized;
  std::string parent_id;
  bool dispatched = false;
  std::string dispatch_idempotency_token;
  std::string payload;  // raw bytes (base64 on the wire)

  // Server-managed.
  std::string status;
  std::string status_description;
  bool stable = false;
  uint64_t version = 0;
  int64_t submit_time = 0;  // Unix nanoseconds
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  uint64_t job_modify_index = 0;
  friend bool operator==(const Job&, const Job&) = default;

  const TaskGroup* FindGroup(const std::string& group_name) const;
  bool IsBatch() const { return type == kJobTypeBatch || type == kJobTypeSysbatch; }
  bool IsPeriodic() const { return periodic.has_value(); }
  bool IsParameterized() const { return parameterized.has_value() && !dispatched; }
  // Launches children on its own schedule (Nomad's IsPeriodicActive): periodic, enabled,
  // not stopped, and not a parameterized template (whose dispatched children are).
  bool IsPeriodicActive() const {
    return periodic && periodic->enabled && !stop && !IsParameterized();
  }
};

}  // namespace drover::model
