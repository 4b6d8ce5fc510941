// Shared by the security tests: the checks every attack ends with.
#pragma once

#include <memory>
#include <string>

#include "cli/http_client.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_process.h"

namespace drover::integration {

// The agent answers a health check within a short deadline (it kept serving).
void ExpectServing(AgentProcess& agent);
// A client of its own (for use from other threads).
std::unique_ptr<cli::HttpClient> NewClientFor(const AgentProcess& agent);
// Resident memory of a process, in MiB (from /proc/<pid>/status).
long RssMb(int pid);
// User plus system CPU time of a process so far, in clock ticks.
long CpuTicks(int pid);
// The body of PUT /v1/jobs `body` with `value` set as `field` of its first task (or, with
// an empty `task_field`, of its first group).
std::string WithTaskField(const std::string& body, const std::string& field,
                          const nlohmann::json& value);
std::string WithGroupField(const std::string& body, const std::string& field,
                           const nlohmann::json& value);

}  // namespace drover::integration
