#include "cli/monitor.h"

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/format.h"
#include "cli/listing.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "model/evaluation.h"

namespace drover::cli {

namespace {

bool IsTerminal(const std::string& status) {
  return status == model::kEvalComplete || status == model::kEvalFailed ||
         status == model::kEvalCanceled;
}

}  // namespace

std::vector<std::string> EvalStateChanges(const EvalState& before, const EvalState& after,
                                          size_t id_length) {
  std::vector<std::string> lines;
  if (before.node.empty() && !after.node.empty()) {
    lines.push_back(
        absl::StrCat("Evaluation triggered by node ", Quote(Limit(after.node, id_length))));
  }
  if (before.job.empty() && !after.job.empty()) {
    lines.push_back(absl::StrCat("Evaluation triggered by job ", Quote(after.job)));
  }
  if (before.deployment.empty() && !after.deployment.empty()) {
    lines.push_back(
        absl::StrCat("Evaluation within deployment: ", Quote(Limit(after.deployment, id_length))));
  }
  for (const auto& [id, alloc] : after.allocs) {
    auto old = before.allocs.find(id);
    if (old == before.allocs.end()) {
      if (alloc.create_index < after.create_index) {
        // Created before this evaluation: an in-place update of an existing alloc.
        lines.push_back(absl::StrCat("Allocation ", Quote(Limit(alloc.id, id_length)),
                                     " modified: node ", Quote(Limit(alloc.node, id_length)),
                                     ", group ", Quote(alloc.group)));
      } else if (alloc.desired == model::kDesiredRun) {
        lines.push_back(absl::StrCat("Allocation ", Quote(Limit(alloc.id, id_length)),
                                     " created: node ", Quote(Limit(alloc.node, id_length)),
                                     ", group ", Quote(alloc.group)));
      }
    } else if (old->second.client != alloc.client) {
      std::string description;
      if (!alloc.client_description.empty()) {
        description = absl::StrCat(" (", alloc.client_description, ")");
      }
      lines.push_back(absl::StrCat("Allocation ", Quote(Limit(alloc.id, id_length)),
                                   " status changed: ", Quote(old->second.client), " -> ",
                                   Quote(alloc.client), description));
    }
  }
  // Transitions to pending are not worth a line.
  if (!before.status.empty() && after.status != model::kEvalPending &&
      before.status != after.status) {
    lines.push_back(absl::StrCat("Evaluation status changed: ", Quote(before.status), " -> ",
                                 Quote(after.status)));
  }
  return lines;
}

std::vector<std::string> FormatPlacementFailures(
    const std::map<std::string, model::AllocMetric>& failed, std::string_view timestamp) {
  std::vector<std::string> lines;
  for (const auto& [group, metrics] : failed) {
    const char* noun = metrics.coalesced_failures > 0 ? "allocations" : "allocation";
    lines.push_back(absl::StrCat(std::string(timestamp), ": Task Group ", Quote(group),
                                 " (failed to place ", metrics.coalesced_failures + 1, " ", noun,
                                 "):"));
    const std::string text = FormatAllocMetrics(metrics, "  ");
    if (!text.empty()) {
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        lines.emplace_back(line);
      }
    }
  }
  return lines;
}

EvalMonitor::EvalMonitor(HttpClient& client, Ui& ui, size_t id_length,
                         std::chrono::milliseconds min_poll_interval)
    : client_(client), ui_(ui), id_length_(id_length), min_poll_interval_(min_poll_interval) {}

std::string EvalMonitor::Timestamp() const {
  return FormatTime(ui_.Now());
}

void EvalMonitor::Info(std::string_view message) {
  ui_.Output(absl::StrCat("==> ", Timestamp(), ": ", std::string(message)));
}

void EvalMonitor::Output(std::string_view message) {
  ui_.Output(absl::StrCat("    ", Timestamp(), ": ", std::string(message)));
}

absl::StatusOr<model::Evaluation> EvalMonitor::EvaluationOf(const HttpResponse& response) {
  absl::StatusOr<codec::Json> json = codec::ParseJson(response.body);
  if (!json.ok()) {
    return json.status();
  }
  return codec::EvaluationFromJson(*json);
}

