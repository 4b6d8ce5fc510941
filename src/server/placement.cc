#include "server/placement.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/ids.h"
#include "server/device_alloc.h"
#include "server/feasibility.h"

namespace drover::server {
namespace {

std::set<int> ParsePortList(const std::string& spec) {
  std::set<int> out;
  std::stringstream ss(spec);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!part.empty())
          out.insert(std::stoi(part));
      } else {
        const int lo = std::stoi(part.substr(0, dash));
        const int hi = std::stoi(part.substr(dash + 1));
        for (int p = lo; p <= hi && p - lo < 65536; ++p)
          out.insert(p);
      }
    } catch (const std::exception&) {
      // Ignore malformed entries: the node's reserved ports are advisory here.
    }
  }
  return out;
}

// Checks a node for the group; on failure records why in `metric` and returns false.
bool Feasible(const model::Job& job, const model::TaskGroup& g, const model::Node& node,
              model::AllocMetric& metric) {
  for (const model::Task& t : g.tasks) {
    auto it = node.drivers.find(t.driver);
    if (it == node.drivers.end() || !it->second.detected || !it->second.healthy) {
      ++metric.constraint_filtered["missing drivers"];
      return false;
    }
  }
  auto check = [&](const std::vector<model::Constraint>& cs) {
    for (const model::Constraint& c : cs) {
      if (!MeetsConstraint(c, node)) {
        ++metric.constraint_filtered[ConstraintString(c)];
        return false;
      }
    }
    return true;
  };
  if (!check(job.constraints) || !check(g.constraints))
    return false;
  for (const model::Task& t : g.tasks) {
    if (!check(t.constraints))
      return false;
  }
  return true;
}

// Assigns ports for the group's networks on `node`. Returns the dimension that failed
// ("network: reserved port collision http=8080"), or "" on success.
std::string AssignPorts(const model::TaskGroup& g, const model::Node& node, const NodeUsage& usage,
                        std::mt19937_64& rng, model::AllocatedSharedResources& shared,
                        std::map<std::string, model::AllocatedTaskResources>& tasks) {
  std::set<int> used = usage.ports;
  for (int p : ParsePortList(node.reserved_resources.reserved_host_ports))
    used.insert(p);
  const std::string ip =
      node.node_resources.networks.empty() ? "127.0.0.1" : node.node_resources.networks[0].ip;
  auto pick_dynamic = [&]() -> int {
    const int lo = node.node_resources.min_dynamic_port;
    const int hi = node.node_resources.max_dynamic_port;
    std::uniform_int_distribution<int> dist(lo, hi);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int p = dist(rng);
      if (!used.contains(p))
        return p;
    }
    for (int p = lo; p <= hi; ++p) {
      if (!used.contains(p))
        return p;
    }
    return 0;
  };
  auto assign = [&](model::NetworkResource& net, bool is_shared) -> std::string {
    net.ip = ip;
    if (net.mode.empty())
      net.mode = "host";
    for (model::Port& p : net.reserved_ports) {
      if (used.contains(p.value)) {
        return "network: reserved port collision " + p.label + "=" + std::to_string(p.value);
      }
      used.insert(p.value);
      if (is_shared)
        shared.ports.push_back({p.label, p.value, p.to, ip});
    }
    for (model::Port& p : net.dynamic_ports) {
      p.value = pick_dynamic();
      if (p.value == 0)
        return "network: dynamic port selection failed";
      used.insert(p.value);
      if (p.to == -1)
        p.to = p.value;
      if (is_shared)
        shared.ports.push_back({p.label, p.value, p.to, ip});
    }
    return "";
  };
  for (model::NetworkResource net : g.networks) {
    if (std::string err = assign(net, true); !err.empty())
      return err;
    shared.networks.push_back(std::move(net));
  }
  for (const model::Task& t : g.tasks) {
    for (model::NetworkResource net : t.resources.networks) {
      if (std::string err = assign(net, false); !err.empty())
        return err;
      tasks[t.name].networks.push_back(std::move(net));
    }
  }
  return "";
}

