// The subcommands. cli.cc maps flags onto these option structs and calls the Run*
// function, whose result is the process exit code (0 ok, 1 error, 2 placement failures
// after a monitored evaluation). Run* print through `ui` and never throw.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/exit_codes.h"
#include "cli/http_client.h"
#include "cli/job_file.h"
#include "cli/ui.h"

#include "agent/agent.h"

namespace drover::cli {

// drover job run [-detach] [-verbose] [-json] FILE ("-" reads stdin).
struct JobRunOptions {
  JobFileOptions job_file;
  bool detach = false;
  bool verbose = false;
  bool output = false;  // print the job's API JSON and do not submit it
  // -check-index N: register only if the job's JobModifyIndex is N (0: the job must
  // not exist), as a plan printed it.
  std::optional<uint64_t> check_index;
};
int RunJobRun(const JobRunOptions& options, HttpClient& client, Ui& ui);

// drover job plan [-diff=false] [-verbose] FILE: what running the job would do. Exit
// codes are Nomad's: 0 nothing would be created or destroyed, 1 something would, 255
// an error.
struct JobPlanOptions {
  JobFileOptions job_file;
  bool diff = true;
  bool verbose = false;
};
inline constexpr int kExitPlanChanges = 1;
inline constexpr int kExitPlanError = 255;
int RunJobPlan(const JobPlanOptions& options, HttpClient& client, Ui& ui);

// drover job history [-p] [-full] [-version N] [-json] ID: the kept versions, newest
// first.
struct JobHistoryOptions {
  std::string id;
  bool diff = false;  // -p
  bool full = false;
  bool json = false;
  std::string version;  // only this one
};
int RunJobHistory(const JobHistoryOptions& options, HttpClient& client, Ui& ui);

// drover job revert [-detach] [-verbose] ID VERSION.
struct JobRevertOptions {
  std::string id;
  std::string version;
  bool detach = false;
  bool verbose = false;
};
int RunJobRevert(const JobRevertOptions& options, HttpClient& client, Ui& ui);

// drover job scale [-detach] [-verbose] ID [GROUP] COUNT: the group may be left out
// when the job has one (`args` are what follows ID).
struct JobScaleOptions {
  std::string id;
  std::vector<std::string> args;
  bool detach = false;
  bool verbose = false;
};
int RunJobScale(const JobScaleOptions& options, HttpClient& client, Ui& ui);

// drover job periodic force [-detach] [-verbose] ID: launches a periodic job now.
struct JobPeriodicForceOptions {
  std::string id;
  bool detach = false;
  bool verbose = false;
};
int RunJobPeriodicForce(const JobPeriodicForceOptions& options, HttpClient& client, Ui& ui);

// drover job dispatch [-meta k=v]... [-id-prefix-template T] [-idempotency-token T]
// [-detach] [-verbose] ID [INPUT|-]: a child of a parameterized job, with INPUT's bytes
// (a file, or stdin for "-") as its payload.
struct JobDispatchOptions {
  std::string id;
  std::string input;
  std::vector<std::string> meta;
  std::string id_prefix_template;
  std::string idempotency_token;
  bool detach = false;
  bool verbose = false;
};
int RunJobDispatch(const JobDispatchOptions& options, HttpClient& client, Ui& ui);

// drover job eval [-force-reschedule] [-detach] [-verbose] ID.
struct JobEvalOptions {
  std::string id;
  bool force_reschedule = false;
  bool detach = false;
  bool verbose = false;
};
int RunJobEval(const JobEvalOptions& options, HttpClient& client, Ui& ui);

// drover job validate [-var ...] [-var-file ...] [-json] FILE: parse locally, then ask
// the agent (PUT /v1/validate/job).
int RunJobValidate(const JobFileOptions& options, HttpClient& client, Ui& ui);

// drover job inspect ID: the registered job as {"Job": ...} JSON.
int RunJobInspect(const std::string& id, HttpClient& client, Ui& ui);

// drover job init [-short] [FILE]: write an example job that runs as-is (raw_exec).
int RunJobInit(const std::string& file, bool short_form, Ui& ui);

// drover job status [-short] [-verbose] [-evals] [-all-allocs] [ID].
struct JobStatusOptions {
  std::string id;
  bool short_output = false;
  bool verbose = false;
  bool evals = false;
  bool all_allocs = false;
};
int RunJobStatus(const JobStatusOptions& options, HttpClient& client, Ui& ui);

// drover job stop [-purge] [-detach] [-yes] [-verbose] ID.
struct JobStopOptions {
  std::string id;
  bool purge = false;
  bool detach = false;
  bool yes = false;
  bool verbose = false;
};
int RunJobStop(const JobStopOptions& options, HttpClient& client, Ui& ui);

// drover alloc status [-short] [-verbose] [-stats] ALLOC_ID.
struct AllocStatusOptions {
  std::string id;
  bool short_output = false;
  bool verbose = false;
  bool stats = false;  // detailed memory and CPU usage per task
};
int RunAllocStatus(const AllocStatusOptions& options, HttpClient& client, Ui& ui);

// drover alloc restart [-task TASK] [-all-tasks] [-verbose] ALLOC_ID [TASK]. `task` is
// -task, `task_arg` the TASK argument; they name the same task (an error when both are
// given and differ). Prints nothing on success.
struct AllocRestartOptions {
  std::string id;
  std::string task;
  std::string task_arg;
  bool all_tasks = false;
  bool verbose = false;
};
int RunAllocRestart(const AllocRestartOptions& options, HttpClient& client, Ui& ui);

// drover alloc signal [-s SIGNAL] [-task TASK] [-verbose] ALLOC_ID [TASK]. An empty
// `signal` is sent as is (the agent then uses SIGKILL). Prints nothing on success.
struct AllocSignalOptions {
  std::string id;
  std::string signal;
  std::string task;
  std::string task_arg;
  bool verbose = false;
};
int RunAllocSignal(const AllocSignalOptions& options, HttpClient& client, Ui& ui);

// drover alloc logs [-stderr] [-tail] [-n N] [-c N] ALLOC [TASK]
struct AllocLogsOptions {
  std::string id;
  std::string task;
  bool stderr_ = false;
  bool tail = false;
  int64_t lines = -1;  // -n: last N lines
  int64_t bytes = -1;  // -c: last N bytes
  bool follow = false;
  bool verbose = false;
};
int RunAllocLogs(const AllocLogsOptions& options, HttpClient& client, Ui& ui);

// drover alloc fs [-stat] ALLOC [PATH]
struct AllocFsOptions {
  std::string id;
  std::string path;
  bool stat = false;
  bool verbose = false;
};
int RunAllocFs(const AllocFsOptions& options, HttpClient& client, Ui& ui);

// drover node status [-verbose] [-stats] [ID].
struct NodeStatusOptions {
  std::string id;
  bool verbose = false;
  bool stats = false;  // per-CPU, memory and disk details of the node
};
int RunNodeStatus(const NodeStatusOptions& options, HttpClient& client, Ui& ui);

// drover status [ID]: without an ID, the cluster (servers and the leader, nodes by
// status) and then the jobs; with one, the job's status (job status ID).
int RunStatus(const JobStatusOptions& options, HttpClient& client, Ui& ui);

// drover server members [-detailed]: the servers and which leads.
struct ServerMembersOptions {
  bool detailed = false;
};
int RunServerMembers(const ServerMembersOptions& options, HttpClient& client, Ui& ui);

// drover event stream [-topic T[:KEY]]... [-index N]: follows the servers' events
// (GET /v1/event/stream), printing each index's events as one JSON line, as the API
// sends them; heartbeats are not printed. Ends when the stream does (or on Ctrl-C).
struct EventStreamOptions {
  std::vector<std::string> topics;
  uint64_t index = 0;
};
int RunEventStream(const EventStreamOptions& options, HttpClient& client, Ui& ui);

// drover job allocs [-all] [-verbose] JOB: the job's allocations.
struct JobAllocsOptions {
  std::string id;
  bool all = false;
  bool verbose = false;
};
int RunJobAllocs(const JobAllocsOptions& options, HttpClient& client, Ui& ui);

// drover alloc stop [-detach] [-no-shutdown-delay] [-verbose] ALLOC: stops it; the
// scheduler places a replacement, monitored unless -detach.
struct AllocStopOptions {
  std::string id;
  bool detach = false;
  bool no_shutdown_delay = false;
  bool verbose = false;
};
int RunAllocStop(const AllocStopOptions& options, HttpClient& client, Ui& ui);

// drover node eligibility -enable|-disable [-self] [NODE].
struct NodeEligibilityOptions {
  std::string id;
  bool enable = false;
  bool disable = false;
  bool self = false;
};
int RunNodeEligibility(const NodeEligibilityOptions& options, HttpClient& client, Ui& ui);

// drover node drain -enable|-disable [-deadline D|-force|-no-deadline] [-ignore-system]
// [-keep-ineligible] [-detach] [-yes] [-m MSG] [-meta k=v] [-self] [NODE], or
// -monitor [NODE]: a drain set, then followed until every allocation has stopped.
struct NodeDrainOptions {
  std::string id;
  bool enable = false;
  bool disable = false;
  bool monitor = false;
  bool detach = false;
  bool yes = false;
  bool self = false;
  std::optional<std::string> deadline;
  bool force = false;
  bool no_deadline = false;
  bool ignore_system = false;
  bool keep_ineligible = false;
  std::string message;
  std::vector<std::string> meta;
};
int RunNodeDrain(const NodeDrainOptions& options, HttpClient& client, Ui& ui);
// Follows a node's drain: allocation changes, then the drain's end, until every
// allocation on the node has stopped.
int MonitorDrain(HttpClient& client, Ui& ui, const std::string& node_id);

// drover agent -dev | -data-dir DIR [...]. Unset strings/ports keep AgentConfig's
// defaults.
struct AgentOptions {
  bool dev = false;
  bool server = false;
  bool client = false;
  std::string servers;  // -servers host:port[,host:port]
  int rpc_port = -1;
  int bootstrap_expect = -1;              // -bootstrap-expect N (above 1 only with etcd)
  std::string etcd_endpoints;             // -etcd-endpoints host:port[,host:port]
  std::vector<std::string> config_paths;  // -config FILE|DIR, in order
  std::string bind;
  int http_port = -1;
  std::string data_dir;
  std::string node;
  std::string log_level;
  std::string region;
  std::string datacenter;
  bool reset_corrupt_state = false;
};
// Defaults, then -config files in order, then flags. InvalidArgument: neither -dev nor a
// data dir, no role (-dev, -server or -client), a client-only agent without servers, a
// bad -http-port, -rpc-port, -bootstrap-expect or -log-level, or a configuration file
// error.
absl::StatusOr<agent::AgentConfig> BuildAgentConfig(const AgentOptions& options);
// Validates the options and hands the config to `run_agent` (agent::RunAgent in the
// binary), whose result is the exit code.
int RunAgentCommand(const AgentOptions& options, Ui& ui,
                    const std::function<int(const agent::AgentConfig&)>& run_agent);

// "Drover v0.1.0".
std::string VersionString();
int RunVersion(Ui& ui);

// drover operator client-state -data-dir DIR: the client state DB as JSON.
int RunOperatorClientState(const std::string& data_dir, Ui& ui);
// drover operator snapshot save|restore|inspect FILE (docs/ha.md).
int RunOperatorSnapshotSave(const std::string& file, HttpClient& client, Ui& ui);
int RunOperatorSnapshotRestore(const std::string& file, HttpClient& client, Ui& ui);
int RunOperatorSnapshotInspect(const std::string& file, Ui& ui);
// drover system gc: the servers' garbage collection, now (PUT /v1/system/gc).
int RunSystemGc(HttpClient& client, Ui& ui);

// drover operator scheduler get-config [-json]: the scheduler configuration.
int RunSchedulerGetConfig(bool json, HttpClient& client, Ui& ui);

// drover operator scheduler set-config [-pause-eval-broker=BOOL] ...: changes what the
// flags name (the rest stays as it is); -check-index makes it a check-and-set.
struct SchedulerSetConfigOptions {
  std::optional<std::string> algorithm;
  std::optional<bool> memory_oversubscription;
  std::optional<bool> reject_job_registration;
  std::optional<bool> pause_eval_broker;
  // -preempt-{system,sysbatch,batch,service}-scheduler: refused when true.
  std::vector<std::pair<std::string, bool>> preemption;
  std::optional<uint64_t> check_index;
};
int RunSchedulerSetConfig(const SchedulerSetConfigOptions& options, HttpClient& client, Ui& ui);

// drover deployment list|status|promote|fail|pause|resume (Nomad's
// command/deployment_*.go). `id` is a deployment ID or prefix (status without one
// lists); `groups` are promote's -group flags (none: every group).
struct DeploymentOptions {
  std::string id;
  std::vector<std::string> groups;
  bool json = false;
  bool verbose = false;
  bool detach = false;
  bool monitor = false;
};
int RunDeploymentList(const DeploymentOptions& o, HttpClient& client, Ui& ui);
int RunDeploymentStatus(const DeploymentOptions& o, HttpClient& client, Ui& ui);
// `op`: "promote", "fail", "pause" or "resume". Then follows the evaluation the write
// created, unless -detach.
int RunDeploymentWrite(const DeploymentOptions& o, const std::string& op, HttpClient& client,
                       Ui& ui);
// Nomad's deployment list table and status block (KV, then "Deployed" and a table per
// task group with the columns that apply).
std::string FormatDeploymentList(const codec::Json& list, size_t id_length);
std::string FormatDeploymentStatus(const codec::Json& deployment, size_t id_length);
// The per-group table of a deployment (its "Deployed" section); empty without groups.
std::string FormatDeploymentGroups(const codec::Json& deployment);

// drover eval delete [-filter EXPR] [-yes] [EVAL_ID]: deletes an evaluation while the
// eval broker is paused (Nomad's command/eval_delete.go).
struct EvalDeleteOptions {
  std::string id;
  std::string filter;
  bool yes = false;
};
int RunEvalDelete(const EvalDeleteOptions& options, HttpClient& client, Ui& ui);

}  // namespace drover::cli
