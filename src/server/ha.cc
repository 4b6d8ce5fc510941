#include "server/ha.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "common/offload.h"
#include "etcd/state_backend.h"
#include "server/state_layout.h"
#include "state/store.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

constexpr common::Duration kMinBackoff = std::chrono::milliseconds(100);
constexpr common::Duration kMaxBackoff = std::chrono::seconds(5);

// Counts a loop as running for its lifetime.
struct LoopGuard {
  explicit LoopGuard(int& n) : n_(n) { ++n_; }
  ~LoopGuard() { --n_; }
  LoopGuard(const LoopGuard&) = delete;
  LoopGuard& operator=(const LoopGuard&) = delete;
  int& n_;
};

std::string Root(std::string prefix) {
  while (!prefix.empty() && prefix.back() == '/')
    prefix.pop_back();
  return prefix;
}

std::string JoinEndpoints(const std::vector<std::string>& endpoints) {
  std::string out;
  for (const std::string& e : endpoints)
    out += (out.empty() ? "" : ", ") + e;
  return out;
}

}  // namespace

std::string EncodeMember(const Member& m) {
  return nlohmann::json{{"Name", m.name}, {"HTTPAddr", m.http_addr}, {"RPCAddr", m.rpc_addr}}
      .dump();
}

std::optional<Member> DecodeMember(std::string_view bytes) {
  auto j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return std::nullopt;
  const auto text = [&j](const char* field) -> std::optional<std::string> {
    auto it = j.find(field);
    if (it == j.end() || !it->is_string())
      return std::nullopt;
    return it->get<std::string>();
  };
  auto name = text("Name");
  auto http = text("HTTPAddr");
  auto rpc = text("RPCAddr");
  if (!name || !http || !rpc)
    return std::nullopt;
  return Member{.name = *name, .http_addr = *http, .rpc_addr = *rpc};
}

HaCoordinator::HaCoordinator(asio::any_io_executor executor, Server& server,
                             asio::thread_pool& pool, common::Clock& clock, HaConfig config,
                             Member self)
    : executor_(executor),
      server_(server),
      pool_(pool),
      clock_(clock),
      config_(std::move(config)),
      self_(std::move(self)),
      root_(Root(config_.prefix)),
      state_prefix_(etcd::StatePrefix(config_.prefix)),
      client_(config_.endpoints, etcd::ClientOptions{.call_timeout = config_.dial_timeout}),
      mirror_(executor, client_, clock, root_ + "/"),
      election_(client_, clock, root_ + "/leader", EncodeMember(self_), config_.lease_ttl_seconds),
      stop_(common::CancellationScope::Create(executor)) {
  mirror_.OnChange([this](const std::vector<etcd::Mirror::Change>& changes, int64_t) {
    if (!applying_)
      return;
    std::vector<StateStore::Record> records;
    for (const etcd::Mirror::Change& c : changes) {
      if (c.key.compare(0, state_prefix_.size(), state_prefix_) == 0)
        records.push_back({c.key.substr(state_prefix_.size()), c.value});
    }
    if (!records.empty())
      server_.state().ApplyRecords(records);
  });
}

std::vector<StateStore::Record> HaCoordinator::StateRecords() const {
  std::vector<StateStore::Record> out;
  const auto& data = mirror_.data();
  for (auto it = data.lower_bound(state_prefix_);
       it != data.end() && it->first.compare(0, state_prefix_.size(), state_prefix_) == 0; ++it)
    out.push_back({it->first.substr(state_prefix_.size()), it->second});
  return out;
}