double BinPackScore(const model::Node& node, const NodeUsage& usage, const GroupAsk& ask) {
  const double cpu_cap =
      static_cast<double>(node.node_resources.cpu_shares - node.reserved_resources.cpu_shares);
  const double mem_cap =
      static_cast<double>(node.node_resources.memory_mb - node.reserved_resources.memory_mb);
  if (cpu_cap <= 0 || mem_cap <= 0)
    return 0;
  const double free_cpu = 1.0 - static_cast<double>(usage.cpu + ask.cpu) / cpu_cap;
  const double free_mem = 1.0 - static_cast<double>(usage.memory_mb + ask.memory_mb) / mem_cap;
  return (20.0 - (std::pow(10.0, free_cpu) + std::pow(10.0, free_mem))) / 18.0;
}

std::string AllocName(const model::Job& job, const std::string& group, int index) {
  return job.id + "." + group + "[" + std::to_string(index) + "]";
}

}  // namespace

void AddUsage(NodeUsage& u, const model::Allocation& a) {
  for (const auto& [task, r] : a.allocated_resources.tasks) {
    AddUsedDevices(r, u.devices);
    u.cpu += r.cpu_shares;
    u.memory_mb += r.memory_mb;
    for (const auto& n : r.networks) {
      for (const auto& p : n.reserved_ports)
        u.ports.insert(p.value);
      for (const auto& p : n.dynamic_ports)
        u.ports.insert(p.value);
    }
  }
  u.disk_mb += a.allocated_resources.shared.disk_mb;
  for (const auto& p : a.allocated_resources.shared.ports)
    u.ports.insert(p.value);
  u.jobs.insert(a.namespace_ + "/" + a.job_id);
}

GroupAsk AskOf(const model::TaskGroup& g) {
  GroupAsk ask;
  for (const model::Task& t : g.tasks) {
    ask.cpu += t.resources.cpu;
    ask.memory_mb += t.resources.memory_mb;
  }
  ask.disk_mb = g.ephemeral_disk ? g.ephemeral_disk->size_mb : 0;
  return ask;
}

bool HasDistinctHosts(const model::Job& job, const model::TaskGroup& g) {
  auto has = [](const std::vector<model::Constraint>& cs) {
    return std::any_of(cs.begin(), cs.end(),
                       [](const auto& c) { return c.operand == "distinct_hosts"; });
  };
  return has(job.constraints) || has(g.constraints);
}

bool UpdatableInPlace(const model::Job& old_job, const model::TaskGroup& a,
                      const model::Job& new_job, const model::TaskGroup& b) {
  // What of the job reaches its tasks (NOMAD_JOB_NAME, NOMAD_REGION, NOMAD_NAMESPACE,
  // NOMAD_META_*, NOMAD_JOB_PARENT_ID, a dispatch payload) or changes how they run.
  if (old_job.name != new_job.name || old_job.type != new_job.type ||
      old_job.region != new_job.region || old_job.namespace_ != new_job.namespace_ ||
      old_job.meta != new_job.meta || old_job.parent_id != new_job.parent_id ||
      old_job.dispatched != new_job.dispatched || old_job.payload != new_job.payload)
    return false;
  model::TaskGroup x = a;
  x.count = b.count;
  x.reschedule_policy = b.reschedule_policy;
  x.migrate = b.migrate;
  x.max_client_disconnect = b.max_client_disconnect;
  x.update = b.update;
  return x == b;
}

model::Allocation StopCopy(const model::Allocation& a, const char* why) {
  model::Allocation s = a;
  s.desired_status = model::kDesiredStop;
  s.desired_description = why;
  return s;
}

namespace {

// Whether the node of `a` still serves the new version of the job: the placement
// fields that may change in place (datacenters, node pool, constraints) are checked
// again, as a new placement would check them.
bool StillFitsItsNode(const SchedulerInput& in, const model::TaskGroup& g,
                      const model::Allocation& a) {
  const model::Job& job = *in.job;
  // Unchanged (the common case: a count): it fits as it did, and no node is looked up.
  if (a.job->datacenters == job.datacenters && a.job->node_pool == job.node_pool &&
      a.job->constraints == job.constraints)
    return true;
  for (const NodePtr& n : in.nodes) {
    if (n->id != a.node_id)
      continue;
    model::AllocMetric unused;
    return DatacenterMatches(job.datacenters, n->datacenter) &&
           (job.node_pool.empty() || job.node_pool == "all" || n->node_pool == job.node_pool) &&
           Feasible(job, g, *n, unused);
  }
  return false;
}

}  // namespace

