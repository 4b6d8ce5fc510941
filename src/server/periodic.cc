// Periodic jobs: the leader's launch loop and forced launches (periodic.h).
#include "server/periodic.h"

#include <algorithm>

#include "codec/prepared_job.h"
#include "common/ids.h"
#include "common/logging.h"
#include "cron/cron.h"
#include "server/server.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// A failed launch (a write that could not be made durable) is tried again after this.
constexpr common::Duration kLaunchRetry = std::chrono::seconds(5);
// The loop looks again at least this often: its timer runs on the steady clock, and the
// wall clock may jump (a suspended VM, a corrected clock).
constexpr common::Duration kMaxSleep = std::chrono::minutes(1);

}  // namespace

std::optional<common::Time> NextPeriodicLaunch(const model::PeriodicConfig& periodic,
                                               common::Time after) {
  if (periodic.spec_type != model::kPeriodicSpecCron)
    return std::nullopt;
  absl::StatusOr<std::optional<absl::Time>> next = cron::NextOfAny(
      periodic.AllSpecs(), periodic.time_zone, absl::FromUnixNanos(common::ToUnixNanos(after)));
  if (!next.ok() || !*next)
    return std::nullopt;
  return common::FromUnixNanos(absl::ToUnixNanos(**next));
}

model::Job PeriodicChild(const model::Job& parent, common::Time launch) {
  model::Job child = parent;
  const int64_t unix_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(launch.time_since_epoch()).count();
  child.id = parent.id + model::kPeriodicLaunchSuffix + std::to_string(unix_seconds);
  child.name = child.id;
  child.parent_id = parent.id;
  child.periodic.reset();
  child.status.clear();
  child.status_description.clear();
  child.stable = false;
  return child;
}

model::Job DispatchChild(const model::Job& parent, const model::DispatchRequest& request,
                         common::Time now) {
  model::Job child = parent;
  const int64_t unix_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::string suffix = std::to_string(unix_seconds) + "-" + common::NewUuid().substr(0, 8);
  if (!request.id_prefix_template.empty())
    suffix = request.id_prefix_template + "-" + suffix;
  child.id = parent.id + model::kDispatchLaunchSuffix + suffix;
  child.name = child.id;
  child.parent_id = parent.id;
  child.dispatched = true;
  child.dispatch_idempotency_token = request.idempotency_token;
  child.payload = request.payload;
  for (const auto& [k, v] : request.meta)
    child.meta[k] = v;
  child.status.clear();
  child.status_description.clear();
  child.stable = false;
  return child;
}

bool Server::HasLiveChildren(const model::Job& parent) const {
  const std::vector<JobPtr> children = state_.ChildJobs(parent.namespace_, parent.id);
  return std::any_of(children.begin(), children.end(),
                     [](const JobPtr& child) { return child->status != model::kJobStatusDead; });
}

