// Builders for client-side tests: allocations of mock_driver tasks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/allocation.h"
#include "model/node.h"

namespace drover::client::test {

inline model::Task MockTask(const std::string& name, model::Value::Object config) {
  model::Task t;
  t.name = name;
  t.driver = "mock_driver";
  t.config = std::move(config);
  t.kill_timeout = std::chrono::seconds(5);
  t.resources.cpu = 100;
  t.resources.memory_mb = 64;
  return t;
}

inline std::shared_ptr<model::Allocation> MakeAlloc(std::vector<model::Task> tasks,
                                                    const std::string& type = "service",
                                                    model::RestartPolicy policy = {
                                                        .attempts = 0, .mode = "fail"}) {
  auto job = std::make_shared<model::Job>();
  job->id = "job";
  job->name = "job";
  job->namespace_ = "default";
  job->type = type;
  model::TaskGroup g;
  g.name = "group";
  g.count = 1;
  g.restart_policy = policy;
  g.tasks = std::move(tasks);
  job->task_groups.push_back(std::move(g));
  auto a = std::make_shared<model::Allocation>();
  a->id = "a1b2c3d4-0000-4000-8000-000000000001";
  a->name = "job.group[0]";
  a->namespace_ = "default";
  a->job_id = "job";
  a->job = job;
  a->task_group = "group";
  a->node_id = "node-1";
  a->desired_status = model::kDesiredRun;
  a->client_status = model::kClientPending;
  a->alloc_modify_index = 10;
  return a;
}

inline std::vector<std::string> EventTypes(const model::TaskState& s) {
  std::vector<std::string> out;
  for (const auto& e : s.events)
    out.push_back(e.type);
  return out;
}

}  // namespace drover::client::test