bool CanUpdateInPlace(const SchedulerInput& in, const model::TaskGroup& g,
                      const model::Allocation& a) {
  const model::TaskGroup* old_group = a.job ? a.job->FindGroup(g.name) : nullptr;
  return old_group != nullptr && UpdatableInPlace(*a.job, *old_group, *in.job, g) &&
         StillFitsItsNode(in, g, a);
}

void UpdateInPlace(const SchedulerInput& in, const model::Allocation& a, PlanResult& plan) {
  model::Allocation updated = a;
  updated.job = in.job;
  plan.upserts.push_back(std::move(updated));
  ++plan.updated_in_place;
}

std::set<std::string> LostNodes(const SchedulerInput& in) {
  std::set<std::string> live;
  for (const NodePtr& n : in.nodes) {
    if (n->status != model::kNodeStatusDown)
      live.insert(n->id);
  }
  std::set<std::string> lost;
  for (const AllocPtr& a : in.job_allocs) {
    if (!live.contains(a->node_id))
      lost.insert(a->node_id);
  }
  return lost;
}

std::map<std::string, common::Time> DisconnectedNodes(const SchedulerInput& in) {
  std::map<std::string, common::Time> out;
  for (const NodePtr& n : in.nodes) {
    if (n->status == model::kNodeStatusDisconnected)
      out[n->id] = common::FromUnixNanos(n->status_updated_at * 1'000'000'000);
  }
  return out;
}

model::Allocation UnknownCopy(const model::Allocation& a) {
  model::Allocation unknown = a;
  unknown.client_status = model::kClientUnknown;
  unknown.client_description = kAllocUnknown;
  return unknown;
}

model::Evaluation FollowupEval(const SchedulerInput& in, const char* trigger,
                               const char* description, common::Time at) {
  model::Evaluation e;
  e.id = common::NewUuid();
  e.namespace_ = in.job->namespace_;
  e.priority = in.job->priority;
  e.type = in.job->type;
  e.triggered_by = trigger;
  e.job_id = in.job->id;
  e.job_modify_index = in.job->job_modify_index;
  e.status = model::kEvalPending;
  e.status_description = description;
  e.previous_eval = in.eval.id;
  e.wait_until = at;
  return e;
}

// For an allocation on a disconnected node (placement.h): within its group's max_client_disconnect
// it becomes `unknown` (once) and its slot gets a replacement; true when it was handled so.
bool KeepUnknown(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a,
                 common::Time since, PlanResult& plan) {
  if (!g.max_client_disconnect)
    return false;
  const common::Time expiry = common::AddSaturating(since, *g.max_client_disconnect);
  if (in.now >= expiry)
    return false;
  if (a->client_status != model::kClientUnknown) {
    plan.upserts.push_back(UnknownCopy(*a));
    ++plan.unknown;
    const bool planned = std::any_of(
        plan.followup_evals.begin(), plan.followup_evals.end(), [&](const model::Evaluation& e) {
          return e.triggered_by == model::kTriggerMaxDisconnectTimeout && e.wait_until == expiry;
        });
    if (!planned)
      // It finds the unknown allocations lost once their window has passed.
      plan.followup_evals.push_back(FollowupEval(in, model::kTriggerMaxDisconnectTimeout,
                                                 "created for max_client_disconnect", expiry));
  }
  return true;
}

model::Allocation LostCopy(const model::Allocation& a) {
  model::Allocation lost = StopCopy(a, kAllocLost);
  lost.client_status = model::kClientLost;
  lost.client_description = kAllocLost;
  return lost;
}

std::map<std::string, NodeUsage> UsageAfter(const std::vector<AllocPtr>& allocs,
                                            const PlanResult& plan) {
  std::set<std::string> stopping;
  for (const model::Allocation& s : plan.upserts) {
    if (s.desired_status == model::kDesiredStop)
      stopping.insert(s.id);
  }
  std::map<std::string, NodeUsage> usage;
  for (const AllocPtr& a : allocs) {
    if (a->Terminal() || stopping.contains(a->id))
      continue;
    AddUsage(usage[a->node_id], *a);
  }
  return usage;
}

void RecordFailedPlacements(PlanResult& plan, const std::string& group, int failed,
                            model::AllocMetric metric) {
  if (failed <= 0)
    return;
  metric.coalesced_failures = failed - 1;
  plan.failed_tg_allocs[group] = std::move(metric);
  plan.queued[group] = failed;
}

bool NodeServesJob(const model::Job& job, const model::Node& node) {
  return node.status == model::kNodeStatusReady && node.scheduling_eligibility == "eligible" &&
         DatacenterMatches(job.datacenters, node.datacenter) &&
         (job.node_pool.empty() || job.node_pool == "all" || node.node_pool == job.node_pool);
}

bool NodeKeepsSystemAllocs(const model::Job& job, const model::Node& node) {
  const bool kept_by_drain =
      node.drain_strategy.has_value() || (node.scheduling_eligibility != "eligible" &&
                                          node.last_drain && node.last_drain->ignore_system_jobs);
  return kept_by_drain && node.status == model::kNodeStatusReady &&
         DatacenterMatches(job.datacenters, node.datacenter) &&
         (job.node_pool.empty() || job.node_pool == "all" || node.node_pool == job.node_pool);
}

std::optional<Fit> FitOnNode(const model::Job& job, const model::TaskGroup& g,
                             const model::Node& node, const NodeUsage& u, const GroupAsk& ask,
                             std::mt19937_64& rng, model::AllocMetric& metric) {
  if (!Feasible(job, g, node, metric)) {
    ++metric.nodes_filtered;
    return std::nullopt;
  }
  if (HasDistinctHosts(job, g) && u.jobs.contains(job.namespace_ + "/" + job.id)) {
    ++metric.nodes_filtered;
    ++metric.constraint_filtered["distinct_hosts"];
    return std::nullopt;
  }
  const int64_t cpu_free =
      node.node_resources.cpu_shares - node.reserved_resources.cpu_shares - u.cpu;
  const int64_t mem_free =
      node.node_resources.memory_mb - node.reserved_resources.memory_mb - u.memory_mb;
  const int64_t disk_free =
      node.node_resources.disk_mb - node.reserved_resources.disk_mb - u.disk_mb;
  std::string exhausted;
  if (ask.cpu > cpu_free) {
    exhausted = "cpu";
  } else if (ask.memory_mb > mem_free) {
    exhausted = "memory";
  } else if (ask.disk_mb > disk_free) {
    exhausted = "disk";
  }
  Fit fit;
  if (exhausted.empty())
    exhausted = AssignPorts(g, node, u, rng, fit.shared, fit.tasks);
  if (!exhausted.empty()) {
    ++metric.nodes_exhausted;
    ++metric.dimension_exhausted[exhausted];
    return std::nullopt;
  }
  DeviceAssignment devices;
  if (auto failure = AssignDevices(g, node, u.devices, devices)) {
    if (failure->filtered) {
      ++metric.nodes_filtered;
      ++metric.constraint_filtered[failure->reason];
    } else {
      ++metric.nodes_exhausted;
      ++metric.dimension_exhausted[failure->reason];
    }
    return std::nullopt;
  }
  for (auto& [task, assigned] : devices.tasks)
    fit.tasks[task].devices = std::move(assigned);
  // Device affinities steer between otherwise feasible nodes.
  fit.score = BinPackScore(node, u, ask) + devices.affinity_score;
  return fit;
}

model::Allocation NewAlloc(const SchedulerInput& in, const model::TaskGroup& g, int index,
                           const model::Node& node, Fit fit, const GroupAsk& ask,
                           const model::AllocMetric& metric) {
  const model::Job& job = *in.job;
  model::Allocation a;
  a.id = common::NewUuid();
  a.namespace_ = job.namespace_;
  a.eval_id = in.eval.id;
  a.name = AllocName(job, g.name, index);
  a.node_id = node.id;
  a.node_name = node.name;
  a.job_id = job.id;
  a.job = in.job;
  a.task_group = g.name;
  for (const model::Task& t : g.tasks) {
    model::AllocatedTaskResources& r = fit.tasks[t.name];
    r.cpu_shares = t.resources.cpu;
    r.memory_mb = t.resources.memory_mb;
    r.memory_max_mb = in.memory_oversubscription ? t.resources.memory_max_mb : 0;
  }
  a.allocated_resources.tasks = std::move(fit.tasks);
  a.allocated_resources.shared = std::move(fit.shared);
  a.allocated_resources.shared.disk_mb = ask.disk_mb;
  a.metrics = metric;
  a.desired_status = model::kDesiredRun;
  a.client_status = model::kClientPending;
  a.create_time = common::ToUnixNanos(in.now);
  return a;
}

}  // namespace drover::server
