#include "cli/alloc_fetch.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/format.h"
#include "cli/lookup.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::cli {

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

}  // namespace drover::cli
