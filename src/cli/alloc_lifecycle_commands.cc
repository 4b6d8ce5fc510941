// drover alloc restart / drover alloc signal: in-place restart of an allocation's tasks
// and signals to them, through the client allocation API (Nomad's
// command/alloc_restart.go and command/alloc_signal.go).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/lookup.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "model/allocation.h"

namespace drover::cli {

namespace {

// The task named by the -task flag or the TASK argument, "" for none. Nomad silently
// prefers -task; two different names are refused here instead.
std::optional<std::string> ChooseTask(const std::string& flag, const std::string& arg, Ui& ui) {
  if (!flag.empty() && !arg.empty() && flag != arg) {
    ui.Error(absl::StrCat("The -task option and the task argument name different tasks: ",
                          Quote(flag), " and ", Quote(arg)));
    return std::nullopt;
  }
  return flag.empty() ? arg : flag;
}

// Nomad's validateTaskExistsInAllocation: `task` must be a task of the allocation's group.
absl::Status ValidateTaskExists(const model::Allocation& alloc, const std::string& task) {
  const model::TaskGroup* group = alloc.Group();
  if (group == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("Could not find allocation task group: ", alloc.task_group));
  }
  std::vector<std::string> names;
  for (const model::Task& t : group->tasks) {
    if (t.name == task) {
      return absl::OkStatus();
    }
    names.push_back(t.name);
  }
  return absl::NotFoundError(
      absl::StrCat("Could not find task named: ", task, ", found:\n", FormatList(names)));
}

// Resolves `prefix` to one allocation, fetches it and checks that `task` (when not empty)
// belongs to it. Prints the error and returns nullopt on failure.
std::optional<model::Allocation> FetchAllocWithTask(HttpClient& client, Ui& ui,
                                                    const std::string& prefix, bool verbose,
                                                    const std::string& task) {
  if (prefix.size() == 1) {
    ui.Error("Alloc ID must contain at least two characters.");
    return std::nullopt;
  }
  const size_t id_length = verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> alloc_id = LookupAllocId(client, ui, prefix, verbose, id_length);
  if (!alloc_id) {
    return std::nullopt;
  }
  absl::StatusOr<codec::Json> json =
      GetJson(client, absl::StrCat("/v1/allocation/", PathEscape(*alloc_id)));
  if (!json.ok()) {
    ui.Error(absl::StrCat("Error querying allocation: ", json.status().message()));
    return std::nullopt;
  }
  absl::StatusOr<model::Allocation> alloc = codec::AllocationFromJson(*json);
  if (!alloc.ok()) {
    ui.Error(absl::StrCat("Error querying allocation: ", alloc.status().message()));
    return std::nullopt;
  }
  if (!task.empty()) {
    if (absl::Status status = ValidateTaskExists(*alloc, task); !status.ok()) {
      ui.Error(std::string(status.message()));
      return std::nullopt;
    }
  }
  return *std::move(alloc);
}

}  // namespace

int RunAllocRestart(const AllocRestartOptions& options, HttpClient& client, Ui& ui) {
  std::optional<std::string> task = ChooseTask(options.task, options.task_arg, ui);
  if (!task) {
    return kExitError;
  }
  if (options.all_tasks && !task->empty()) {
    ui.Error("The -all-tasks option is not allowed when using a task name");
    return kExitError;
  }
  std::optional<model::Allocation> alloc =
      FetchAllocWithTask(client, ui, options.id, options.verbose, *task);
  if (!alloc) {
    return kExitError;
  }
  const codec::Json body = {{"TaskName", *task}, {"AllTasks", options.all_tasks}};
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/client/allocation/", PathEscape(alloc->id), "/restart"),
                codec::Dump(body));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Failed to restart ", task->empty() ? "allocation" : "task", ":\n\n",
                          response.status().message()));
    return kExitError;
  }
  return kExitOk;
}

int RunAllocSignal(const AllocSignalOptions& options, HttpClient& client, Ui& ui) {
  std::optional<std::string> task = ChooseTask(options.task, options.task_arg, ui);
  if (!task) {
    return kExitError;
  }
  std::optional<model::Allocation> alloc =
      FetchAllocWithTask(client, ui, options.id, options.verbose, *task);
  if (!alloc) {
    return kExitError;
  }
  const codec::Json body = {{"Task", *task}, {"Signal", options.signal}};
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/client/allocation/", PathEscape(alloc->id), "/signal"),
                codec::Dump(body));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error signalling allocation: ", response.status().message()));
    return kExitError;
  }
  return kExitOk;
}

}  // namespace drover::cli
