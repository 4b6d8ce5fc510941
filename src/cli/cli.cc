#include "cli/cli.h"

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/http_client.h"
#include "cli/ui.h"
#include "cli/url.h"
#include <CLI/CLI.hpp>

namespace drover::cli {

namespace {

constexpr char kUsage[] = R"(Usage: drover [-version] [-help] <command> [<args>]

Common commands:
    job        Interact with jobs
    alloc      Interact with allocations
    deployment Interact with deployments
    node       Interact with nodes
    agent      Runs a Drover agent
    version    Prints the Drover version)";

// Flags every command that talks to the agent accepts.
struct ApiFlags {
  std::string address;
  std::string token;
};

void AddApiFlags(CLI::App* command, ApiFlags* flags) {
  command->add_option(
      "--address", flags->address,
      "Address of the Drover agent (default: $NOMAD_ADDR or " + std::string(kDefaultAddress) + ")");
  command->add_option("--token", flags->token, "ACL token (default: $NOMAD_TOKEN)");
}

// The job file and its variables (job run, job validate).
void AddJobFileFlags(CLI::App* command, JobFileOptions* options) {
  command->add_flag("--json", options->json, "The job file is JSON whatever its name");
  command->add_option("--var", options->vars, "Set an HCL variable: NAME=VALUE (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_option("--var-file", options->var_files, "Read HCL variables from a file")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_option("file", options->file, "Job file, HCL or JSON (\"-\" reads stdin)")
      ->required();
}

int WithClient(const ApiFlags& flags, const Dependencies& deps, Ui& ui,
               const std::function<int(HttpClient&, Ui&)>& command) {
  const std::string env_addr = deps.getenv("NOMAD_ADDR");
  absl::StatusOr<Address> address = ParseAddress(ChooseAddress(flags.address, env_addr.c_str()));
  if (!address.ok()) {
    ui.Error(absl::StrCat("Error initializing client: ", address.status().message()));
    return kExitError;
  }
  std::string token = flags.token.empty() ? deps.getenv("NOMAD_TOKEN") : flags.token;
  std::unique_ptr<HttpClient> client = deps.new_client(*std::move(address), std::move(token));
  return command(*client, ui);
}

// What the Add*Commands functions need to make a chosen command the one that runs:
// pointers to what outlives the parse (the callbacks run after the functions return).
struct CommandBinder {
  ApiFlags* flags;
  const Dependencies* deps;
  Ui* ui;
  std::function<int()>* action;

  // A callback that makes `run` the action, with a client for the chosen agent.
  std::function<void()> Client(std::function<int(HttpClient&, Ui&)> run) const {
    return [b = *this, run] {
      *b.action = [b, run] { return WithClient(*b.flags, *b.deps, *b.ui, run); };
    };
  }
  // A callback that makes `run` the action, without a client.
  std::function<void()> Local(std::function<int()> run) const {
    return [action = this->action, run] { *action = run; };
  }
};

// The deepest subcommand the parser got to, for error usage.
const CLI::App* SelectedCommand(const CLI::App& app) {
  const CLI::App* current = &app;
  while (true) {
    std::vector<CLI::App*> subs = current->get_subcommands();
    if (subs.empty()) {
      return current;
    }
    current = subs.front();
  }
}

// drover operator client-state | snapshot save|restore|inspect, and drover system gc.
// `arg` holds the chosen command's argument; `action` gets what runs it.
void AddOperatorCommands(CLI::App& app, ApiFlags* flags, const Dependencies& deps, Ui& ui,
                         std::function<int()>& action, std::string& arg) {
  // The callbacks run after this returns: they hold pointers to what outlives the parse.
  Ui* out = &ui;
  const Dependencies* d = &deps;
  std::string* a = &arg;
  std::function<int()>* act = &action;
  CLI::App* op = app.add_subcommand("operator", "Operator tools");
  op->require_subcommand(1);
  CLI::App* client_state =
      op->add_subcommand("client-state", "Dump the client state DB of a data dir as JSON");
  client_state->add_option("--data-dir", arg, "The agent's data directory");
  client_state->callback([=] { *act = [=] { return RunOperatorClientState(*a, *out); }; });
  CLI::App* snapshot =
      op->add_subcommand("snapshot", "Save, restore or inspect the servers' state");
  snapshot->require_subcommand(1);
  using Run = int (*)(const std::string&, HttpClient&, Ui&);
  const auto with_client = [=](Run run) {
    return [=] {
      *act = [=] {
        return WithClient(*flags, *d, *out, [=](HttpClient& c, Ui& u) { return run(*a, c, u); });
      };
    };
  };
  CLI::App* save = snapshot->add_subcommand("save", "Save the servers' state to a file");
  save->add_option("file", arg, "Where to write it")->required();
  AddApiFlags(save, flags);
  save->callback(with_client(&RunOperatorSnapshotSave));
  CLI::App* restore =
      snapshot->add_subcommand("restore", "Replace the servers' state with a file's");
  restore->add_option("file", arg, "A file written by snapshot save")->required();
  AddApiFlags(restore, flags);
  restore->callback(with_client(&RunOperatorSnapshotRestore));
  CLI::App* inspect = snapshot->add_subcommand("inspect", "Describe a snapshot file");
  inspect->add_option("file", arg, "A file written by snapshot save")->required();
  inspect->callback([=] { *act = [=] { return RunOperatorSnapshotInspect(*a, *out); }; });
  CLI::App* system = app.add_subcommand("system", "Interact with the servers' system API");
  system->require_subcommand(1);
  CLI::App* gc = system->add_subcommand("gc", "Run the servers' garbage collection now");
  AddApiFlags(gc, flags);
  gc->callback([=] {
    *act = [=] {
      return WithClient(*flags, *d, *out, [](HttpClient& c, Ui& u) { return RunSystemGc(c, u); });
    };
  });
}

// What the job-version commands parse into; outlives the parse.
struct JobVersionOptions {
  JobPlanOptions plan;
  JobHistoryOptions history;
  JobRevertOptions revert;
  JobEvalOptions eval;
  JobScaleOptions scale;
  JobPeriodicForceOptions periodic_force;
  JobDispatchOptions dispatch;
};

// drover job plan, history, revert, eval, scale, periodic force and dispatch. `action`
// gets what runs the chosen one.
void AddJobVersionCommands(CLI::App* job, ApiFlags* flags, const Dependencies& deps, Ui& ui,
                           std::function<int()>& action, JobVersionOptions* o) {
  const CommandBinder binder{flags, &deps, &ui, &action};
  const auto with_client = [binder](std::function<int(HttpClient&, Ui&)> run) {
    return binder.Client(std::move(run));
  };
  CLI::App* plan = job->add_subcommand("plan", "Show what running a job file would change");
  plan->add_flag("--diff", o->plan.diff, "Show the diff to the registered job (--diff=false: not)");
  plan->add_flag("--verbose", o->plan.verbose, "Show unchanged fields too");
  AddJobFileFlags(plan, &o->plan.job_file);
  AddApiFlags(plan, flags);
  plan->callback(with_client([o](HttpClient& c, Ui& u) { return RunJobPlan(o->plan, c, u); }));

  CLI::App* history = job->add_subcommand("history", "Display the kept versions of a job");
  history->add_flag("-p", o->history.diff, "Show each version's changes");
  history->add_flag("--full", o->history.full, "Show each version's whole job");
  history->add_flag("--json", o->history.json, "Print the versions as JSON");
  history->add_option("--version", o->history.version, "Only this version");
  history->add_option("id", o->history.id, "Job ID or prefix")->required();
  AddApiFlags(history, flags);
  history->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunJobHistory(o->history, c, u); }));

  CLI::App* revert = job->add_subcommand("revert", "Register an earlier version of a job again");
  revert->add_flag("--detach", o->revert.detach, "Print the evaluation ID and return");
  revert->add_flag("--verbose", o->revert.verbose, "Print full IDs");
  revert->add_option("id", o->revert.id, "Job ID or prefix")->required();
  revert->add_option("version", o->revert.version, "The version to go back to")->required();
  AddApiFlags(revert, flags);
  revert->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunJobRevert(o->revert, c, u); }));

  CLI::App* eval = job->add_subcommand("eval", "Create a new evaluation of a job");
  eval->add_flag("--force-reschedule", o->eval.force_reschedule,
                 "Replace failed allocations now, whatever their reschedule policy's delay");
  eval->add_flag("--detach", o->eval.detach, "Print the evaluation ID and return");
  eval->add_flag("--verbose", o->eval.verbose, "Print full IDs");
  eval->add_option("id", o->eval.id, "Job ID or prefix")->required();
  AddApiFlags(eval, flags);
  eval->callback(with_client([o](HttpClient& c, Ui& u) { return RunJobEval(o->eval, c, u); }));

  CLI::App* scale = job->add_subcommand("scale", "Change the count of a job's group");
  scale->add_flag("--detach", o->scale.detach, "Print the evaluation ID and return");
  scale->add_flag("--verbose", o->scale.verbose, "Print full IDs");
  scale->add_option("id", o->scale.id, "Job ID or prefix")->required();
  scale->add_option("args", o->scale.args, "[GROUP] COUNT")->required();
  AddApiFlags(scale, flags);
  scale->callback(with_client([o](HttpClient& c, Ui& u) { return RunJobScale(o->scale, c, u); }));

  CLI::App* periodic = job->add_subcommand("periodic", "Interact with periodic jobs");
  periodic->require_subcommand(1);
  CLI::App* force = periodic->add_subcommand("force", "Launch a periodic job now");
  force->add_flag("--detach", o->periodic_force.detach, "Print the evaluation ID and return");
  force->add_flag("--verbose", o->periodic_force.verbose, "Print full IDs");
  force->add_option("id", o->periodic_force.id, "Job ID or prefix")->required();
  AddApiFlags(force, flags);
  force->callback(with_client(
      [o](HttpClient& c, Ui& u) { return RunJobPeriodicForce(o->periodic_force, c, u); }));

  CLI::App* dispatch = job->add_subcommand("dispatch", "Dispatch a parameterized job");
  // One value per -meta: a vector option would otherwise take the positionals after it.
  dispatch->add_option("--meta", o->dispatch.meta, "Meta key=value (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  dispatch->add_option("--id-prefix-template", o->dispatch.id_prefix_template,
                       "Put this in the dispatched job's ID");
  dispatch->add_option("--idempotency-token", o->dispatch.idempotency_token,
                       "Dispatch at most once with this token");
  dispatch->add_flag("--detach", o->dispatch.detach, "Print the evaluation ID and return");
  dispatch->add_flag("--verbose", o->dispatch.verbose, "Print full IDs");
  dispatch->add_option("id", o->dispatch.id, "Job ID")->required();
  dispatch->add_option("input", o->dispatch.input, "Payload file (\"-\" reads stdin)");
  AddApiFlags(dispatch, flags);
  dispatch->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunJobDispatch(o->dispatch, c, u); }));
}