absl::StatusOr<EvalResponse> Server::LaunchPeriodic(const model::Job& parent, common::Time launch,
                                                    bool forced) {
  if (!forced && parent.periodic->prohibit_overlap && HasLiveChildren(parent)) {
    DROVER_LOG_INFO("server: skipping launch of periodic job {} because job prohibits overlap",
                    parent.id);
    state_.SetPeriodicLaunch(parent.namespace_, parent.id, common::ToUnixNanos(launch));
    return EvalResponse{.index = state_.LatestIndex()};
  }
  absl::StatusOr<PreparedJob> child =
      codec::PrepareJob(PeriodicChild(parent, launch), config_.region);
  absl::Status registrable = child.status();
  if (registrable.ok())
    registrable = CheckRegistration(child->job()).status();
  if (!registrable.ok()) {
    if (forced)
      return registrable;
    // Not one to try again (the loop would every few seconds): this launch is passed
    // over, and said so.
    DROVER_LOG_ERROR(
        "server: launch of periodic job {} skipped: its child cannot be "
        "registered: {}",
        parent.id, registrable.ToString());
    state_.SetPeriodicLaunch(parent.namespace_, parent.id, common::ToUnixNanos(launch));
    return EvalResponse{.index = state_.LatestIndex()};
  }
  JobPtr stored = state_.UpsertJob(std::move(*child).Release());
  EvalResponse resp = CreateEval(*stored, model::kTriggerPeriodicJob);
  state_.SetPeriodicLaunch(parent.namespace_, parent.id, common::ToUnixNanos(launch));
  return resp;
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::LaunchPeriodicDurably(std::string ns,
                                                                            std::string id,
                                                                            common::Time launch,
                                                                            bool forced) {
  std::optional<StateStore::JobSnapshot> parent_before;
  std::optional<StateStore::JobSnapshot> child_before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    JobPtr parent = state_.GetJob(ns, id);
    if (!parent)
      return absl::NotFoundError("job not found");
    if (!parent->IsPeriodic())
      return absl::FailedPreconditionError("can't force launch non-periodic job");
    if (!parent->IsPeriodicActive()) {
      // Disabled, stopped, or a parameterized template (its dispatched children launch).
      return absl::FailedPreconditionError("force launch for job \"" + id +
                                           "\" failed: can't force run non-tracked job " + id +
                                           " (" + ns + ")");
    }
    if (const auto last = state_.LastPeriodicLaunch(ns, id);
        !forced && last && last->launch >= common::ToUnixNanos(launch)) {
      // Decided before this write's turn; another launch (or a registration) came first.
      return EvalResponse{.index = state_.LatestIndex()};
    }
    parent_before = state_.SnapshotJob(ns, id);
    child_before = state_.SnapshotJob(ns, PeriodicChild(*parent, launch).id);
    return LaunchPeriodic(*parent, launch, forced);
  };
  std::function<void()> undo = [&] {
    if (child_before)
      state_.RestoreJob(*child_before);
    if (parent_before)
      state_.RestorePeriodicLaunch(ns, id, parent_before->periodic_launch);
  };
  co_return co_await Durably(write, undo);
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::ForcePeriodicDurably(std::string ns,
                                                                           std::string id) {
  const common::Time now = clock_.Now();
  co_return co_await LaunchPeriodicDurably(std::move(ns), std::move(id), now, /*forced=*/true);
}

asio::awaitable<std::optional<common::Time>> Server::PeriodicPass(
    common::CancellationScopePtr term) {
  std::optional<common::Time> earliest;
  const auto consider = [&earliest](std::optional<common::Time> t) {
    if (t && (!earliest || *t < *earliest))
      earliest = t;
  };
  const common::Time now = clock_.Now();
  const std::vector<JobPtr> jobs = state_.PeriodicJobs();
  std::map<std::string, PeriodicNext> cache;  // this pass's: the jobs that are still periodic
  for (const JobPtr& job : jobs) {
    if (term->cancelled())
      break;
    const auto last = state_.LastPeriodicLaunch(job->namespace_, job->id);
    const int64_t from = last ? last->launch : job->submit_time;
    // Computed once per job version and launch: a pass runs on every change to the jobs
    // table, and a cron that matches rarely is a long walk.
    const std::string key = job->namespace_ + '\0' + job->id;
    auto cached = periodic_next_.find(key);
    if (cached == periodic_next_.end() ||
        cached->second.job_modify_index != job->job_modify_index || cached->second.from != from) {
      cached =
          periodic_next_
              .insert_or_assign(key, PeriodicNext{job->job_modify_index, from,
                                                  NextPeriodicLaunch(*job->periodic,
                                                                     common::FromUnixNanos(from))})
              .first;
    }
    cache.insert(*cached);
    const std::optional<common::Time> next = cached->second.next;
    if (!next || *next > now) {
      consider(next);
      continue;
    }
    // Due. Launches missed meanwhile (the leader was down) are not replayed: one
    // launch, now, stands for all of them, as Nomad's.
    const std::optional<common::Time> after = NextPeriodicLaunch(*job->periodic, *next);
    const common::Time launch = after && *after <= now ? now : *next;
    std::string ns = job->namespace_, id = job->id;  // named: no temporaries in co_await
    absl::StatusOr<EvalResponse> launched =
        co_await LaunchPeriodicDurably(std::move(ns), std::move(id), launch, /*forced=*/false);
    if (launched.ok() || absl::IsNotFound(launched.status()) ||
        absl::IsFailedPrecondition(launched.status())) {
      // After the planned time, the next is `after` (walked once already).
      consider(launch == *next ? after : NextPeriodicLaunch(*job->periodic, launch));
    } else {
      DROVER_LOG_WARN("server: launch of periodic job {} failed: {}", job->id,
                      launched.status().ToString());
      consider(clock_.Now() + kLaunchRetry);
    }
  }
  periodic_next_ = std::move(cache);
  co_return earliest;
}

asio::awaitable<void> Server::PeriodicLoop(common::CancellationScopePtr term) {
  while (!term->cancelled()) {
    const std::optional<common::Time> next = co_await PeriodicPass(term);
    if (term->cancelled())
      break;
    const uint64_t index = state_.LatestIndex();
    const common::Duration wait =
        next ? std::clamp<common::Duration>(*next - clock_.Now(), common::Duration::zero(),
                                            kMaxSleep)
             : kMaxSleep;
    std::vector<Table> tables{Table::kJobs};
    auto changed = state_.BlockUntil(tables, index, wait);
    auto stopped = term->Wait();
    co_await (std::move(changed) || std::move(stopped));
  }
}

}  // namespace drover::server
