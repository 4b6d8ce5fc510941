// Shared by the integration tests: a fixture owning one dev agent, and a builder for
// raw_exec jobs.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_process.h"

namespace drover::integration {

using namespace std::chrono_literals;  // NOLINT

// A one-group, one-task ("g"/"t") raw_exec job running `/bin/sh -c script`, as the body
// of PUT /v1/jobs. `extra_group` is JSON merged into the group.
inline std::string RawExecJob(const std::string& id, const std::string& type,
                              const std::string& script, const std::string& extra_group = "") {
  codec::Json job = {{"ID", id},
                     {"Type", type},
                     {"Datacenters", {"dc1"}},
                     {"TaskGroups",
                      {{{"Name", "g"},
                        {"Tasks",
                         {{{"Name", "t"},
                           {"Driver", "raw_exec"},
                           {"KillTimeout", 2'000'000'000},
                           {"Config", {{"command", "/bin/sh"}, {"args", {"-c", script}}}},
                           {"Resources", {{"CPU", 100}, {"MemoryMB", 32}}}}}}}}}};
  if (!extra_group.empty()) {
    auto extra = codec::ParseJson(extra_group);
    for (auto& [k, v] : extra->items())
      job["TaskGroups"][0][k] = v;
  }
  return codec::Dump(codec::Json{{"Job", job}});
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.ok()) << agent_.log(); }
  void TearDown() override {
    if (HasFailure())
      std::cerr << "---- agent log ----\n" << agent_.log();
  }

  // Waits for the job's first allocation to reach `status`; returns it.
  codec::Json WaitAlloc(const std::string& job, const std::string& status) {
    codec::Json found;
    const bool ok = testing::WaitFor(
        [&] {
          codec::Json allocs = agent_.Get("/v1/job/" + job + "/allocations");
          if (allocs.empty())
            return false;
          found = agent_.Get("/v1/allocation/" + allocs[0]["ID"].get<std::string>());
          return found["ClientStatus"] == status;
        },
        30s);
    EXPECT_TRUE(ok) << "alloc of " << job << " never reached " << status << ": " << found.dump();
    return found;
  }

  static std::vector<std::string> EventTypes(const codec::Json& alloc,
                                             const std::string& task = "t") {
    std::vector<std::string> out;
    for (const auto& e : alloc["TaskStates"][task]["Events"])
      out.push_back(e["Type"]);
    return out;
  }

  AgentProcess agent_;
};

}  // namespace drover::integration