std::optional<EvalState> EvalMonitor::StateOf(const model::Evaluation& eval,
                                              const std::string& eval_path) {
  EvalState next;
  next.status = eval.status;
  next.node = eval.node_id;
  next.job = eval.job_id;
  next.deployment = eval.deployment_id;
  next.create_index = eval.create_index;
  absl::StatusOr<codec::Json> allocs = GetJson(client_, absl::StrCat(eval_path, "/allocations"));
  if (!allocs.ok()) {
    ui_.Error(absl::StrCat("==> Error reading allocations: ", allocs.status().message()));
    return std::nullopt;
  }
  for (const AllocRow& row : AllocRowsFromJson(*allocs)) {
    next.allocs[row.id] = MonitoredAlloc{row.id,
                                         row.task_group,
                                         row.node_id,
                                         row.desired_status,
                                         row.client_status,
                                         row.client_description,
                                         row.create_index};
  }
  return next;
}

bool EvalMonitor::ReportFinished(const model::Evaluation& eval) {
  if (eval.failed_tg_allocs.empty()) {
    Info(absl::StrCat("Evaluation ", Quote(Limit(eval.id, id_length_)), " finished with status ",
                      Quote(eval.status)));
    return false;
  }
  Info(absl::StrCat("Evaluation ", Quote(Limit(eval.id, id_length_)), " finished with status ",
                    Quote(eval.status), " but failed to place all allocations:"));
  for (const std::string& line : FormatPlacementFailures(eval.failed_tg_allocs, Timestamp())) {
    ui_.Output(absl::StrCat("    ", line));
  }
  if (!eval.blocked_eval.empty()) {
    Output(absl::StrCat("Evaluation ", Quote(Limit(eval.blocked_eval, id_length_)),
                        " waiting for additional capacity to place remainder"));
  }
  return true;
}

int EvalMonitor::Monitor(const std::string& eval_id) {
  state_ = EvalState{};
  bool header_written = false;
  bool sched_failure = false;
  uint64_t wait_index = 0;
  const std::string eval_path = absl::StrCat("/v1/evaluation/", PathEscape(eval_id));

  while (true) {
    const auto poll_start = std::chrono::steady_clock::now();
    std::string path = eval_path;
    if (wait_index > 0) {
      absl::StrAppend(&path, "?index=", wait_index, "&wait=", kBlockingWait);
    }
    absl::StatusOr<HttpResponse> response = client_.Do("GET", path, {}, kRequestTimeout);
    if (!response.ok()) {
      ui_.Error(absl::StrCat("==> Error reading evaluation: ", response.status().message()));
      return kExitError;
    }
    absl::StatusOr<model::Evaluation> eval = EvaluationOf(*response);
    if (!eval.ok()) {
      ui_.Error(absl::StrCat("==> Error reading evaluation: ", eval.status().message()));
      return kExitError;
    }

    if (!header_written) {
      Info(absl::StrCat("Monitoring evaluation ", Quote(Limit(eval->id, id_length_))));
      header_written = true;
    }

    std::optional<EvalState> next = StateOf(*eval, eval_path);
    if (!next)
      return kExitError;
    for (const std::string& line : EvalStateChanges(state_, *next, id_length_)) {
      Output(line);
    }
    state_ = *std::move(next);

    if (!IsTerminal(eval->status)) {
      wait_index = response->index;
      const auto elapsed = std::chrono::steady_clock::now() - poll_start;
      if (elapsed < min_poll_interval_) {
        std::this_thread::sleep_for(min_poll_interval_ - elapsed);
      }
      continue;
    }

    sched_failure = ReportFinished(*eval);

    if (!eval->next_eval.empty()) {
      // As Nomad, the chained evaluation's outcome decides the exit code.
      return Monitor(eval->next_eval);
    }
    break;
  }
  if (!state_.deployment.empty()) {
    if (int deployed = MonitorDeployment(client_, ui_, state_.deployment, id_length_);
        deployed != kExitOk)
      return deployed;
  }
  return sched_failure ? kExitPlacementFailure : kExitOk;
}

}  // namespace drover::cli
