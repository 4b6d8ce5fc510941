#include "server/core_gc.h"

#include <map>
#include <set>

namespace drover::server {
namespace {

bool OlderThan(int64_t unix_nanos, common::Duration threshold, common::Time now) {
  return common::FromUnixNanos(unix_nanos) + threshold <= now;
}

bool TerminalEval(const model::Evaluation& e) {
  return e.status == model::kEvalComplete || e.status == model::kEvalFailed ||
         e.status == model::kEvalCanceled;
}

bool JobStoppedOrDead(const model::Job& job) {
  return job.stop || job.status == model::kJobStatusDead;
}

// What the collection needs of the state, gathered once per pass.
class Pass {
 public:
  Pass(const StateStore& state, const GcThresholds& t, common::Time now)
      : state_(state),
        t_(t),
        now_(now),
        allocs_(state.ListAllocs("*", "")),
        evals_(state.ListEvals("*", "")) {
    for (const AllocPtr& a : allocs_)
      allocs_by_eval_[a->eval_id].push_back(a);
  }

  const std::vector<AllocPtr>& allocs() const { return allocs_; }
  const std::vector<EvalPtr>& evals() const { return evals_; }

  // Whether the allocation may go, once `threshold` old.
  bool AllocGoes(const model::Allocation& a, const model::Job* job,
                 common::Duration threshold) const {
    if (!OlderThan(a.modify_time, threshold, now_))
      return false;
    if (!a.ClientTerminal()) {
      // Stopped by the servers but not (yet) reported done: only where no client will
      // ever report it.
      if (!a.ServerTerminal())
        return false;
      const NodePtr node = state_.GetNode(a.node_id);
      if (node && node->status != model::kNodeStatusDown)
        return false;
    }
    if (job != nullptr && !JobStoppedOrDead(*job) && a.client_status == model::kClientFailed &&
        a.next_allocation.empty()) {
      return false;  // the reschedule policy may still replace it
    }
    return true;
  }

  // Adds the evaluation and its allocations when all of them go; otherwise the
  // allocations that go. Returns whether the evaluation goes.
  bool CollectEval(const model::Evaluation& e, const model::Job* job, common::Duration threshold,
                   Garbage& out) const {
    std::vector<std::string> going;
    bool all = true;
    if (auto it = allocs_by_eval_.find(e.id); it != allocs_by_eval_.end()) {
      for (const AllocPtr& a : it->second) {
        if (AllocGoes(*a, job, threshold))
          going.push_back(a->id);
        else
          all = false;
      }
    }
    out.allocs.insert(out.allocs.end(), going.begin(), going.end());
    const bool eval_goes = all && TerminalEval(e) && OlderThan(e.modify_time, threshold, now_);
    if (eval_goes)
      out.evals.push_back(e.id);
    return eval_goes;
  }

  // A job's whole history goes with it, or nothing of it does (its evaluations are
  // then collected one by one).
  bool CollectJob(const model::Job& job, Garbage& out) const {
    if (job.status != model::kJobStatusDead || !OlderThan(job.submit_time, t_.job, now_))
      return false;
    Garbage mine;
    for (const EvalPtr& e : state_.EvalsByJob(job.namespace_, job.id)) {
      if (!CollectEval(*e, &job, t_.job, mine))
        return false;
    }
    // Allocations made by evaluations collected earlier (or never recorded).
    std::set<std::string> seen(mine.allocs.begin(), mine.allocs.end());
    for (const AllocPtr& a : state_.AllocsByJob(job.namespace_, job.id)) {
      if (seen.contains(a->id))
        continue;
      if (!AllocGoes(*a, &job, t_.job))
        return false;
      mine.allocs.push_back(a->id);
    }
    out.allocs.insert(out.allocs.end(), mine.allocs.begin(), mine.allocs.end());
    out.evals.insert(out.evals.end(), mine.evals.begin(), mine.evals.end());
    out.jobs.emplace_back(job.namespace_, job.id);
    return true;
  }

  void CollectEvals(const std::set<std::pair<std::string, std::string>>& collected_jobs,
                    Garbage& out) const {
    for (const EvalPtr& e : evals_) {
      if (collected_jobs.contains({e->namespace_, e->job_id}))
        continue;
      const JobPtr job = state_.GetJob(e->namespace_, e->job_id);
      common::Duration threshold = t_.eval;
      if (job && job->IsBatch()) {
        if (!JobStoppedOrDead(*job))
          continue;  // a live batch job's results stay
        threshold = t_.batch_eval;
      }
      CollectEval(*e, job.get(), threshold, out);
    }
  }

  void CollectNodes(const std::set<std::string>& going_allocs, Garbage& out) const {
    for (const NodePtr& n : state_.ListNodes("")) {
      if (n->status != model::kNodeStatusDown ||
          !OlderThan(n->status_updated_at * 1'000'000'000, t_.node, now_)) {
        continue;
      }
      bool holds = false;
      for (const AllocPtr& a : state_.AllocsByNode(n->id))
        holds = holds || (!a->Terminal() && !going_allocs.contains(a->id));
      if (!holds)
        out.nodes.push_back(n->id);
    }
  }

 private:
  const StateStore& state_;
  const GcThresholds& t_;
  common::Time now_;
  // Every allocation and evaluation, listed once per pass.
  std::vector<AllocPtr> allocs_;
  std::vector<EvalPtr> evals_;
  std::map<std::string, std::vector<AllocPtr>> allocs_by_eval_;
};

}  // namespace

Garbage FindGarbage(const StateStore& state, const GcThresholds& thresholds, common::Time now) {
  const Pass pass(state, thresholds, now);
  Garbage out;
  std::set<std::pair<std::string, std::string>> collected_jobs;
  for (const JobPtr& job : state.ListJobs("*", "")) {
    if (pass.CollectJob(*job, out))
      collected_jobs.emplace(job->namespace_, job->id);
  }
  pass.CollectEvals(collected_jobs, out);
  // Allocations whose evaluation is gone (purged jobs keep theirs until here).
  std::set<std::string> going(out.allocs.begin(), out.allocs.end());
  std::set<std::string> evals;
  for (const EvalPtr& e : pass.evals())
    evals.insert(e->id);
  for (const AllocPtr& a : pass.allocs()) {
    if (going.contains(a->id) || evals.contains(a->eval_id) ||
        collected_jobs.contains({a->namespace_, a->job_id})) {
      continue;
    }
    const JobPtr job = state.GetJob(a->namespace_, a->job_id);
    if (job && job->IsBatch() && !JobStoppedOrDead(*job))
      continue;
    if (pass.AllocGoes(*a, job.get(), thresholds.eval)) {
      out.allocs.push_back(a->id);
      going.insert(a->id);
    }
  }
  pass.CollectNodes(going, out);
  // Deployments that ended eval_gc_threshold ago (Nomad's deployment_gc_threshold has
  // the same default), and every one of a job that goes.
  for (const DeploymentPtr& d : state.ListDeployments("*", "")) {
    if (collected_jobs.contains({d->namespace_, d->job_id}) ||
        (!d->Active() && now - common::FromUnixNanos(d->modify_time) >= thresholds.eval))
      out.deployments.push_back(d->id);
  }
  return out;
}

}  // namespace drover::server
