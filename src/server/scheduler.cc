#include "server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "common/ids.h"
#include "server/device_alloc.h"
#include "server/feasibility.h"
#include "server/reschedule.h"

namespace drover::server {
namespace {

struct NodeUsage {
  int64_t cpu = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  std::set<int> ports;
  std::set<std::string> jobs;     // "<ns>/<job>" with a live alloc here (distinct_hosts)
  std::set<std::string> devices;  // device instances held (DeviceInstanceKey)
};

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

struct GroupAsk {
  int64_t cpu = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
};

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

// Whether an allocation of `a` can keep running as `b` (only the count changed).
bool SameSpecIgnoringCount(const model::TaskGroup& a, const model::TaskGroup& b) {
  model::TaskGroup x = a;
  x.count = b.count;
  return x == b;
}

std::string AllocName(const model::Job& job, const std::string& group, int index) {
  return job.id + "." + group + "[" + std::to_string(index) + "]";
}

model::Allocation StopCopy(const model::Allocation& a, const char* why) {
  model::Allocation s = a;
  s.desired_status = model::kDesiredStop;
  s.desired_description = why;
  return s;
}

// A failed allocation being replaced by rescheduling, and the delay that took.
struct Rescheduled {
  AllocPtr failed;
  common::Duration delay{0};
};

// What pass 1 leaves for pass 2 to place, per task group.
struct GroupWork {
  const model::TaskGroup* group;
  std::vector<int> to_place;
  std::map<int, std::string> replaces;       // index -> alloc replaced by a destructive update
  std::map<int, std::string> replaced_node;  // index -> node of that alloc
  std::map<int, Rescheduled> rescheduled;    // index -> failed alloc replaced by policy
};

// For a failed allocation of the job's current version: true when the reschedule
// policy frees its slot for a replacement now (recorded in `w`). Otherwise it keeps
// the slot, and when a later replacement is allowed, a follow-up evaluation waits for
// that time (one at a time: the allocation names it).
bool Reschedule(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a, int idx,
                GroupWork& w, PlanResult& plan) {
  if (!g.reschedule_policy)
    return false;
  std::optional<RescheduleDecision> decision = DecideReschedule(*a, *g.reschedule_policy);
  if (!decision)
    return false;
  if (decision->at <= in.now) {
    w.rescheduled[idx] = Rescheduled{.failed = a, .delay = decision->delay};
    return true;
  }
  if (!a->followup_eval_id.empty() && a->followup_eval_id != in.eval.id)
    return false;
  model::Evaluation e;
  e.id = common::NewUuid();
  e.namespace_ = in.job->namespace_;
  e.priority = in.job->priority;
  e.type = in.job->type;
  e.triggered_by = model::kTriggerRetryFailedAlloc;
  e.job_id = in.job->id;
  e.job_modify_index = in.job->job_modify_index;
  e.status = model::kEvalPending;
  e.status_description = "created for delayed rescheduling";
  e.previous_eval = in.eval.id;
  e.wait_until = decision->at;
  model::Allocation marked = *a;
  marked.followup_eval_id = e.id;
  plan.upserts.push_back(std::move(marked));
  plan.followup_evals.push_back(std::move(e));
  return false;
}

// The nodes a replacement of a failed allocation should avoid: where it and its
// predecessors failed.
std::set<std::string> NodesToAvoid(const Rescheduled& r) {
  std::set<std::string> out{r.failed->node_id};
  if (r.failed->reschedule_tracker) {
    for (const auto& e : r.failed->reschedule_tracker->events)
      out.insert(e.prev_node_id);
  }
  return out;
}

// Nodes that cannot run anything: down, or no longer known.
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

}  // namespace

PlanResult Schedule(const SchedulerInput& in) {
  PlanResult plan;
  std::mt19937_64 rng(in.seed);
  const bool stop_all = !in.job || in.job->stop;

  // Live allocations of the job (desired run), grouped by task group.
  std::map<std::string, std::vector<AllocPtr>> live_by_group;
  for (const AllocPtr& a : in.job_allocs) {
    if (a->desired_status != model::kDesiredRun)
      continue;
    if (stop_all || in.job->FindGroup(a->task_group) == nullptr) {
      if (!a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
        ++plan.stopped;
      }
      continue;
    }
    live_by_group[a->task_group].push_back(a);
  }
  if (stop_all) {
    return plan;
  }
  const model::Job& job = *in.job;
  auto job_ptr = in.job;
  const std::set<std::string> lost_nodes = LostNodes(in);

  // Pass 1: reconcile each group's live allocations against its count and spec.
  std::vector<GroupWork> work;
  for (const model::TaskGroup& g : job.task_groups) {
    GroupWork w{&g, {}, {}, {}, {}};
    std::vector<AllocPtr>& live = live_by_group[g.name];
    std::set<int> taken;
    std::sort(live.begin(), live.end(), [](const AllocPtr& a, const AllocPtr& b) {
      return a->create_index < b->create_index;
    });
    for (const AllocPtr& a : live) {
      const int idx = a->Index();
      if (idx < 0 || idx >= g.count || taken.contains(idx)) {
        if (!a->ClientTerminal()) {
          plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
          ++plan.stopped;
        }
        continue;
      }
      if (lost_nodes.contains(a->node_id) && !a->ClientTerminal()) {
        // What finished on the node stays finished; what ran there is replaced.
        model::Allocation lost = StopCopy(*a, kAllocLost);
        lost.client_status = model::kClientLost;
        lost.client_description = kAllocLost;
        plan.upserts.push_back(std::move(lost));
        ++plan.lost;
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
        continue;
      }
      if (a->desired_transition.migrate.value_or(false) && !a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocMigrating));
        ++plan.stopped;
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
        continue;
      }
      if (a->ClientTerminal() && !a->next_allocation.empty()) {
        // Rescheduled: its replacement holds the slot.
        continue;
      }
      const bool current_version =
          a->job && a->job->version == job.version && a->job->create_index == job.create_index;
      if (a->client_status == model::kClientFailed && current_version &&
          Reschedule(in, g, a, idx, w, plan)) {
        continue;
      }
      if (a->ClientTerminal() && !current_version) {
        // Finished under an older version (or a purged and re-registered job): the new
        // version runs again in this slot.
        continue;
      }
      taken.insert(idx);
      if (current_version) {
        continue;
      }
      if (a->ClientTerminal()) {
        // Finished allocations keep their slot: batch work is not redone, and failed ones
        // are replaced only as their reschedule policy allows (above).
        continue;
      }
      const model::TaskGroup* old_group = a->job ? a->job->FindGroup(g.name) : nullptr;
      if (old_group != nullptr && SameSpecIgnoringCount(*old_group, g)) {
        model::Allocation updated = *a;
        updated.job = job_ptr;
        plan.upserts.push_back(std::move(updated));
        ++plan.updated_in_place;
      } else {
        plan.upserts.push_back(StopCopy(*a, kAllocUpdating));
        ++plan.stopped;
        taken.erase(idx);
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
      }
    }
    for (int i = 0; i < g.count; ++i) {
      if (!taken.contains(i))
        w.to_place.push_back(i);
    }
    work.push_back(std::move(w));
  }

  // Resource usage per node from everything that keeps running there.
  std::map<std::string, NodeUsage> usage;
  std::set<std::string> stopping;
  for (const auto& s : plan.upserts) {
    if (s.desired_status == model::kDesiredStop)
      stopping.insert(s.id);
  }
  for (const AllocPtr& a : in.node_allocs) {
    if (a->Terminal() || stopping.contains(a->id))
      continue;
    AddUsage(usage[a->node_id], *a);
  }

  // Pass 2: place what is missing.
  for (const GroupWork& w : work) {
    const model::TaskGroup& g = *w.group;
    const auto& to_place = w.to_place;
    const auto& replaces = w.replaces;
    plan.queued[g.name] = 0;
    if (to_place.empty())
      continue;

    const GroupAsk ask = AskOf(g);
    const bool distinct = HasDistinctHosts(job, g);
    // A sticky or migrating ephemeral disk wants the replacement on the node that has
    // the data (reference §7); any other feasible node is the fallback.
    const bool sticky = g.ephemeral_disk && (g.ephemeral_disk->sticky || g.ephemeral_disk->migrate);
    int failed = 0;
    model::AllocMetric failed_metric;
    for (int idx : to_place) {
      if (failed > 0) {
        // Nothing fit one placement; usage only grew since, so nothing fits the rest of
        // the group either (Nomad coalesces these failures too). Counting them costs
        // nothing, however large the count.
        ++failed;
        continue;
      }
      model::AllocMetric metric;
      const auto resched = w.rescheduled.find(idx);
      const std::set<std::string> avoid =
          resched == w.rescheduled.end() ? std::set<std::string>{} : NodesToAvoid(resched->second);
      const model::Node* best = nullptr;
      double best_score = -1;
      model::AllocatedSharedResources best_shared;
      std::map<std::string, model::AllocatedTaskResources> best_tasks;
      for (const NodePtr& np : in.nodes) {
        const model::Node& node = *np;
        if (node.status != model::kNodeStatusReady || node.scheduling_eligibility != "eligible" ||
            !DatacenterMatches(job.datacenters, node.datacenter) ||
            (!job.node_pool.empty() && job.node_pool != "all" && node.node_pool != job.node_pool)) {
          continue;
        }
        ++metric.nodes_evaluated;
        ++metric.nodes_available;
        if (!Feasible(job, g, node, metric)) {
          ++metric.nodes_filtered;
          continue;
        }
        NodeUsage& u = usage[node.id];
        if (distinct && u.jobs.contains(job.namespace_ + "/" + job.id)) {
          ++metric.nodes_filtered;
          ++metric.constraint_filtered["distinct_hosts"];
          continue;
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
        model::AllocatedSharedResources shared;
        std::map<std::string, model::AllocatedTaskResources> tasks;
        if (exhausted.empty()) {
          exhausted = AssignPorts(g, node, u, rng, shared, tasks);
        }
        if (!exhausted.empty()) {
          ++metric.nodes_exhausted;
          ++metric.dimension_exhausted[exhausted];
          continue;
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
          continue;
        }
        for (auto& [task, assigned] : devices.tasks)
          tasks[task].devices = std::move(assigned);
        // Device affinities steer between otherwise feasible nodes.
        double score = BinPackScore(node, u, ask) + devices.affinity_score;
        if (sticky) {
          auto prev = w.replaced_node.find(idx);
          if (prev != w.replaced_node.end() && prev->second == node.id)
            score += 100;  // above any bin-packing score
        }
        if (avoid.contains(node.id))
          score -= 50;  // below any other feasible node, yet still a choice
        if (best == nullptr || score > best_score) {
          best = &node;
          best_score = score;
          best_shared = std::move(shared);
          best_tasks = std::move(tasks);
        }
      }
      if (best == nullptr) {
        if (failed == 0)
          failed_metric = metric;
        ++failed;
        continue;
      }
      model::Allocation a;
      a.id = common::NewUuid();
      a.namespace_ = job.namespace_;
      a.eval_id = in.eval.id;
      a.name = AllocName(job, g.name, idx);
      a.node_id = best->id;
      a.node_name = best->name;
      a.job_id = job.id;
      a.job = job_ptr;
      a.task_group = g.name;
      for (const model::Task& t : g.tasks) {
        model::AllocatedTaskResources& r = best_tasks[t.name];
        r.cpu_shares = t.resources.cpu;
        r.memory_mb = t.resources.memory_mb;
        r.memory_max_mb = in.memory_oversubscription ? t.resources.memory_max_mb : 0;
      }
      a.allocated_resources.tasks = std::move(best_tasks);
      a.allocated_resources.shared = std::move(best_shared);
      a.allocated_resources.shared.disk_mb = ask.disk_mb;
      a.metrics = metric;
      a.desired_status = model::kDesiredRun;
      a.client_status = model::kClientPending;
      if (auto it = replaces.find(idx); it != replaces.end())
        a.previous_allocation = it->second;
      if (resched != w.rescheduled.end()) {
        const Rescheduled& r = resched->second;
        a.previous_allocation = r.failed->id;
        a.reschedule_tracker = NextTracker(*r.failed, *g.reschedule_policy, in.now, r.delay);
        model::Allocation failed = *r.failed;
        failed.next_allocation = a.id;
        plan.upserts.push_back(std::move(failed));
      }
      a.create_time = common::ToUnixNanos(in.now);
      AddUsage(usage[best->id], a);
      plan.upserts.push_back(std::move(a));
      ++plan.placed;
    }
    if (failed > 0) {
      failed_metric.coalesced_failures = failed - 1;
      plan.failed_tg_allocs[g.name] = failed_metric;
      plan.queued[g.name] = failed;
    }
  }
  return plan;
}

}  // namespace drover::server
