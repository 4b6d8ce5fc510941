#include "server/server.h"

#include <algorithm>
#include <random>
#include <set>

#include "common/ids.h"
#include "common/logging.h"
#include "common/offload.h"
#include "metrics/registry.h"
#include "server/scheduler.h"
#include "server/state_layout.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

Server::Server(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
               ServerConfig config)
    : executor_(executor),
      pool_(pool),
      clock_(clock),
      config_(std::move(config)),
      state_(executor, clock),
      queue_changed_(executor),
      durable_writes_(executor),
      plans_(executor),
      drain_changed_(executor),
      stop_(common::CancellationScope::Create(executor)),
      leader_(!config_.ha),
      seed_(std::random_device{}()),
      rng_(std::random_device{}()) {
  state_.set_tracked_versions(config_.job_tracked_versions);
  state_.set_max_events(config_.event_buffer_size);
}

absl::StatusOr<std::vector<std::string>> Server::CheckRegistration(const model::Job& job) const {
  std::vector<std::string> warnings;
  if (!SchedulerConfiguration().memory_oversubscription) {
    for (const model::TaskGroup& g : job.task_groups) {
      for (const model::Task& t : g.tasks) {
        if (t.resources.memory_max_mb > 0) {
          warnings.push_back("Memory oversubscription is not enabled; Task \"" + g.name + "." +
                             t.name +
                             "\" memory_max value will be ignored. Update the Scheduler "
                             "Configuration to allow oversubscription.");
        }
      }
    }
  }
  if (config_.max_job_record_bytes > 0) {
    const size_t bytes = layout::EncodeRecord(job).size();
    if (bytes > config_.max_job_record_bytes) {
      return absl::InvalidArgumentError("job is too large: " + std::to_string(bytes) +
                                        " bytes encoded, and the servers' state "
                                        "in etcd takes jobs of at most " +
                                        std::to_string(config_.max_job_record_bytes) + " bytes");
    }
  }
  return warnings;
}

absl::StatusOr<EvalResponse> Server::RegisterJob(PreparedJob job) {
  if (!leader_)
    return NotLeaderError();
  absl::StatusOr<std::vector<std::string>> warnings = CheckRegistration(job.job());
  if (!warnings.ok())
    return warnings.status();
  const JobPtr previous = state_.GetJob(job.job().namespace_, job.job().id);
  JobPtr stored = state_.UpsertJob(std::move(job).Release());
  EvalResponse resp;
  if (stored->IsPeriodic() || stored->IsParameterized()) {
    // A template: its children are evaluated, never the template itself.
    resp.job_modify_index = stored->job_modify_index;
    resp.index = stored->modify_index;
    // Its schedule counts from this registration when it starts launching or its spec
    // changed (started again, a new cron): launches it would have made before now are
    // not made up for.
    const auto launch = state_.LastPeriodicLaunch(stored->namespace_, stored->id);
    if (stored->IsPeriodicActive() && (!launch || !previous || !previous->IsPeriodicActive() ||
                                       previous->job_modify_index != stored->job_modify_index)) {
      state_.SetPeriodicLaunch(stored->namespace_, stored->id, common::ToUnixNanos(clock_.Now()));
    }
  } else {
    resp = CreateEval(*stored, model::kTriggerJobRegister);
  }
  resp.warnings.insert(resp.warnings.end(), warnings->begin(), warnings->end());
  return resp;
}

absl::StatusOr<EvalResponse> Server::RegisterJob(model::Job job) {
  auto prepared = codec::PrepareJob(std::move(job), config_.region);
  if (!prepared.ok())
    return prepared.status();
  return RegisterJob(*std::move(prepared));
}