// drover deployment list|status|promote|fail|pause|resume.
void AddDeploymentCommands(CLI::App& app, ApiFlags* flags, const Dependencies& deps, Ui& ui,
                           std::function<int()>& action, DeploymentOptions* o) {
  const CommandBinder binder{flags, &deps, &ui, &action};
  const auto with_client = [binder](std::function<int(HttpClient&, Ui&)> run) {
    return binder.Client(std::move(run));
  };
  CLI::App* deployment = app.add_subcommand("deployment", "Interact with deployments");
  deployment->require_subcommand(1);
  CLI::App* list = deployment->add_subcommand("list", "List deployments");
  list->add_flag("--json", o->json, "Print them as JSON");
  list->add_flag("--verbose", o->verbose, "Print full IDs");
  AddApiFlags(list, flags);
  list->callback(with_client([o](HttpClient& c, Ui& u) { return RunDeploymentList(*o, c, u); }));
  CLI::App* status = deployment->add_subcommand("status", "Display a deployment's status");
  status->add_flag("--json", o->json, "Print it as JSON");
  status->add_flag("--verbose", o->verbose, "Print full IDs");
  status->add_flag("--monitor", o->monitor, "Follow it until it ends");
  status->add_option("id", o->id, "Deployment ID or prefix (none: list them)");
  AddApiFlags(status, flags);
  status->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunDeploymentStatus(*o, c, u); }));
  const std::pair<const char*, const char*> writes[] = {
      {"promote", "Promote a deployment's canaries"},
      {"fail", "Mark a deployment failed (rolling back where it auto-reverts)"},
      {"pause", "Pause a deployment"},
      {"resume", "Resume a paused deployment"}};
  for (const auto& [name, help] : writes) {
    CLI::App* w = deployment->add_subcommand(name, help);
    const std::string op = name;
    if (op == "promote") {
      w->add_option("--group", o->groups, "Promote this group only (repeatable)")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    if (op != "pause")
      w->add_flag("--detach", o->detach, "Print the evaluation ID and return");
    w->add_flag("--verbose", o->verbose, "Print full IDs");
    w->add_option("id", o->id, "Deployment ID or prefix")->required();
    AddApiFlags(w, flags);
    w->callback(
        with_client([o, op](HttpClient& c, Ui& u) { return RunDeploymentWrite(*o, op, c, u); }));
  }
}

