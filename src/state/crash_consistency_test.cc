// Crash consistency of the client state DB (issue: "the node under stress").
//
// A child process (drover-state-crash-writer) writes through the state DB exactly as
// the agent does: LMDB, deduplication and group commit on, eight writers in flight. It
// reports every write it starts and every acknowledgement on a pipe. This test SIGKILLs
// it at a random moment, reopens the DB and checks every record against what was
// acknowledged: each acknowledged write is present with exactly its bytes, unless a
// later write of the same record (started, maybe not acknowledged) replaced it; nothing
// else is there. The verified state carries over to the next round, on the same file.
//
// DROVER_STATE_CRASH_ROUNDS (default 50) sets the rounds; `make crash-db ROUNDS=1000`.
//
// The fault tests run the writer under libdrover_fault_inject.so (fault_inject.cc),
// which makes one call LMDB makes to write or sync the file fail (EIO, ENOSPC, or a
// short write). The failure must reach the caller (no write acknowledged that was not
// synced), a later write of the same bytes must really be written (not deduplicated
// against the failed one), and what was acknowledged must be on disk afterwards.
//
// A SIGKILL leaves the page cache intact, so the kill test alone would pass a DB that
// never syncs; that half is the fault tests' (a failed fdatasync must fail the commit)
// and TheFaultTestsCoverEveryCallOnTheWritePath's (the file is synced at all).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "state/crash_writer_value.h"
#include "state/state_db.h"
#include "testing/test_util.h"

extern char** environ;

namespace drover::state {
namespace {

struct Event {
  char what = 0;  // S, A or F
  std::string key;
  uint64_t seq = 0;
  std::string op;  // put, dup, del
  std::string detail;
};

struct WriterRun {
  std::vector<Event> events;
  int status = 0;
  bool killed = false;
};

// When to kill the writer: `delay` after its first acknowledgement, or after it started
// when `before_first_ack`.
struct KillPlan {
  std::chrono::microseconds delay{0};
  bool before_first_ack = false;
};

std::vector<Event> ParseLines(const std::string& text) {
  std::vector<Event> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    Event e;
    l >> e.what >> e.key >> e.seq >> e.op;
    std::getline(l, e.detail);
    out.push_back(std::move(e));
  }
  return out;
}

// Runs the writer on `dir` until it exits, or until `kill` says; `env` adds to ours.
WriterRun RunWriter(const std::filesystem::path& dir, uint64_t first_seq, uint64_t seed,
                    const std::vector<std::string>& env, std::optional<KillPlan> kill) {
  WriterRun run;
  int out[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string bin = DROVER_CRASH_WRITER_PATH;
  std::string a1 = dir.string(), a2 = std::to_string(first_seq), a3 = std::to_string(seed);
  char* argv[] = {const_cast<char*>(bin.c_str()), a1.data(), a2.data(), a3.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  EXPECT_EQ(rc, 0) << "spawning " << bin << ": " << strerror(rc);
  if (rc != 0) {
    close(out[0]);
    return run;
  }
  std::string text;
  auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  if (kill && kill->before_first_ack)
    kill_at = start + kill->delay;
  const auto give_up = start + std::chrono::seconds(60);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (kill_at && now >= *kill_at && !run.killed) {
      ::kill(pid, SIGKILL);
      run.killed = true;
    }
    if (now > give_up && !run.killed) {
      ADD_FAILURE() << "the writer did not finish in 60 s";
      ::kill(pid, SIGKILL);
      run.killed = true;
    }
    int wait_ms = 1000;
    if (kill_at && !run.killed) {
      wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at - now).count());
      wait_ms = std::max(wait_ms, 0);
    }
    pollfd p{out[0], POLLIN, 0};
    const int n = poll(&p, 1, wait_ms);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      continue;
    char buf[65536];
    const ssize_t got = read(out[0], buf, sizeof buf);
    if (got <= 0)
      break;  // EOF: the writer (and anything it forked) is gone
    text.append(buf, static_cast<size_t>(got));
    if (kill && !kill_at && text.find("\nA ") != std::string::npos)
      kill_at = std::chrono::steady_clock::now() + kill->delay;
  }
  close(out[0]);
  while (waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  // A killed writer's last line may be cut short; every other line is whole.
  if (!text.empty() && text.back() != '\n')
    text.erase(text.rfind('\n') + 1);
  run.events = ParseLines(text);
  return run;
}

// What one record holds: the seq of the value written, or nothing (absent).
using RecordValue = std::optional<uint64_t>;

struct KeyState {
  RecordValue ack;    // acknowledged_state
  RecordValue local;  // task "web"'s local state
};

// What a key's writes this round allow each of its records to hold now: what the
// last acknowledged write left (both records alike; without one, what the record held
// before), or what any write started after it left.
struct Allowed {
  std::optional<RecordValue> acknowledged;
  std::vector<RecordValue> later;