absl::StatusOr<EvalResponse> Server::DeregisterJob(const std::string& ns, const std::string& id,
                                                   bool purge, bool no_shutdown_delay) {
  if (!leader_)
    return NotLeaderError();
  JobPtr job = state_.GetJob(ns, id);
  if (!job) {
    return absl::NotFoundError("job not found");
  }
  if (no_shutdown_delay) {
    // Carried by the allocs into the stop the scheduler is about to plan.
    std::vector<model::Allocation> marked;
    for (const AllocPtr& a : state_.AllocsByJob(ns, id)) {
      if (a->Terminal())
        continue;
      model::Allocation copy = *a;
      copy.desired_transition.no_shutdown_delay = true;
      marked.push_back(std::move(copy));
    }
    if (!marked.empty())
      state_.UpsertAllocs(std::move(marked));
  }
  model::Job copy = *job;
  if (purge) {
    state_.DeleteJob(ns, id);
  } else {
    copy.stop = true;
    job = state_.UpsertJob(copy);
    copy = *job;
  }
  if (copy.IsPeriodic() || copy.IsParameterized()) {
    // A template runs nothing; its children run on, as Nomad's.
    return EvalResponse{.job_modify_index = copy.job_modify_index, .index = state_.LatestIndex()};
  }
  return CreateEval(copy, model::kTriggerJobDeregister);
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::Durably(
    const std::function<absl::StatusOr<EvalResponse>()>& write, const std::function<void()>& undo) {
  auto guard = co_await durable_writes_.Lock();
  if (!leader_)
    co_return NotLeaderError();
  defer_enqueue_ = true;
  absl::StatusOr<EvalResponse> resp = write();
  defer_enqueue_ = false;
  const std::vector<std::string> evals = std::exchange(deferred_, {});
  // Not a conditional expression around co_await: GCC 12 mishandles its temporaries.
  absl::Status durable;
  if (resp.ok())
    durable = co_await state_.Flush();
  if (!durable.ok()) {
    for (const std::string& id : evals)
      state_.RemoveEval(id);
    undo();
    // What the undone write published never happened: readers of the feed start over.
    state_.ResetEventFeed();
    co_return durable;
  }
  for (const std::string& id : evals)
    Enqueue(id);
  co_return resp;
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::RegisterJobDurably(
    PreparedJob job, std::optional<uint64_t> enforce_index) {
  StateStore::JobSnapshot before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    before = state_.SnapshotJob(job.job().namespace_, job.job().id);
    // EnforceIndex: register only if the job's JobModifyIndex matches (0 = must not
    // exist), checked where no other durable write can come between.
    if (enforce_index) {
      const uint64_t have = before.job ? before.job->job_modify_index : 0;
      if (*enforce_index != have) {
        return absl::FailedPreconditionError(
            *enforce_index == 0
                ? "Enforcing job modify index 0: job already exists"
                : "Enforcing job modify index " + std::to_string(*enforce_index) +
                      ": job exists with conflicting job modify index: " + std::to_string(have));
      }
    }
    return RegisterJob(std::move(job));
  };
  std::function<void()> undo = [&] { state_.RestoreJob(before); };
  co_return co_await Durably(write, undo);
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::DeregisterJobDurably(std::string ns,
                                                                           std::string id,
                                                                           bool purge,
                                                                           bool no_shutdown_delay) {
  StateStore::JobSnapshot before;
  std::vector<AllocPtr> allocs_before;
  std::vector<AllocPtr> allocs_after;
  std::function<absl::StatusOr<EvalResponse>()> write = [&] {
    before = state_.SnapshotJob(ns, id);
    allocs_before = state_.AllocsByJob(ns, id);
    auto resp = DeregisterJob(ns, id, purge, no_shutdown_delay);
    for (const AllocPtr& a : allocs_before)
      allocs_after.push_back(state_.GetAlloc(a->id));
    return resp;
  };
  std::function<void()> undo = [&] {
    state_.RestoreAllocs(allocs_before, allocs_after);
    state_.RestoreJob(before);
  };
  co_return co_await Durably(write, undo);
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::StopAllocDurably(std::string alloc_id,
                                                                       bool no_shutdown_delay) {
  AllocPtr before;
  AllocPtr after;
  std::function<absl::StatusOr<EvalResponse>()> write = [&] {
    before = state_.GetAlloc(alloc_id);
    auto resp = StopAlloc(alloc_id, no_shutdown_delay);
    after = state_.GetAlloc(alloc_id);
    return resp;
  };
  std::function<void()> undo = [&] {
    if (before)
      state_.RestoreAllocs({before}, {after});
  };
  co_return co_await Durably(write, undo);
}

absl::StatusOr<EvalResponse> Server::StopAlloc(const std::string& alloc_id,
                                               bool no_shutdown_delay) {
  if (!leader_)
    return NotLeaderError();
  AllocPtr alloc = state_.GetAlloc(alloc_id);
  if (!alloc) {
    return absl::NotFoundError("alloc not found");
  }
  model::Allocation updated = *alloc;
  updated.desired_transition.migrate = true;
  if (no_shutdown_delay)
    updated.desired_transition.no_shutdown_delay = true;
  state_.UpsertAllocs({updated});
  model::Job job;
  if (JobPtr current = state_.GetJob(alloc->namespace_, alloc->job_id)) {
    job = *current;
  } else if (alloc->job) {
    job = *alloc->job;
  }
  return CreateEval(job, model::kTriggerAllocStop);
}

EvalResponse Server::CreateEval(const model::Job& job, const std::string& triggered_by,
                                const std::string& deployment_id) {
  model::Evaluation eval;
  eval.id = common::NewUuid();
  eval.namespace_ = job.namespace_;
  eval.priority = job.priority;
  eval.type = job.type;
  eval.triggered_by = triggered_by;
  eval.job_id = job.id;
  eval.job_modify_index = job.job_modify_index;
  eval.deployment_id = deployment_id;
  eval.status = model::kEvalPending;
  const std::string id = eval.id;
  state_.UpsertEvals({std::move(eval)});
  Enqueue(id);
  EvalPtr stored = state_.GetEval(id);
  return EvalResponse{.eval_id = id,
                      .eval_create_index = stored->create_index,
                      .job_modify_index = job.job_modify_index,
                      .index = stored->create_index};
}

void Server::Enqueue(const std::string& eval_id) {
  if (defer_enqueue_) {
    deferred_.push_back(eval_id);
    return;
  }
  EvalPtr eval = state_.GetEval(eval_id);
  if (eval && eval->wait_until > clock_.Now()) {
    // A delayed reschedule: queued when its time comes (or at the next start).
    if (term_)
      common::SpawnDetached(executor_, EnqueueAt(eval_id, eval->wait_until, term_),
                            "delayed evaluation");
    return;
  }
  queue_.push_back(eval_id);
  queued_.insert(eval_id);
  queue_changed_.Notify();
}

asio::awaitable<void> Server::EnqueueAt(std::string eval_id, common::Time at,
                                        common::CancellationScopePtr term) {
  auto r = co_await (clock_.Sleep(at - clock_.Now()) || term->Wait());
  if (r.index() == 0) {
    queue_.push_back(eval_id);
    queued_.insert(eval_id);
    queue_changed_.Notify();
  }
}

asio::awaitable<void> Server::EvalWorker(common::CancellationScopePtr term) {
  while (!term->cancelled()) {
    // A paused broker (the scheduler configuration's PauseEvalBroker) leaves them pending.
    while ((queue_.empty() || SchedulerConfiguration().pause_eval_broker) && !term->cancelled()) {
      co_await (queue_changed_.Wait() || term->Wait());
    }
    if (term->cancelled()) {
      break;
    }
    const std::string id = queue_.front();
    queue_.pop_front();
    queued_.erase(id);
    EvalPtr eval = state_.GetEval(id);
    if (!eval || eval->status != model::kEvalPending) {
      continue;
    }
    // Not while a write waits to be durable: a pass could otherwise schedule from what
    // that write may yet undo.
    auto guard = co_await durable_writes_.Lock();
    if (term->cancelled())
      break;
    // What the write held meanwhile may have paused the broker or deleted the eval.
    if (SchedulerConfiguration().pause_eval_broker) {
      if (queued_.insert(id).second)
        queue_.push_front(id);
      continue;
    }
    eval = state_.GetEval(id);
    if (!eval || eval->status != model::kEvalPending)
      continue;
    co_await ProcessEval(*eval);
  }
}

SchedulerInput Server::MakeSchedulerInput(const model::Evaluation& eval, JobPtr job) {
  SchedulerInput input;
  input.eval = eval;
  input.job = std::move(job);
  input.nodes = state_.ListNodes("");
  input.job_allocs = state_.AllocsByJob(eval.namespace_, eval.job_id);
  input.node_allocs = state_.ListAllocs("*", "");
  input.deployments = state_.DeploymentsByJob(eval.namespace_, eval.job_id);
  input.now = clock_.Now();
  input.seed = seed_++;
  input.memory_oversubscription = SchedulerConfiguration().memory_oversubscription;
  input.score_every_node = config_.score_every_node;
  return input;
}

std::vector<model::Evaluation> Server::EvalsAfterPass(model::Evaluation eval, PlanResult& plan,
                                                      std::vector<std::string>& followups) const {
  eval.status = model::kEvalComplete;
  if (!plan.deployment_id.empty())
    eval.deployment_id = plan.deployment_id;
  eval.failed_tg_allocs = plan.failed_tg_allocs;
  eval.queued_allocations = plan.queued;
  std::vector<model::Evaluation> evals;
  if (!plan.failed_tg_allocs.empty()) {
    // Like Nomad: a blocked evaluation retries once the cluster changes.
    model::Evaluation blocked = eval;
    blocked.id = common::NewUuid();
    blocked.status = model::kEvalBlocked;
    blocked.status_description = "created to place remaining allocations";
    blocked.triggered_by = eval.triggered_by;
    blocked.previous_eval = eval.id;
    blocked.failed_tg_allocs.clear();
    blocked.create_index = 0;
    eval.blocked_eval = blocked.id;
    evals.push_back(std::move(blocked));
  }
  DROVER_LOG_DEBUG(
      "eval {} for job {}: placed {}, stopped {}, lost {}, in-place {}, failed groups {}", eval.id,
      eval.job_id, plan.placed, plan.stopped, plan.lost, plan.updated_in_place,
      plan.failed_tg_allocs.size());
  // Any older blocked eval of this job is superseded by this pass.
  for (const EvalPtr& e : state_.EvalsByJob(eval.namespace_, eval.job_id)) {
    if (e->status == model::kEvalBlocked && e->id != eval.id) {
      model::Evaluation c = *e;
      c.status = model::kEvalCanceled;
      c.status_description = "evaluation superseded by " + eval.id;
      evals.push_back(std::move(c));
    }
  }
  for (model::Evaluation& f : plan.followup_evals) {
    eval.next_eval = f.id;
    followups.push_back(f.id);
    evals.push_back(std::move(f));
  }
  evals.push_back(std::move(eval));
  return evals;
}

asio::awaitable<void> Server::ProcessEval(model::Evaluation eval) {
  const std::string job_ns = eval.namespace_;
  const std::string job_id = eval.job_id;
  SchedulerInput input = MakeSchedulerInput(eval, state_.GetJob(eval.namespace_, eval.job_id));
  eval.snapshot_index = state_.LatestIndex();
  const uint64_t term = term_count_;
  PlanResult plan;
  const std::string scheduler_type = input.job ? input.job->type : eval.type;
  const auto started = std::chrono::steady_clock::now();
  try {
    // Named, not a temporary: GCC 12 mis-destroys lambda temporaries in co_await.
    auto work = [input = std::move(input)] { return Schedule(input); };
    plan = co_await common::Offload(pool_, std::move(work));
  } catch (const std::exception& e) {
    if (!leader_ || term != term_count_)
      co_return;
    eval.status = model::kEvalFailed;
    eval.status_description = std::string("scheduler failed: ") + e.what();
    state_.UpsertEvals({eval});
    co_return;
  }
  if (!leader_ || term != term_count_)
    co_return;  // the term ended meanwhile: the next leader evaluates it again
  const auto scheduled = std::chrono::steady_clock::now();
  const bool reconnected_meanwhile = MarksUnknownOnAReadyNode(plan);
  ApplyPlanDeployments(plan);  // first: the allocations' counters go to their deployment
  if (!plan.upserts.empty()) {
    state_.UpsertAllocs(std::move(plan.upserts));
  }
  if (metrics_ != nullptr) {
    using Ms = std::chrono::duration<double, std::milli>;
    metrics_->AddSample("nomad.nomad.worker.invoke_scheduler." + scheduler_type,
                        Ms(scheduled - started).count());
    metrics_->AddSample("nomad.nomad.plan.apply",
                        Ms(std::chrono::steady_clock::now() - scheduled).count());
  }
  DropCoveredFollowups(eval, plan);
  std::vector<std::string> followups;
  std::vector<model::Evaluation> evals = EvalsAfterPass(std::move(eval), plan, followups);
  state_.UpsertEvals(std::move(evals));
  for (const std::string& id : followups)
    Enqueue(id);
  if (reconnected_meanwhile) {
    if (JobPtr job = state_.GetJob(job_ns, job_id); job && !HasQueuedEval(*job))
      CreateEval(*job, model::kTriggerReconnect);
  }
}

bool Server::MarksUnknownOnAReadyNode(const PlanResult& plan) const {
  for (const model::Allocation& a : plan.upserts) {
    if (a.client_status == model::kClientUnknown) {
      NodePtr n = state_.GetNode(a.node_id);
      if (n && n->status != model::kNodeStatusDisconnected)
        return true;
    }
  }
  return false;
}

void Server::DropCoveredFollowups(const model::Evaluation& eval, PlanResult& plan) const {
  // A pending rolling-update evaluation due no later covers the next batch: when it
  // runs it makes the batch, or plans the follow-up again.
  std::erase_if(plan.followup_evals, [&](const model::Evaluation& f) {
    const bool disconnect = f.triggered_by == model::kTriggerMaxDisconnectTimeout;
    if (!disconnect && f.triggered_by != model::kTriggerRollingUpdate)
      return false;
    for (const EvalPtr& e : state_.EvalsByJob(eval.namespace_, eval.job_id)) {
      if (e->id == eval.id || e->triggered_by != f.triggered_by || e->status != model::kEvalPending)
        continue;
      if (disconnect ? e->wait_until == f.wait_until : e->wait_until <= f.wait_until)
        return true;
    }
    return false;
  });
}

std::vector<model::AllocClientUpdate> Server::CheckHealthVerdicts(
    std::vector<model::AllocClientUpdate> updates) const {
  const common::Time now = clock_.Now();
  for (model::AllocClientUpdate& u : updates) {
    if (!u.deployment_status)
      continue;
    AllocPtr alloc = state_.GetAlloc(u.id);
    const model::TaskGroup* g = alloc ? alloc->Group() : nullptr;
    if (g != nullptr && g->update && g->update->health_check == model::kUpdateHealthManual)
      u.deployment_status.reset();
    else
      u.deployment_status->timestamp = std::min(u.deployment_status->timestamp, now);
  }
  return updates;
}

absl::Status Server::UpdateAllocsFromClient(const std::string& node_id,
                                            const std::vector<model::AllocClientUpdate>& updates) {
  if (!leader_)
    return NotLeaderError();
  // A disconnected node that reports is back (its heartbeat may simply come later):
  // ready first, so that what it reports is reconciled rather than marked unknown again.
  if (NodePtr n = state_.GetNode(node_id); n && n->status == model::kNodeStatusDisconnected)
    (void)Heartbeat(node_id);
  for (const model::AllocClientUpdate& u : updates) {
    AllocPtr alloc = state_.GetAlloc(u.id);
    if (alloc && alloc->node_id != node_id) {
      return absl::PermissionDeniedError("node " + node_id + " may not update allocation " + u.id +
                                         ", which is placed on another node");
    }
  }
  // Allocations that fail now: their jobs are evaluated, and the reschedule policy
  // decides whether and when they are replaced.
  std::set<std::pair<std::string, std::string>> failed_jobs;
  // Allocations that were `unknown` while their node was disconnected, reported again:
  // the scheduler keeps them and stops their replacements (or the other way round).
  std::set<std::pair<std::string, std::string>> reconnected_jobs;
  for (const model::AllocClientUpdate& u : updates) {
    AllocPtr alloc = state_.GetAlloc(u.id);
    if (alloc && u.client_status == model::kClientFailed &&
        alloc->client_status != model::kClientFailed && !alloc->ServerTerminal())
      failed_jobs.emplace(alloc->namespace_, alloc->job_id);
    if (alloc && alloc->client_status == model::kClientUnknown &&
        u.client_status != model::kClientUnknown)
      reconnected_jobs.emplace(alloc->namespace_, alloc->job_id);
  }
  for (const std::string& id : state_.UpdateAllocsFromClient(CheckHealthVerdicts(updates))) {
    DROVER_LOG_WARN("client update for unknown allocation {} ignored", id);
  }
  for (const auto& [ns, id] : failed_jobs) {
    if (JobPtr job = state_.GetJob(ns, id); job && !job->stop)
      CreateEval(*job, model::kTriggerRetryFailedAlloc);
  }
  for (const auto& [ns, id] : reconnected_jobs) {
    if (JobPtr job = state_.GetJob(ns, id); job && !failed_jobs.contains({ns, id}))
      CreateEval(*job, model::kTriggerReconnect);
  }
  return absl::OkStatus();
}

asio::awaitable<absl::StatusOr<NodeAllocs>> Server::WatchNodeAllocs(std::string node_id,
                                                                    uint64_t min_index,
                                                                    common::Duration max_wait) {
  // Woken by the server's changes to this node's allocations only: with thousands of
  // nodes long-polling, a change elsewhere (or a node's own status report) wakes none.
  if (min_index != 0)
    co_await state_.WaitNodeAllocs(node_id, min_index, max_wait);
  // A follower whose view is behind what the node already saw (elsewhere) must not
  // answer with an older list: the node would stop what is missing from it.
  if (config_.ha && state_.NodeAllocsIndex(node_id) < min_index) {
    co_return absl::UnavailableError("this server has not caught up with index " +
                                     std::to_string(min_index) + " yet");
  }
  NodeAllocs out;
  out.allocs = state_.AllocsByNode(node_id);
  // Never 0: the next poll must wait rather than return at once.
  out.index = std::max({state_.NodeAllocsIndex(node_id), min_index, uint64_t{1}});
  if (absl::Status durable = co_await state_.Flush(); !durable.ok())
    co_return durable;
  co_return out;
}

asio::awaitable<absl::Status> Server::UpdateAllocsDurably(
    std::string node_id, std::vector<model::AllocClientUpdate> updates) {
  if (absl::Status s = UpdateAllocsFromClient(node_id, updates); !s.ok())
    co_return s;
  co_return co_await state_.Flush();
}

}  // namespace drover::server