// What the scheduler and eval commands parse into; outlives the parse.
struct SchedulerCommandOptions {
  bool json = false;
  SchedulerSetConfigOptions set;
  EvalDeleteOptions eval_delete;
};

// A flag that takes true or false (Go's ParseBool spellings), for set-config.
bool ParseBoolFlag(const std::string& flag, const std::string& value) {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (value == t)
      return true;
  }
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (value == f)
      return false;
  }
  throw CLI::ValidationError(flag, "must be true or false, not \"" + value + "\"");
}

// drover operator scheduler get-config|set-config and drover eval delete. REQUIRES: the
// operator command was added (AddOperatorCommands).
void AddSchedulerCommands(CLI::App& app, ApiFlags* flags, const Dependencies& deps, Ui& ui,
                          std::function<int()>& action, SchedulerCommandOptions* o) {
  const CommandBinder binder{flags, &deps, &ui, &action};
  const auto with_client = [binder](std::function<int(HttpClient&, Ui&)> run) {
    return binder.Client(std::move(run));
  };
  CLI::App* scheduler =
      app.get_subcommand("operator")->add_subcommand("scheduler", "The scheduler configuration");
  scheduler->require_subcommand(1);
  CLI::App* get = scheduler->add_subcommand("get-config", "Show the scheduler configuration");
  get->add_flag("--json", o->json, "Print it as JSON");
  AddApiFlags(get, flags);
  get->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunSchedulerGetConfig(o->json, c, u); }));
  CLI::App* set = scheduler->add_subcommand("set-config", "Change the scheduler configuration");
  set->add_option_function<std::string>(
      "--scheduler-algorithm", [o](const std::string& v) { o->set.algorithm = v; },
      "binpack (the only one Drover has)");
  const std::pair<const char*, std::optional<bool>*> bools[] = {
      {"--memory-oversubscription", &o->set.memory_oversubscription},
      {"--reject-job-registration", &o->set.reject_job_registration},
      {"--pause-eval-broker", &o->set.pause_eval_broker}};
  for (const auto& [flag, field] : bools) {
    std::optional<bool>* f = field;
    std::string name = flag;
    set->add_option_function<std::string>(
        flag, [f, name](const std::string& v) { *f = ParseBoolFlag(name, v); }, "true or false");
  }
  const std::pair<const char*, const char*> preempt[] = {
      {"--preempt-system-scheduler", "SystemSchedulerEnabled"},
      {"--preempt-sysbatch-scheduler", "SysBatchSchedulerEnabled"},
      {"--preempt-batch-scheduler", "BatchSchedulerEnabled"},
      {"--preempt-service-scheduler", "ServiceSchedulerEnabled"}};
  for (const auto& [flag, field] : preempt) {
    std::string name = flag;
    std::string json_field = field;
    set->add_option_function<std::string>(
        flag,
        [o, name, json_field](const std::string& v) {
          o->set.preemption.emplace_back(json_field, ParseBoolFlag(name, v));
        },
        "Drover does not preempt: only false is taken");
  }
  set->add_option_function<uint64_t>(
      "--check-index", [o](const uint64_t& v) { o->set.check_index = v; },
      "Change it only if its modify index is this one");
  AddApiFlags(set, flags);
  set->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunSchedulerSetConfig(o->set, c, u); }));

  CLI::App* eval = app.add_subcommand("eval", "Interact with evaluations");
  eval->require_subcommand(1);
  CLI::App* del = eval->add_subcommand("delete", "Delete an evaluation (the broker paused)");
  del->add_option("--filter", o->eval_delete.filter, "Delete the evaluations a filter matches");
  del->add_flag("--yes,-y", o->eval_delete.yes, "Do not ask for confirmation");
  del->add_option("id", o->eval_delete.id, "The evaluation's ID");
  AddApiFlags(del, flags);
  del->callback(
      with_client([o](HttpClient& c, Ui& u) { return RunEvalDelete(o->eval_delete, c, u); }));
}

