// drover alloc restart / drover alloc signal: in-place restart of an allocation's tasks
// and signals to them, through the client allocation API (Nomad's
// command/alloc_restart.go and command/alloc_signal.go).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/alloc_fetch.h"
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