asio::awaitable<absl::Status> HaCoordinator::CheckPrefix() {
  const std::string meta = state_prefix_ + "meta/";
  const std::string version_key = state_prefix_ + layout::kVersionKey;
  const std::string cluster_key = state_prefix_ + "meta/cluster";
  const std::string expected_version = std::to_string(layout::kSchemaVersion);
  for (int attempt = 0; attempt < 3; ++attempt) {
    etcd::RangeRequest read{.key = meta, .range_end = etcd::PrefixEnd(meta)};
    auto got = co_await client_.Range(std::move(read));
    if (!got.ok())
      co_return got.status();
    std::optional<std::string> version;
    std::optional<std::string> cluster;
    for (const etcd::KeyValue& kv : got->kvs) {
      if (kv.key == version_key)
        version = kv.value;
      if (kv.key == cluster_key)
        cluster = kv.value;
    }
    if (version) {
      if (*version != expected_version) {
        co_return absl::FailedPreconditionError(
            "etcd prefix '" + root_ + "/' holds server state of schema version '" + *version +
            "'; this Drover reads version " + expected_version);
      }
      std::string region;
      if (cluster) {
        auto j = nlohmann::json::parse(*cluster, nullptr, false);
        if (j.is_object() && j.contains("Region") && j["Region"].is_string())
          region = j["Region"].get<std::string>();
      }
      if (region != config_.region) {
        co_return absl::FailedPreconditionError(
            "etcd prefix '" + root_ + "/' holds the state of another cluster (region '" + region +
            "'); this server is in region '" + config_.region +
            "': choose another prefix (server { etcd { prefix = ... } })");
      }
      co_return absl::OkStatus();
    }
    // Empty, or someone else's keys.
    const std::string all = root_ + "/";
    etcd::RangeRequest count{.key = all, .range_end = etcd::PrefixEnd(all), .count_only = true};
    auto any = co_await client_.Range(std::move(count));
    if (!any.ok())
      co_return any.status();
    if (any->count > 0) {
      co_return absl::FailedPreconditionError(
          "etcd prefix '" + all + "' holds " + std::to_string(any->count) +
          " keys that are not a Drover server state (no meta/version): choose another prefix "
          "(server { etcd { prefix = ... } })");
    }
    std::vector<etcd::Compare> unset = {etcd::Compare{
        .key = version_key, .target = etcd::Compare::Target::kCreateRevision, .number = 0}};
    std::vector<etcd::Op> init = {
        etcd::Op::Put(version_key, expected_version),
        etcd::Op::Put(cluster_key, nlohmann::json{{"Region", config_.region}}.dump())};
    auto txn = co_await client_.Txn(std::move(unset), std::move(init));
    if (!txn.ok())
      co_return txn.status();
    if (txn->succeeded) {
      DROVER_LOG_INFO("ha: initialised the server state under etcd prefix '{}/'", root_);
      co_return absl::OkStatus();
    }
    // Another server initialised it meanwhile: read what it wrote.
  }
  co_return absl::UnavailableError("etcd: the prefix's meta records keep changing");
}

