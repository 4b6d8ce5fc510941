// Fetching the allocation a command names (ID or prefix) and checking a task name
// against it, with Nomad's messages. Shared by the alloc subcommands.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "cli/http_client.h"
#include "cli/ui.h"

#include "model/allocation.h"

namespace drover::cli {

// Nomad's validateTaskExistsInAllocation: `task` must be a task of the allocation's group.
absl::Status ValidateTaskExists(const model::Allocation& alloc, const std::string& task);

// Resolves `prefix` to one allocation, fetches it and checks that `task` (when not empty)
// belongs to it. Prints the error and returns nullopt on failure.
std::optional<model::Allocation> FetchAllocWithTask(HttpClient& client, Ui& ui,
                                                    const std::string& prefix, bool verbose,
                                                    const std::string& task);

}  // namespace drover::cli