  std::vector<RecordValue> For(const RecordValue& before) const {
    std::vector<RecordValue> out = later;
    out.push_back(acknowledged ? *acknowledged : before);
    return out;
  }
};

Allowed AllowedFor(const std::string& key, const std::vector<Event>& events) {
  Allowed out;
  for (const Event& e : events) {
    if (e.key != key)
      continue;
    const RecordValue written = e.op == "del" ? RecordValue() : RecordValue(e.seq);
    if (e.what == 'S')
      out.later.push_back(written);
    if (e.what == 'A') {
      out.acknowledged = written;
      out.later.clear();
    }
  }
  return out;
}

bool Contains(const std::vector<RecordValue>& allowed, const RecordValue& v) {
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}

std::string Show(const RecordValue& v) {
  return v ? std::to_string(*v) : "absent";
}

std::string Show(const std::vector<RecordValue>& vs) {
  std::string out;
  for (const auto& v : vs)
    out += (out.empty() ? "" : ", ") + Show(v);
  return "{" + out + "}";
}

// Reads one record's seq, checking its bytes are exactly what that seq wrote.
RecordValue ReadChecked(const absl::StatusOr<std::optional<codec::Json>>& got,
                        const std::function<codec::Json(uint64_t)>& expected,
                        const std::string& what) {
  if (!got.ok()) {
    ADD_FAILURE() << what << ": " << got.status();
    return std::nullopt;
  }
  if (!got->has_value())
    return std::nullopt;
  const codec::Json& v = **got;
  if (!v.contains("seq") || !v["seq"].is_number_unsigned()) {
    ADD_FAILURE() << what << " has no seq: " << v.dump().substr(0, 200);
    return std::nullopt;
  }
  const uint64_t seq = v["seq"].get<uint64_t>();
  EXPECT_EQ(v, expected(seq)) << what << " seq " << seq << " is not intact";
  return seq;
}

// Opens the DB, checks it against the events, and returns what it holds.
std::map<std::string, KeyState> Verify(const std::filesystem::path& dir,
                                       const std::vector<Event>& events,
                                       const std::map<std::string, KeyState>& before,
                                       const std::string& round) {
  std::map<std::string, KeyState> now;
  auto db = OpenStateDb(dir);
  if (!db.ok()) {
    ADD_FAILURE() << round << ": the state DB does not open: " << db.status();
    return before;
  }
  for (int i = 0; i < kCrashWriterKeys; ++i) {
    const std::string k = "k" + std::to_string(i);
    const Allowed allowed = AllowedFor(k, events);
    const KeyState was = before.contains(k) ? before.at(k) : KeyState{};
    KeyState s;
    s.ack = ReadChecked((*db)->GetAllocRecord(k, AllocRecord::kAcknowledgedState),
                        [&](uint64_t seq) { return CrashWriterValue(k, seq); },
                        round + " " + k + " ack");
    auto runner = (*db)->GetTaskRunnerState(k, "web");
    absl::StatusOr<std::optional<codec::Json>> local =
        runner.ok() ? absl::StatusOr<std::optional<codec::Json>>(runner->local_state)
                    : absl::StatusOr<std::optional<codec::Json>>(runner.status());
    s.local = ReadChecked(
        local, [&](uint64_t seq) { return CrashWriterLocal(k, seq); }, round + " " + k + " local");
    EXPECT_TRUE(Contains(allowed.For(was.ack), s.ack))
        << round << ": " << k << "'s acknowledged_state is " << Show(s.ack) << ", allowed "
        << Show(allowed.For(was.ack));
    EXPECT_TRUE(Contains(allowed.For(was.local), s.local))
        << round << ": " << k << "'s local state is " << Show(s.local) << ", allowed "
        << Show(allowed.For(was.local));
    now[k] = s;
  }
  return now;
}

int Count(const std::vector<Event>& events, char what) {
  return static_cast<int>(
      std::count_if(events.begin(), events.end(), [&](const Event& e) { return e.what == what; }));
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

TEST(StateDbCrashTest, EveryAcknowledgedWriteSurvivesASigkill) {
  const int rounds = EnvInt("DROVER_STATE_CRASH_ROUNDS", 50);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("DROVER_STATE_CRASH_SEED", 0)) != 0
                            ? static_cast<uint64_t>(EnvInt("DROVER_STATE_CRASH_SEED", 0))
                            : std::random_device{}();
  std::printf("state DB crash test: %d rounds, DROVER_STATE_CRASH_SEED=%llu\n", rounds,
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  std::map<std::string, KeyState> state;
  long acked = 0, started = 0, early_kills = 0;
  for (int r = 1; r <= rounds && !HasFailure(); ++r) {
    KillPlan plan;
    plan.before_first_ack = rng() % 8 == 0;  // while opening or on the first commit
    plan.delay = std::chrono::microseconds(rng() % (plan.before_first_ack ? 20'000 : 40'000));
    early_kills += plan.before_first_ack;
    WriterRun run = RunWriter(dir.path(), uint64_t(r) * 100'000'000, rng(), {}, plan);
    ASSERT_TRUE(run.killed) << "round " << r << ": the writer exited on its own, status "
                            << run.status;
    EXPECT_EQ(Count(run.events, 'F'), 0) << "round " << r << ": a write failed";
    acked += Count(run.events, 'A');
    started += Count(run.events, 'S');
    state = Verify(dir.path(), run.events, state, "round " + std::to_string(r));
  }
  std::printf(
      "state DB crash test: %d rounds (%ld killed before the first acknowledgement), %ld "
      "writes started, %ld acknowledged, all present and intact\n",
      rounds, early_kills, started, acked);
  // Most rounds acknowledge something: the kills land among commits, not only before.
  EXPECT_GT(acked, rounds);
}

// Which calls LMDB makes on the DB file when the writer runs without faults.
std::map<std::string, long> CallCounts(const std::filesystem::path& report) {
  std::map<std::string, long> counts;
  std::istringstream in(testing::ReadFile(report));
  std::string call;
  long n = 0, injected = 0;
  while (in >> call >> n >> injected)
    counts[call] = n;
  return counts;
}

long Injected(const std::filesystem::path& report) {
  std::istringstream in(testing::ReadFile(report));
  std::string call;
  long n = 0, injected = 0, total = 0;
  while (in >> call >> n >> injected)
    total += injected;
  return total;
}

struct Fault {
  const char* call;
  const char* mode;
};

class StateDbFaultTest : public ::testing::TestWithParam<Fault> {};

// The DB's write path under a fault in one call: the failure reaches the writer, no
// write that was not synced is acknowledged, the same bytes written again afterwards
// are written (not deduplicated against the failed write), and what was acknowledged
// is on disk when the file is opened again.
TEST_P(StateDbFaultTest, AFailedWriteOrSyncIsNeverAcknowledged) {
  const Fault fault = GetParam();
  testing::TempDir dir;
  const auto report = dir.path() / "fault-report";
  const std::string lib = DROVER_FAULT_INJECT_PATH;
  std::map<std::string, KeyState> state;
  // A first run with no fault fills the file, so the fault lands in a DB with history.
  WriterRun first =
      RunWriter(dir.path(), 100'000'000, 1, {"DROVER_CRASH_WRITER_STOP_AFTER=100"}, std::nullopt);
  ASSERT_TRUE(WIFEXITED(first.status) && WEXITSTATUS(first.status) == 0);
  state = Verify(dir.path(), first.events, state, "before the fault");
  // The fault comes with the Nth such call on the file: early ones hit the first
  // commit's data pages, later ones meta pages and commits with history.
  for (int after : {1, 2, 3, 5, 8}) {
    SCOPED_TRACE("fault at call " + std::to_string(after));
    WriterRun run = RunWriter(
        dir.path(), uint64_t(after + 1) * 100'000'000, uint64_t(after),
        {"LD_PRELOAD=" + lib, "ASAN_OPTIONS=verify_asan_link_order=0",
         std::string("DROVER_FAULT_CALL=") + fault.call,
         std::string("DROVER_FAULT_MODE=") + fault.mode,
         "DROVER_FAULT_AFTER=" + std::to_string(after), "DROVER_FAULT_REPORT=" + report.string(),
         "DROVER_CRASH_WRITER_RETRY=1", "DROVER_CRASH_WRITER_STOP_AFTER=2000"},
        std::nullopt);
    ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << run.status;
    ASSERT_EQ(Injected(report), 1) << "the fault was not injected: " << testing::ReadFile(report);
    // The failed commit reached its writers, and the DB took writes again afterwards.
    const int failed = Count(run.events, 'F');
    EXPECT_GE(failed, 1) << "a failed " << fault.call << " was acknowledged as durable";
    // Each key whose write failed wrote the same bytes again until they were
    // acknowledged, and then nothing: the file must hold that retry (a retry
    // deduplicated against the failed write would leave the older value).
    std::map<std::string, const Event*> last_of;
    std::set<std::string> failed_keys;
    for (const Event& e : run.events) {
      last_of[e.key] = &e;
      if (e.what == 'F')
        failed_keys.insert(e.key);
    }
    for (const std::string& key : failed_keys) {
      const Event* last = last_of[key];
      EXPECT_EQ(last->what, 'A') << key
                                 << "'s retry after the fault never succeeded: " << last->detail;
      EXPECT_TRUE(last->op == "dup" || last->op == "del") << key << " ended with " << last->op;
    }
    state = Verify(dir.path(), run.events, state, std::string("after a failed ") + fault.call);
  }
}

// Every call LMDB uses to write and sync the file, in every way it can fail.
INSTANTIATE_TEST_SUITE_P(WritePath, StateDbFaultTest,
                         ::testing::Values(Fault{"pwrite", "eio"}, Fault{"pwrite", "enospc"},
                                           Fault{"pwrite", "short"}, Fault{"writev", "eio"},
                                           Fault{"writev", "enospc"}, Fault{"writev", "short"},
                                           Fault{"fdatasync", "eio"}, Fault{"fdatasync", "enospc"}),
                         [](const ::testing::TestParamInfo<Fault>& p) {
                           return std::string(p.param.call) + "_" + p.param.mode;
                         });

// The shim sees every call LMDB makes on the file: those the fault tests break are
// the only ones on its write path (no msync, as the map is not writable; no write or
// fsync once the file exists).
TEST(StateDbFaultTest, TheFaultTestsCoverEveryCallOnTheWritePath) {
  testing::TempDir dir;
  const auto report = dir.path() / "fault-report";
  WriterRun first =
      RunWriter(dir.path(), 100'000'000, 1, {"DROVER_CRASH_WRITER_STOP_AFTER=20"}, std::nullopt);
  ASSERT_TRUE(WIFEXITED(first.status) && WEXITSTATUS(first.status) == 0);
  WriterRun run =
      RunWriter(dir.path(), 200'000'000, 2,
                {std::string("LD_PRELOAD=") + DROVER_FAULT_INJECT_PATH,
                 "DROVER_FAULT_REPORT=" + report.string(), "DROVER_CRASH_WRITER_STOP_AFTER=200"},
                std::nullopt);
  ASSERT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
  const auto counts = CallCounts(report);
  ASSERT_EQ(counts.size(), 6u) << testing::ReadFile(report);
  EXPECT_GT(counts.at("pwrite"), 0);
  EXPECT_GT(counts.at("writev"), 0);
  EXPECT_GT(counts.at("fdatasync"), 0);
  for (const char* unused : {"write", "fsync", "msync"})
    EXPECT_EQ(counts.at(unused), 0) << unused << " is on the write path: test it too";
}

}  // namespace
}  // namespace drover::state
