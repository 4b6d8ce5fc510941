// What the schedulers share to place one allocation: the resources nodes already give
// out, whether a node may run a group at all, the fit of a group on a node (resources,
// ports, devices, a bin-packing score), and building the allocation. The generic
// scheduler (scheduler.cc) picks the best of a few nodes per allocation; the system scheduler
// (system_scheduler.cc) places one per node.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "server/scheduler.h"

namespace drover::server {

struct NodeUsage {
  int64_t cpu = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  std::set<int> ports;
  std::set<std::string> jobs;     // "<ns>/<job>" with a live alloc here (distinct_hosts)
  std::set<std::string> devices;  // device instances held (DeviceInstanceKey)
};
void AddUsage(NodeUsage& u, const model::Allocation& a);
// Usage per node of every allocation that keeps running: not terminal, and not stopped
// by `plan` so far.
std::map<std::string, NodeUsage> UsageAfter(const std::vector<AllocPtr>& allocs,
                                            const PlanResult& plan);
// Records that `failed` placements of `group` did not fit (the first one's `metric`,
// the rest coalesced), as Nomad reports them.
void RecordFailedPlacements(PlanResult& plan, const std::string& group, int failed,
                            model::AllocMetric metric);

struct GroupAsk {
  int64_t cpu = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
};
GroupAsk AskOf(const model::TaskGroup& g);

bool HasDistinctHosts(const model::Job& job, const model::TaskGroup& g);
// A node that does not serve the job yet keeps its system allocations: one that drains
// (the drainer moves them last, or never), or one a drain left ineligible with system
// jobs ignored. It must be ready and in the job's datacenters and pool.
bool NodeKeepsSystemAllocs(const model::Job& job, const model::Node& node);
// Ready, eligible, and in the job's datacenters and node pool.
bool NodeServesJob(const model::Job& job, const model::Node& node);

// A group's fit on one node.
struct Fit {
  model::AllocatedSharedResources shared;
  std::map<std::string, model::AllocatedTaskResources> tasks;
  double score = 0;  // bin packing plus device affinities
};
// Drivers, constraints, resources, ports and devices of `g` on `node` given `usage`;
// nothing when it does not fit, with the reason counted in `metric`. (The caller has
// checked NodeServesJob and counted the node as evaluated.)
std::optional<Fit> FitOnNode(const model::Job& job, const model::TaskGroup& g,
                             const model::Node& node, const NodeUsage& usage, const GroupAsk& ask,
                             std::mt19937_64& rng, model::AllocMetric& metric);

// A new allocation of group `g` (slot `index`) on `node` with `fit`.
model::Allocation NewAlloc(const SchedulerInput& in, const model::TaskGroup& g, int index,
                           const model::Node& node, Fit fit, const GroupAsk& ask,
                           const model::AllocMetric& metric);

// Whether an allocation of group `a` of `old_job` can keep running as `b` of `new_job`:
// only what the servers alone act on changed (the count, the reschedule, migrate and
// update policies, max_client_disconnect, and job-level placement fields), and nothing that
// reaches the tasks (the job's meta is in their environment). UpdateInPlaceOrStop also
// checks that the allocation's node still fits the new placement fields.
bool UpdatableInPlace(const model::Job& old_job, const model::TaskGroup& a,
                      const model::Job& new_job, const model::TaskGroup& b);
model::Allocation StopCopy(const model::Allocation& a, const char* why);
// Whether an allocation of an older version of the job may run the new one as it is:
// UpdatableInPlace, and its node still fits the new placement fields.
bool CanUpdateInPlace(const SchedulerInput& in, const model::TaskGroup& g,
                      const model::Allocation& a);
// An allocation of an older version of the job that CanUpdateInPlace, now running the
// new one (the plan stores it).
void UpdateInPlace(const SchedulerInput& in, const model::Allocation& a, PlanResult& plan);
// Stopped and marked lost: its node is down.
model::Allocation LostCopy(const model::Allocation& a);
// Nodes of the job's allocations that cannot run anything: down, or no longer known.
std::set<std::string> LostNodes(const SchedulerInput& in);
// An evaluation of the job that runs at `at` (WaitUntil), following the one being run.
model::Evaluation FollowupEval(const SchedulerInput& in, const char* trigger,
                               const char* description, common::Time at);
// The nodes that are disconnected, each with when it disconnected.
std::map<std::string, common::Time> DisconnectedNodes(const SchedulerInput& in);
// An allocation on a disconnected node, within its group's max_client_disconnect: it
// keeps running as far as the servers know, with client status `unknown`.
model::Allocation UnknownCopy(const model::Allocation& a);
// For an allocation on a node disconnected `since`: true when it is within its group's
// max_client_disconnect, and then, the first time, marks it unknown in `plan` with a
// follow-up evaluation for when the window ends. False: it is lost.
bool KeepUnknown(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a,
                 common::Time since, PlanResult& plan);

}  // namespace drover::server