struct JobOptions {
  JobRunOptions run;
  JobVersionOptions versions;
  JobFileOptions validate;
  std::string inspect_id;
  std::string init_file;
  bool init_short = false;
  JobStatusOptions status;
  JobStopOptions stop;
  JobAllocsOptions allocs;
};

struct AllocOptions {
  AllocStatusOptions status;
  AllocStopOptions stop;
  AllocRestartOptions restart;
  AllocSignalOptions signal;
  AllocLogsOptions logs;
  AllocFsOptions fs;
};

struct NodeOptions {
  NodeStatusOptions status;
  NodeEligibilityOptions eligibility;
  NodeDrainOptions drain;
};

struct ClusterOptions {
  JobStatusOptions status;
  ServerMembersOptions members;
  EventStreamOptions events;
};

// drover agent.
void AddAgentCommand(CLI::App& app, const CommandBinder& b, AgentOptions* o) {
  CLI::App* agent = app.add_subcommand("agent", "Runs a Drover agent");
  agent->add_flag("--dev", o->dev, "Development mode: server and client in one agent");
  agent->add_flag("--server", o->server, "Run a server");
  agent->add_flag("--client", o->client, "Run a client");
  agent->add_option("--servers", o->servers,
                    "A client's servers: RPC addresses host:port, comma separated");
  agent->add_option("--bootstrap-expect", o->bootstrap_expect,
                    "Servers to wait for before electing a first leader (above 1 needs etcd)");
  agent->add_option("--etcd-endpoints", o->etcd_endpoints,
                    "Servers share their state in etcd: its client URLs, comma separated");
  agent->add_option("--rpc-port", o->rpc_port,
                    "A server's RPC port for clients (default 4647; 0 picks a free one)");
  agent->add_option("--bind", o->bind, "Address to bind the HTTP API to");
  agent->add_option("--http-port", o->http_port, "HTTP API port (0 picks a free one)");
  agent->add_option("--data-dir", o->data_dir, "Directory for agent state");
  agent->add_option("--node", o->node, "Node name (default: the host name)");
  agent->add_option("--log-level", o->log_level, "trace, debug, info, warn or error");
  agent->add_option("--region", o->region, "Region (default: global)");
  agent->add_option("--dc", o->datacenter, "Datacenter (default: dc1)");
  agent
      ->add_option("--config", o->config_paths,
                   "Configuration file or directory (HCL or JSON; repeatable, later wins)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  agent->add_flag("--reset-corrupt-state", o->reset_corrupt_state,
                  "Move a damaged state DB aside and start with an empty one");
  agent->callback(
      b.Local([o, ui = b.ui, deps = b.deps] { return RunAgentCommand(*o, *ui, deps->run_agent); }));
}