asio::awaitable<absl::Status> HaCoordinator::Connect() {
  common::Duration backoff = kMinBackoff;
  for (;;) {
    absl::Status s = co_await CheckPrefix();
    if (s.ok())
      break;
    if (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s))
      co_return s;
    DROVER_LOG_ERROR("ha: etcd does not answer at {}: {}; retrying in {} ms",
                     JoinEndpoints(config_.endpoints), std::string(s.message()),
                     std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
    auto slept = co_await (clock_.Sleep(backoff) || stop_->Wait());
    if (slept.index() == 1)
      co_return absl::CancelledError("stopped while connecting to etcd");
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  common::SpawnDetached(executor_, ReplicateLoop(), "etcd replication");
  // The first load of the view (Run retries while etcd does not answer).
  for (;;) {
    auto loaded = mirror_.WaitFor(1, std::chrono::hours(1));
    auto r = co_await (std::move(loaded) || stop_->Wait());
    if (r.index() == 1)
      co_return absl::CancelledError("stopped while loading the state from etcd");
    if (mirror_.ready())
      break;
  }
  DROVER_LOG_INFO("ha: loaded the server state from etcd at revision {} (index {})",
                  mirror_.revision(), server_.state().LatestIndex());
  co_return absl::OkStatus();
}

void HaCoordinator::Start() {
  common::SpawnDetached(executor_, MembershipLoop(), "etcd membership");
  common::SpawnDetached(executor_, CampaignLoop(), "leader election");
}

asio::awaitable<void> HaCoordinator::Stop() {
  if (stop_->cancelled())
    co_return;
  stop_->Cancel();
  // The campaign loop commits what it wrote and resigns on its way out, and membership
  // revokes its lease: calls to etcd, each bounded by the dial timeout per endpoint.
  const common::Time deadline =
      clock_.Now() + config_.dial_timeout * (2 * static_cast<int>(config_.endpoints.size()) + 2);
  while (loops_ > 0 && clock_.Now() < deadline)
    co_await clock_.Sleep(std::chrono::milliseconds(10));
}

asio::awaitable<void> HaCoordinator::ReplicateLoop() {
  LoopGuard guard(loops_);
  auto run = mirror_.Run();
  auto stopped = stop_->Wait();
  auto r = co_await (std::move(run) || std::move(stopped));
  if (r.index() == 0) {
    // Only an etcd that went back in time ends it: serving on would mix two histories.
    DROVER_LOG_ERROR(
        "ha: replication from etcd stopped: {}; this server no longer leads or "
        "follows, and serves its last view",
        std::get<0>(r).ToString());
    stop_->Cancel();
  }
}

asio::awaitable<void> HaCoordinator::MembershipLoop() {
  LoopGuard guard(loops_);
  const std::string key = root_ + "/members/" + self_.name;
  const common::Duration period =
      std::max<common::Duration>(std::chrono::seconds(config_.lease_ttl_seconds) / 3, kMinBackoff);
  int64_t lease = 0;
  while (!stop_->cancelled()) {
    if (lease == 0) {
      auto granted = co_await client_.GrantLease(config_.lease_ttl_seconds);
      if (granted.ok()) {
        std::string value = EncodeMember(self_);  // named: see GCC 12 in development.md
        auto put = co_await client_.Put(key, std::move(value), granted->id);
        if (put.ok())
          lease = granted->id;
      }
    } else {
      auto refreshed = co_await client_.KeepAlive(lease);
      if (!refreshed.ok() && absl::IsNotFound(refreshed.status()))
        lease = 0;  // expired (the process was stopped, etcd was away): join again
    }
    common::Duration next = period;
    if (lease == 0)
      next = kMinBackoff * 10;
    auto slept = co_await (clock_.Sleep(next) || stop_->Wait());
    (void)slept;
  }
  if (lease != 0)
    (void)co_await client_.RevokeLease(lease);
}

asio::awaitable<void> HaCoordinator::CampaignLoop() {
  LoopGuard guard(loops_);
  // bootstrap_expect: nobody leads an empty cluster until that many servers are up
  // (a state that was led before needs no quorum of servers: etcd holds it).
  bool told = false;
  while (!stop_->cancelled() && server_.state().LatestIndex() <= 1 &&
         static_cast<int>(Members().size()) < config_.bootstrap_expect) {
    if (!told) {
      DROVER_LOG_INFO("ha: waiting for {} servers before electing a first leader ({} up)",
                      config_.bootstrap_expect, Members().size());
      told = true;
    }
    auto slept = co_await (clock_.Sleep(std::chrono::milliseconds(200)) || stop_->Wait());
    (void)slept;
  }
  common::Duration backoff = kMinBackoff;
  while (!stop_->cancelled()) {
    auto campaign = election_.Campaign();
    auto stopped = stop_->Wait();
    auto won = co_await (std::move(campaign) || std::move(stopped));
    if (won.index() == 1)
      break;
    absl::StatusOr<etcd::Term>& term = std::get<0>(won);
    if (!term.ok()) {
      DROVER_LOG_ERROR("ha: leader election failed: {}", term.status().ToString());
      auto slept = co_await (clock_.Sleep(backoff) || stop_->Wait());
      (void)slept;
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    backoff = kMinBackoff;
    co_await Lead(*term);
  }
}

asio::awaitable<void> HaCoordinator::Lead(etcd::Term term) {
  // Everything earlier leaders wrote came before this term's leader key was created,
  // and that key is under the watched prefix: once the view holds the key's revision it
  // holds all of it (other prefixes of a shared etcd do not matter). Bounded by the
  // lease, which nothing keeps alive yet.
  const common::Duration left = term.valid_until - clock_.Now();
  if (!co_await mirror_.WaitFor(term.revision, left)) {
    DROVER_LOG_WARN("ha: won the election but the view did not catch up in time; resigning");
    (void)co_await election_.Resign(term);
    auto slept = co_await (clock_.Sleep(std::chrono::seconds(1)) || stop_->Wait());
    (void)slept;
    co_return;
  }
  auto failed = std::make_shared<common::Event>(executor_);
  // The endpoint that answered last goes first: a new client would start with the first
  // one whether it answers or not, and a write is not sent twice.
  std::vector<std::string> endpoints = config_.endpoints;
  std::rotate(endpoints.begin(),
              std::find(endpoints.begin(), endpoints.end(), client_.current_endpoint()),
              endpoints.end());
  etcd::StateBackendOptions options{.endpoints = std::move(endpoints),
                                    .prefix = config_.prefix,
                                    .leader_key = election_.key(),
                                    .term = term,
                                    .call_timeout = config_.dial_timeout,
                                    .on_failure = [executor = executor_, failed] {
                                      asio::post(executor, [failed] { failed->Set(); });
                                    }};
  applying_ = false;
  server_.state().SetWriter(
      std::make_unique<state::Store>(std::make_unique<etcd::StateBackend>(std::move(options))));
  server_.EstablishLeadership();
  DROVER_LOG_INFO("ha: {} is the cluster leader (term {}, index {})", self_.name, term.revision,
                  server_.state().LatestIndex());

  auto hold = election_.Hold(term);
  auto write_failed = failed->Wait();
  auto stopped = stop_->Wait();
  auto ended = co_await (std::move(hold) || std::move(write_failed) || std::move(stopped));
  std::string why = "the agent stops";
  if (ended.index() == 0)
    why = std::get<0>(ended).ToString();
  else if (ended.index() == 1)
    why = "a write to etcd failed";

  // At once: nothing more is scheduled, timed or drained by this server, and until its
  // view is loaded again from etcd nothing it holds counts as durable (a node is not
  // told of an allocation that may not have committed).
  server_.RevokeLeadership();
  server_.state().Unsettle();
  // What it wrote until now is committed before the term is given up (fenced: only
  // while the term holds; after a failure the backend sends nothing more).
  std::shared_ptr<state::Store> writer = server_.state().SetWriter(nullptr);
  co_await writer->FlushAsync();
  // Its destructor joins its threads: off the control loop. (A Flush still waiting on
  // it may hold it a little longer.)
  std::function<void()> drop = [writer = std::move(writer)]() mutable { writer.reset(); };
  co_await common::Offload(pool_, std::move(drop));
  (void)co_await election_.Resign(term);
  // The view may be ahead of etcd by writes that never committed: load it again from
  // the watch's copy once that has seen this term's key go (its deletion comes after
  // every write of the term), or after the dial timeout (etcd may be away).
  const common::Time deadline = clock_.Now() + config_.dial_timeout;
  while (!stop_->cancelled() && clock_.Now() < deadline) {
    auto key = mirror_.data().find(election_.key());
    if (key == mirror_.data().end() || key->second != EncodeMember(self_))
      break;
    (void)co_await mirror_.WaitFor(mirror_.revision() + 1, deadline - clock_.Now());
  }
  server_.state().ResetTo(StateRecords());
  applying_ = true;
  DROVER_LOG_WARN("ha: {} gave up cluster leadership: {}", self_.name, why);
}

std::optional<Member> HaCoordinator::Leader() const {
  if (server_.leader()) {
    Member m = self_;
    m.leader = true;
    return m;
  }
  const auto& data = mirror_.data();
  auto it = data.find(election_.key());
  if (it == data.end())
    return std::nullopt;
  std::optional<Member> m = DecodeMember(it->second);
  // This server's own key while it does not lead: a term it gave up, whose key the
  // watch has not yet seen go (etcd may be away).
  if (!m || m->name == self_.name)
    return std::nullopt;
  m->leader = true;
  return m;
}

std::vector<Member> HaCoordinator::Members() const {
  const std::optional<Member> leader = Leader();
  std::vector<Member> out;
  const std::string prefix = root_ + "/members/";
  const auto& data = mirror_.data();
  for (auto it = data.lower_bound(prefix);
       it != data.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (std::optional<Member> m = DecodeMember(it->second)) {
      m->leader = leader && leader->name == m->name;
      out.push_back(std::move(*m));
    }
  }
  if (std::none_of(out.begin(), out.end(), [&](const Member& m) { return m.name == self_.name; })) {
    Member me = self_;
    me.leader = server_.leader();
    out.push_back(std::move(me));
  }
  std::sort(out.begin(), out.end(),
            [](const Member& a, const Member& b) { return a.name < b.name; });
  return out;
}

}  // namespace drover::server
