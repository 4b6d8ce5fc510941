// drover-state-crash-writer: the child of the state DB's crash-consistency test
// (crash_consistency_test.cc). Writes through the client state DB as the agent does
// (LMDB, deduplication and group commit on) until it is killed, and tells its parent
// about every write on stdout, one line per event, each line one write(2) so a kill
// never leaves half of one:
//
//   S <key> <seq> <op>   about to write (op: put, dup, del)
//   A <key> <seq> <op>   the state DB acknowledged it (durable)
//   F <key> <seq> <op>   it failed (the message follows the op)
//
// Usage: drover-state-crash-writer DATA_DIR FIRST_SEQ RANDOM_SEED
//   Keys are the allocations k0..k7 (their acknowledged_state record and one task's
//   local state); one coroutine per key, so writes to a key are ordered and up to eight
//   are in flight together (and are committed in groups). `put` writes sequence number
//   seq (new bytes), `dup` the key's last written value again (deduplicated when it is
//   committed), `del` deletes the allocation's bucket. The values' bytes are derived
//   from their key and seq (Value below; the test derives them the same way).
//   With DROVER_CRASH_WRITER_STOP_AFTER=N it exits 0 after N acknowledged or failed
//   writes (the fault-injection tests, which do not kill it). With
//   DROVER_CRASH_WRITER_RETRY=1, a key whose write failed writes the same bytes again
//   (as the agent does) until that is acknowledged, and the other keys stop after their
//   current write; the process exits when all have stopped. The retry is its key's
//   last word, so the file must hold it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "common/asio.h"
#include "state/crash_writer_value.h"
#include "state/state_db.h"

namespace {

namespace asio = drover::asio;
using drover::state::AllocRecord;
using drover::state::StateDb;

int g_stop_after = -1;  // settled writes before exiting; -1: never
int g_settled = 0;
bool g_retry = false;
bool g_failed = false;  // a write failed: with g_retry, the writers wind down
int g_writers = 0;      // still writing

void Report(char what, const std::string& key, uint64_t seq, const char* op,
            const std::string& detail = "") {
  std::string line = std::string(1, what) + " " + key + " " + std::to_string(seq) + " " + op;
  if (!detail.empty())
    line += " " + detail;
  line += "\n";
  // Lines stay under PIPE_BUF, so each write is atomic.
  if (line.size() > 4000)
    line = line.substr(0, 3999) + "\n";
  (void)!::write(STDOUT_FILENO, line.data(), line.size());
}

// One put, dup or delete of `key`, reported before and after; whether it was
// acknowledged.
asio::awaitable<bool> WriteOnce(StateDb& db, std::string key, uint64_t seq, std::string op) {
  Report('S', key, seq, op.c_str());
  absl::Status s;
  if (op == "del") {
    s = co_await db.DeleteAllocationBucket(key);
  } else {
    const drover::codec::Json value = drover::state::CrashWriterValue(key, seq);
    s = co_await db.PutAllocRecord(key, AllocRecord::kAcknowledgedState, value);
    if (s.ok()) {
      const drover::codec::Json local = drover::state::CrashWriterLocal(key, seq);
      s = co_await db.PutTaskRunnerLocalState(key, "web", local);
    }
  }
  Report(s.ok() ? 'A' : 'F', key, seq, op.c_str(), s.ok() ? "" : std::string(s.message()));
  if (g_stop_after >= 0 && ++g_settled >= g_stop_after)
    std::exit(0);
  co_return s.ok();
}

asio::awaitable<void> Writer(StateDb& db, std::string key, uint64_t first_seq, uint64_t seed) {
  std::mt19937_64 rng(seed);
  uint64_t seq = first_seq;
  uint64_t last_put = 0;  // 0: none yet in this process
  // With g_retry, once a write failed every key finishes what it is doing and stops.
  while (!(g_retry && g_failed)) {
    const int dice = static_cast<int>(rng() % 10);
    bool ok = false;
    std::string op;
    uint64_t wrote = 0;
    if (dice == 0 && last_put != 0) {
      op = "dup";
      wrote = last_put;
    } else if (dice == 1) {
      op = "del";
      wrote = ++seq;
      last_put = 0;
    } else {
      op = "put";
      wrote = last_put = ++seq;
    }
    ok = co_await WriteOnce(db, key, wrote, op);
    if (!ok && g_retry) {
      g_failed = true;
      // The same bytes again (a put's value is what `dup` writes), until they hold.
      const std::string again = op == "del" ? "del" : "dup";
      while (!co_await WriteOnce(db, key, wrote, again)) {
      }
      break;
    }
  }
  if (--g_writers == 0)
    std::exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DATA_DIR FIRST_SEQ RANDOM_SEED\n", argv[0]);
    return 2;
  }
  if (const char* n = std::getenv("DROVER_CRASH_WRITER_STOP_AFTER"))
    g_stop_after = std::atoi(n);
  if (const char* r = std::getenv("DROVER_CRASH_WRITER_RETRY"))
    g_retry = std::string(r) == "1";
  const std::filesystem::path dir = argv[1];
  const uint64_t first_seq = std::strtoull(argv[2], nullptr, 10);
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  auto db = drover::state::OpenStateDb(dir);
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  drover::asio::io_context io;
  g_writers = drover::state::kCrashWriterKeys;
  for (int k = 0; k < drover::state::kCrashWriterKeys; ++k) {
    // Each key's sequence numbers are its own block: they never collide.
    drover::asio::co_spawn(io,
                           Writer(**db, "k" + std::to_string(k),
                                  first_seq + uint64_t(k) * 1'000'000, seed * 31 + uint64_t(k)),
                           drover::asio::detached);
  }
  io.run();
  return 0;
}