// drover job run|plan|history|revert|eval|scale|validate|inspect|init|status|stop|allocs.
void AddJobCommands(CLI::App& app, const CommandBinder& b, JobOptions* o) {
  CLI::App* job = app.add_subcommand("job", "Interact with jobs");
  job->require_subcommand(1);

  CLI::App* run = job->add_subcommand("run", "Run a new job or update an existing job");
  run->add_flag("--detach", o->run.detach, "Return right after registering the job");
  run->add_flag("--verbose", o->run.verbose, "Print full IDs");
  run->add_flag("--output", o->run.output,
                "Print the job's JSON (API form) instead of submitting it");
  run->add_option_function<uint64_t>(
      "--check-index", [o](const uint64_t& index) { o->run.check_index = index; },
      "Run only if the job's modify index is this one (as `job plan` printed it)");
  AddJobFileFlags(run, &o->run.job_file);
  AddApiFlags(run, b.flags);
  run->callback(b.Client([o](HttpClient& c, Ui& u) { return RunJobRun(o->run, c, u); }));

  AddJobVersionCommands(job, b.flags, *b.deps, *b.ui, *b.action, &o->versions);

  CLI::App* validate = job->add_subcommand("validate", "Check a job file for errors");
  AddJobFileFlags(validate, &o->validate);
  AddApiFlags(validate, b.flags);
  validate->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunJobValidate(o->validate, c, u); }));

  CLI::App* inspect = job->add_subcommand("inspect", "Print a registered job as JSON");
  inspect->add_option("id", o->inspect_id, "Job ID or prefix")->required();
  AddApiFlags(inspect, b.flags);
  inspect->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunJobInspect(o->inspect_id, c, u); }));

  CLI::App* init = job->add_subcommand("init", "Write an example job file");
  init->add_flag("--short", o->init_short, "Write the example without comments");
  init->add_option("file", o->init_file, "File to write (default: example.nomad.hcl)");
  init->callback(b.Local([o, ui = b.ui] { return RunJobInit(o->init_file, o->init_short, *ui); }));

  CLI::App* status = job->add_subcommand("status", "Display status information about a job");
  status->add_flag("--short", o->status.short_output, "Only the job's basic information");
  status->add_flag("--verbose", o->status.verbose, "Full IDs and absolute times");
  status->add_flag("--evals", o->status.evals, "Show the job's evaluations");
  status->add_flag("--all-allocs", o->status.all_allocs, "Allocations of every version of the job");
  status->add_option("id", o->status.id, "Job ID or prefix (omit to list jobs)");
  AddApiFlags(status, b.flags);
  status->callback(b.Client([o](HttpClient& c, Ui& u) { return RunJobStatus(o->status, c, u); }));

  CLI::App* stop = job->add_subcommand("stop", "Stop a running job");
  stop->add_flag("--purge", o->stop.purge, "Purge the job from the system");
  stop->add_flag("--detach", o->stop.detach, "Print the evaluation ID and return");
  stop->add_flag("--yes,-y", o->stop.yes, "Do not ask for confirmation");
  stop->add_flag("--verbose", o->stop.verbose, "Print full IDs");
  stop->add_option("id", o->stop.id, "Job ID or prefix")->required();
  AddApiFlags(stop, b.flags);
  stop->callback(b.Client([o](HttpClient& c, Ui& u) { return RunJobStop(o->stop, c, u); }));

  CLI::App* job_allocs = job->add_subcommand("allocs", "List allocations for a job");
  job_allocs->add_flag("--all", o->allocs.all, "Allocations of every version of the job");
  job_allocs->add_flag("--verbose", o->allocs.verbose, "Full IDs and absolute times");
  job_allocs->add_option("id", o->allocs.id, "Job ID or prefix")->required();
  AddApiFlags(job_allocs, b.flags);
  job_allocs->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunJobAllocs(o->allocs, c, u); }));
}

