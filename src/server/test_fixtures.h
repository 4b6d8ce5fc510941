// Builders for server tests: a ready node and a canonical-looking job.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/job.h"
#include "model/node.h"
#include "server/scheduler.h"

namespace drover::server::test {

inline model::Node MakeNode(const std::string& id, int64_t cpu = 4000, int64_t mem = 8192) {
  model::Node n;
  n.id = id;
  n.secret_id = "secret-" + id;
  n.name = "node-" + id;
  n.datacenter = "dc1";
  n.status = model::kNodeStatusReady;
  n.attributes = {{"kernel.name", "linux"}, {"os.name", "debian"}, {"unique.hostname", n.name}};
  n.node_resources.cpu_shares = cpu;
  n.node_resources.memory_mb = mem;
  n.node_resources.disk_mb = 100000;
  model::NetworkResource net;
  net.ip = "127.0.0.1";
  net.device = "lo";
  n.node_resources.networks.push_back(net);
  n.drivers["raw_exec"] = model::DriverInfo{.detected = true, .healthy = true};
  n.drivers["mock_driver"] = model::DriverInfo{.detected = true, .healthy = true};
  return n;
}

inline model::Job MakeJob(const std::string& id, int count = 1,
                          const std::string& type = "service") {
  model::Job j;
  j.id = id;
  j.name = id;
  j.namespace_ = "default";
  j.region = "global";
  j.type = type;
  j.priority = 50;
  j.datacenters = {"dc1"};
  j.node_pool = "default";
  model::TaskGroup g;
  g.name = "web";
  g.count = count;
  g.ephemeral_disk = model::EphemeralDisk{.size_mb = 300};
  model::Task t;
  t.name = "server";
  t.driver = "mock_driver";
  t.resources.cpu = 500;
  t.resources.memory_mb = 256;
  t.kill_timeout = std::chrono::seconds(5);
  t.log_config = {10, 10, false};
  g.tasks.push_back(t);
  j.task_groups.push_back(g);
  return j;
}

// Runs scheduler passes over nodes_ and allocs_ as the server would, and applies their
// plans back into allocs_ as the state store would.
class SchedulerHarness {
 protected:
  PlanResult Pass(const model::Job& job) {
    SchedulerInput in;
    in.eval.id = eval_id_;
    in.job = std::make_shared<const model::Job>(job);
    for (const auto& n : nodes_)
      in.nodes.push_back(std::make_shared<const model::Node>(n));
    for (const auto& a : allocs_) {
      auto p = std::make_shared<const model::Allocation>(a);
      in.node_allocs.push_back(p);
      if (a.job_id == job.id)
        in.job_allocs.push_back(p);
    }
    in.seed = 42;
    in.now = now_;
    in.score_every_node = naive_;
    return Schedule(in);
  }
  void Apply(const PlanResult& plan) {
    for (const auto& a : plan.upserts) {
      auto it = std::find_if(allocs_.begin(), allocs_.end(),
                             [&](const model::Allocation& e) { return e.id == a.id; });
      if (it == allocs_.end()) {
        allocs_.push_back(a);
      } else {
        *it = a;
      }
    }
  }

  std::vector<model::Node> nodes_;
  std::vector<model::Allocation> allocs_;
  common::Time now_{};
  std::string eval_id_ = "eval-1";
  bool naive_ = false;
};

}  // namespace drover::server::test