// drover alloc status|stop|restart|signal|logs|fs.
void AddAllocCommands(CLI::App& app, const CommandBinder& b, AllocOptions* o) {
  CLI::App* alloc = app.add_subcommand("alloc", "Interact with allocations");
  alloc->require_subcommand(1);
  CLI::App* alloc_status =
      alloc->add_subcommand("status", "Display allocation status information and metadata");
  alloc_status->add_flag("--short", o->status.short_output, "Tasks as a short table");
  alloc_status->add_flag("--verbose", o->status.verbose, "Full IDs and absolute times");
  alloc_status->add_flag("--stats", o->status.stats, "Detailed resource usage per task");
  alloc_status->add_option("id", o->status.id, "Allocation ID or prefix")->required();
  AddApiFlags(alloc_status, b.flags);
  alloc_status->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunAllocStatus(o->status, c, u); }));

  CLI::App* alloc_stop = alloc->add_subcommand("stop", "Stop and reschedule a running allocation");
  alloc_stop->add_flag("--detach", o->stop.detach, "Print the evaluation ID and return");
  alloc_stop->add_flag("--no-shutdown-delay", o->stop.no_shutdown_delay,
                       "Skip the tasks' shutdown_delay");
  alloc_stop->add_flag("--verbose", o->stop.verbose, "Full IDs");
  alloc_stop->add_option("id", o->stop.id, "Allocation ID or prefix")->required();
  AddApiFlags(alloc_stop, b.flags);
  alloc_stop->callback(b.Client([o](HttpClient& c, Ui& u) { return RunAllocStop(o->stop, c, u); }));

  CLI::App* alloc_restart =
      alloc->add_subcommand("restart", "Restart a running allocation or task");
  alloc_restart->add_option("--task", o->restart.task, "The task to restart");
  alloc_restart->add_flag("--all-tasks", o->restart.all_tasks,
                          "Restart every task, even those that already ran");
  alloc_restart->add_flag("--verbose", o->restart.verbose, "Full IDs");
  alloc_restart->add_option("id", o->restart.id, "Allocation ID or prefix")->required();
  alloc_restart->add_option("task_name", o->restart.task_arg, "The task to restart");
  AddApiFlags(alloc_restart, b.flags);
  alloc_restart->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunAllocRestart(o->restart, c, u); }));

  CLI::App* alloc_signal = alloc->add_subcommand("signal", "Signal a running allocation");
  // "--s" too: NormalizeArgs turns "-s=SIGHUP" into "--s=SIGHUP".
  alloc_signal->add_option("-s,--s", o->signal.signal,
                           "The signal to send (default: SIGKILL, chosen by the agent)");
  alloc_signal->add_option("--task", o->signal.task, "The task to signal");
  alloc_signal->add_flag("--verbose", o->signal.verbose, "Full IDs");
  alloc_signal->add_option("id", o->signal.id, "Allocation ID or prefix")->required();
  alloc_signal->add_option("task_name", o->signal.task_arg,
                           "The task to signal (default: every task)");
  AddApiFlags(alloc_signal, b.flags);
  alloc_signal->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunAllocSignal(o->signal, c, u); }));

  CLI::App* alloc_logs = alloc->add_subcommand("logs", "Stream the logs of a task");
  alloc_logs->add_flag("--stderr", o->logs.stderr_, "Show stderr instead of stdout");
  alloc_logs->add_flag("--tail", o->logs.tail, "Show the end of the log (10 lines)");
  alloc_logs->add_option("-n,--n", o->logs.lines, "Show the last N lines");
  alloc_logs->add_option("-c,--c", o->logs.bytes, "Show the last N bytes");
  alloc_logs->add_flag("-f,--f", o->logs.follow, "Follow the log as the task writes it");
  alloc_logs->add_flag("--verbose", o->logs.verbose, "Full IDs");
  alloc_logs->add_option("id", o->logs.id, "Allocation ID or prefix")->required();
  alloc_logs->add_option("task_name", o->logs.task, "The task (default: the group's only task)");
  AddApiFlags(alloc_logs, b.flags);
  alloc_logs->callback(b.Client([o](HttpClient& c, Ui& u) { return RunAllocLogs(o->logs, c, u); }));

  CLI::App* alloc_fs = alloc->add_subcommand("fs", "Inspect the contents of an allocation dir");
  alloc_fs->add_flag("--stat", o->fs.stat, "Show file information instead of contents");
  alloc_fs->add_flag("--verbose", o->fs.verbose, "Full IDs");
  alloc_fs->add_option("id", o->fs.id, "Allocation ID or prefix")->required();
  alloc_fs->add_option("path", o->fs.path, "Path in the alloc dir (default: /)");
  AddApiFlags(alloc_fs, b.flags);
  alloc_fs->callback(b.Client([o](HttpClient& c, Ui& u) { return RunAllocFs(o->fs, c, u); }));
}

// drover node status|eligibility|drain.
void AddNodeCommands(CLI::App& app, const CommandBinder& b, NodeOptions* o) {
  CLI::App* node = app.add_subcommand("node", "Interact with nodes");
  node->require_subcommand(1);
  CLI::App* node_status = node->add_subcommand("status", "Display status information about nodes");
  node_status->add_flag("--verbose", o->status.verbose, "Full IDs, drivers and attributes");
  node_status->add_flag("--stats", o->status.stats, "Detailed CPU, memory and disk usage");
  node_status->add_option("id", o->status.id, "Node ID or prefix (omit to list nodes)");
  AddApiFlags(node_status, b.flags);
  node_status->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunNodeStatus(o->status, c, u); }));

  CLI::App* node_eligibility =
      node->add_subcommand("eligibility", "Toggle scheduling eligibility for a node");
  node_eligibility->add_flag("--enable", o->eligibility.enable, "Mark the node eligible");
  node_eligibility->add_flag("--disable", o->eligibility.disable, "Mark the node ineligible");
  node_eligibility->add_flag("--self", o->eligibility.self, "The local node");
  node_eligibility->add_option("id", o->eligibility.id, "Node ID or prefix");
  AddApiFlags(node_eligibility, b.flags);
  node_eligibility->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunNodeEligibility(o->eligibility, c, u); }));

  CLI::App* node_drain =
      node->add_subcommand("drain", "Toggle drain mode on a node, moving its allocations away");
  node_drain->add_flag("--enable", o->drain.enable, "Enable draining");
  node_drain->add_flag("--disable", o->drain.disable, "Disable draining");
  node_drain->add_flag("--monitor", o->drain.monitor, "Follow an ongoing drain");
  node_drain->add_flag("--detach", o->drain.detach, "Return once the drain is set");
  node_drain->add_flag("--yes,-y", o->drain.yes, "Do not ask for confirmation");
  node_drain->add_flag("--self", o->drain.self, "The local node");
  node_drain->add_option("--deadline", o->drain.deadline,
                         "Force what is left off after this long (default 1h)");
  node_drain->add_flag("--force", o->drain.force, "Move every allocation off at once");
  node_drain->add_flag("--no-deadline", o->drain.no_deadline, "No deadline");
  node_drain->add_flag("--ignore-system", o->drain.ignore_system,
                       "Leave system job allocations running");
  node_drain->add_flag("--keep-ineligible", o->drain.keep_ineligible,
                       "With -disable: the node stays ineligible");
  node_drain->add_option("-m", o->drain.message, "A message kept with the drain");
  node_drain->add_option("--meta", o->drain.meta, "key=value kept with the drain");
  node_drain->add_option("id", o->drain.id, "Node ID or prefix");
  AddApiFlags(node_drain, b.flags);
  node_drain->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunNodeDrain(o->drain, c, u); }));
}

// drover status, drover server members, and drover event stream.
void AddClusterCommands(CLI::App& app, const CommandBinder& b, ClusterOptions* o) {
  CLI::App* top_status =
      app.add_subcommand("status", "Display the cluster's servers and nodes, and the jobs");
  top_status->add_option("id", o->status.id, "A job ID or prefix");
  AddApiFlags(top_status, b.flags);
  top_status->callback(b.Client([o](HttpClient& c, Ui& u) { return RunStatus(o->status, c, u); }));

  // drover server members
  CLI::App* server = app.add_subcommand("server", "Interact with servers");
  server->require_subcommand(1);
  CLI::App* members = server->add_subcommand("members", "Display a list of the known servers");
  members->add_flag("--detailed", o->members.detailed, "Every tag of each server");
  AddApiFlags(members, b.flags);
  members->callback(
      b.Client([o](HttpClient& c, Ui& u) { return RunServerMembers(o->members, c, u); }));

  // drover event stream (Nomad has no CLI for it).
  CLI::App* event = app.add_subcommand("event", "Follow the servers' events");
  event->require_subcommand(1);
  CLI::App* stream = event->add_subcommand("stream", "Print events as they happen, as JSON lines");
  stream->add_option("--topic", o->events.topics, "Topic[:key] (repeatable; default: every one)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  stream->add_option("--index", o->events.index, "Start at this index (0: the oldest kept)");
  AddApiFlags(stream, b.flags);
  stream->callback(b.Client([o](HttpClient& c, Ui& u) { return RunEventStream(o->events, c, u); }));
}

int RunUnchecked(const std::vector<std::string>& args, const Dependencies& deps, Ui& ui,
                 std::ostream& out, std::ostream& err) {
  CLI::App app{"Drover: a Nomad-compatible workload orchestrator", "drover"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version,-v", show_version, "Print the version and exit");

  std::function<int()> action;
  ApiFlags api;

  const CommandBinder binder{&api, &deps, &ui, &action};
  AgentOptions agent_options;
  AddAgentCommand(app, binder, &agent_options);
  JobOptions job_options;
  AddJobCommands(app, binder, &job_options);
  AllocOptions alloc_options;
  AddAllocCommands(app, binder, &alloc_options);
  NodeOptions node_options;
  AddNodeCommands(app, binder, &node_options);
  ClusterOptions cluster_options;
  AddClusterCommands(app, binder, &cluster_options);

  // drover operator ...
  std::string operator_arg;
  AddOperatorCommands(app, &api, deps, ui, action, operator_arg);
  SchedulerCommandOptions scheduler_options;
  AddSchedulerCommands(app, &api, deps, ui, action, &scheduler_options);
  DeploymentOptions deployment_options;
  AddDeploymentCommands(app, &api, deps, ui, action, &deployment_options);

  // drover version
  CLI::App* version = app.add_subcommand("version", "Prints the Drover version");
  version->callback([&] { action = [&] { return RunVersion(ui); }; });

  std::vector<std::string> normalized = NormalizeArgs(args);
  std::vector<const char*> argv;
  argv.reserve(normalized.size());
  for (const std::string& arg : normalized) {
    argv.push_back(arg.c_str());
  }
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    out << app.help() << std::flush;
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const CLI::App* selected = SelectedCommand(app);
    err << "Error: " << e.what() << "\n\n";
    if (selected == &app) {
      err << kUsage << std::endl;
    } else {
      err << app.help() << std::flush;
    }
    return kExitError;
  }

  if (show_version && !action) {
    return RunVersion(ui);
  }
  if (!action) {
    err << kUsage << std::endl;
    return kExitError;
  }
  return action();
}

}  // namespace

int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Dependencies& deps) {
  Ui ui(in, out, err, deps.now);
  try {
    return RunUnchecked(args, deps, ui, out, err);
  } catch (const std::exception& e) {
    err << "Error: internal error: " << e.what() << std::endl;
    return kExitError;
  }
}

}  // namespace drover::cli
